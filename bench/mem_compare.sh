#!/bin/bash
# mem_compare.sh - W6 of docs/benchmarking.md: resident memory per record of
# memcached and Redis holding N records of 16-byte keys and 32-byte values,
# loaded over loopback by bench/mdc-load (memcached text protocol, RESP),
# and of mdcached when MDCACHED points at a daemon that serves the native
# protocol.  Each server runs pinned to CPU 0, the loader to CPU 1.
#
# usage: bench/mem_compare.sh [-n RECORDS] [-B BUILD_DIR] [-o JSON]
#   MDC_LOAD=path overrides BUILD_DIR/bench/mdc-load;
#   MDCACHED=path adds mdcached (native protocol) to the comparison.
set -eu

N=10000000
BUILD=${BUILD:-$(pwd)}
OUT=
while getopts "n:B:o:h" o; do
    case $o in
    n) N=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    o) OUT=$OPTARG ;;
    *) sed -n '2,12p' "$0"; exit 64 ;;
    esac
done
LOAD=${MDC_LOAD:-$BUILD/bench/mdc-load}
[ -x "$LOAD" ] || { echo "mem_compare: no mdc-load at $LOAD (use -B or MDC_LOAD)" >&2; exit 1; }

. "$(dirname "$0")/lib.sh"
bl_init mem_compare

ROWS=()
# measure NAME PID PROTO ADDR EXTRA_CMD
measure() {
    local name=$1 pid=$2 proto=$3 addr=$4 before after t0 t1 extra
    sleep 0.5
    before=$(bl_rss_kib "$pid")
    t0=$(date +%s.%N)
    taskset -c 1 "$LOAD" -P "$proto" -s "$addr" -k "$N" -K 16 -v 32 -c 8 -f -D 0 -w 0
    t1=$(date +%s.%N)
    sleep 1
    after=$(bl_rss_kib "$pid")
    extra=$($5)
    printf '%-10s %10d %10.1f %10.1f %9.1f %9.1f  %s (load %.1f s)\n' "$name" "$N" \
        "$(echo "$before / 1024" | bc -l)" "$(echo "$after / 1024" | bc -l)" \
        "$(echo "$after * 1024 / $N" | bc -l)" \
        "$(echo "($after - $before) * 1024 / $N" | bc -l)" "$extra" \
        "$(echo "$t1 - $t0" | bc -l)"
    ROWS+=("{\"server\": \"$name\", \"records\": $N, \"rss_before_kib\": $before, \"rss_after_kib\": $after, \"rss_per_record\": $(echo "scale=2; $after * 1024 / $N" | bc), \"rss_delta_per_record\": $(echo "scale=2; ($after - $before) * 1024 / $N" | bc), \"server_says\": \"$extra\"}")
}

echo "mem_compare $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n): $N records, 16-byte keys, 32-byte values"
printf '%-10s %10s %10s %10s %9s %9s  %s\n' server records "RSS0 MiB" "RSS MiB" "B/rec" "dB/rec" "server's own count"

# Each server started by bench/lib.sh, pinned to CPU 0 on 127.0.0.1.
# memcached: -m 4096 so nothing is evicted; one worker thread, UDP off.
bl_start memcached -m 4096 -U 0 -t 1 -c 1024
MCPORT=$BL_PORT
mc_extra() { echo "curr_items=$(bl_stat "$MCPORT" curr_items) bytes=$(bl_stat "$MCPORT" bytes) hash_bytes=$(bl_stat "$MCPORT" hash_bytes)"; }
measure memcached "$BL_PID" text "127.0.0.1:$MCPORT" mc_extra
bl_stop

# Redis: no persistence, no memory limit (maxmemory 0), no eviction.
bl_start redis --save '' --appendonly no --maxmemory 0 --loglevel warning
RPORT=$BL_PORT
r_extra() { echo "dbsize=$(redis-cli -p "$RPORT" dbsize) $(redis-cli -p "$RPORT" info memory | tr -d '\r' | grep -E '^used_memory:' )"; }
measure redis "$BL_PID" resp "127.0.0.1:$RPORT" r_extra
bl_stop

# mdcached over the native protocol, when a daemon is given.
if [ -n "${MDCACHED:-}" ]; then
    bl_start mdcached "$MDCACHED" -n 1 -t 0 -m 4096
    m_extra() { echo "-"; }
    measure mdcached "$BL_PID" native "127.0.0.1:$BL_PORT" m_extra
    bl_stop
fi

if [ -n "$OUT" ]; then
    { echo "["; (IFS=,; echo "${ROWS[*]}"); echo "]"; } > "$OUT"
fi
