#!/bin/sh
# bench/soak.sh - a soak of mdcached (docs/security.md): SOAK_SECONDS
# (default 120; the reported run uses 1800) of bench/soak_load - stores
# with tags and TTLs over ten times the memory limit, reads by key and by
# tag, tag invalidations, counters, connection churn - from SOAK_CLIENTS
# processes (default 2) against one daemon (-m 64, -n 2).  Passes when
#  - every reply was one the request allows (soak_load's own check);
#  - the daemon's RSS after warm-up stays within 10 % of its value at the
#    end of warm-up.  Warm-up is the first quarter of the run and, past
#    it, until the store is full (the first eviction): on a busy machine
#    the clients fill -m 64 later (34 s of 60 at load average 50), and the
#    RSS that filling adds is not growth.  A run whose store never filled,
#    or filled with fewer than 2 samples left, has no RSS to judge and
#    says so (a figure the load can take away);
#  - the daemon holds as many descriptors after the clients left as
#    before they came (no descriptor leak);
#  - "stats store_check" is "ok" at the end: both indexes agree
#    (needs a build configured with --enable-debug-commands).
# Prints one line per sample and a verdict; exit 0 on pass.
#
#     MDC_BUILDDIR=_build SOAK_SECONDS=1800 sh bench/soak.sh
set -u
B=${MDC_BUILDDIR:-.}
MDC=$B/server/mdcached
LOAD=$B/bench/soak_load
SECS=${SOAK_SECONDS:-120}
NCLI=${SOAK_CLIENTS:-2}
for f in "$MDC" "$LOAD"; do
    [ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
W=$(mktemp -d)
PORT=  # -p auto: the kernel picks it, the port file says which
DPID=
cleanup() {
    [ -n "$DPID" ] && kill -9 "$DPID" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

stat_of() { # NAME [GROUP]: one stat over the text protocol
    python3 - "$PORT" "$1" "${2:-}" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(("stats %s\r\n" % sys.argv[3]).encode())
buf = b""
while not (buf.endswith(b"END\r\n") or buf.endswith(b"ERROR\r\n")):
    d = s.recv(65536)
    if not d:
        break
    buf += d
for line in buf.decode().split("\r\n"):
    p = line.split(" ", 2)
    if len(p) == 3 and p[1] == sys.argv[2]:
        print(p[2])
        break
else:
    print("?")
PY
}
rss() { awk '/^VmRSS/ {print $2}' /proc/$DPID/status; }
nfds() { ls /proc/$DPID/fd | wc -l; }

"$MDC" -l 127.0.0.1 -p auto --port-file "$W/ports" -n 2 -m 64 -c 4096 >"$W/d.log" 2>&1 &
DPID=$!
i=0
# a ceiling, not a bound: a busy machine may take seconds to start it
while ! grep -q " ready" "$W/d.log" && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
grep -q " ready" "$W/d.log" || { echo "FAIL: daemon did not start"; cat "$W/d.log"; exit 1; }
PORT=$(awk '$1 == "tcp" { sub(/.*:/, "", $2); print $2; exit }' "$W/ports")
[ -n "$PORT" ] || { echo "FAIL: no tcp line in the port file"; cat "$W/ports"; exit 1; }
fd0=$(nfds)
# 10x overfill: keys x 4.5 KiB average = 10 x 64 MiB
KEYS=150000
echo "soak: ${SECS} s, $NCLI clients, $KEYS keys of 1-8 KiB over -m 64 (x10), pid $DPID, $fd0 fds"
pids=
for c in $(seq 1 "$NCLI"); do
    "$LOAD" "127.0.0.1:$PORT" "$SECS" "$KEYS" >"$W/load$c.out" 2>&1 &
    pids="$pids $!"
done
warm=$((SECS / 4))
step=$((SECS / 24))
[ $step -lt 2 ] && step=2
t0=$(date +%s)
rss_warm=
rss_n=0
rss_max=0
rss_min=
while :; do
    sleep $step
    t=$(($(date +%s) - t0))
    [ $t -ge "$SECS" ] && break
    r=$(rss)
    ev=$(stat_of evictions)
    echo "t=${t}s rss=${r} KiB fds=$(nfds) items=$(stat_of curr_items) evictions=$ev"
    [ -z "$rss_warm" ] && { [ $t -lt $warm ] || [ "$ev" = 0 ] || [ "$ev" = "?" ]; } && continue
    if [ -z "$rss_warm" ]; then
        rss_warm=$r
        rss_n=0
        echo "warm-up over at t=${t}s (the store full)"
    else
        rss_n=$((rss_n + 1))
    fi
    [ "$r" -gt $rss_max ] && rss_max=$r
    { [ -z "$rss_min" ] || [ "$r" -lt "$rss_min" ]; } && rss_min=$r
done
fail=0
for p in $pids; do
    wait "$p" || fail=1
done
cat "$W"/load*.out
[ $fail -eq 0 ] || echo "FAIL: a load client saw unexpected replies"
# connections closed: the descriptor count returns to where it was
i=0
while [ "$(nfds)" -gt "$fd0" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
fd1=$(nfds)
if [ "$fd1" -ne "$fd0" ]; then
    echo "FAIL: descriptors: $fd0 before, $fd1 after"
    fail=1
fi
# RSS after warm-up within 10 % of its value at the end of warm-up
if [ -z "$rss_warm" ] || [ "$rss_n" -lt 2 ]; then
    echo "note: the store was not full with 2 samples left (a busy machine): RSS not judged, max $rss_max KiB"
else
    lim=$((rss_warm + rss_warm / 10))
    echo "rss: $rss_warm KiB after warm-up, max $rss_max over $rss_n samples after it, min $rss_min (limit $lim)"
    if [ "$rss_max" -gt "$lim" ]; then
        echo "FAIL: RSS grew more than 10 % after warm-up"
        fail=1
    fi
fi
# expiring records (TTL <= 20 s) are all due and swept: the store is quiet
sleep 24
chk=$(stat_of store_check store_check)
echo "store_check: $chk"
if [ "$chk" != ok ]; then
    echo "FAIL: store_check: $chk (needs --enable-debug-commands)"
    fail=1
fi
kill -TERM "$DPID"
wait "$DPID"
rc=$?
DPID=
[ $rc -eq 0 ] || { echo "FAIL: daemon exit $rc"; fail=1; }
[ $fail -eq 0 ] && echo "soak: PASS" || echo "soak: FAIL"
exit $fail
