# client-php/tests/daemon.sh - sourced by run-phpt.sh and run-sets.sh:
# start an mdcached daemon on a free loopback port and a Unix socket in a
# scratch directory, stop it and remove the directory on exit.  Sets tmp,
# pid, port; needs PHP and bin.
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mdc-phpt.XXXXXX")
pid=""
cleanup() {
    [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

freeport() {
    "$PHP" -n -r '$s = stream_socket_server("tcp://127.0.0.1:0");
        $n = stream_socket_get_name($s, false);
        echo substr($n, strrpos($n, ":") + 1);'
}
port=""
for try in 1 2 3 4 5; do
    p=$(freeport)
    "$bin" -l 127.0.0.1 -p "$p" -s "$tmp/mdc.sock" -m 64 -n 1 --sweep-interval=100 >"$tmp/mdc.log" 2>&1 &
    pid=$!
    i=0
    while [ $i -lt 100 ]; do
        if "$PHP" -n -r '$s = @fsockopen("127.0.0.1", (int)$argv[1], $e, $m, 0.2);
            exit($s ? 0 : 1);' "$p" 2>/dev/null; then port=$p; break; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
        i=$((i + 1))
    done
    [ -n "$port" ] && break
    kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; pid=""
done
[ -n "$port" ] || { echo "FAIL: cannot start $bin"; cat "$tmp/mdc.log"; exit 1; }
