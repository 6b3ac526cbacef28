#!/bin/sh
# rc_twemproxy.sh - twemproxy (Debian's nutcracker) in front of three
# mdcached instances: md5, ketama distribution, servers without names,
# memcached protocol, auto_eject_hosts false
# (tests/realclients/nutcracker.yml.in).  300 keys set through the proxy
# and read back through it, multi-gets across the backends, gets/cas,
# incr/decr, delete; each key found on exactly one backend by asking the
# backends directly, all three holding some
# (tests/realclients/proxy_check.py).  Then the placement: 300 more keys
# set through the proxy are each on the backend libmdcached's ketama picks
# for the same server list, and a get through libmdcached's pool finds
# them; records stored with tags through libmdcached are found by tag
# through it and by plain gets through the proxy
# (tests/realclients/placement_check.py, tests/realclients/ketama_place).
# Exit 0 pass, 1 fail, 77 skip.
set -u
. "$(dirname "$0")/realclients/common.sh"
PATH=$PATH:/usr/sbin:/sbin  # nutcracker is in /usr/sbin
need nutcracker

start_mdc B1
start_mdc B2
start_mdc B3
echo "mdcached backends on ports $B1_PORT $B2_PORT $B3_PORT"

NC_LOG="$RC_TMP/nutcracker.log"
# nutcracker cannot take a port of the kernel's choosing nor report one:
# its ports are probed, and another process may bind one before nutcracker
# does.  So the start counts only when nutcracker itself holds both
# listening sockets (mc.py owns reads /proc: a connect could reach the
# other process); otherwise (it exits on "Address already in use") it is
# started again on fresh ports.  The race can cost a retry, and five in a
# row to fail the test.
try=0
while :; do
    try=$((try + 1))
    PROXY_PORT=$(rc_py freeport)
    STATS_PORT=$(rc_py freeport)
    sed -e "s/@PROXY_PORT@/$PROXY_PORT/" -e "s/@B1_PORT@/$B1_PORT/" \
        -e "s/@B2_PORT@/$B2_PORT/" -e "s/@B3_PORT@/$B3_PORT/" \
        "$RC_DIR/nutcracker.yml.in" >"$RC_TMP/nutcracker.yml"
    if [ $try -eq 1 ]; then
        nutcracker -t -c "$RC_TMP/nutcracker.yml" >"$RC_TMP/conftest" 2>&1
        r=$?
        check "nutcracker -t accepts the configuration" 0 $r
        [ $r -eq 0 ] || { cat "$RC_TMP/conftest"; rc_finish; }
    fi
    nutcracker -c "$RC_TMP/nutcracker.yml" -s "$STATS_PORT" -a 127.0.0.1 \
        -p "$RC_TMP/nutcracker.pid" -o "$NC_LOG" -v 4 &
    NC_PID=$!
    RC_PIDS="$RC_PIDS $NC_PID"
    rc_py owns "$NC_PID" 30 "$PROXY_PORT" "$STATS_PORT" && break
    kill "$NC_PID" 2>/dev/null
    wait "$NC_PID" 2>/dev/null
    echo "nutcracker did not hold ports $PROXY_PORT/$STATS_PORT (try $try): $(grep -i 'fail\|in use' "$NC_LOG" | tail -2)"
    if [ $try -ge 5 ]; then
        fail "nutcracker did not start; its log:"
        cat "$NC_LOG"
        rc_finish
    fi
done
echo "nutcracker pid $NC_PID on 127.0.0.1:$PROXY_PORT"

if command -v timeout >/dev/null 2>&1; then T="timeout 45"; else T=; fi
$T python3 "$RC_DIR/proxy_check.py" "$PROXY_PORT" "$B1_PORT" "$B2_PORT" "$B3_PORT"
r=$?
check "proxy_check.py" 0 $r
[ $r -eq 0 ] || { echo "---- nutcracker log"; tail -30 "$NC_LOG"; }

PLACE=${MDC_BUILDDIR:-.}/tests/realclients/ketama_place
if [ -x "$PLACE" ]; then
    $T python3 "$RC_DIR/placement_check.py" "$PROXY_PORT" "$PLACE" \
        "$B1_PORT" "$B2_PORT" "$B3_PORT"
    r=$?
    check "placement_check.py" 0 $r
    [ $r -eq 0 ] || { echo "---- nutcracker log"; tail -30 "$NC_LOG"; }
else
    fail "$PLACE not built"
fi

for n in B1 B2 B3; do
    eval "pid=\$${n}_PID"
    alive "$pid"
    check "backend $n still running" 0 $?
done
alive "$NC_PID"
check "nutcracker still running" 0 $?
rc_finish
