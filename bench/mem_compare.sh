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

PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

free_port() {
    local p
    for p in $(seq "$1" $(($1 + 100))); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
    done
    echo "mem_compare: no free port near $1" >&2; exit 1
}
wait_port() {
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "mem_compare: nothing listens on $1" >&2; exit 1
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# memcached's text "stats" over bash's /dev/tcp: prints the value of field $2
mc_stat() {
    exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf 'stats\r\nquit\r\n' >&3
    tr -d '\r' <&3 | awk -v k="$2" '$1 == "STAT" && $2 == k { print $3 }'
    exec 3<&-
}

ROWS=()
# measure NAME PID PROTO ADDR EXTRA_CMD
measure() {
    local name=$1 pid=$2 proto=$3 addr=$4 before after t0 t1 extra
    sleep 0.5
    before=$(rss_kib "$pid")
    t0=$(date +%s.%N)
    taskset -c 1 "$LOAD" -P "$proto" -s "$addr" -k "$N" -K 16 -v 32 -c 8 -f -D 0 -w 0
    t1=$(date +%s.%N)
    sleep 1
    after=$(rss_kib "$pid")
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

# memcached: -m 4096 so nothing is evicted; one worker thread, UDP off.
MCPORT=$(free_port 21211)
taskset -c 0 memcached -u nobody -m 4096 -p "$MCPORT" -l 127.0.0.1 -U 0 -t 1 -c 1024 &
MCPID=$!; PIDS+=("$MCPID")
wait_port "$MCPORT"
mc_extra() { echo "curr_items=$(mc_stat "$MCPORT" curr_items) bytes=$(mc_stat "$MCPORT" bytes) hash_bytes=$(mc_stat "$MCPORT" hash_bytes)"; }
measure memcached "$MCPID" text "127.0.0.1:$MCPORT" mc_extra
kill "$MCPID"; wait "$MCPID" 2>/dev/null || true

# Redis: no persistence, no memory limit (maxmemory 0), no eviction.
RPORT=$(free_port 26379)
taskset -c 0 redis-server --port "$RPORT" --bind 127.0.0.1 --save '' \
    --appendonly no --maxmemory 0 --daemonize no --loglevel warning &
RPID=$!; PIDS+=("$RPID")
wait_port "$RPORT"
r_extra() { echo "dbsize=$(redis-cli -p "$RPORT" dbsize) $(redis-cli -p "$RPORT" info memory | tr -d '\r' | grep -E '^used_memory:' )"; }
measure redis "$RPID" resp "127.0.0.1:$RPORT" r_extra
kill "$RPID"; wait "$RPID" 2>/dev/null || true

# mdcached over the native protocol, when a daemon is given.
if [ -n "${MDCACHED:-}" ]; then
    MPORT=$(free_port 21311)
    taskset -c 0 "$MDCACHED" -n 1 -t 0 -m 4096 -p "$MPORT" -l 127.0.0.1 &
    MPID=$!; PIDS+=("$MPID")
    wait_port "$MPORT"
    m_extra() { echo "-"; }
    measure mdcached "$MPID" native "127.0.0.1:$MPORT" m_extra
    kill "$MPID"; wait "$MPID" 2>/dev/null || true
fi

if [ -n "$OUT" ]; then
    { echo "["; (IFS=,; echo "${ROWS[*]}"); echo "]"; } > "$OUT"
fi
