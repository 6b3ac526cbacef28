#!/bin/sh
# protected_e2e.sh - protected mode and authentication seen from another
# host: mdcached in one network namespace listening on a veth address, a
# client in a second namespace (docs/security.md).
#
#  - default (protected mode): the remote client gets the one error line
#    and the connection closes; a loopback client inside the server's
#    namespace is served; stats counts protected_mode_refusals;
#  - --protected-mode=no: the remote client is served;
#  - --auth-file: protected mode is off, the remote client must
#    authenticate (memcached's "set" exchange) before anything else;
#  - UDP (-U): under protected mode a datagram from the remote client is
#    dropped unanswered and counted, one to 127.0.0.1 answered;
#    --protected-mode=no answers the remote one; -U with --auth-file is
#    refused at start (exit 64: UDP carries no login);
#  - --tls-listen on the veth address with --tls-ca (mutual TLS): the
#    remote client with a certificate is served over TLS while the plain
#    listener stays protected; without --tls-ca the TLS listener is
#    protected too (the remote TLS client is closed unserved).
#
# Needs root; elsewhere prints SKIP and exits 77.
set -u

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces)"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not installed"
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"

B=${MDC_BUILDDIR:-.}
MDC=$B/server/mdcached
[ -x "$MDC" ] || { echo "FAIL: $MDC not built"; exit 1; }

id=$$
S=mdcpS$id
C=mdcpC$id
VS=vps$id
VC=vpc$id
SRV=10.79.0.1
PORT=11311
. "$(dirname "$0")/harness.sh"
W=$H_TMP
failed=0
mode=setup

cleanup() {
    _st=$1
    mdc_cleanup "$_st" # the daemon (tests/harness.sh), before its netns
    ip netns del "$S" 2>/dev/null
    ip netns del "$C" 2>/dev/null
}
trap 'cleanup $?' EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL [$mode]: $*"; failed=$((failed + 1)); }
ok() { echo "ok [$mode]: $*"; }

ip netns add "$S" || skip "cannot create network namespaces"
ip netns add "$C"
ip link add "$VS" type veth peer name "$VC" || skip "no veth support"
ip link set "$VS" netns "$S"
ip link set "$VC" netns "$C"
ip -n "$S" addr add $SRV/24 dev "$VS"
ip -n "$C" addr add 10.79.0.2/24 dev "$VC"
for n in "$S:$VS" "$C:$VC"; do
    ip -n "${n%%:*}" link set lo up
    ip -n "${n%%:*}" link set "${n#*:}" up
done

# talk [-e] HOST PORT SEND...: connect, send each argument (\r\n appended)
# one after the other and print the replies: a storage command's line gets
# none (its data line does); a get or stats is read to its END, anything
# else to its first line's end, or to EOF. Then 0.5 s more in case the
# server closes; with -e the close is expected and waited for. Waits are
# ceilings only a hang reaches (30 s), never latency bounds: a busy
# machine's reply may take seconds.
cat >"$W/talk.py" <<'EOF'
import socket, sys
args = sys.argv[1:]
want_eof = args[0] == "-e"
if want_eof:
    args = args[1:]
s = socket.create_connection((args[0], int(args[1])), timeout=30)
out = b""
closed = False
STORE = ("set ", "add ", "replace ", "append ", "prepend ", "cas ")
ERRS = (b"ERROR", b"CLIENT_ERROR", b"SERVER_ERROR")
def done(reply, line):
    if not reply.endswith(b"\r\n"):
        return False
    if line.startswith(("get ", "gets ", "stats")):
        return reply.endswith(b"END\r\n") or reply.startswith(ERRS)
    return True
# a reset (the server closed with our request unread) counts as the close
for line in args[2:]:
    try:
        s.sendall(line.encode() + b"\r\n")
    except OSError:
        closed = True
        break
    if line.startswith(STORE):
        continue
    reply = b""
    try:
        while not done(reply, line):
            d = s.recv(65536)
            if not d:
                closed = True
                break
            reply += d
    except socket.timeout:
        pass
    except ConnectionResetError:
        closed = True
    out += reply
    if closed:
        break
if not closed:
    s.settimeout(30 if want_eof else 0.5)
    try:
        closed = s.recv(65536) == b""
    except ConnectionResetError:
        closed = True
    except OSError:
        pass
if closed:
    out += b"<EOF>\r\n"
sys.stdout.write(out.decode(errors="replace").replace("\r\n", "\n"))
EOF

# the daemon in the server's namespace, through tests/harness.sh (its
# output in $W/d.log)
start() {
    MDC_WRAP="ip netns exec $S"
    mdc_start_raw d -l $SRV -l 127.0.0.1 -p $PORT -n 1 -m 16 "$@" ||
        fail "daemon did not start"
    MDC_WRAP=
}
stop() {
    mdc_stop d
}
# udptalk HOST PORT KEY [SECONDS]: one UDP get (memcached's 8-byte frame
# header), print the reply's text, or <none> after SECONDS of silence (30,
# a ceiling, where a reply is due; 1 where silence is the expected answer).
cat >"$W/udptalk.py" <<'EOF'
import socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(float(sys.argv[4]) if len(sys.argv) > 4 else 30.0)
s.sendto(struct.pack(">HHHH", 7, 0, 1, 0) + b"get " + sys.argv[3].encode() +
         b"\r\n", (sys.argv[1], int(sys.argv[2])))
try:
    d = s.recv(65536)
    sys.stdout.write(d[8:].decode(errors="replace").replace("\r\n", "|"))
except socket.timeout:
    sys.stdout.write("<none>")
EOF
UPORT=11313
remote() { ip netns exec "$C" python3 "$W/talk.py" $SRV $PORT "$@"; }
uremote() { ip netns exec "$C" python3 "$W/udptalk.py" $SRV $UPORT "$@"; }
ulocal() { ip netns exec "$S" python3 "$W/udptalk.py" 127.0.0.1 $UPORT "$@"; }
local_() { ip netns exec "$S" python3 "$W/talk.py" 127.0.0.1 $PORT "$@"; }

# ---- protected mode (the default) ------------------------------------------
mode=protected
start
grep -q "protected mode: $SRV" "$W/d.log" && ok "startup warns" ||
    fail "no startup warning: $(cat "$W/d.log")"
out=$(ip netns exec "$C" python3 "$W/talk.py" -e $SRV $PORT "version")
case "$out" in
"SERVER_ERROR protected mode:"*"--protected-mode=no"*"<EOF>"*)
    ok "remote refused: $(echo "$out" | head -1 | cut -c1-60)..." ;;
*) fail "remote not refused: '$out'" ;;
esac
out=$(local_ "set k 0 0 2" "hi" "get k")
case "$out" in
*STORED*"VALUE k 0 2"*) ok "loopback served" ;;
*) fail "loopback not served: '$out'" ;;
esac
out=$(local_ "stats")
echo "$out" | grep -q "STAT protected_mode_refusals 1" &&
    ok "counted in stats" || fail "stats: $(echo "$out" | grep protected)"
stop

# ---- --protected-mode=no ----------------------------------------------------
mode=off
start --protected-mode=no
grep -q "protected mode" "$W/d.log" && fail "warned with protected mode off"
out=$(remote "set k 0 0 2" "hi" "get k")
case "$out" in
*STORED*"VALUE k 0 2"*) ok "remote served" ;;
*) fail "remote not served: '$out'" ;;
esac
stop

# ---- UDP under protected mode -----------------------------------------------
mode=udp-protected
start -U $UPORT
local_ "set k 0 0 2" "hi" >/dev/null
out=$(uremote k 1)
[ "$out" = "<none>" ] && ok "remote UDP get dropped" ||
    fail "remote UDP get answered under protected mode: '$out'"
out=$(ulocal k)
[ "$out" = "VALUE k 0 2|hi|END|" ] && ok "loopback UDP get answered" ||
    fail "loopback UDP get: '$out'"
out=$(local_ "stats")
echo "$out" | grep -q "STAT protected_mode_refusals 1" &&
    ok "the dropped datagram counted" ||
    fail "stats: $(echo "$out" | grep protected)"
stop
mode=udp-off
start -U $UPORT --protected-mode=no
local_ "set k 0 0 2" "hi" >/dev/null
out=$(uremote k)
[ "$out" = "VALUE k 0 2|hi|END|" ] && ok "remote UDP get answered" ||
    fail "remote UDP get with --protected-mode=no: '$out'"
stop
mode=udp-auth
printf 'alice:s3cret\n' >"$W/users"
chmod 644 "$W/users"
MDC_WRAP="ip netns exec $S"
mdc_run ua -l $SRV -p $PORT -U $UPORT --auth-file "$W/users"
rc=$?
MDC_WRAP=
if [ $rc -eq 64 ] && grep -q "not authenticated" "$W/ua.log"; then
    ok "-U with --auth-file refused: $(head -1 "$W/ua.log" | cut -c1-70)..."
else
    fail "-U with --auth-file: exit $rc: $(cat "$W/ua.log")"
fi

# ---- --auth-file: protected mode off, authentication first ----------------
mode=auth
printf 'alice:s3cret\n' >"$W/users"
chmod 644 "$W/users"
start --auth-file "$W/users"
grep -q "protected mode" "$W/d.log" && fail "protected mode on with --auth-file"
out=$(remote "get k")
case "$out" in
"CLIENT_ERROR unauthenticated"*) ok "remote must authenticate" ;;
*) fail "remote not asked to authenticate: '$out'" ;;
esac
out=$(remote "set a 0 0 12" "alice s3cret" "set k 0 0 2" "hi" "get k")
case "$out" in
STORED*STORED*"VALUE k 0 2"*) ok "remote served after authenticating" ;;
*) fail "remote not served after authenticating: '$out'" ;;
esac
stop

# ---- mutual TLS counts as authentication (docs/security.md, "TLS") --------
if "$MDC" -h | grep -q -- --tls-listen; then
    mode=mtls
    TPORT=11312
    (cd "$W" &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -keyout ca.key -out ca.pem -days 2 -subj /CN=ca &&
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -keyout srv.key -out srv.pem -days 2 -subj /CN=srv &&
        openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
            -keyout cli.key -out cli.csr -subj /CN=cli &&
        openssl x509 -req -in cli.csr -CA ca.pem -CAkey ca.key -set_serial 7 \
            -days 2 -out cli.pem && chmod 644 ./*) >/dev/null 2>&1 ||
        fail "cannot make certificates"
    cat >"$W/tls_talk.py" <<'EOF2'
import socket, ssl, sys
c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
c.check_hostname = False
c.verify_mode = ssl.CERT_NONE
c.load_cert_chain(sys.argv[3] + "/cli.pem", sys.argv[3] + "/cli.key")
try:
    s = c.wrap_socket(socket.create_connection((sys.argv[1], int(sys.argv[2])),
                                               timeout=30))
    s.sendall(b"set k 0 0 2\r\nhi\r\nget k\r\n")
    out = b""
    while not out.endswith(b"END\r\n"):
        d = s.recv(65536)
        if not d:
            break
        out += d
    print(out.decode(errors="replace").replace("\r\n", "|") or "<EOF>")
except (OSError, ssl.SSLError) as e:
    print("<closed: %s>" % e)
EOF2
    tls_remote() { ip netns exec "$C" python3 "$W/tls_talk.py" $SRV $TPORT "$W"; }
    start --tls-listen=$SRV:$TPORT --tls-cert "$W/srv.pem" --tls-key "$W/srv.key" \
        --tls-ca "$W/ca.pem"
    grep -q "protected mode: $SRV:$TPORT" "$W/d.log" &&
        fail "protected mode on the mutual-TLS listener"
    out=$(tls_remote)
    case "$out" in
    STORED*"VALUE k 0 2"*) ok "remote TLS client with a certificate served" ;;
    *) fail "remote TLS client not served: '$out'" ;;
    esac
    out=$(remote "version")
    case "$out" in
    "SERVER_ERROR protected mode:"*) ok "the plain listener stays protected" ;;
    *) fail "plain remote not refused: '$out'" ;;
    esac
    stop
    mode=tls-no-ca
    start --tls-listen=$SRV:$TPORT --tls-cert "$W/srv.pem" --tls-key "$W/srv.key"
    grep -q "protected mode: $SRV:$TPORT" "$W/d.log" ||
        grep -q "protected mode: $SRV:$PORT" "$W/d.log" ||
        fail "no protected-mode warning without --tls-ca"
    out=$(tls_remote)
    case "$out" in
    *STORED*) fail "remote TLS client served without --tls-ca: '$out'" ;;
    *) ok "remote TLS client refused without --tls-ca: $(echo "$out" | cut -c1-60)" ;;
    esac
    stop
else
    echo "note: built without TLS; the mutual-TLS cases were not run"
fi

[ $failed -eq 0 ] || exit 1
echo "protected_e2e: all passed"
exit 0
