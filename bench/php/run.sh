#!/bin/sh
# bench/php/run.sh - the PHP tag benchmark (bench/php/tagbench.php): starts
# memcached, redis-server and mdcached on free loopback ports, each pinned
# to CPU 0 with one worker thread, runs the PHP client on CPU 1 with the
# extension built in this build tree, and keeps the JSON lines in
# bench/results/php-tags-<date>.jsonl, then prints the summary
# (bench/php/summary.php).  Run from the build top after `make`.
# Environment: ITEMS OPS ROUNDS BIGTAG GETS ONLY WHO EXPIRY_WAIT (tagbench.php);
# SET=<set>/vendor/autoload.php runs on a Composer set (e.g. symfony/cache
# 7.1) instead of Debian's 5.4;
# OUT overrides the results file; MC_WRAP, RD_WRAP, MDC_WRAP go in front of
# each server's command (bench/php/callgrind-server.sh: valgrind on a
# server); MDC_ARGS are added to mdcached's options (e.g. --io=epoll).
set -eu
top=$(pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
so=$top/client-php/ext/modules/mdcached.so
[ -f "$so" ] || { echo "run.sh: $so not built (configure --with-php; make)" >&2; exit 1; }
for c in memcached redis-server taskset php; do
    command -v $c >/dev/null || { echo "run.sh: $c missing" >&2; exit 1; }
done
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
port() { php -n -r '$s=stream_socket_server("tcp://127.0.0.1:0");$n=stream_socket_get_name($s,false);echo substr($n,strrpos($n,":")+1);'; }
wait_port() {
    i=0
    while ! php -n -r 'exit(@fsockopen("127.0.0.1",(int)$argv[1]) ? 0 : 1);' "$1" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 600 ] || { echo "run.sh: port $1 did not open" >&2; exit 1; }
        sleep 0.1
    done
}
MC_PORT=$(port)
taskset -c 0 ${MC_WRAP:-} memcached -l 127.0.0.1 -p "$MC_PORT" -U 0 -t 1 -m 1024 -u nobody &
MC_PID=$!; pids="$pids $MC_PID"
RD_PORT=$(port)
taskset -c 0 ${RD_WRAP:-} redis-server --port "$RD_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --maxmemory 1024mb --dir "$tmp" >"$tmp/redis.log" 2>&1 &
RD_PID=$!; pids="$pids $RD_PID"
MDC_PORT=$(port)
taskset -c 0 ${MDC_WRAP:-} "$top/server/mdcached" -l 127.0.0.1 -p "$MDC_PORT" -n 1 -t 0 -m 1024 ${MDC_ARGS:-} >"$tmp/mdc.log" 2>&1 &
MDC_PID=$!; pids="$pids $MDC_PID"
wait_port "$MC_PORT"; wait_port "$RD_PORT"; wait_port "$MDC_PORT"
export MC_PORT MC_PID RD_PORT RD_PID MDC_PORT MDC_PID
mkdir -p "$src/bench/results"
out=${OUT:-$src/bench/results/php-tags-$(date -u +%Y%m%d-%H%M%S).jsonl}
echo "# $(date -u) load: $(cat /proc/loadavg)" >&2
taskset -c 1 php -d extension="$so" -d memory_limit=1G "$src/bench/php/tagbench.php" | tee "$out"
echo "# load after: $(cat /proc/loadavg)" >&2
php "$src/bench/php/summary.php" "$out"
