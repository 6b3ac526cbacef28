# tests/realclients/common.sh - sourced by tests/rc_*.sh: start mdcached
# daemons on free loopback ports, stop them on exit (even on failure), and
# count checks.  POSIX sh.
#
# Environment: MDC_BUILDDIR (default: the current directory, where automake
# runs the tests) holds server/mdcached.

RC_DIR=$(cd "$(dirname "$0")/realclients" && pwd)
MDC_BIN=${MDC_BUILDDIR:-.}/server/mdcached
RC_TMP=$(mktemp -d "${TMPDIR:-/tmp}/mdc-rc.XXXXXX")
RC_PIDS=""
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

rc_finish() {
    echo "$rc_oks passed, $rc_fails failed"
    [ "$rc_fails" -eq 0 ] || exit 1
    exit 0
}

[ -x "$MDC_BIN" ] || { echo "FAIL: $MDC_BIN not built (set MDC_BUILDDIR)"; exit 1; }
need python3

rc_py() { python3 "$RC_DIR/mc.py" "$@"; }

# start_mdc NAME: start a daemon on a free port; sets NAME_PORT, NAME_PID.
# A port taken between picking and binding makes the daemon exit: retry.
start_mdc() {
    _n=$1
    _try=0
    while [ $_try -lt 5 ]; do
        _try=$((_try + 1))
        _port=$(rc_py freeport) || break
        "$MDC_BIN" -l 127.0.0.1 -p "$_port" -m 32 -n 1 \
            >"$RC_TMP/$_n.log" 2>&1 &
        _pid=$!
        RC_PIDS="$RC_PIDS $_pid"
        if rc_py wait 127.0.0.1 "$_port" 10 "$_pid"; then
            eval "${_n}_PORT=$_port ${_n}_PID=$_pid"
            return 0
        fi
        kill "$_pid" 2>/dev/null
    done
    echo "FAIL: could not start $MDC_BIN; its log:"
    cat "$RC_TMP/$_n.log"
    exit 1
}
