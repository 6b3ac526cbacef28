#!/bin/bash
# instr.sh - user-space instructions and system calls per request of
# mdcached -n 1 -t 0 (epoll unless --io is given) in W1, W2 or W3
# (docs/benchmarking.md): deterministic figures a shared machine's other
# load does not change, for before/after comparisons of the request path.
#
# The server runs under valgrind --tool=callgrind with instrumentation off
# while it starts and is prefilled (100 000 keys of 16 bytes, 32-byte
# values); then callgrind's counters are zeroed, bench/mdc-load drives the
# workload (90:10 get:set, 50 connections, depth 1; W3 depth 16: batches
# of 16 over the Unix socket) for DURATION seconds,
# and the counters are dumped.  The requests served in that window are the
# server's own count (text "stats": cmd_get + cmd_set after minus before),
# so the figure is instructions per request served, whatever the rate under
# valgrind.  With -s the same window runs natively under strace -c -f
# instead and the system calls per request are printed.
#
# usage: bench/instr.sh [-B BUILD] [-w W1|W2|W3] [-D SECONDS] [-s|-S] [-o OUT]
#                       [-P PROTO] [-- extra mdcached options]
#   -B  build directory (default .)      -w  workload (default W1)
#   -D  measured seconds (default 10)    -s  strace -c instead of callgrind
#   -S  the system calls counted by perf stat's tracepoints instead (the
#       server at full speed, so epoll_wait batching is the real one)
#   -o  keep callgrind.out / strace output as OUT (default: a temp dir)
#   -P  the load's protocol: text (default) or binary (memcached's)
# prints: "W1 instr/req 5123.4 requests 81234 ..." and the top functions
# (callgrind_annotate, inclusive) unless -s.
set -eu
BUILD=.
W=W1
DUR=10
STRACE=0
PERFSYS=0
OUT=
PROTO=text
while [ $# -gt 0 ]; do
    case $1 in
    -B) BUILD=$2; shift ;;
    -w) W=$2; shift ;;
    -D) DUR=$2; shift ;;
    -s) STRACE=1 ;;
    -S) STRACE=1; PERFSYS=1 ;;
    -o) OUT=$2; shift ;;
    -P) PROTO=$2; shift ;;
    --) shift; break ;;
    -h) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "instr.sh: unknown option $1" >&2; exit 64 ;;
    esac
    shift
done
DAEMON=${MDCACHED:-$BUILD/server/mdcached}
LOAD=$BUILD/bench/mdc-load
TMP=$(mktemp -d /tmp/mdc-instr.XXXXXX)
PID=
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"; }
trap cleanup EXIT

case $W in
W1 | W3) ADDR=$TMP/s.sock; LISTEN=(-p 0 -s "$ADDR") ;;
W2)
    PORT=$((30000 + RANDOM % 20000))
    ADDR=127.0.0.1:$PORT; LISTEN=(-p "$PORT" -l 127.0.0.1) ;;
*) echo "instr.sh: W1, W2 or W3" >&2; exit 64 ;;
esac

# stats FIELD...: the sum of these counters from text "stats"
stats_sum() {
    python3 - "$ADDR" "$@" <<'EOF'
import socket, sys
a = sys.argv[1]
if a.startswith('/'):
    s = socket.socket(socket.AF_UNIX); s.connect(a)
else:
    h, p = a.rsplit(':', 1); s = socket.create_connection((h, int(p)))
s.sendall(b"stats\r\n"); d = b""
while not d.endswith(b"END\r\n"):
    c = s.recv(65536)
    if not c: break
    d += c
v = {}
for l in d.decode().split("\r\n"):
    f = l.split()
    if len(f) == 3 and f[0] == "STAT": v[f[1]] = f[2]
print(sum(int(v[k]) for k in sys.argv[2:]))
EOF
}
wait_up() {
    local i
    for i in $(seq 300); do
        if [ "$W" != W2 ]; then [ -S "$ADDR" ] && return 0
        else (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && return 0; fi
        sleep 0.1
    done
    echo "instr.sh: server did not start" >&2; cat "$TMP/log" >&2; exit 1
}
# as root mdcached drops to nobody, and vgdb (callgrind_control) then
# cannot reach it: stay root
ASUSER=
[ "$(id -u)" = 0 ] && ASUSER="-u root"
LARGS=(-P "$PROTO" -s "$ADDR" -k 100000 -K 16 -v 32)
DEPTH=1
[ "$W" = W3 ] && DEPTH=16

if [ "$STRACE" = 1 ] && [ "$PERFSYS" = 1 ]; then
    # system calls at full speed (strace slows the server, which changes
    # how many connections one epoll_wait returns): perf's tracepoints
    "$DAEMON" $ASUSER -n 1 -t 0 -m 1024 "${LISTEN[@]}" -v 1 "$@" > "$TMP/log" 2>&1 &
    PID=$!
    wait_up
    "$LOAD" "${LARGS[@]}" -c 8 -f -D 0 -w 0 -q
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
    "$DAEMON" $ASUSER -n 1 -t 0 -m 1024 "${LISTEN[@]}" -v 1 "$@" > "$TMP/log" 2>&1 &
    PID=$!
    wait_up
    "$LOAD" "${LARGS[@]}" -c 8 -f -D 0 -w 0 -q
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

valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$TMP/cg.out" \
    "$DAEMON" $ASUSER -n 1 -t 0 -m 1024 "${LISTEN[@]}" -v 1 "$@" > "$TMP/log" 2>&1 &
PID=$!
wait_up
"$LOAD" "${LARGS[@]}" -c 8 -f -D 0 -w 0 -q
before=$(stats_sum cmd_get cmd_set)
callgrind_control -i on "$PID" > /dev/null
callgrind_control -z "$PID" > /dev/null
"$LOAD" "${LARGS[@]}" -c 50 -r 90:10 -d "$DEPTH" -D "$DUR" -w 0 -q
callgrind_control -d "$PID" > /dev/null
after=$(stats_sum cmd_get cmd_set)
kill "$PID"; wait "$PID" 2>/dev/null || true
PID=
n=$((after - before))
f=$TMP/cg.out.1 # the dump of the window
total=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1; exit }')
echo "$W instr/req $(python3 -c "print('%.1f' % ($total / $n))") requests $n instructions $total"
[ -n "$OUT" ] && cp "$f" "$OUT"
callgrind_annotate --inclusive=yes "$f" 2>/dev/null | sed -n '/Ir/,$p' | head -45
