#!/bin/sh
# mdc_load_window.sh - bench/mdc-load's sliding window (--window N, and
# --window-each: one write per reply) over the three wire formats: text and
# native against mdcached, RESP against Redis where redis-server is
# installed (always in CI).  Each run answers every request in order (the
# generator stops at a reply out of order or malformed), without error,
# every get a hit after the prefill, and the JSON says which mode ran.
# Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/realclients/common.sh"
LOAD=${MDC_BUILDDIR:-.}/bench/mdc-load
[ -x "$LOAD" ] || { echo "FAIL: $LOAD not built"; exit 1; }

# the generator keeps its buffers to the end (exit frees them): no leak
# report for it from the sanitizer builds (the daemon keeps its checks)
load() { ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" "$LOAD" "$@"; }
field() { sed -n "s/.*\"$1\": \([a-z0-9.]*\).*/\1/p" "$2" | head -1; }

# one PROTO ADDR NAME ARGS...: a prefilled run of 0.5 s in mode ARGS; a
# run that answered nothing in its window (a busy machine can leave the
# daemon or the generator without a CPU for all of it) is made again,
# twice as long each time, up to 16 s: only a mode that never answers
# fails "no request answered"
one() {
    _p=$1 _a=$2 _n=$3
    shift 3
    for _d in 0.5 1 2 4 8 16; do
        load -P "$_p" -s "$_a" -c 4 -k 1000 -f -D "$_d" -w 0.1 -q \
            -j "$RC_TMP/$_n.json" "$@"
        _rc=$?
        [ $_rc -ne 0 ] && break
        [ "$(field requests "$RC_TMP/$_n.json")" != 0 ] && break
        echo "note: $_n: no request answered in a window of $_d s; its report:"
        cat "$RC_TMP/$_n.json"
    done
    check "$_n: ran" 0 $_rc
    check "$_n: no errors" 0 "$(field errors "$RC_TMP/$_n.json")"
    check "$_n: no misses" 0 "$(field misses "$RC_TMP/$_n.json")"
    check "$_n: depth" 8 "$(field depth "$RC_TMP/$_n.json")"
    check "$_n: sliding window" true "$(field eager "$RC_TMP/$_n.json")"
    _r=$(field requests "$RC_TMP/$_n.json")
    if [ "${_r:-0}" -gt 0 ]; then ok "$_n: $_r requests answered"
    else fail "$_n: no request answered"; fi
}

start_mdc D
A=127.0.0.1:$D_PORT
for p in text native; do
    one $p "$A" "$p-window" --window 8
    check "$p-window: a write per read" false \
        "$(field window_each "$RC_TMP/$p-window.json")"
    one $p "$A" "$p-each" --window 8 --window-each
    check "$p-each: a write per reply" true \
        "$(field window_each "$RC_TMP/$p-each.json")"
done

if command -v redis-server >/dev/null 2>&1; then
    redis-server --port 0 --unixsocket "$RC_TMP/redis.sock" --save '' \
        --appendonly no --daemonize no >"$RC_TMP/redis.log" 2>&1 &
    RC_PIDS="$RC_PIDS $!"
    wait_listening "$RC_TMP/redis.sock" || fail "redis-server: not listening in 30 s"
    one resp "$RC_TMP/redis.sock" resp-window --window 8
    one resp "$RC_TMP/redis.sock" resp-each --window 8 --window-each
elif [ "${CI:-}" = true ]; then
    fail "redis-server not installed (tools/deps.sh installs it)"
else
    echo "note: redis-server not installed, RESP not checked"
fi
rc_finish
