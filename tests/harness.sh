# tests/harness.sh - the test harness of the shell black-box tests, sourced
# (docs/testing.md); tests/harness.py does the waiting, tests/server_client.c
# is the C harness, and all three work alike.  POSIX sh.
#
#   . "$(dirname "$0")/harness.sh"
#   mdc_start D -n 1 -m 32      # ready when it returns: D_PID, D_PORT, ...
#   ... the test, on 127.0.0.1:$D_PORT ...
#   mdc_stop D                  # SIGTERM; its exit status (0 wanted)
#
# mdc_start runs $MDC_BIN on ports it picks itself (-p auto; mdc_start_raw
# adds none: the test gives its own listeners) and --port-file, its output
# in $H_TMP/NAME.log, and waits for the daemon's own signal that it is
# ready: READY=1 (sd_notify; harness.py exec binds the NOTIFY_SOCKET and
# then becomes the daemon), or in a build --without-systemd its port file,
# written once every listener is bound (harness.py wait-ready: inotify and
# a pidfd, no sleep and no connect probe).
# MDC_WRAP (e.g. "ip netns exec NS") is put in front of the daemon;
# MDC_NOTIFY=0 starts it without NOTIFY_SOCKET (the port file says ready);
# MDC_LOG names its output file instead of $H_TMP/NAME.log.
# A daemon that does not get ready, or does not exit 0 on mdc_stop, has its
# log printed; so has each one still running when the test exits non-zero
# (the EXIT trap: a script with its own trap calls mdc_cleanup from it).
#
# Environment: MDC_BUILDDIR (default: the current directory, where automake
# runs the tests) holds server/mdcached; MDC_TEST_START_TIMEOUT (seconds,
# default 60); MDC_TEST_KEEP=1 keeps $H_TMP.

H_DIR=$(cd "$(dirname "$0")" && pwd)
# the system's python3 when there is one: a version manager's python3 (a
# pyenv shim is a shell script) costs 0.3 s a call, 15 times this one
H_PYTHON=python3
[ -x /usr/bin/python3 ] && H_PYTHON=/usr/bin/python3
H_PY="$H_DIR/harness.py"
MDC_BIN=${MDC_BIN:-${MDC_BUILDDIR:-.}/server/mdcached}
H_TMP=$(mktemp -d "${TMPDIR:-/tmp}/mdc-test.XXXXXX")
chmod 755 "$H_TMP" # the daemon may drop to nobody after binding
H_NAMES=""
# no __pycache__ in the source tree (read-only under distcheck anyway)
PYTHONDONTWRITEBYTECODE=1
export PYTHONDONTWRITEBYTECODE

# mdc_print_log NAME WHY: the daemon's output (and --log-file, if named in
# NAME_LOGFILE) on stdout, which automake keeps in the test's .log
mdc_print_log() {
    eval "_pid=\${${1}_PID:-?} _log=\${${1}_LOG} _lf=\${${1}_LOGFILE:-}"
    echo "mdcached $1 (pid $_pid): $2"
    for _f in $_lf $_log; do
        [ -f "$_f" ] || continue
        echo "---- $_f ----"
        tail -c 65536 "$_f"
        echo "---- end of $_f ----"
    done
}

# mdc_start NAME [ARGS...]: start a daemon and wait until it is ready; 0
# and NAME_PID, NAME_PORT (TCP on 127.0.0.1, if it has one), NAME_PORTS
# (its port file), NAME_LOG (its output); else 1, its log printed and
# NAME_STATUS its exit status (124: not ready in time, killed).
mdc_start() {
    _n=$1
    shift
    _pf="$H_TMP/$_n.ports"
    _log=${MDC_LOG:-$H_TMP/$_n.log}
    rm -f "$_pf"
    _lf=""
    _prev=""
    for _a in "$@"; do # the test's own --log-file, printed too
        case $_prev in --log-file) _lf=$_a ;; esac
        case $_a in --log-file=*) _lf=${_a#--log-file=} ;; esac
        _prev=$_a
    done
    # harness.py exec binds a NOTIFY_SOCKET, then becomes the daemon (its
    # pid is $!); $_rd appears on READY=1.  In a build --without-systemd
    # the daemon does not notify: the port file says it is ready.
    _rd="$H_TMP/$_n.ready"
    rm -f "$_rd"
    grep -q '^#define MDC_SD_NOTIFY 1' "${MDC_BUILDDIR:-.}/config.h" \
        2>/dev/null || _rd=$_pf
    [ "${MDC_TEST_NOTIFY:-1}" = 0 ] && _rd=$_pf
    _auto="-p auto"
    [ "${MDC_RAW:-0}" = 1 ] && _auto=""
    if [ "${MDC_NOTIFY:-1}" = 0 ]; then # no NOTIFY_SOCKET at all
        _rd=$_pf
        ${MDC_WRAP:-} env -u NOTIFY_SOCKET "$MDC_BIN" $_auto \
            --port-file "$_pf" "$@" >"$_log" 2>&1 &
    else
        ${MDC_WRAP:-} "$H_PYTHON" -S "$H_PY" exec "$H_TMP/$_n.ready" -- \
            "$MDC_BIN" $_auto --port-file "$_pf" "$@" >"$_log" 2>&1 &
    fi
    _pid=$!
    eval "${_n}_PID=$_pid ${_n}_PORTS='$_pf' ${_n}_LOG='$_log'"
    eval "${_n}_LOGFILE='$_lf' ${_n}_STATUS="
    "$H_PYTHON" -S "$H_PY" wait-ready "$_rd" "$_pid" "${MDC_TEST_START_TIMEOUT:-60}"
    case $? in
    0)
        H_NAMES="$H_NAMES $_n"
        _port=$(sed -n 's/^tcp 127\.0\.0\.1://p' "$_pf" | head -n 1)
        eval "${_n}_PORT=$_port"
        return 0 ;;
    1)
        wait "$_pid"
        _st=$?
        eval "${_n}_STATUS=$_st"
        mdc_print_log "$_n" "exited with status $_st before it was ready"
        return 1 ;;
    *)
        kill -9 "$_pid" 2>/dev/null
        wait "$_pid" 2>/dev/null
        eval "${_n}_STATUS=124"
        mdc_print_log "$_n" "not ready in time: killed"
        return 1 ;;
    esac
}

# mdc_start_raw NAME [ARGS...]: mdc_start without -p auto (the test gives
# its listeners)
mdc_start_raw() {
    MDC_RAW=1
    mdc_start "$@"
    _r=$?
    MDC_RAW=0
    return $_r
}

# mdc_run NAME [ARGS...]: a daemon that must not start (a refused option):
# its exit status, its output in NAME_LOG; one that gets ready is stopped
# with its log printed: 125.
mdc_run() {
    _n=$1
    shift
    _log="$H_TMP/$_n.log"
    eval "${_n}_LOG='$_log' ${_n}_LOGFILE= ${_n}_PORTS='$H_TMP/$_n.ports'"
    rm -f "$H_TMP/$_n.ports"
    ${MDC_WRAP:-} "$MDC_BIN" --port-file "$H_TMP/$_n.ports" "$@" >"$_log" 2>&1 &
    _pid=$!
    eval "${_n}_PID=$_pid"
    "$H_PYTHON" -S "$H_PY" wait-ready "$H_TMP/$_n.ports" "$_pid" \
        "${MDC_TEST_START_TIMEOUT:-60}"
    case $? in
    1) wait "$_pid"; return $? ;;
    0) mdc_print_log "$_n" "started, but should not have"
       mdc_stop "$_n"
       return 125 ;;
    *) kill -9 "$_pid" 2>/dev/null
       wait "$_pid" 2>/dev/null
       mdc_print_log "$_n" "neither ready nor stopped in time: killed"
       return 124 ;;
    esac
}

# mdc_wait_ready FILE PID [SECS]: for a daemon the test starts itself (under
# setpriv, say): wait until FILE (its --port-file) is there: 0, 1 if PID
# exited first, 2 after SECS (default: the start timeout)
mdc_wait_ready() {
    "$H_PYTHON" -S "$H_PY" wait-ready "$1" "$2" "${3:-${MDC_TEST_START_TIMEOUT:-60}}"
}

# mdc_port NAME KIND [HOST]: a port of its port file (tcp, udp, tls,
# metrics; host 127.0.0.1 by default)
mdc_port() {
    eval "_pf=\${${1}_PORTS}"
    "$H_PYTHON" -S "$H_PY" port "$_pf" "$2" "${3:-127.0.0.1}"
}

# mdc_stop NAME [SIG]: send SIG (TERM), wait (up to the start timeout, then
# SIGKILL); returns the exit status (128+signal for a signal), also in
# NAME_STATUS; after SIGTERM a status other than 0 prints its log.
mdc_stop() {
    eval "_pid=\${${1}_PID}"
    _sig=${2:-TERM}
    kill -"$_sig" "$_pid" 2>/dev/null
    if ! "$H_PYTHON" -S "$H_PY" wait-exit "$_pid" "${MDC_TEST_START_TIMEOUT:-60}"; then
        mdc_print_log "$1" "did not stop after SIG$_sig: killed"
        kill -9 "$_pid" 2>/dev/null
    fi
    wait "$_pid"
    _st=$?
    eval "${1}_STATUS=$_st"
    _rest=""
    for _x in $H_NAMES; do [ "$_x" = "$1" ] || _rest="$_rest $_x"; done
    H_NAMES=$_rest
    if [ "$_sig" = TERM ] && [ "$_st" -ne 0 ]; then
        mdc_print_log "$1" "exit status $_st after SIGTERM"
    fi
    return "$_st"
}

# mdc_cleanup [STATUS]: kill the daemons still running (their logs printed
# when STATUS, the test's exit status, is not 0) and remove $H_TMP
mdc_cleanup() {
    for _x in $H_NAMES; do
        eval "_pid=\${${_x}_PID}"
        [ "${1:-0}" -eq 0 ] || mdc_print_log "$_x" "still running at exit"
        kill -9 "$_pid" 2>/dev/null
        wait "$_pid" 2>/dev/null
    done
    H_NAMES=""
    [ "${MDC_TEST_KEEP:-}" = 1 ] || rm -rf "$H_TMP"
}
trap 'mdc_cleanup $?' EXIT
