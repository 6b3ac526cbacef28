#!/bin/sh
# bench/php/laravel.sh - Laravel's tagged cache on memcached against the
# mdcached driver (bench/php/laravelbench.php): starts memcached and
# mdcached on free loopback ports, each pinned to CPU 0 with one worker
# thread, runs the PHP client on CPU 1 with the extension built in this
# build tree and illuminate/cache from a Composer vendor/ tree (LARAVEL_SET,
# default ../shared/php-compat/laravel12 beside the source tree: Laravel 12),
# keeps the JSON lines in bench/results/php-laravel-<date>.jsonl and prints
# the summary (bench/php/laravel-summary.php).  Run from the build top
# after `make`.  Environment: ITEMS OPS FLUSHES ROUNDS ONLY
# (laravelbench.php); OUT overrides the results file.
set -eu
top=$(pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
so=$top/client-php/ext/modules/mdcached.so
set_dir=${LARAVEL_SET:-$src/../shared/php-compat/laravel12}
LARAVEL_AUTOLOAD=$set_dir/vendor/autoload.php
[ -f "$so" ] || { echo "laravel.sh: $so not built (configure --with-php; make)" >&2; exit 1; }
[ -f "$LARAVEL_AUTOLOAD" ] || { echo "laravel.sh: no $LARAVEL_AUTOLOAD (LARAVEL_SET: a vendor/ tree with illuminate/cache)" >&2; exit 1; }
for c in memcached taskset php; do
    command -v $c >/dev/null || { echo "laravel.sh: $c missing" >&2; exit 1; }
done
php -r 'exit(extension_loaded("memcached") ? 0 : 1);' || { echo "laravel.sh: php-memcached missing" >&2; exit 1; }
tmp=$(mktemp -d)
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$tmp"' EXIT
port() { php -n -r '$s=stream_socket_server("tcp://127.0.0.1:0");$n=stream_socket_get_name($s,false);echo substr($n,strrpos($n,":")+1);'; }
wait_port() {
    i=0
    while ! php -n -r 'exit(@fsockopen("127.0.0.1",(int)$argv[1]) ? 0 : 1);' "$1" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 100 ] || { echo "laravel.sh: port $1 did not open" >&2; exit 1; }
        sleep 0.1
    done
}
MC_PORT=$(port)
taskset -c 0 memcached -l 127.0.0.1 -p "$MC_PORT" -U 0 -t 1 -m 1024 -u nobody &
MC_PID=$!; pids="$pids $MC_PID"
MDC_PORT=$(port)
taskset -c 0 "$top/server/mdcached" -l 127.0.0.1 -p "$MDC_PORT" -n 1 -t 0 -m 1024 >"$tmp/mdc.log" 2>&1 &
MDC_PID=$!; pids="$pids $MDC_PID"
wait_port "$MC_PORT"; wait_port "$MDC_PORT"
export MC_PORT MC_PID MDC_PORT MDC_PID LARAVEL_AUTOLOAD
mkdir -p "$src/bench/results"
out=${OUT:-$src/bench/results/php-laravel-$(date -u +%Y%m%d-%H%M%S).jsonl}
echo "# $(date -u) load: $(cat /proc/loadavg)" >&2
taskset -c 1 php -d extension="$so" -d memory_limit=1G "$src/bench/php/laravelbench.php" | tee "$out"
echo "# load after: $(cat /proc/loadavg)" >&2
php "$src/bench/php/laravel-summary.php" "$out"
