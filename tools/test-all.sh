#!/bin/sh
# tools/test-all.sh - the README's second command: install what the tests
# use besides what the server needs (tools/deps.sh with no argument: both
# sets), build, and run the whole test suite: the normal build (also on
# epoll, and once more on a busy machine), AddressSanitizer+UBSan and
# ThreadSanitizer builds, make distcheck, and the fuzzers for a bounded
# time.  Ends with the names of the failing tests and the last lines of
# each one's log (a CI log whose beginning is cut still shows what
# failed), then one line "N passed, N failed".
#
# Environment: JOBS (parallel make), TEST_JOBS (tests run at once by make
# check and distcheck, default 2 x JOBS: most tests wait on daemons,
# timeouts and TTLs rather than use a CPU), SAN_TEST_JOBS (the same for the
# sanitizer builds, default JOBS: their tests use a CPU more, and the
# fairness and latency bounds of some have less room there), FUZZ_SECONDS
# (per fuzzer, default 30 here: the corpus in tests/fuzz/corpus carries
# what earlier runs found; long campaigns are bench/fuzz_campaign.sh),
# SOAK_SECONDS (bench/soak.sh, default 60 here; 1800 for the report),
# SKIP_DISTCHECK=1 / SKIP_SANITIZERS=1 / SKIP_DEB=1 / SKIP_BUSY=1 to
# shorten a local run, BUSY_TEST_JOBS (make check -j of the loaded run,
# default TEST_JOBS).
# Every step prints its wall time ("== NAME: N s"), the run its total.
set -u
cd "$(dirname "$0")/.."
TOP=$(pwd)
JOBS=${JOBS:-$(nproc)}
TEST_JOBS=${TEST_JOBS:-$((JOBS * 2))}
SAN_TEST_JOBS=${SAN_TEST_JOBS:-$JOBS}
check_jobs=$TEST_JOBS # make check -j of the next build_and_check
B="$TOP/_build"
passed=0
failed=0
failures=""
T_RUN=$(date +%s)
# the failing tests of every make check: "LABEL LOG" a line, LOG a copy of
# the test's log made when it failed (a later run in the same build
# directory writes over the original)
FAILED_LIST="$B/failed-tests.txt"
FAILED_LOGS="$B/failed-logs"
mkdir -p "$B"
rm -rf "$FAILED_LIST" "$FAILED_LOGS"
: >"$FAILED_LIST"

# took NAME START: the wall time since START (date +%s), to see where a
# run's time goes
took() { echo "== $1: $(( $(date +%s) - $2 )) s"; }

t=$(date +%s)
sh tools/deps.sh || { echo "0 passed, 1 failed"; exit 1; }
took deps "$t"
t=$(date +%s)
autoreconf -fi >/dev/null 2>&1 || { echo "autoreconf failed"; echo "0 passed, 1 failed"; exit 1; }
if [ -f config.status ]; then
    echo "== cleaning the in-tree build (out-of-tree builds follow)"
    make distclean >/dev/null 2>&1 || true
fi
took autoreconf "$t"

# count automake's "# PASS:/# FAIL:/# ERROR:/# XPASS:" from a test-suite.log
count_log() {
    log=$1
    [ -f "$log" ] || return 1
    p=$(sed -n 's/^# PASS: *//p' "$log" | head -1)
    f=$(sed -n 's/^# FAIL: *//p' "$log" | head -1)
    e=$(sed -n 's/^# ERROR: *//p' "$log" | head -1)
    x=$(sed -n 's/^# XPASS: *//p' "$log" | head -1)
    passed=$((passed + ${p:-0}))
    failed=$((failed + ${f:-0} + ${e:-0} + ${x:-0}))
}

# note_failed NAME DIR OUT: the tests make check reported failing in OUT
# (its console output), run in DIR: each is added to $failures as
# NAME-check(TEST) and its log saved for the end of the run; NAME-check
# alone when the output names none
note_failed() {
    _n=$1 _d=$2 _o=$3 _any=
    mkdir -p "$FAILED_LOGS"
    for _t in $(sed -n 's/^\(FAIL\|ERROR\|XPASS\): \([^ ]*\).*/\2/p' "$_o" | sort -u); do
        _any=1
        failures="$failures $_n-check($_t)"
        _l=
        for _c in "$_d/$_t.log" "$_d/${_t%.*}.log"; do
            [ -f "$_c" ] && { _l=$_c; break; }
        done
        if [ -n "$_l" ]; then
            _s="$FAILED_LOGS/$_n--$(echo "$_t" | tr / _).log"
            cp "$_l" "$_s"
            echo "$_n-check($_t) $_s" >>"$FAILED_LIST"
        fi
    done
    [ -n "$_any" ] || failures="$failures $_n-check"
}

step() { # name, then command; counts one pass/fail
    name=$1; shift
    echo "== $name"
    t_step=$(date +%s)
    if "$@"; then passed=$((passed + 1)); else
        failed=$((failed + 1)); failures="$failures $name"; echo "!! $name failed"; fi
    took "$name" "$t_step"
}

# build_and_check NAME CONFIGURE-ARGS...
build_and_check() {
    name=$1; shift
    d="$B/$name"
    rm -rf "$d"; mkdir -p "$d"
    echo "== $name: configure $*"
    t_b=$(date +%s)
    if ! (cd "$d" && "$TOP/configure" "$@" >configure.out 2>&1); then
        tail -30 "$d/configure.out"; failed=$((failed + 1)); failures="$failures $name-configure"; return
    fi
    took "$name: configure" "$t_b"
    echo "== $name: make"
    t_b=$(date +%s)
    if ! (cd "$d" && make -j"$JOBS" >make.out 2>&1); then
        tail -40 "$d/make.out"; failed=$((failed + 1)); failures="$failures $name-build"; return
    fi
    took "$name: make" "$t_b"
    echo "== $name: make check"
    t_b=$(date +%s)
    (cd "$d" && make -j"$check_jobs" check >check.out 2>&1)
    rc=$?
    took "$name: make check" "$t_b"
    grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP):' "$d/check.out" | sed "s/^/   [$name] /"
    if ! count_log "$d/test-suite.log"; then
        failed=$((failed + 1)); failures="$failures $name-check"; tail -40 "$d/check.out"; return
    fi
    if [ $rc -ne 0 ]; then
        note_failed "$name" "$d" "$d/check.out"
        # show the failing logs: automake hides them
        for l in $(grep -lE '^(FAIL|ERROR)' $(find "$d" -name '*.log' ! -name test-suite.log) 2>/dev/null); do
            echo "---- $l"; tail -60 "$l"; done
    fi
    # a SKIP under CI as root is a failure (DEVELOPERS.md)
    if [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ]; then
        s=$(sed -n 's/^# SKIP: *//p' "$d/test-suite.log" | head -1)
        if [ "${s:-0}" -ne 0 ]; then
            echo "!! $name: $s tests skipped under CI as root"
            failed=$((failed + s)); failures="$failures $name-skips"
        fi
    fi
}

# recheck NAME DIR [VAR=VALUE...]: make check again in a built tree, with
# the VARs set (make -j$recheck_jobs)
recheck_jobs=$TEST_JOBS
recheck() {
    name=$1; d=$2; shift 2
    echo "== $name: make check ($*)"
    mkdir -p "$d/$name"
    t_b=$(date +%s)
    (cd "$d" && env "$@" make -j"$recheck_jobs" check >"$name.out" 2>&1)
    rc=$?
    took "$name: make check" "$t_b"
    grep -E '^(PASS|FAIL|ERROR|XPASS|SKIP):' "$d/$name.out" | sed "s/^/   [$name] /"
    cp "$d/test-suite.log" "$d/$name/test-suite.log" 2>/dev/null
    if ! count_log "$d/$name/test-suite.log"; then
        failed=$((failed + 1)); failures="$failures $name-check"; tail -40 "$d/$name.out"; return
    fi
    if [ $rc -ne 0 ]; then
        note_failed "$name" "$d" "$d/$name.out"
        for l in $(grep -lE '^(FAIL|ERROR)' $(find "$d" -name '*.log' ! -name test-suite.log) 2>/dev/null); do
            echo "---- $l"; tail -60 "$l"; done
    fi
    if [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ]; then
        s=$(sed -n 's/^# SKIP: *//p' "$d/$name/test-suite.log" | head -1)
        if [ "${s:-0}" -ne 0 ]; then
            echo "!! $name: $s tests skipped under CI as root"
            failed=$((failed + s)); failures="$failures $name-skips"
        fi
    fi
}

step layers sh tools/check-layers.sh
# the files listed in tools/clang-format-files follow .clang-format
# (Debian's clang-format; the list grows as files are reformatted)
step clang-format sh -c "grep -v '^#' tools/clang-format-files | xargs clang-format --dry-run -Werror"
build_and_check normal CFLAGS="-O2 -g" --enable-debug-commands
# the whole suite again with every daemon on epoll (the default, --io=auto,
# is io_uring; --io=epoll through MDC_TEST_IO, docs/options.md): both
# network backends pass the same tests
if [ -f "$B/normal/Makefile" ] && grep -q '^#define HAVE_LIBURING 1' "$B/normal/config.h"; then
    recheck normal-epoll "$B/normal" MDC_TEST_IO=epoll
fi
# the normal build's suite once more on a busy machine (docs/testing.md,
# "A busy machine"): tools/busy-load.sh runs 16 CPU-bound loops and 4
# loopback TCP echo pairs beside it, on io_uring (the default).  No test
# may depend on the machine being idle.  The load runs in the background
# and is stopped by a trap whatever happens (a failure, ^C, a TERM from
# CI); each part of it also ends by itself after 2 h (busy-load.sh -t).
busy_pid=
stop_busy() {
    if [ -n "$busy_pid" ]; then
        kill "$busy_pid" 2>/dev/null
        wait "$busy_pid" 2>/dev/null
        busy_pid=
    fi
}
if [ "${SKIP_BUSY:-0}" != 1 ] && [ -f "$B/normal/Makefile" ]; then
    trap 'stop_busy' EXIT
    trap 'stop_busy; exit 130' INT
    trap 'stop_busy; exit 143' TERM
    sh "$TOP/tools/busy-load.sh" -t 7200 &
    busy_pid=$!
    recheck_jobs=${BUSY_TEST_JOBS:-$TEST_JOBS}
    recheck normal-busy "$B/normal"
    recheck_jobs=$TEST_JOBS
    stop_busy
    trap - EXIT INT TERM
fi
# kernel TLS in a virtual machine (docs/security.md, "Kernel TLS, and the
# user-space fallback"): once, with the normal build's programs; exit 77
# is a skip (never under CI as root: the script itself fails then)
if [ -f "$B/normal/Makefile" ]; then
    echo "== ktls-vm"
    t=$(date +%s)
    sh tests/ktls_vm.sh "$B/normal"
    rc=$?
    took ktls-vm "$t"
    case $rc in
    0) passed=$((passed + 1)) ;;
    77) echo "   (skipped)" ;;
    *) failed=$((failed + 1)); failures="$failures ktls-vm"; echo "!! ktls-vm failed" ;;
    esac
fi
# memcached's clients' own test suites (pinned; fetched from PyPI and the
# Go module proxy at test time) against mdcached and memcached 1.6.18 in a
# private network namespace (docs/testing.md, "memcached's client
# suites"): once, with the normal build's daemon; exit 77 is a skip (never
# under CI: the script itself fails then)
if [ -f "$B/normal/Makefile" ]; then
    echo "== client-suites"
    t=$(date +%s)
    MDC_BUILDDIR="$B/normal" python3 tests/client_suites.py
    rc=$?
    took client-suites "$t"
    case $rc in
    0) passed=$((passed + 1)) ;;
    77) echo "   (skipped)" ;;
    *) failed=$((failed + 1)); failures="$failures client-suites"; echo "!! client-suites failed" ;;
    esac
fi
# the soak (docs/security.md): SOAK_SECONDS, 60 here; 1800 for the report
step soak sh -c "MDC_BUILDDIR='$B/normal' SOAK_SECONDS=${SOAK_SECONDS:-60} sh bench/soak.sh"
# the portable build (docs/packaging.md, "FreeBSD"): every Linux-only part
# off, configured like the FreeBSD port, the whole suite; then the port's
# plist and rc.d script against it
build_and_check portable --disable-linux-features --without-jemalloc CFLAGS="-O2 -g"
if [ -f "$B/portable/Makefile" ]; then
    step port sh tools/port-check.sh "$B/portable"
fi
if [ "${SKIP_SANITIZERS:-0}" != 1 ]; then
    check_jobs=$SAN_TEST_JOBS
    # with the test-only hooks (docs/testing.md) as the normal build
    build_and_check asan --enable-asan --enable-debug-commands CFLAGS="-O1 -g"
    build_and_check tsan --enable-tsan --enable-debug-commands CFLAGS="-O1 -g"
    check_jobs=$TEST_JOBS
fi
if [ "${SKIP_DISTCHECK:-0}" != 1 ] && [ -f "$B/normal/Makefile" ]; then
    # VERBOSE=1: the inner make check prints its test-suite.log (the
    # failing tests' own logs) when it fails, before later steps remove
    # the distdir
    step distcheck sh -c "cd '$B/normal' && make -j$TEST_JOBS distcheck VERBOSE=1 >distcheck.out 2>&1 || { tail -250 distcheck.out; exit 1; }"
fi
# the Debian packages: build (nocheck: the suite ran above), lintian,
# install, run, purge (docs/packaging.md)
if [ "${SKIP_DEB:-0}" != 1 ] && [ -f "$B/normal/Makefile" ]; then
    step debian sh tools/deb-check.sh "$B/normal"
fi
# the fuzzers, as many at once as there are CPUs (FUZZ_JOBS): each still
# gets FUZZ_SECONDS of one CPU
step fuzz env FUZZ_TIME="${FUZZ_SECONDS:-${FUZZ_TIME:-30}}" sh tools/fuzz.sh

took total "$T_RUN"
# what failed, last: a CI log whose beginning is cut still shows it
if [ -s "$FAILED_LIST" ]; then
    echo "== the failing tests' logs, their last 20 lines"
    while read -r label log; do
        echo "---- $label ($log)"
        tail -20 "$log"
    done <"$FAILED_LIST"
fi
[ -n "$failures" ] && echo "failures:$failures"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
