# tests/realclients/common.sh - sourced by tests/rc_*.sh: start mdcached
# daemons on free loopback ports, stop them on exit (even on failure), and
# count checks.  POSIX sh.
#
# Environment: MDC_BUILDDIR (default: the current directory, where automake
# runs the tests) holds server/mdcached.

RC_DIR=$(cd "$(dirname "$0")/realclients" && pwd)
# no __pycache__ in the source tree (read-only under distcheck anyway)
PYTHONDONTWRITEBYTECODE=1
export PYTHONDONTWRITEBYTECODE
MDC_BIN=${MDC_BUILDDIR:-.}/server/mdcached
RC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/mdc-rc.XXXXXX")
RC_PIDS=""
RC_MDC=""
rc_fails=0
rc_oks=0

rc_cleanup() {
    for p in $RC_PIDS; do kill "$p" 2>/dev/null; done
    for p in $RC_PIDS; do wait "$p" 2>/dev/null; done
    [ -n "${RC_KEEP:-}" ] || rm -rf "$RC_TMP"
}
trap rc_cleanup EXIT
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

# stop_mdc NAME: SIGTERM, then expect exit status 0 within 10 s and no
# sanitizer report in its log (the asan/tsan builds run these tests too)
stop_mdc() {
    eval "_pid=\${${1}_PID}"
    kill "$_pid" 2>/dev/null
    _i=0
    while [ "$(rc_state "$_pid")" != Z ] && [ -n "$(rc_state "$_pid")" ] &&
        [ $_i -lt 100 ]; do
        sleep 0.1
        _i=$((_i + 1))
    done
    if [ $_i -ge 100 ]; then
        fail "daemon $1 did not stop within 10 s of SIGTERM"
        kill -9 "$_pid" 2>/dev/null
    fi
    wait "$_pid"
    _st=$?
    _rest=""
    for _p in $RC_PIDS; do [ "$_p" = "$_pid" ] || _rest="$_rest $_p"; done
    RC_PIDS=$_rest
    check "daemon $1 exited cleanly on SIGTERM" 0 $_st
    if grep -qE 'Sanitizer|runtime error' "$RC_TMP/$1.log"; then
        fail "sanitizer report in daemon $1's log:"
        cat "$RC_TMP/$1.log"
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

# start_mdc NAME: start a daemon on a port it picks (-p auto, read from its
# --port-file: no free port is probed); sets NAME_PORT, NAME_PID.
start_mdc() {
    _n=$1
    rm -f "$RC_TMP/$_n.ports"
    "$MDC_BIN" -l 127.0.0.1 -p auto --port-file "$RC_TMP/$_n.ports" -m 32 \
        -n 1 >"$RC_TMP/$_n.log" 2>&1 &
    _pid=$!
    RC_PIDS="$RC_PIDS $_pid"
    if _port=$(rc_py portfile "$RC_TMP/$_n.ports" tcp 10 "$_pid") &&
        rc_py wait 127.0.0.1 "$_port" 10 "$_pid"; then
        eval "${_n}_PORT=$_port ${_n}_PID=$_pid"
        RC_MDC="$RC_MDC $_n"
        return 0
    fi
    kill "$_pid" 2>/dev/null
    echo "FAIL: could not start $MDC_BIN; its log:"
    cat "$RC_TMP/$_n.log"
    exit 1
}
