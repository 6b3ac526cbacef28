#!/bin/sh
# fuzz.sh - build the libFuzzer targets with clang in a separate build
# directory and run each on its seed corpus for a bounded time; exit non-zero
# on any crash, leak, timeout or build failure.
#
#   tools/fuzz.sh [target ...]        default: every tests/fuzz/fuzz_*.c
#
# Environment:
#   FUZZ_TIME       seconds per target (default 60)
#   FUZZ_JOBS       targets run at once (default: the number of CPUs); each
#                   target is one process on one CPU for its FUZZ_TIME, so
#                   running them side by side on idle CPUs shortens the
#                   whole run, not what each target gets
#   FUZZ_BUILD_DIR  build directory (default: _build/fuzz in the source tree)
#   FUZZ_ARGS       extra libFuzzer arguments
#   CC              compiler (default clang; must support -fsanitize=fuzzer)
#
# Target NAME is built from tests/fuzz/fuzz_NAME.c by the automake target
# tests/fuzz/fuzz_NAME (tests/include.am, under ENABLE_FUZZ) and seeded from
# tests/fuzz/corpus/NAME/.  New inputs go to the build directory, never into
# the source tree; crash artifacts to $FUZZ_BUILD_DIR/fuzz-artifacts/,
# each target's output to $FUZZ_BUILD_DIR/fuzz-logs/NAME.log.  When all are
# done, each target's summary is printed (its last status line and
# libFuzzer's final stats), its whole log only when it failed (or with
# FUZZ_VERBOSE=1): a log of a CI run stays short, where libFuzzer prints
# thousands of lines (its recommended dictionary among them).
set -eu

srcdir=$(cd "$(dirname "$0")/.." && pwd)
time_s=${FUZZ_TIME:-60}
builddir=${FUZZ_BUILD_DIR:-$srcdir/_build/fuzz}
cc=${CC:-clang}
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)
fjobs=${FUZZ_JOBS:-$jobs}
[ "$fjobs" -ge 1 ] 2>/dev/null || fjobs=1

if [ $# -gt 0 ]; then
    targets="$*"
else
    targets=
    for f in "$srcdir"/tests/fuzz/fuzz_*.c; do
        [ -e "$f" ] || continue
        n=$(basename "$f" .c)
        targets="$targets ${n#fuzz_}"
    done
fi
[ -n "$targets" ] || { echo "fuzz.sh: no fuzz targets found" >&2; exit 1; }

if [ ! -x "$srcdir/configure" ]; then
    (cd "$srcdir" && autoreconf -fi)
fi

if [ -f "$srcdir/config.status" ]; then
    echo "fuzz.sh: $srcdir is configured in-tree; run 'make distclean' there" >&2
    exit 1
fi

mkdir -p "$builddir"
builddir=$(cd "$builddir" && pwd)
cd "$builddir"
# Dependency tracking stays on: a reused build directory (bench/fuzz_campaign.sh
# keeps one across sessions) must rebuild an object when a header it includes
# changes, or a fuzzer links objects that disagree on a struct's size.
if [ ! -f Makefile ]; then
    if ! CC=$cc "$srcdir/configure" --enable-fuzz --without-jemalloc \
        >fuzz-configure.log 2>&1; then
        tail -40 fuzz-configure.log
        echo "fuzz.sh: configure failed; its output in $builddir/fuzz-configure.log" >&2
        exit 1
    fi
fi

progs=
for t in $targets; do
    progs="$progs tests/fuzz/fuzz_$t"
done
# shellcheck disable=SC2086
if ! make -j"$jobs" $progs >fuzz-build.log 2>&1; then
    tail -60 fuzz-build.log
    echo "fuzz.sh: the build failed; its output in $builddir/fuzz-build.log" >&2
    exit 1
fi

# fuzz_one NAME: run one target for time_s; its output to fuzz-logs/NAME.log,
# and fuzz-logs/NAME.failed when it found something
fuzz_one() {
    t=$1
    seeds="$srcdir/tests/fuzz/corpus/$t"
    work="$builddir/fuzz-corpus/$t"
    mkdir -p "$work"
    [ -d "$seeds" ] || seeds=
    # shellcheck disable=SC2086
    "./tests/fuzz/fuzz_$t" -max_total_time="$time_s" -timeout=10 \
        -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="fuzz-artifacts/$t-" ${FUZZ_ARGS:-} \
        "$work" $seeds >"fuzz-logs/$t.log" 2>&1 || : >"fuzz-logs/$t.failed"
}

mkdir -p fuzz-artifacts
rm -rf fuzz-logs
mkdir fuzz-logs
# fjobs lanes, target i in lane i mod fjobs, each lane one target after
# the other (the targets all take time_s, so the lanes end together)
lanes=
lane=0
while [ "$lane" -lt "$fjobs" ]; do
    i=0
    mine=
    for t in $targets; do
        [ $((i % fjobs)) -eq "$lane" ] && mine="$mine $t"
        i=$((i + 1))
    done
    [ -n "$mine" ] || break
    echo "fuzz.sh:$mine for ${time_s}s each, one after the other"
    (for t in $mine; do fuzz_one "$t"; done) &
    lanes="$lanes $!"
    lane=$((lane + 1))
done
for p in $lanes; do
    wait "$p" || :
done

status=0
for t in $targets; do
    echo "fuzz.sh: fuzz_$t for ${time_s}s ($(wc -l <"fuzz-logs/$t.log") lines in $builddir/fuzz-logs/$t.log)"
    if [ -e "fuzz-logs/$t.failed" ] || [ "${FUZZ_VERBOSE:-0}" = 1 ]; then
        cat "fuzz-logs/$t.log"
    else
        # the last progress line ("#N DONE cov: ...") and the final stats
        grep -E '^#[0-9]+[[:space:]]' "fuzz-logs/$t.log" | tail -1
        grep -E '^(stat::|Done [0-9]+ runs)' "fuzz-logs/$t.log"
    fi
    if [ -e "fuzz-logs/$t.failed" ]; then
        echo "fuzz.sh: fuzz_$t FAILED; artifacts in $builddir/fuzz-artifacts" >&2
        status=1
    fi
done
exit $status
