#!/bin/bash
# latency.sh - latency at a fixed offered load (open loop, mdc-load
# --rate), side by side: first memcached -t 1's W1 maximum is measured
# (closed loop, median of ROUNDS runs), then every target is run at 50 %
# and 80 % of it, in alternating rounds (bench/ab.sh), with p50/p99/p99.9
# per target.  Servers on CPU 0, the generator on CPU 1, as in compare.sh.
#
# usage: bench/latency.sh [-r ROUNDS] [-D SECS] [-B BUILD] [-o FILE]
#   (from the build directory; FILE gets one JSON line per load level)
# Targets: mdcached -n 1 -t 0, mdcached -n 4 -t 0, memcached -t 1 and -t 4;
# with URING_TARGETS=1 also mdcached -n 1 and -n 4 with --io=uring.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROUNDS=3
DUR=3
BUILD=$(pwd)
OUT=$HERE/results/latency-$(date -u +%Y%m%dT%H%M%SZ).jsonl
while getopts r:D:B:o: o; do
    case $o in
    r) ROUNDS=$OPTARG ;;
    D) DUR=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    o) OUT=$OPTARG ;;
    *) sed -n '2,12p' "$0"; exit 2 ;;
    esac
done
DAEMON=$BUILD/server/mdcached
# mdcached-n1/-n4 are the epoll backend (--io=auto is io_uring now), the
# -uring targets the other
EPOLL=
"$DAEMON" -h 2>&1 | grep -q -- '--io' && EPOLL=--io=epoll
mkdir -p "$(dirname "$OUT")"
MAXF=$(mktemp)
trap 'rm -f "$MAXF"' EXIT
AB_SUMMARY=$MAXF "$HERE/ab.sh" -r "$ROUNDS" -D "$DUR" -B "$BUILD" \
    "memcached-t1=memcached -u nobody -U 0 -t 1"
MAX=$(python3 -c "import json,sys; print(int(json.loads(open(sys.argv[1]).readline())['targets']['memcached-t1']['throughput']))" "$MAXF")
echo "memcached -t 1 W1 maximum: $MAX req/s"
for pct in 50 80; do
    rate=$((MAX * pct / 100))
    echo "== $pct % of it: $rate req/s offered"
    LOAD_ARGS="-R $rate" AB_SUMMARY=$OUT "$HERE/ab.sh" -r "$ROUNDS" -D "$DUR" \
        -B "$BUILD" "mdcached-n1=$DAEMON -n 1 -t 0 $EPOLL" \
        "mdcached-n4=$DAEMON -n 4 -t 0 $EPOLL" \
        "memcached-t1=memcached -u nobody -U 0 -t 1" \
        "memcached-t4=memcached -u nobody -U 0 -t 4" \
        ${URING_TARGETS:+"mdcached-n1-uring=$DAEMON -n 1 -t 0 --io=uring"} \
        ${URING_TARGETS:+"mdcached-n4-uring=$DAEMON -n 4 -t 0 --io=uring"}
done
echo "results: $OUT"
