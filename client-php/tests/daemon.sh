# client-php/tests/daemon.sh - sourced by run-phpt.sh and run-sets.sh:
# start an mdcached daemon on a loopback port it picks (-p auto) and a Unix socket in a
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

# -p auto: the kernel picks the port, the port file says which (a probed
# free port could be taken by another process before the daemon binds it)
"$bin" -l 127.0.0.1 -p auto --port-file "$tmp/ports" -s "$tmp/mdc.sock" -m 64 -n 1 --sweep-interval=100 >"$tmp/mdc.log" 2>&1 &
pid=$!
port=""
i=0
while [ $i -lt 600 ]; do # 60 s: a ceiling, not a bound
    if [ -s "$tmp/ports" ]; then
        port=$(awk '$1 == "tcp" { sub(/.*:/, "", $2); print $2; exit }' "$tmp/ports")
        break
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
    i=$((i + 1))
done
[ -n "$port" ] || { echo "FAIL: cannot start $bin"; cat "$tmp/mdc.log"; exit 1; }
