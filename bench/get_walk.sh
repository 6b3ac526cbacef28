#!/bin/sh
# bench/get_walk.sh - the source files one text GET hit over TCP crosses in
# the daemon (docs/architecture.md, "The walk of a GET"), or with --tdel
# those one stale tag delete ("tdel 1 2 I" of one record carrying the tag
# 1:2) crosses (docs/architecture.md, "The levels of the store").
#
# Usage: bench/get_walk.sh [--tdel] [MDCACHED] [DAEMON OPTIONS...]
#   MDCACHED  the daemon binary, built with -g (default: server/mdcached of
#             the build tree this is run from, else _build/dev/server/mdcached)
#   options   default: -n 4 -t 0 (the default backend, io_uring where the
#             kernel allows it); add --io=epoll for the other backend
#
# How: the daemon starts on a free port (-p auto, --port-file); a client
# connects, stores a key and reads it once (so the connection is adopted and
# warm).  gdb then attaches and puts a breakpoint at the entry of every
# function of the binary whose code comes from the project's sources - the
# function and its file resolved from the debug info (addr2line), so nothing
# here knows which function lives where.  The client sends one "get" (three
# times, 0.3 s apart: the one with the fewest calls is shown, as a timer
# tick of the daemon may fall in another's window), and every call entered
# between the send and the reply is recorded with its thread and time.  Printed: the calls of the thread that served it, the
# files in order (consecutive calls in one file collapsed), the number of
# distinct files, those of them in server/core/ (the store's part), and
# every back-and-forth (a file left for another one and
# entered again: A -> B -> A).  Inlined functions are part of their caller,
# as in a profile: only real calls count.
#
# Needs gdb, binutils (addr2line, nm), python3, and ptrace rights (root, or
# kernel.yama.ptrace_scope=0).  A figure, not a test: never run by make check.
set -eu

MODE=get
if [ "${1:-}" = --tdel ]; then
    MODE=tdel
    shift
fi
BIN=${1:-}
[ $# -gt 0 ] && shift
if [ -z "$BIN" ]; then
    for b in server/mdcached _build/dev/server/mdcached; do
        [ -x "$b" ] && BIN=$b && break
    done
fi
[ -n "$BIN" ] && [ -x "$BIN" ] || { echo "get_walk: no mdcached binary" >&2; exit 2; }
for t in gdb addr2line nm python3; do
    command -v $t >/dev/null || { echo "get_walk: needs $t" >&2; exit 2; }
done
[ $# -gt 0 ] || set -- -n 4 -t 0

T=$(mktemp -d)
DPID=
cleanup() {
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

# Every function symbol, its entry and its file from the debug info.
nm --defined-only "$BIN" | awk '$2 ~ /^[tTwW]$/ { print $1, $3 }' | sort -u \
    >"$T/syms"
awk '{ print "0x" $1 }' "$T/syms" | addr2line -e "$BIN" >"$T/lines"
# and their sizes: a return address outside every function of the binary
# (libevent's, libc's) belongs to no file of the project
nm -S --defined-only "$BIN" | awk 'NF == 4 && $3 ~ /^[tTwW]$/ { print $1, $2 }' \
    >"$T/sizes"
paste -d' ' "$T/syms" "$T/lines" | python3 -c '
import os, sys
src = ("server/", "protocol/", "client-c/", "bpf/")
seen = set()
for ln in sys.stdin:
    off, name, where = ln.split()
    f = where.rsplit(":", 1)[0]
    f = os.path.normpath(f)
    for s in src:
        i = f.find(s)
        if i >= 0:
            f = f[i:]
            break
    else:
        continue
    if off in seen:
        continue
    seen.add(off)
    print(off, name, f)
' >"$T/funcs"
[ -s "$T/funcs" ] || { echo "get_walk: no debug info in $BIN (build with -g)" >&2; exit 2; }

"$BIN" -l 127.0.0.1 -p auto --port-file "$T/ports" "$@" >"$T/log" 2>&1 &
DPID=$!
i=0
while [ ! -s "$T/ports" ] && kill -0 $DPID 2>/dev/null && [ $i -lt 200 ]; do
    sleep 0.05; i=$((i + 1))
done
PORT=$(awk '$1 == "tcp" { sub(/.*:/, "", $2); print $2; exit }' "$T/ports" 2>/dev/null || true)
[ -n "$PORT" ] || { cat "$T/log" >&2; echo "get_walk: daemon did not start" >&2; exit 1; }

# The client: connects, warms up, then waits for gdb to be ready.
python3 - "$PORT" "$T" "$MODE" <<'EOF' &
import os, socket, sys, time
port, d, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
def ask(req, end):
    s.sendall(req)
    buf = b""
    while not buf.endswith(end):
        b = s.recv(65536)
        if not b:
            raise SystemExit("get_walk: connection closed")
        buf += b
    return buf
if mode == "tdel":
    req, want = b"tdel 1 2 I\r\n", b"DELETED 1\r\n"
    ask(b"tset walk:key 0 0 5 1:2\r\nhello\r\n", b"STORED\r\n")
else:
    req, want = b"get walk:key\r\n", b"VALUE walk:key 0 5\r\nhello\r\nEND\r\n"
    ask(b"set walk:key 0 0 5\r\nhello\r\n", b"STORED\r\n")
ask(req, want[-5:])
open(d + "/warm", "w").close()
for _ in range(600):
    if os.path.exists(d + "/ready"):
        break
    time.sleep(0.1)
else:
    raise SystemExit("get_walk: gdb never became ready")
with open(d + "/window", "w") as f:
    for _ in range(3):  # the quietest of three (a timer may run in one)
        time.sleep(0.3)
        t0 = time.monotonic_ns()
        r = ask(req, want[-5:])
        t1 = time.monotonic_ns()
        assert r == want, r
        f.write("%d %d\n" % (t0, t1))
EOF
CPID=$!
i=0
while [ ! -e "$T/warm" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done

BASE=$(awk -v b="$(readlink -f "$BIN")" '$6 == b { split($1, a, "-"); print a[1]; exit }' \
    /proc/$DPID/maps)
cat >"$T/walk.py" <<EOF
import gdb, time
base = int("$BASE", 16)
hits = []
class Entry(gdb.Breakpoint):
    def stop(self):
        # the return addresses below it: which files called it
        pcs = []
        f = gdb.newest_frame().older()
        while f is not None and len(pcs) < 64:
            if f.type() == gdb.NORMAL_FRAME:
                pcs.append("%x" % (f.pc() - base))
            f = f.older()
        hits.append((time.monotonic_ns(), gdb.selected_thread().ptid[1],
                     self.off, ",".join(pcs) or "-"))
        return False
gdb.execute("set pagination off")
gdb.execute("set confirm off")
for ln in open("$T/funcs"):
    off = ln.split()[0]
    b = Entry("*0x%x" % (base + int(off, 16)), internal=True)
    b.off = off
open("$T/ready", "w").close()
try:
    gdb.execute("continue")
except gdb.error:
    pass
with open("$T/hits", "w") as f:
    for t, tid, off, pcs in hits:
        f.write("%d %d %s %s\n" % (t, tid, off, pcs))
gdb.execute("detach")
EOF
gdb -q -batch -nx -p $DPID -x "$T/walk.py" >"$T/gdb.log" 2>&1 &
GPID=$!
wait $CPID || { cat "$T/gdb.log" >&2; exit 1; }
kill -INT $DPID
wait $GPID || true
[ -s "$T/hits" ] || { cat "$T/gdb.log" >&2; echo "get_walk: no calls recorded" >&2; exit 1; }

python3 - "$T" <<'EOF'
import bisect, collections, sys
d = sys.argv[1]
funcs = {}
for ln in open(d + "/funcs"):
    off, name, f = ln.split()
    funcs[off] = (name, f)
sizes = {}
for ln in open(d + "/sizes"):
    off, sz = ln.split()
    sizes[int(off, 16)] = max(sizes.get(int(off, 16), 0), int(sz, 16))
starts = sorted((int(o, 16), f) for o, (_, f) in funcs.items())
keys = [s for s, _ in starts]
def file_of(pc):  # the project file whose function holds pc, or None
    pc = int(pc, 16) - 1
    i = bisect.bisect_right(keys, pc) - 1
    if i < 0:
        return None
    # past the end of that function: a library's code (libevent calling
    # back), not the project's
    if keys[i] in sizes and pc >= keys[i] + sizes[keys[i]]:
        return None
    return starts[i][1]
allhits = [ln.split() for ln in open(d + "/hits")]
best = None
for w in open(d + "/window"):
    t0, t1 = map(int, w.split())
    hs = [(int(t), int(tid), off, pcs) for t, tid, off, pcs in allhits
          if t0 <= int(t) <= t1]
    if not hs:
        continue
    bytid = collections.Counter(h[1] for h in hs)
    tid, n = bytid.most_common(1)[0]
    # the get with the fewest calls: a once-a-second timer that ran in
    # the window of another adds its own calls
    if best is None or n < best[2]:
        best = (hs, tid, n)
if best is None:
    raise SystemExit("get_walk: no call between a request and its reply")
hits, tid, _ = best
calls = [funcs[off] for _, t, off, _ in hits if t == tid]
# A callback: a call into a file that is on the stack below another file
# (uring.c -> conn.c -> uring.c), the two calling each other.
backs = []
for _, t, off, pcs in hits:
    if t != tid:
        continue
    chain = []
    for pc in reversed(pcs.split(",") if pcs != "-" else []):
        f = file_of(pc)
        if f is not None and (not chain or chain[-1] != f):
            chain.append(f)
    callee = funcs[off][1]
    if callee in chain[:-1] and chain[-1] != callee:
        m = "%s -> %s -> %s (%s)" % (callee, chain[-1], callee, funcs[off][0])
        if m not in backs:
            backs.append(m)
print("calls (thread %d, %d calls; %d calls on other threads):"
      % (tid, len(calls), len(hits) - len(calls)))
for name, f in calls:
    print("  %-28s %s" % (name, f))
walk = []
for _, f in calls:
    if not walk or walk[-1] != f:
        walk.append(f)
print("walk: " + " -> ".join(walk))
print("files: %d" % len(set(walk)))
# the store's part: its .c files, and apart the headers a function is
# put down to when its first line is an inline of theirs (store_hash() is
# store_hash.h's inline hash, though defined in a .c)
core = sorted(set(f for f in walk if f.startswith("server/core/")))
cs = [f for f in core if f.endswith(".c")]
hs = [f for f in core if not f.endswith(".c")]
print("store files (server/core/): %d .c (%s); headers by first line: %s"
      % (len(cs), " ".join(cs), " ".join(hs) or "none"))
print("moves between files: %d (between two files of the store: %d)"
      % (len(walk) - 1,
         sum(1 for a, b in zip(walk, walk[1:])
             if a.startswith("server/core/") and b.startswith("server/core/"))))
print("back-and-forth (a call into a file lower on the stack): %d%s"
      % (len(backs), "".join("\n  " + m for m in backs)))
EOF
