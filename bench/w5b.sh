#!/bin/bash
# bench/w5b.sh - W5b, invalidation beside W1: each server (mdcached,
# memcached, Redis; one worker thread, pinned to CPU 0) serves W1 (mdc-load,
# 90:10 get:set, 100 000 keys, 50 connections, CPU 1) for W5B_SECS seconds
# alone, then again while bench/w5 w5b refills a tag of W5B_SIZE records and
# invalidates it every 100 ms (mdcached del_by_tag; Redis Lua SSCAN + DEL as
# Symfony's RedisTagAwareAdapter; memcached a version-key incr).  Rounds
# alternate the targets and the with/without order.
#
#   bash bench/w5b.sh                 from the build top (or MDC_BUILDDIR=...)
#   W5B_SECS=10 W5B_ROUNDS=3 W5B_SIZE=10000 bash bench/w5b.sh
#
# Results: bench/results/w5b-<date>.jsonl (mdc-load JSON lines labelled
# "<target> alone" / "<target> with-w5b", and w5's w5b lines); a summary of
# W1 p99 with and without, invalidation latency and what the tag index kept.
set -eu

B=${MDC_BUILDDIR:-.}
SRC=$(cd "$(dirname "$0")/.." && pwd)
SECS=${W5B_SECS:-10}
ROUNDS=${W5B_ROUNDS:-3}
SIZE=${W5B_SIZE:-10000}
BASE=${W5B_PORT:-23350}
OUTDIR=${W5B_OUTDIR:-$SRC/bench/results}
OUT=$OUTDIR/w5b-$(date -u +%Y%m%d-%H%M%S).jsonl
TMP=$(mktemp -d /tmp/w5b.XXXXXX)
PIDS=""

for bin in "$B/server/mdcached" "$B/bench/w5" "$B/bench/mdc-load"; do
    [ -x "$bin" ] || { echo "w5b.sh: $bin missing (make first)" >&2; exit 1; }
done
command -v memcached >/dev/null || { echo "w5b.sh: memcached missing" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "w5b.sh: redis-server missing" >&2; exit 1; }
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
        i=$((i + 1)); [ $i -lt 100 ] || { echo "w5b.sh: port $1 not up" >&2; exit 1; }
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

port_of() { case $1 in mdcached) echo $PMDC;; memcached) echo $PMC;; redis) echo $PRD;; esac; }
pid_of() { case $1 in mdcached) echo $MDC_PID;; memcached) echo $MC_PID;; redis) echo $RD_PID;; esac; }
proto_of() { case $1 in mdcached) echo native;; memcached) echo text;; redis) echo resp;; esac; }

echo "{\"mode\":\"meta\",\"date\":\"$(date -u +%FT%TZ)\",\"host\":\"$(uname -srm)\",\"cpus\":$(nproc),\"secs\":$SECS,\"rounds\":$ROUNDS,\"size\":$SIZE,\"cmd\":\"W5B_SECS=$SECS W5B_ROUNDS=$ROUNDS W5B_SIZE=$SIZE bash bench/w5b.sh\"}" >"$OUT"

w1() { # target label
    taskset -c 1 "$B/bench/mdc-load" -s "127.0.0.1:$(port_of "$1")" \
        -P "$(proto_of "$1")" -r 90:10 -k 100000 -D "$SECS" -w 1 \
        -p "$(pid_of "$1")" -L "$1 $2" -q -j - >>"$OUT"
}
with_w5b() { # target
    taskset -c 1 "$B/bench/w5" -T "$1" -p "$(port_of "$1")" -d "$((SECS + 1))" \
        -g "$SIZE" w5b >"$TMP/w5b-$1.json" &
    W=$!
    w1 "$1" with-w5b
    wait $W || true
    cat "$TMP/w5b-$1.json" >>"$OUT"
}

for t in mdcached memcached redis; do
    taskset -c 1 "$B/bench/mdc-load" -s "127.0.0.1:$(port_of $t)" \
        -P "$(proto_of $t)" -k 100000 -f -D 1 -w 0 -q >/dev/null
done
r=0
while [ $r -lt "$ROUNDS" ]; do
    for t in mdcached memcached redis; do
        echo "== round $r: $t" >&2
        if [ $((r % 2)) -eq 0 ]; then w1 $t alone; with_w5b $t
        else with_w5b $t; w1 $t alone; fi
    done
    r=$((r + 1))
done

echo "== results: $OUT" >&2
python3 - "$OUT" <<'PY'
import json, statistics as S, sys
# mdc-load writes one JSON object over several lines: read a stream
text, rows, dec, i = open(sys.argv[1]).read(), [], json.JSONDecoder(), 0
while True:
    while i < len(text) and text[i].isspace():
        i += 1
    if i >= len(text):
        break
    obj, i = dec.raw_decode(text, i)
    rows.append(obj)
meta = rows[0]
print(f"W5b run {meta['date']} on {meta['host']}; W1 {meta['secs']} s per "
      f"window, {meta['rounds']} rounds; tag of {meta['size']} records "
      f"refilled + invalidated every 100 ms\n")
print("| target | W1 p99 alone us | W1 p99 with W5b us | ratio | "
      "invalidation p50 us | p99 us | tag index after | late periods |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
med = {}
for t in ["mdcached", "memcached", "redis"]:
    def p99(lbl):
        v = [r["latency_us"]["p99"] for r in rows
             if r.get("label") == f"{t} {lbl}"]
        return S.median(v) if v else float("nan"), v
    a, av = p99("alone")
    w, wv = p99("with-w5b")
    inv = [r for r in rows if r.get("mode") == "w5b" and r["target"] == t]
    if not inv:
        continue
    p50 = S.median(r["inval_p50_us"] for r in inv)
    q99 = S.median(r["inval_p99_us"] for r in inv)
    med[t] = p50
    left = max(r["tag_left_max"] for r in inv)
    late = sum(r["late_periods"] for r in inv)
    print(f"| {t} | {a:.0f} {av} | {w:.0f} {wv} | {w / a:.2f}x | {p50:.0f} | "
          f"{q99:.0f} | {left} | {late} |")
if "mdcached" in med and "redis" in med:
    print(f"\ninvalidation p50, mdcached / Redis: "
          f"{med['mdcached'] / med['redis']:.2f}")
PY
