#!/bin/bash
# bytes.sh - bytes per record, mdcached beside memcached, in one run
# (issue 27 item 3; docs/performance.md, "Memory per record and bytes per record"):
#   1. records held in -m MIB (default 64) after FILL sets of 16-byte keys
#      and 32-byte values (more than either holds: both evict);
#   2. RSS per record once N records of the same shape are loaded into
#      -m 4096 (W6; nothing evicted);
#   3. the store-level table (bench/rec-bytes): where each record's bytes
#      go for 16/32, 16/32 with 2 tags and the miss-ratio trace's size mix;
#   4. the miss-ratio trace's size mix through both servers: a z1.0 trace
#      of MIX_REQUESTS (3 M) requests over MIX_OBJECTS (1 M) objects
#      replayed read-through into -m 4096 (every object it asks for held):
#      records, `stats bytes` and RSS per record;
#   5. per value size (SIZES, default 32 100 1024 16384 262144 bytes,
#      16-byte keys): bench/overfill.py writes twice what -m MIB holds over
#      4 connections and reads every key back: records held, and RSS
#      growth (after the writes, less before) per record held; mdcached
#      -n 4 -t 0 (MDC_ARGS) beside memcached -t 4.
# Each server runs pinned to CPU 0, the loader to CPU 1.
#
# usage: bench/bytes.sh [-n RECORDS] [-f FILL] [-m MIB] [-B BUILD_DIR] [-s STEPS]
#   STEPS: any of 1 2 3 4 5 (default "1 2 3 4 5"); MDCACHED=path overrides
#   BUILD_DIR/server/mdcached.
set -eu

N=10000000
FILL=1500000
MIB=64
STEPS="1 2 3 4 5"
SIZES=${SIZES:-32 100 1024 16384 262144}
MDC_ARGS=${MDC_ARGS:--n 4 -t 0}
MIX_REQUESTS=${MIX_REQUESTS:-3000000}
MIX_OBJECTS=${MIX_OBJECTS:-1000000}
BUILD=${BUILD:-$(pwd)}
while getopts "n:f:m:B:s:h" o; do
    case $o in
    n) N=$OPTARG ;;
    f) FILL=$OPTARG ;;
    m) MIB=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    s) STEPS=$OPTARG ;;
    *) sed -n '2,24p' "$0"; exit 64 ;;
    esac
done
LOAD=$BUILD/bench/mdc-load
RECB=$BUILD/bench/rec-bytes
MDCACHED=${MDCACHED:-$BUILD/server/mdcached}
for x in "$LOAD" "$MDCACHED"; do
    [ -x "$x" ] || { echo "bytes.sh: no $x (use -B)" >&2; exit 1; }
done

. "$(dirname "$0")/lib.sh"
bl_init bytes.sh
PORT= PID= PROTO=

# start NAME MIB: starts a server (bench/lib.sh, pinned to CPU 0); sets
# PORT, PID, PROTO
start() {
    case $1 in
    memcached)
        PROTO=text
        bl_start memcached -m "$2" -U 0 -t 1 -c 1024 ;;
    mdcached)
        PROTO=native
        bl_start mdcached "$MDCACHED" -n 1 -t 0 -m "$2" ;;
    esac
    PORT=$BL_PORT PID=$BL_PID
    sleep 0.5
}
stop() { bl_stop "$PID"; }

echo "bytes.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n); $(memcached -V); mdcached $("$MDCACHED" -V 2>/dev/null | head -1)"

case " $STEPS " in *" 1 "*)
echo
echo "1. -m $MIB, $FILL sets of 16-byte keys and 32-byte values (each key once)"
printf '%-10s %12s %14s %10s %10s\n' server curr_items bytes evictions "RSS MiB"
held=()
for s in memcached mdcached; do
    start "$s" "$MIB"
    taskset -c 1 "$LOAD" -q -P "$PROTO" -s "127.0.0.1:$PORT" -k "$FILL" -K 16 -v 32 -c 8 -f -D 0 -w 0
    items=$(bl_stat "$PORT" curr_items)
    printf '%-10s %12s %14s %10s %10.1f\n' "$s" "$items" "$(bl_stat "$PORT" bytes)" \
        "$(bl_stat "$PORT" evictions)" "$(echo "$(bl_rss_kib "$PID") / 1024" | bc -l)"
    held+=("$items")
    stop
done
echo "mdcached / memcached records held: $(echo "scale=3; ${held[1]} / ${held[0]}" | bc)"
;; esac

case " $STEPS " in *" 2 "*)
echo
echo "2. W6: $N records of 16-byte keys and 32-byte values in -m 4096; RSS once settled"
printf '%-10s %12s %10s %10s %10s %10s\n' server curr_items "RSS0 MiB" "RSS MiB" "B/rec" "dB/rec"
per=()
for s in memcached mdcached; do
    start "$s" 4096
    before=$(bl_rss_kib "$PID")
    taskset -c 1 "$LOAD" -q -P "$PROTO" -s "127.0.0.1:$PORT" -k "$N" -K 16 -v 32 -c 8 -f -D 0 -w 0
    after=$(bl_settled_rss "$PID")
    b=$(echo "scale=2; $after * 1024 / $N" | bc)
    printf '%-10s %12s %10.1f %10.1f %10s %10.2f\n' "$s" "$(bl_stat "$PORT" curr_items)" \
        "$(echo "$before / 1024" | bc -l)" "$(echo "$after / 1024" | bc -l)" "$b" \
        "$(echo "($after - $before) * 1024 / $N" | bc -l)"
    per+=("$b")
    stop
done
echo "mdcached / memcached RSS per record: $(echo "scale=3; ${per[1]} / ${per[0]}" | bc)"
;; esac

case " $STEPS " in *" 3 "*)
if [ -x "$RECB" ]; then
    echo
    echo "3. where the bytes go (bench/rec-bytes, the store without a network)"
    "$RECB" -n "$N" -k 16 -v 32
    "$RECB" -n "$N" -k 16 -v 32 -t 2
    # the trace's mix: 10^6 records (5 GB at 10^7)
    "$RECB" -n $((N < 1000000 ? N : 1000000)) -x
fi
;; esac

case " $STEPS " in *" 4 "*)
MRGEN=$BUILD/bench/missratio/mr-gen
MRREP=$BUILD/bench/missratio/mr-replay
TRACE=$BL_TMP/trace
"$MRGEN" -o "$TRACE" -n "$MIX_REQUESTS" -N "$MIX_OBJECTS" -a 1.0 -S 1 >/dev/null
echo
echo "4. the miss-ratio trace's size mix: $MIX_REQUESTS requests over $MIX_OBJECTS objects (z1.0, seed 1) replayed read-through into -m 4096"
printf '%-10s %12s %14s %10s %10s %10s %10s\n' server curr_items bytes "bytes/rec" "RSS0 MiB" "RSS MiB" "dB/rec"
per=()
for s in memcached mdcached; do
    start "$s" 4096
    before=$(bl_rss_kib "$PID")
    taskset -c 1 "$MRREP" -t "$TRACE" -p "$PORT" -P text -w 0 >/dev/null
    after=$(bl_settled_rss "$PID")
    items=$(bl_stat "$PORT" curr_items)
    bytes=$(bl_stat "$PORT" bytes)
    d=$(echo "scale=2; ($after - $before) * 1024 / $items" | bc)
    printf '%-10s %12s %14s %10.1f %10.1f %10.1f %10s\n' "$s" "$items" "$bytes" \
        "$(echo "$bytes / $items" | bc -l)" "$(echo "$before / 1024" | bc -l)" \
        "$(echo "$after / 1024" | bc -l)" "$d"
    per+=("$d")
    stop
done
echo "mdcached / memcached RSS added per record: $(echo "scale=3; ${per[1]} / ${per[0]}" | bc)"
;; esac

case " $STEPS " in *" 5 "*)
OVF=$(dirname "$0")/overfill.py
echo
echo "5. per value size: twice what -m $MIB holds written (16-byte keys, 4 connections), every key read back"
printf '%-8s %-10s %10s %10s %10s %12s\n' value server held "RSS0 MiB" "RSS MiB" "dRSS B/rec"
for size in $SIZES; do
    n=$(( (MIB << 21) / (size + 64) ))
    held=() per=()
    for s in memcached mdcached; do
        case $s in
        memcached) bl_start memcached -m "$MIB" -U 0 -t 4 -c 1024 ;;
        mdcached) bl_start mdcached "$MDCACHED" $MDC_ARGS -m "$MIB" ;;
        esac
        PORT=$BL_PORT PID=$BL_PID
        sleep 0.5
        before=$(bl_rss_kib "$PID")
        out=$(taskset -c 1 python3 "$OVF" -s "127.0.0.1:$PORT" -p "$PID" -n "$n" --size "$size" -c 4 --limit-mib "$MIB" -j)
        after=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["rss_kib"])')
        h=$(echo "$out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["held"])')
        d=$(echo "scale=1; ($after - $before) * 1024 / $h" | bc)
        printf '%-8s %-10s %10s %10.1f %10.1f %12s\n' "$size" "$s" "$h" \
            "$(echo "$before / 1024" | bc -l)" "$(echo "$after / 1024" | bc -l)" "$d"
        held+=("$h") per+=("$d")
        bl_stop "$PID"
    done
    echo "$size: mdcached / memcached records held $(echo "scale=3; ${held[1]} / ${held[0]}" | bc), RSS per record $(echo "scale=3; ${per[1]} / ${per[0]}" | bc)"
done
;; esac
