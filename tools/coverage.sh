#!/bin/sh
# tools/coverage.sh [SRCDIR] - line coverage of server/, protocol/ and
# client-c/ under the whole automake test suite (docs/architecture.md,
# "Line coverage").
#
# Builds SRCDIR (default: the tree this script lives in) out of tree in a
# scratch directory with gcc's --coverage at -O0, runs `make check` as
# tools/test-all.sh runs its "normal" build: once on the default I/O
# backend and, when the build has liburing, once more with
# MDC_TEST_IO=epoll; the counters of both passes add up.  Then prints, with
# lcov, lines hit / lines for each directory and in total.  Failing tests
# are counted and reported; they do not stop the report.
#
# Works on older checkouts without --enable-coverage (configure is then
# given CFLAGS/LDFLAGS=--coverage), so that a baseline is measured the same
# way.  Runs autoreconf -fi in SRCDIR, as tools/test-all.sh does; SRCDIR
# must not be configured in tree.
#
# Environment: JOBS (parallel make, default nproc), COVERAGE_DIR (scratch
# directory, default a new one under ${TMPDIR:-/tmp}; kept, with the
# lcov data and the suite's logs), COVERAGE_EPOLL=0 (skip the epoll pass),
# COVERAGE_REPORT_ONLY=1 (with the COVERAGE_DIR of an earlier run: only
# count and report again).
# Needs lcov (tools/deps.sh).  Not run by CI: it takes about as long as two
# passes of the suite at -O0.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
SRC=$(cd "${1:-$here}" && pwd) || exit 1
JOBS=${JOBS:-$(nproc)}
W=${COVERAGE_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/mdc-coverage.XXXXXX")}
B="$W/build"
command -v lcov >/dev/null || { echo "coverage.sh: lcov not found (tools/deps.sh)" >&2; exit 1; }
[ -f "$SRC/configure.ac" ] || { echo "coverage.sh: $SRC has no configure.ac" >&2; exit 1; }
[ -f "$SRC/config.status" ] && { echo "coverage.sh: $SRC is configured in tree (make distclean there first)" >&2; exit 1; }

t0=$(date +%s)
phase() { # what: elapsed seconds and load average, on stderr and in the log
    echo "-- $1 at $(date -u +%H:%M:%S) UTC, +$(( $(date +%s) - t0 )) s, load $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$W/phases.txt" >&2
}

only=${COVERAGE_REPORT_ONLY:-0}
if [ "$only" = 1 ]; then
    [ -f "$B/config.h" ] || { echo "coverage.sh: COVERAGE_REPORT_ONLY=1 needs COVERAGE_DIR of an earlier run" >&2; exit 1; }
else
rm -rf "$B"; mkdir -p "$B"
phase "autoreconf"
(cd "$SRC" && autoreconf -fi >"$W/autoreconf.out" 2>&1) || { tail -20 "$W/autoreconf.out"; exit 1; }
if grep -q -- '--enable-coverage' "$SRC/configure"; then
    set -- --enable-coverage CFLAGS="-g"
else
    set -- CFLAGS="-g -O0 --coverage" LDFLAGS="--coverage"
fi
echo "$* --enable-debug-commands" >"$W/configure.txt"
phase "configure $* --enable-debug-commands"
(cd "$B" && "$SRC/configure" "$@" --enable-debug-commands >configure.out 2>&1) ||
    { tail -30 "$B/configure.out"; exit 1; }
phase "make"
(cd "$B" && make -j"$JOBS" >make.out 2>&1) || { tail -40 "$B/make.out"; exit 1; }
# the test programs too (TESTS empty: nothing runs yet)
(cd "$B" && make -j"$JOBS" check TESTS= >>make.out 2>&1) || { tail -40 "$B/make.out"; exit 1; }
# A daemon started as root becomes nobody (docs/options.md, -u) and could
# not create its counts in this root-owned tree ("profiling: ... Cannot
# open"), losing most of the network code's: create every .gcda empty
# and writable by all beforehand (gcc's runtime fills an empty one).
chmod 0755 "$W"
find "$B" -name '*.gcno' | while read -r n; do
    g=${n%.gcno}.gcda
    [ -e "$g" ] || : >"$g"
    chmod 0666 "$g"
done
fi

passed=0; failed=0; skipped=0; summary=""
# check NAME [VAR=VALUE...]: make check, counted from test-suite.log
check() {
    name=$1; shift
    if [ "$only" != 1 ]; then
        phase "make check: $name"
        (cd "$B" && env "$@" make -j"$JOBS" check >"$W/check-$name.out" 2>&1)
        mkdir -p "$W/$name"
        cp "$B/test-suite.log" "$W/$name/test-suite.log" 2>/dev/null
    fi
    grep -E '^(FAIL|ERROR|XPASS):' "$W/check-$name.out" | sed "s/^/   [$name] /"
    l="$W/$name/test-suite.log"
    if [ ! -f "$l" ]; then
        echo "   [$name] no test-suite.log: the suite did not run (see $W/check-$name.out)"
        failed=$((failed + 1)); summary="$summary $name: did not run;"; return
    fi
    p=$(sed -n 's/^# PASS: *//p' "$l" | head -1)
    f=$(sed -n 's/^# FAIL: *//p' "$l" | head -1)
    e=$(sed -n 's/^# ERROR: *//p' "$l" | head -1)
    x=$(sed -n 's/^# XPASS: *//p' "$l" | head -1)
    s=$(sed -n 's/^# SKIP: *//p' "$l" | head -1)
    nf=$(( ${f:-0} + ${e:-0} + ${x:-0} ))
    passed=$((passed + ${p:-0})); failed=$((failed + nf)); skipped=$((skipped + ${s:-0}))
    summary="$summary $name: ${p:-0} passed, $nf failed, ${s:-0} skipped;"
}
check default
if [ "${COVERAGE_EPOLL:-1}" != 0 ] && grep -q '^#define HAVE_LIBURING 1' "$B/config.h"; then
    check epoll MDC_TEST_IO=epoll
fi

phase "lcov"
# the .gcda files no process filled (code no test ran) are still empty:
# gcov refuses them; the zero counts of every compiled line come from the
# .gcno files (--initial), so code no test ran counts as lines not hit
find "$B" -name '*.gcda' -size 0 -delete
{ lcov -q --capture --initial --directory "$B" --output-file "$W/zero.info" &&
  lcov -q --capture --directory "$B" --output-file "$W/run.info"; } >"$W/lcov.out" 2>&1 ||
    { tail -20 "$W/lcov.out"; exit 1; }
cat "$W/zero.info" "$W/run.info" >"$W/all.info"
# lines hit / lines per file of SRC, from the DA records of the capture: a
# file compiled into several objects (a header, a source the tests compile
# again) has one record per object; a line counts once, as hit if any
# object ran it (lcov's own merge; its --extract globs stop at one level)
awk -v pre="$SRC/" '
    /^SF:/ { f = substr($0, 4); keep = index(f, pre) == 1; next }
    keep && /^DA:/ {
        split(substr($0, 4), a, ","); k = f SUBSEP a[1]
        if (!(k in seen)) { seen[k] = 1; lf[f]++ }
        if (a[2] + 0 > 0 && !(k in hit)) { hit[k] = 1; lh[f]++ }
    }
    END { for (f in lf) printf "%s %d %d\n", substr(f, length(pre) + 1), lh[f], lf[f] }' \
    "$W/all.info" | sort >"$W/files.txt"
# report LABEL DIR...: the sum over the files under the DIRs
report() {
    label=$1; shift
    awk -v label="$label" -v dirs="$*" '
        BEGIN { n = split(dirs, d, " ") }
        { for (i = 1; i <= n; i++) if (index($1, d[i] "/") == 1) { lh += $2; lf += $3; break } }
        END { printf "%-10s %7d / %7d lines  %5.1f%%\n", label, lh, lf, lf ? 100 * lh / lf : 0 }' \
        "$W/files.txt"
}
phase "report"
echo "mdcached line coverage: $(cd "$SRC" && git rev-parse --short HEAD 2>/dev/null || echo "$SRC")"
echo "configure: $(cat "$W/configure.txt")"
echo "suite:$summary total $passed passed, $failed failed, $skipped skipped"
report server server
report protocol protocol
report client-c client-c
report total server protocol client-c
echo "time: $(( $(date +%s) - t0 )) s; per file (path, lines hit, lines): $W/files.txt; data and logs in $W"
