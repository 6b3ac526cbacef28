# tests/realclients/common.sh - sourced by tests/rc_*.sh (and by
# missratio.sh, mdc_load_rate.sh): start mdcached daemons on free loopback
# ports through the harness (tests/harness.sh), stop them on exit (even on
# failure), and count checks.  POSIX sh.
#
# Environment: MDC_BUILDDIR (default: the current directory, where automake
# runs the tests) holds server/mdcached.

RC_DIR=$(cd "$(dirname "$0")/realclients" && pwd)
. "$(dirname "$0")/harness.sh"
RC_TMP=$H_TMP
RC_PIDS="" # other processes of the test (nutcracker)
RC_MDC=""
rc_fails=0
rc_oks=0

rc_cleanup() {
    _st=$1
    for p in $RC_PIDS; do kill "$p" 2>/dev/null; done
    for p in $RC_PIDS; do wait "$p" 2>/dev/null; done
    [ -z "${RC_KEEP:-}" ] || MDC_TEST_KEEP=1
    mdc_cleanup "$_st"
}
trap 'rc_cleanup $?' EXIT
trap 'exit 1' INT TERM HUP

skip() { echo "SKIP: $*"; exit 77; }
ok() { rc_oks=$((rc_oks + 1)); echo "ok: $*"; }
fail() { rc_fails=$((rc_fails + 1)); echo "FAIL: $*"; }

# check DESC EXPECTED ACTUAL
check() {
    if [ "$2" = "$3" ]; then ok "$1"; else
        fail "$1: expected [$2], got [$3]"; fi
}

need() { # need CMD...: skip unless every command is installed
    for c in "$@"; do
        command -v "$c" >/dev/null 2>&1 || skip "$c not installed"
    done
}

# rc_state PID: the process state letter (Z: exited, not yet reaped)
rc_state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -c1; }

# alive PID: PID runs (a child that exited stays a zombie until reaped)
alive() { _s=$(rc_state "$1"); [ -n "$_s" ] && [ "$_s" != Z ]; }

# stop_mdc NAME: SIGTERM (tests/harness.sh's mdc_stop), then expect exit
# status 0 and no sanitizer report in its log (the asan/tsan builds run
# these tests too)
stop_mdc() {
    mdc_stop "$1"
    check "daemon $1 exited cleanly on SIGTERM" 0 $?
    eval "_log=\${${1}_LOG}"
    if grep -qE 'Sanitizer|runtime error' "$_log"; then
        fail "sanitizer report in daemon $1's log:"
        cat "$_log"
    fi
}

rc_finish() {
    for _n in $RC_MDC; do stop_mdc "$_n"; done
    RC_MDC=""
    echo "$rc_oks passed, $rc_fails failed"
    [ "$rc_fails" -eq 0 ] || exit 1
    exit 0
}

[ -x "$MDC_BIN" ] || { echo "FAIL: $MDC_BIN not built (set MDC_BUILDDIR)"; exit 1; }
need python3

rc_py() { python3 "$RC_DIR/mc.py" "$@"; }
# wait_listening PATH: until a connection to the Unix socket PATH is
# accepted (its file exists from bind(), before listen(): a connect in
# between is refused, as a busy machine showed), 30 s at most (a hang)
wait_listening() {
    python3 - "$1" <<'PY'
import socket, sys, time
end = time.monotonic() + 30
while True:
    s = socket.socket(socket.AF_UNIX)
    try:
        s.connect(sys.argv[1])
        sys.exit(0)
    except OSError:
        if time.monotonic() > end:
            sys.exit(1)
        time.sleep(0.05)
    finally:
        s.close()
PY
}

# start_mdc NAME: start a daemon through the harness on a port it picks
# (-p auto, read from its --port-file: no free port is probed); sets
# NAME_PORT, NAME_PID.
start_mdc() {
    if mdc_start "$1" -l 127.0.0.1 -m 32 -n 1; then
        RC_MDC="$RC_MDC $1"
        return 0
    fi
    echo "FAIL: could not start $MDC_BIN"
    exit 1
}
