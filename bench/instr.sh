#!/bin/bash
# instr.sh - user-space instructions and system calls per request of
# mdcached -n 1 -t 0 (--io=epoll unless another --io is given: valgrind
# does not run io_uring, the default) in W1, W2, W3 or TLS (W2 over TLS
# 1.3, an EC P-256 certificate made with the openssl CLI), or of memcached
# -t 1 (-T memcached; -Z for TLS) under the same load
# (docs/benchmarking.md): deterministic figures a shared machine's other
# load does not change, for before/after comparisons of the request path
# and for comparing both servers.
#
# The server runs under valgrind --tool=callgrind with instrumentation off
# while it starts and is prefilled (100 000 keys of 16 bytes, 32-byte
# values); then callgrind's counters are zeroed, bench/mdc-load drives the
# workload (90:10 get:set, 50 connections, depth 1; W3: 16 requests
# written per batch per connection) for DURATION seconds,
# and the counters are dumped.  The requests served in that window are the
# server's own count (text "stats": cmd_get + cmd_set after minus before),
# so the figure is instructions per request served, whatever the rate under
# valgrind.  With -s the same window runs natively under strace -c -f
# instead and the system calls per request are printed.
#
# usage: bench/instr.sh [-B BUILD] [-w W1|W2|W3|TLS] [-D SECONDS] [-s|-S]
#                       [-o OUT] [-P PROTO] [-T mdcached|memcached]
#                       [-k KEYS] [-m MIB] [-f KEYS] [-C] [-W SECONDS]
#                       [-R RATE]
#                       [-- extra server options]
#   -B  build directory (default .)      -w  workload (default W1)
#   -D  measured seconds (default 10)    -s  strace -c instead of callgrind
#   -S  the system calls counted by perf stat's tracepoints instead (the
#       server at full speed, so epoll_wait batching is the real one)
#   -o  keep callgrind.out / strace output as OUT (default: a temp dir)
#   -P  the load's protocol: text (default) or binary (memcached's)
#   -T  the server: mdcached (default) or memcached (1.6, -t 1)
#   -k  key space (default 100000), -m  the server's -m (default 1024):
#       e.g. -k 1200000 -m 8, a W1E in small (most sets evict)
#   -f  prefill only this many keys (default: -k): -k 12000000 -m 64
#       -f 1000000 is W1E's window (memory full, 94 % of the gets miss,
#       the sets evict) without setting all 12 M keys under valgrind
#   -C  callgrind's cache simulation too: last-level misses per request
#       (data reads and writes), the cost instructions do not show
#   -W  seconds of the load run with instrumentation on before the
#       window (default 0): the simulated caches start empty when
#       instrumentation starts, so without it every line first touched in
#       the window is a miss, and the misses per request fall as the
#       window holds more requests (a faster server looks better); with
#       -C -W 20 the window sees warm caches.  VALGRIND_OPTS=--LL=...
#       sets the simulated last level (callgrind takes the host's, on a
#       VM perhaps not the real one)
#   -R  the load's rate, requests a second in all (open loop; default:
#       closed loop, as fast as the server answers): two builds then see
#       the same requests in warm-up and window whatever their speed
#       under valgrind, for pairwise cache figures
# prints: "W1 instr/req 5123.4 requests 81234 ..." and the top functions
# (callgrind_annotate, inclusive) unless -s; with TLS first the protocol
# and cipher that a default OpenSSL client (openssl s_client; mdc-load
# --tls sets no cipher list either) negotiates with the server.
set -eu
BUILD=.
W=W1
DUR=10
STRACE=0
PERFSYS=0
OUT=
PROTO=text
TARGET=mdcached
KEYS=100000
MEM=1024
PREKEYS=
CACHESIM=no
WARM=0
RATE=
while [ $# -gt 0 ]; do
    case $1 in
    -B) BUILD=$2; shift ;;
    -w) W=$2; shift ;;
    -D) DUR=$2; shift ;;
    -s) STRACE=1 ;;
    -S) STRACE=1; PERFSYS=1 ;;
    -o) OUT=$2; shift ;;
    -P) PROTO=$2; shift ;;
    -T) TARGET=$2; shift ;;
    -k) KEYS=$2; shift ;;
    -m) MEM=$2; shift ;;
    -f) PREKEYS=$2; shift ;;
    -C) CACHESIM=yes ;;
    -W) WARM=$2; shift ;;
    -R) RATE=$2; shift ;;
    --) shift; break ;;
    -h) sed -n '2,56p' "$0"; exit 0 ;;
    *) echo "instr.sh: unknown option $1" >&2; exit 64 ;;
    esac
    shift
done
DAEMON=${MDCACHED:-$BUILD/server/mdcached}
LOAD=$BUILD/bench/mdc-load
DEPTH=1
TMP=$(mktemp -d /tmp/mdc-instr.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

case $W in
W1) ADDR=$TMP/s.sock; LISTEN=(-p 0 -s "$ADDR") ;;
W3) ADDR=$TMP/s.sock; LISTEN=(-p 0 -s "$ADDR"); DEPTH=16 ;;
W2 | TLS)
    PORT=$((30000 + RANDOM % 20000))
    ADDR=127.0.0.1:$PORT; LISTEN=(-p "$PORT" -l 127.0.0.1) ;;
*) echo "instr.sh: W1, W2, W3 or TLS" >&2; exit 64 ;;
esac
TLS=
if [ "$W" = TLS ]; then
    TLS=--tls
    CERT=$TMP/cert.pem KEY=$TMP/key.pem
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
        -keyout "$KEY" -out "$CERT" -days 2 -subj /CN=localhost 2>/dev/null
    chmod 644 "$KEY" "$CERT"
    LISTEN=(-p 0 --tls-listen="127.0.0.1:$PORT" --tls-cert="$CERT"
        --tls-key="$KEY")
fi
# the server's command line (the extra options go last)
case $TARGET in
mdcached) SERVER=("$DAEMON" -n 1 -t 0 -m "$MEM" "${LISTEN[@]}" -v 1) ;;
memcached)
    case $W in
    W1 | W3) MLISTEN=(-s "$ADDR" -a 0700) ;;
    W2) MLISTEN=(-p "$PORT" -l 127.0.0.1) ;;
    TLS) MLISTEN=(-p "$PORT" -l 127.0.0.1 -Z
        -o "ssl_chain_cert=$CERT,ssl_key=$KEY") ;;
    esac
    SERVER=(memcached -t 1 -m "$MEM" -c 1024 -U 0 "${MLISTEN[@]}") ;;
*) echo "instr.sh: -T mdcached or memcached" >&2; exit 64 ;;
esac

# stats FIELD...: the sum of these counters from text "stats"
stats_sum() {
    python3 - "$ADDR" "${TLS:--}" "$@" <<'EOF'
import socket, ssl, sys
a = sys.argv[1]
if a.startswith('/'):
    s = socket.socket(socket.AF_UNIX); s.connect(a)
else:
    h, p = a.rsplit(':', 1); s = socket.create_connection((h, int(p)))
if sys.argv[2] == '--tls':
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False; ctx.verify_mode = ssl.CERT_NONE
    s = ctx.wrap_socket(s)
s.sendall(b"stats\r\n"); d = b""
while not d.endswith(b"END\r\n"):
    c = s.recv(65536)
    if not c: break
    d += c
v = {}
for l in d.decode().split("\r\n"):
    f = l.split()
    if len(f) == 3 and f[0] == "STAT": v[f[1]] = f[2]
print(sum(int(v[k]) for k in sys.argv[3:]))
EOF
}
wait_up() {
    local i
    for i in $(seq 300); do
        if [ "$W" = W1 ] || [ "$W" = W3 ]; then [ -S "$ADDR" ] && return 0
        else (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0; fi
        sleep 0.1
    done
    echo "instr.sh: server did not start" >&2; cat "$TMP/log" >&2; exit 1
}
# TLS: the protocol and cipher a default OpenSSL client gets
say_cipher() {
    [ -n "$TLS" ] || return 0
    echo "$TARGET: $(openssl s_client -connect "$ADDR" </dev/null 2>/dev/null |
        sed -n 's/^New, \(.*\)$/\1/p' | head -1)"
}
# as root mdcached drops to nobody, and vgdb (callgrind_control) then
# cannot reach it: stay root
if [ "$(id -u)" = 0 ]; then
    SERVER=("${SERVER[0]}" -u root "${SERVER[@]:1}")
fi
# mdcached: --io=epoll unless the extra options choose (a later --io wins)
IOEP=()
[ "$TARGET" = mdcached ] && IOEP=(--io=epoll)
# shellcheck disable=SC2206
LARGS=(-P "$PROTO" -s "$ADDR" $TLS -k "$KEYS" -K 16 -v 32)

if [ "$STRACE" = 1 ] && [ "$PERFSYS" = 1 ]; then
    # system calls at full speed (strace slows the server, which changes
    # how many connections one epoll_wait returns): perf's tracepoints
    "${SERVER[@]}" "${IOEP[@]}" "$@" > "$TMP/log" 2>&1 &
    PID=$!
    wait_up
say_cipher
    "$LOAD" "${LARGS[@]}" ${PREKEYS:+-k "$PREKEYS"} -c 8 -f -D 0 -w 0 -q
    before=$(stats_sum cmd_get cmd_set)
    EV=raw_syscalls:sys_enter
    for sc in recvfrom sendto sendmsg epoll_wait epoll_ctl read write; do
        EV=$EV,syscalls:sys_enter_$sc
    done
    perf stat -x, -e "$EV" -p "$PID" -o "$TMP/perf" &
    SPID=$!
    sleep 0.5
    "$LOAD" "${LARGS[@]}" -c 50 -r 90:10 -d "$DEPTH" -D "$DUR" -w 0 -q
    kill -INT $SPID; wait $SPID 2>/dev/null || true
    after=$(stats_sum cmd_get cmd_set)
    n=$((after - before))
    echo "$W syscalls over $n requests (perf stat, tracepoints):"
    awk -F, -v n="$n" '$3 ~ /sys_enter/ { sub(/.*sys_enter_?/, "", $3); if ($3 == "") $3 = "all";
        printf "  %-16s %10d  %.3f /req\n", $3, $1, $1 / n }' "$TMP/perf"
    [ -n "$OUT" ] && cp "$TMP/perf" "$OUT"
    exit 0
fi
if [ "$STRACE" = 1 ]; then
    "${SERVER[@]}" "${IOEP[@]}" "$@" > "$TMP/log" 2>&1 &
    PID=$!
    wait_up
say_cipher
    "$LOAD" "${LARGS[@]}" ${PREKEYS:+-k "$PREKEYS"} -c 8 -f -D 0 -w 0 -q
    before=$(stats_sum cmd_get cmd_set)
    strace -c -f -q -o "$TMP/strace" -p "$PID" &
    SPID=$!
    sleep 1
    "$LOAD" "${LARGS[@]}" -c 50 -r 90:10 -d "$DEPTH" -D "$DUR" -w 0 -q
    sleep 0.5
    kill -INT $SPID; wait $SPID 2>/dev/null || true
    after=$(stats_sum cmd_get cmd_set)
    n=$((after - before - 0))
    echo "$W syscalls over $n requests (strace -c -f):"
    python3 - "$TMP/strace" "$n" <<'EOF'
import sys
n = int(sys.argv[2])
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) >= 5 and f[0][0].isdigit() and f[-1] != 'total':
        calls = int(f[3])
        print("  %-16s %10d  %.3f /req" % (f[-1], calls, calls / n))
    elif f and f[-1] == 'total':
        print("  %-16s %10s  %.3f /req" % ('total', f[3], int(f[3]) / n))
EOF
    [ -n "$OUT" ] && cp "$TMP/strace" "$OUT"
    exit 0
fi

# memcached sets its descriptor limit (soft and hard) to -c, which
# valgrind allows only if that is the hard limit it leaves the program:
# its own limit less the 12 it keeps
(
    [ "$TARGET" = memcached ] && ulimit -n 1036
    exec valgrind --tool=callgrind --instr-atstart=no --cache-sim="$CACHESIM" \
        --callgrind-out-file="$TMP/cg.out" \
        "${SERVER[@]}" "${IOEP[@]}" "$@" > "$TMP/log" 2>&1
) &
PID=$!
wait_up
say_cipher
"$LOAD" "${LARGS[@]}" ${PREKEYS:+-k "$PREKEYS"} -c 8 -f -D 0 -w 0 -q
if [ -n "$TLS" ]; then
    # The steady state only: the window opens once the load's 50
    # handshakes are done (instrumentation is off until then) and closes
    # before it ends, so no handshake, accept or close is in it.  Requests
    # are the window's SSL_write calls: one per reply at depth 1 for both
    # servers (strace, -s: one write per request), and a stats request
    # now would be a handshake of its own.
    SETTLE=10
    "$LOAD" "${LARGS[@]}" -c 50 -r 90:10 -d "$DEPTH" -D $((DUR + SETTLE + 30)) -w 0 -q &
    LPID=$!
    sleep "$SETTLE"
    callgrind_control -i on "$PID" > /dev/null
    callgrind_control -z "$PID" > /dev/null
    sleep "$DUR"
    callgrind_control -d "$PID" > /dev/null
    kill "$LPID" 2>/dev/null; wait "$LPID" 2>/dev/null || true
else
    callgrind_control -i on "$PID" > /dev/null
    if [ "$WARM" != 0 ]; then
        # another seed: the window's stream would replay the warm-up's
        # (its sets then replace what the warm-up stored, its gets hit)
        "$LOAD" "${LARGS[@]}" -c 50 -r 90:10 -d "$DEPTH" -D "$WARM" -w 0 -q \
            --seed 2 ${RATE:+-R "$RATE"}
    fi
    before=$(stats_sum cmd_get cmd_set)
    callgrind_control -z "$PID" > /dev/null
    "$LOAD" "${LARGS[@]}" -c 50 -r 90:10 -d "$DEPTH" -D "$DUR" -w 0 -q \
        ${RATE:+-R "$RATE"}
    callgrind_control -d "$PID" > /dev/null
    after=$(stats_sum cmd_get cmd_set)
fi
kill "$PID"; wait "$PID" 2>/dev/null || true
PID=
f=$TMP/cg.out.1 # the dump of the window
total=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
if [ "$CACHESIM" = yes ]; then
    # Ir I1mr ILmr Dr D1mr DLmr Dw D1mw DLmw: last-level misses per request
    # (after the non-TLS branch below has set n; printed at the end)
    llm=$(awk '/^(summary|totals):/ { print $8, $9, $10, $6, $7; exit }' "$f")
fi
if [ -n "$TLS" ]; then
    # calls of the OpenSSL entry points in the window, and the window's
    # instructions by object (self cost): libssl, libcrypto, libc, server
    python3 - "$f" "$total" <<'EOF'
import re, sys
names, obs, calls, selfc = {}, {}, {}, {}
ob = cfn = None
aftercall = False
def name(tbl, v):
    m = re.match(r'\((\d+)\)(?: (.*))?', v)
    if not m:
        return v
    if m.group(2) is not None:
        tbl[m.group(1)] = m.group(2)
    return tbl.get(m.group(1), v)
for l in open(sys.argv[1]):
    l = l.rstrip('\n')
    if l.startswith('ob='):
        ob = name(obs, l[3:])
    elif l.startswith('cob='):
        name(obs, l[4:])
    elif l.startswith('fn='):
        name(names, l[3:])
    elif l.startswith('cfn='):
        cfn = name(names, l[4:])
    elif l.startswith('calls='):
        calls[cfn] = calls.get(cfn, 0) + int(l[6:].split()[0])
        aftercall = True
    elif l and (l[0].isdigit() or l[0] in '+-*'):
        if aftercall:
            aftercall = False
            continue
        f = l.split()
        if len(f) >= 2:
            k = ob.rsplit('/', 1)[-1] if ob else '?'
            selfc[k] = selfc.get(k, 0) + int(f[1])
total = int(sys.argv[2])
n = calls.get('SSL_write', 0)
print("TLS instr/req %.1f requests %d (SSL_write calls) instructions %d"
      % (total / max(n, 1), n, total))
for k in ('SSL_read', 'SSL_write', 'SSL_do_handshake', 'ERR_clear_error',
          'SSL_get_error', 'SSL_pending', 'SSL_has_pending'):
    print("  calls %-18s %.3f /req" % (k, calls.get(k, 0) / max(n, 1)))
for k, v in sorted(selfc.items(), key=lambda x: -x[1])[:6]:
    print("  self  %-28s %8.1f /req" % (k, v / max(n, 1)))
if calls.get('SSL_do_handshake', 0):
    print("  (a handshake fell in the window: -D shorter or SETTLE longer)")
EOF
else
    n=$((after - before))
    echo "$W instr/req $(python3 -c "print('%.1f' % ($total / $n))") requests $n instructions $total"
fi
[ -n "$OUT" ] && cp "$f" "$OUT"
if [ "$CACHESIM" = yes ] && [ -n "${n:-}" ]; then
    set -- $llm
    echo "$W per request: LL misses, instructions $(python3 -c "print('%.2f' % ($1 / $n))") data reads $(python3 -c "print('%.2f' % ($2 / $n))") data writes $(python3 -c "print('%.2f' % ($3 / $n))"); D1 misses, reads $(python3 -c "print('%.2f' % ($4 / $n))") writes $(python3 -c "print('%.2f' % ($5 / $n))")"
fi
callgrind_annotate --inclusive=yes "$f" 2>/dev/null | sed -n '/Ir/,$p' | head -45
