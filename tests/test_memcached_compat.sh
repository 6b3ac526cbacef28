#!/bin/sh
# tests/test_memcached_compat.sh - memcached's command line
# (`mdcached --memcached-compat`, docs/options.md "memcached's command
# line"):
#  - memcached's options are mapped (stats settings shows the result):
#    -t N is N network threads and no payload threads, -m, -c, -I, -R, -b,
#    -vv, -u, -D, -A, -F, -M, -a, -o idle_timeout; a comma-separated -l
#    list; -P is written only with -d (as memcached does); memcached's
#    defaults where they differ (-m 64, 4 threads);
#  - options without an equivalent (-d, -C, -k, -L, -r, -f, -n, -o
#    hashpower...) are ignored with one log line each;
#  - -s is a Unix socket and no TCP listener; -Z with -o ssl_chain_cert
#    and ssl_key turns the -l addresses into TLS listeners (a TLS client
#    is served); -U is UDP;
#  - -S needs a user:password file (-Y or $MEMCACHED_SASL_PWDB): without
#    one the start is refused (exit 64), never unauthenticated;
#  - bad memcached options are refused (exit 64): unknown letters, -B
#    with another protocol, --config;
#  - as root: in a private network and mount namespace, Debian's
#    systemd-memcached-wrapper with Debian's /etc/memcached.conf, unchanged,
#    starts mdcached (its /usr/bin/memcached the example entry point
#    dist/memcached/memcached) under the capability bounding set and
#    no_new_privs of Debian's memcached.service; it answers `version` on
#    127.0.0.1:11211 as the user memcache, with 64 MiB; and without -p the
#    port is 11211.
set -u
S=${srcdir:-.}
B=${MDC_BUILDDIR:-.}
. "$(dirname "$0")/harness.sh"
T=$H_TMP
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
NS=
cleanup() {
    st=$1
    mdc_cleanup "$st"
    [ -n "$NS" ] && ip netns del "$NS" 2>/dev/null
}
trap 'cleanup $?' EXIT
PY=${H_PYTHON:-python3}

# send LINE to 127.0.0.1:PORT (or a Unix socket path), print the reply up
# to its END/VERSION line
ask() {
    "$PY" - "$1" "$2" <<'EOF'
import socket, sys
dst, cmd = sys.argv[1], sys.argv[2]
if dst.startswith("/"):
    s = socket.socket(socket.AF_UNIX); s.connect(dst)
else:
    s = socket.create_connection(("127.0.0.1", int(dst)))
s.settimeout(30)
s.sendall(cmd.encode() + b"\r\n")
buf = b""
# up to END, or a one-line answer (VERSION, an error)
while not (buf.endswith(b"END\r\n") or buf.endswith(b"\r\n") and
           buf.split(b" ")[0].split(b"\r")[0] in
           (b"VERSION", b"ERROR", b"CLIENT_ERROR", b"SERVER_ERROR")):
    try:
        d = s.recv(65536)
    except OSError as e:
        print("(%s)" % e)
        break
    if not d:
        break
    buf += d
sys.stdout.write(buf.decode())
EOF
}
setting() { # PORT NAME: the value of NAME in stats settings
    ask "$1" "stats settings" | tr -d '\r' | awk -v n="$2" '$2 == n { print $3 }'
}
expect() { # PORT NAME VALUE
    v=$(setting "$1" "$2")
    [ "$v" = "$3" ] || fail "stats settings $2: '$v', expected '$3'"
}

# --- mapped options -------------------------------------------------------
id nobody >/dev/null 2>&1 && U=nobody || U=$(id -un)
mdc_start_raw A --memcached-compat -p auto -t 3 -m 128 -c 500 -I 2m -R 50 \
    -b 200 -vv -D '|' -A -F -M -a 0770 -s "$T/a.sock" -d -P "$T/a.pid" \
    -l 127.0.0.1,localhost -o idle_timeout=7,hashpower=20 -C -k -L -r \
    -f 1.5 -n 64 -u "$U" || exit 1
# -s disables TCP in memcached: the Unix socket is the only listener
if grep -q '^tcp' "$A_PORTS"; then
    fail "-s: a TCP listener was opened: $(cat "$A_PORTS")"
fi
P=$T/a.sock
expect "$P" threads 3
expect "$P" payload-threads 0
expect "$P" memory-limit 128
expect "$P" max-conns 500
expect "$P" max-item-size 2097152
expect "$P" max-reqs-per-event 50
expect "$P" backlog 200
expect "$P" verbose 3
expect "$P" prefix-delimiter '|'
expect "$P" enable-shutdown yes
expect "$P" disable-flush-all yes
expect "$P" no-evict yes
expect "$P" unix-mode 0770
expect "$P" idle-timeout 7
expect "$P" memcached-compat yes
[ "$(cat "$T/a.pid" 2>/dev/null)" = "$A_PID" ] ||
    fail "-d -P: the pid file holds '$(cat "$T/a.pid" 2>/dev/null)', not $A_PID"
for o in '-d (--daemon)' '-C (--disable-cas)' '-k (--lock-memory)' \
    '-L (--enable-largepages)' '-r (--enable-coredumps)' \
    '-f (--slab-growth-factor) 1.5' '-n (--slab-min-size) 64' \
    '-o hashpower ignored'; do
    n=$(grep -c -F -- "memcached option $o" "$A_LOG")
    [ "$n" = 1 ] || fail "log lines for memcached option $o: $n, expected 1"
done
mdc_stop A || fail "A: exit $?"

# defaults, -l list, protected mode off for an explicit -l, -P without -d
mdc_start_raw B --memcached-compat -p auto -l 127.0.0.1,::1 -P "$T/b.pid" ||
    exit 1
expect "$B_PORT" threads 4
expect "$B_PORT" payload-threads 0
expect "$B_PORT" memory-limit 64
expect "$B_PORT" listen "127.0.0.1,::1"
expect "$B_PORT" protected-mode no
[ -e "$T/b.pid" ] && fail "-P without -d wrote a pid file (memcached does not)"
grep -q "memcached option -P $T/b.pid ignored" "$B_LOG" ||
    fail "-P without -d: no log line"
case $(ask "$B_PORT" version) in
VERSION*mdcached*) ;;
*) fail "version: $(ask "$B_PORT" version)" ;;
esac
mdc_stop B || fail "B: exit $?"

# no -l: loopback only, with one log line saying so
mdc_start_raw C --memcached-compat -p auto -U auto || exit 1
expect "$C_PORT" listen 127.0.0.1
expect "$C_PORT" protected-mode yes
grep -q "listens on 127.0.0.1 only" "$C_LOG" || fail "no -l: no log line"
grep -q '^udp 127.0.0.1:' "$C_PORTS" || fail "-U auto: no UDP socket"
mdc_stop C || fail "C: exit $?"

# --- -Z: TLS on the -l addresses, certificates from -o --------------------
if command -v openssl >/dev/null 2>&1 &&
    "$B/server/mdcached" -h | grep -q -- '--tls-listen'; then
    openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost \
        -keyout "$T/key.pem" -out "$T/cert.pem" >/dev/null 2>&1
    mdc_start_raw Z --memcached-compat -p auto -l 127.0.0.1 -Z \
        -o ssl_chain_cert="$T/cert.pem",ssl_key="$T/key.pem" || exit 1
    grep -q '^tcp' "$Z_PORTS" && fail "-Z: a plain TCP listener too"
    zp=$(mdc_port Z tls)
    if [ -z "$zp" ]; then
        fail "-Z: no TLS listener ($(cat "$Z_PORTS"))"
    else
        r=$("$PY" - "$zp" <<'EOF'
import socket, ssl, sys
c = ssl.create_default_context(); c.check_hostname = False
c.verify_mode = ssl.CERT_NONE
s = c.wrap_socket(socket.create_connection(("127.0.0.1", int(sys.argv[1]))))
s.settimeout(30); s.sendall(b"version\r\n"); print(s.recv(100).decode().strip())
EOF
)
        case $r in VERSION*mdcached*) ;; *) fail "-Z: TLS version: '$r'" ;; esac
    fi
    mdc_stop Z || fail "Z: exit $?"
else
    [ "${CI:-}" = true ] && fail "-Z: no openssl or no TLS build under CI"
    echo "SKIP part: -Z (no openssl, or mdcached built without TLS)"
fi

# --- -S: a user:password file, never unauthenticated ----------------------
mdc_run S1 --memcached-compat -p auto -S; rc=$?
[ "$rc" = 64 ] || fail "-S without a password file: exit $rc, expected 64"
grep -q "MEMCACHED_SASL_PWDB" "$S1_LOG" || fail "-S: the reason is not given"
printf 'alice:secret\n' >"$T/pwdb"
MEMCACHED_SASL_PWDB=$T/pwdb
export MEMCACHED_SASL_PWDB
mdc_start_raw S2 --memcached-compat -p auto -S || exit 1
unset MEMCACHED_SASL_PWDB
r=$(ask "$S2_PORT" "stats settings")
case $r in
*"auth-file $T/pwdb"*) fail "-S: settings were served before a login" ;;
esac
expect_login=$("$PY" - "$S2_PORT" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.settimeout(30)
s.sendall(b"set a 0 0 12\r\nalice secret\r\nstats settings\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    d = s.recv(65536)
    if not d: break
    buf += d
print(buf.decode())
EOF
)
case $expect_login in
*"auth-file $T/pwdb"*) ;;
*) fail "-S with MEMCACHED_SASL_PWDB: after a login: $expect_login" ;;
esac
mdc_stop S2 || fail "S2: exit $?"

# --- refused ---------------------------------------------------------------
for bad in "-z" "-B json" "--config=$T/x" "-p" "-o idle_timeout" "stray"; do
    # shellcheck disable=SC2086
    mdc_run R --memcached-compat -p auto $bad; rc=$?
    [ "$rc" = 64 ] || fail "--memcached-compat $bad: exit $rc, expected 64"
done

# --- Debian's unit and /etc/memcached.conf, unchanged (root) ---------------
W=/usr/share/memcached/scripts/systemd-memcached-wrapper
need_root_part() {
    if [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ]; then
        fail "Debian's memcached files: $*"
    else
        echo "SKIP part: Debian's memcached files: $*"
    fi
}
if [ "$(id -u)" -ne 0 ]; then
    need_root_part "needs root"
elif [ ! -x "$W" ] || [ ! -f /etc/memcached.conf ] ||
    ! id memcache >/dev/null 2>&1; then
    need_root_part "Debian's memcached package is not installed"
elif ! command -v unshare >/dev/null || ! command -v setpriv >/dev/null ||
    ! command -v perl >/dev/null; then
    need_root_part "unshare, setpriv or perl missing"
else
    NS=mdcmc$$
    ip netns add "$NS" && ip -n "$NS" link set lo up ||
        fail "cannot make a network namespace"
    MDC=$(cd "$B/server" && pwd)/mdcached
    sed "s|/usr/sbin/mdcached|$MDC|" "$S/dist/memcached/memcached" \
        >"$T/memcached"
    chmod 755 "$T/memcached"
    # the unit's CapabilityBoundingSet= and NoNewPrivileges=; the example
    # entry point mounted over /usr/bin/memcached in a mount namespace of
    # its own, as an administrator installs it
    cat >"$T/unit.sh" <<EOF
mount --bind "$T/memcached" /usr/bin/memcached || exit 70
exec setpriv --no-new-privs \
    --bounding-set=-all,+setgid,+setuid,+sys_resource \
    perl "$W" /etc/memcached.conf
EOF
    ip netns exec "$NS" unshare -m sh "$T/unit.sh" >"$T/deb.log" 2>&1 &
    DPID=$!
    r=
    i=0
    while [ $i -lt 300 ]; do # a hang only: 30 s
        r=$(ip netns exec "$NS" sh -c "$(command -v "$PY") -c '
import socket
s = socket.create_connection((\"127.0.0.1\", 11211), timeout=5)
s.sendall(b\"version\\r\\nstats settings\\r\\n\")
b = b\"\"
while not b.endswith(b\"END\\r\\n\"):
    d = s.recv(65536)
    if not d: break
    b += d
print(b.decode())' 2>/dev/null")
        [ -n "$r" ] && break
        kill -0 "$DPID" 2>/dev/null || break
        sleep 0.1
        i=$((i + 1))
    done
    case $r in
    VERSION*mdcached*) ;;
    *) fail "Debian's wrapper: no mdcached on 127.0.0.1:11211: $(cat "$T/deb.log")" ;;
    esac
    for kv in "user memcache" "memory-limit 64" "port 11211" \
        "listen 127.0.0.1" "threads 4"; do
        echo "$r" | tr -d '\r' | grep -q "^STAT $kv\$" ||
            fail "Debian's wrapper: stats settings has no '$kv'"
    done
    kill "$DPID" 2>/dev/null
    wait "$DPID"
    # without -p the port is memcached's
    ip netns exec "$NS" "$MDC" --memcached-compat -l 127.0.0.1 -u nobody \
        --port-file="$T/np.ports" >"$T/np.log" 2>&1 &
    NPID=$!
    mdc_wait_ready "$T/np.ports" "$NPID" ||
        fail "--memcached-compat without -p: $(cat "$T/np.log")"
    grep -q '^tcp 127.0.0.1:11211$' "$T/np.ports" ||
        fail "--memcached-compat without -p: $(cat "$T/np.ports")"
    kill "$NPID"
    wait "$NPID" || fail "--memcached-compat without -p: exit $?"
fi

[ "$fails" -eq 0 ] || exit 1
echo "ok"
