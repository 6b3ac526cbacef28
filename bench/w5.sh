#!/bin/bash
# bench/w5.sh - W5, the tag benchmark (docs/benchmarking.md), and libmdcached's
# own figures.  Starts mdcached, memcached and redis-server on loopback with
# equal settings (one worker thread, 1024 MiB, pinned to CPU 0; the load on
# CPU 1), prefills each, runs the mixed workload A B C A B C A B C, then
# invalidation latency by tag size and memory left after expiry; then
# single GET / 100-key multi-get rates, system calls per multi-get, and
# del_by_tag fan-out latency over 1 and 3 servers.  W5a (the tagged read:
# the 100 records of one tag) runs after the mixed workload, the three
# targets alternating round by round (W5A_GROUPS tags, default 1000).
#
#   bash bench/w5.sh               from the build top (or MDC_BUILDDIR=...)
#   W5_SECS=5 W5_ROUNDS=3 W5_CONNS=4 W5_RECORDS=20000 bash bench/w5.sh
#
# Results: bench/results/w5-<date>.jsonl (one JSON object per line) and a
# summary on stdout.  Needs memcached, redis-server, taskset; strace optional.
set -eu

B=${MDC_BUILDDIR:-.}
SRC=$(cd "$(dirname "$0")/.." && pwd)
SECS=${W5_SECS:-5}
ROUNDS=${W5_ROUNDS:-3}
CONNS=${W5_CONNS:-4}
RECORDS=${W5_RECORDS:-20000}
BASE=${W5_PORT:-23310}
OUTDIR=${W5_OUTDIR:-$SRC/bench/results}
STAMP=$(date -u +%Y%m%d-%H%M%S)
OUT=$OUTDIR/w5-$STAMP.jsonl
TMP=$(mktemp -d /tmp/w5.XXXXXX)
PIDS=""

for bin in "$B/server/mdcached" "$B/bench/w5" "$B/bench/w5_client"; do
    [ -x "$bin" ] || { echo "w5.sh: $bin missing (make first)" >&2; exit 1; }
done
command -v memcached >/dev/null || { echo "w5.sh: memcached missing" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "w5.sh: redis-server missing" >&2; exit 1; }
mkdir -p "$OUTDIR"

cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null || true; done
    sleep 0.3
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

wait_port() {
    i=0
    while ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 100 ] || { echo "w5.sh: port $1 not up" >&2; exit 1; }
        sleep 0.1
    done
}

PMDC=$((BASE + 1)); PMC=$((BASE + 2)); PRD=$((BASE + 3))
taskset -c 0 "$B/server/mdcached" -l 127.0.0.1 -p $PMDC -n 1 -t 0 -m 1024 -v 1 &
MDC_PID=$!; PIDS="$PIDS $MDC_PID"
taskset -c 0 memcached -l 127.0.0.1 -p $PMC -U 0 -t 1 -m 1024 -u nobody &
MC_PID=$!; PIDS="$PIDS $MC_PID"
taskset -c 0 redis-server --port $PRD --bind 127.0.0.1 --save '' \
    --appendonly no --maxmemory 1024mb --daemonize no --loglevel warning \
    --dir "$TMP" >"$TMP/redis.log" 2>&1 &
RD_PID=$!; PIDS="$PIDS $RD_PID"
wait_port $PMDC; wait_port $PMC; wait_port $PRD

{
    echo "{\"mode\":\"meta\",\"date\":\"$(date -u +%FT%TZ)\",\"host\":\"$(uname -srm)\",\"cpus\":$(nproc),\"secs\":$SECS,\"rounds\":$ROUNDS,\"conns\":$CONNS,\"records\":$RECORDS,\"memcached\":\"$(memcached -V | tr -d '\n')\",\"redis\":\"$(redis-server -v | sed 's/.*v=\([^ ]*\).*/\1/')\",\"cmd\":\"W5_SECS=$SECS W5_ROUNDS=$ROUNDS W5_CONNS=$CONNS W5_RECORDS=$RECORDS bash bench/w5.sh\"}"
} >"$OUT"

port_of() { case $1 in mdcached) echo $PMDC;; memcached) echo $PMC;; redis) echo $PRD;; esac; }
pid_of() { case $1 in mdcached) echo $MDC_PID;; memcached) echo $MC_PID;; redis) echo $RD_PID;; esac; }
W5() { taskset -c 1 "$B/bench/w5" -r "$RECORDS" "$@"; }

echo "== W5 load ($RECORDS records)" >&2
for t in mdcached memcached redis; do W5 -T $t -p "$(port_of $t)" load >>"$OUT"; done
echo "== W5 mixed workload: $ROUNDS rounds x $SECS s, $CONNS connections" >&2
r=0
while [ $r -lt "$ROUNDS" ]; do
    for t in mdcached memcached redis; do
        W5 -T $t -p "$(port_of $t)" -P "$(pid_of $t)" -d "$SECS" -c "$CONNS" run >>"$OUT"
    done
    r=$((r + 1))
done
echo "== W5a tagged read (100 records of one tag): $ROUNDS rounds x $SECS s" >&2
r=0
while [ $r -lt "$ROUNDS" ]; do
    for t in mdcached memcached redis; do
        W5 -T $t -p "$(port_of $t)" -P "$(pid_of $t)" -d "$SECS" -g "${W5A_GROUPS:-1000}" w5a >>"$OUT"
    done
    r=$((r + 1))
done
echo "== W5 invalidation latency by tag size" >&2
for t in mdcached memcached redis; do W5 -T $t -p "$(port_of $t)" inval >>"$OUT"; done
echo "== W5 memory left after expiry (the three in parallel, ~25 s)" >&2
LEAK=""
for t in mdcached memcached redis; do
    W5 -T $t -p "$(port_of $t)" -e 3 -w 15 leak >"$TMP/leak-$t.json" &
    LEAK="$LEAK $!"
done
for p in $LEAK; do wait "$p"; done
cat "$TMP"/leak-*.json >>"$OUT"

echo "== libmdcached: get, 100-key mget, fan-out" >&2
CL() { taskset -c 1 "$B/bench/w5_client" "$@"; }
CL -s 127.0.0.1:$PMDC -d "$SECS" get >>"$OUT"
CL -s 127.0.0.1:$PMDC -d "$SECS" mget >>"$OUT"
if command -v strace >/dev/null; then
    strace -f -c -o "$TMP/strace.txt" -e trace=sendto,recvfrom,poll,write,read \
        "$B/bench/w5_client" -s 127.0.0.1:$PMDC -d 1 mget >"$TMP/mget.json"
    OPS=$(sed 's/.*"ops":\([0-9]*\).*/\1/' "$TMP/mget.json")
    awk -v ops="$OPS" '$NF ~ /^(sendto|recvfrom|poll)$/ { c[$NF] = $4 }
        END { printf("{\"mode\":\"mget_syscalls\",\"ops\":%d,\"sendto_per_mget\":%.2f,\"recvfrom_per_mget\":%.2f,\"poll_per_mget\":%.2f}\n",
              ops, c["sendto"] / ops, c["recvfrom"] / ops, c["poll"] / ops) }' \
        "$TMP/strace.txt" >>"$OUT"
fi
P2=$((BASE + 4)); P3=$((BASE + 5))
taskset -c 0 "$B/server/mdcached" -l 127.0.0.1 -p $P2 -n 1 -t 0 -v 1 &
PIDS="$PIDS $!"
taskset -c 0 "$B/server/mdcached" -l 127.0.0.1 -p $P3 -n 1 -t 0 -v 1 &
PIDS="$PIDS $!"
wait_port $P2; wait_port $P3
CL -s 127.0.0.1:$PMDC fanout >>"$OUT"
CL -s 127.0.0.1:$PMDC -s 127.0.0.1:$P2 -s 127.0.0.1:$P3 fanout >>"$OUT"

echo "== results: $OUT" >&2
if command -v python3 >/dev/null; then
    python3 "$SRC/bench/w5_summary.py" "$OUT"
else
    cat "$OUT"
fi
