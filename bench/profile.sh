#!/bin/bash
# profile.sh - where the server CPU of W1 goes (issue 4's targets): for
# mdcached over the text and the native protocol, and beside it memcached,
# Redis and the floor, each alone on CPU 0 with mdc-load on CPU 1:
#
#  1. system calls per request: `perf stat` on the syscalls:sys_enter_*
#     tracepoints of the server process over a W1 run (cheap enough not to
#     change the batching much), divided by the requests answered;
#  2. `strace -c -f` over a shorter run: the same counts plus each call's
#     errors (a read answered EAGAIN), but strace slows the server several
#     times, so more requests wait per epoll_wait;
#  3. `perf record -e cpu-clock -g` (no hardware counters in this VM): the
#     kernel/user split by object and the top symbols, plus the call chains
#     under the hottest kernel symbol;
#  4. pricing: the floor, the floor with one more (failed) read per event
#     (floor -E), with sendmsg from an iovec (floor -M), both, and mdcached,
#     alternating ROUNDS rounds: what each difference costs in µs/request.
#
# usage: bench/profile.sh [-B BUILD] [-D SECS] [-o DIR] [-r ROUNDS]
#                         [-T "mdcached-text ..."]
#   targets: mdcached-text mdcached-native memcached redis floor (default all)
#   -r 0 skips the pricing
# Writes DIR/profile-DATE/{summary.md,*.txt} (default DIR bench/results).
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(pwd)
DUR=4
OUT=$HERE/results
TARGETS="mdcached-text mdcached-native memcached redis floor"
ROUNDS=3
while getopts "B:D:o:T:r:h" o; do
    case $o in
    B) BUILD=$OPTARG ;;
    D) DUR=$OPTARG ;;
    o) OUT=$OPTARG ;;
    T) TARGETS=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    *) sed -n '2,25p' "$0"; exit 64 ;;
    esac
done
LOAD=$BUILD/bench/mdc-load
DAEMON=${MDCACHED:-$BUILD/server/mdcached}
FLOOR=$BUILD/bench/floor
for c in perf strace taskset; do
    command -v $c >/dev/null || { echo "profile.sh: $c missing" >&2; exit 1; }
done
DATE=$(date -u +%Y-%m-%dT%H%M%SZ)
DIR=$OUT/profile-$DATE
mkdir -p "$DIR"
TMP=$(mktemp -d /tmp/mdc-profile.XXXXXX)
chmod 1777 "$TMP"
SPID=
VPIDS=
cleanup() {
    [ -n "$SPID" ] && kill "$SPID" 2>/dev/null
    for p in $VPIDS; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

W1="-r 90:10 -k 100000 -K 16 -v 32 -c 50 -d 1"
SYSCALLS="read write readv writev sendmsg recvmsg sendto recvfrom epoll_wait epoll_pwait epoll_ctl accept4 clock_gettime futex getpid"
EV="-e raw_syscalls:sys_enter"
for s in $SYSCALLS; do EV="$EV -e syscalls:sys_enter_$s"; done

start_server() { # NAME -> SPID, SOCK, PROTO
    SOCK=$TMP/$1.sock
    case $1 in
    mdcached-text | mdcached-native)
        taskset -c 0 "$DAEMON" -n 1 -t 0 -m 1024 -p 0 -s "$SOCK" -v 1 > "$TMP/$1.log" 2>&1 &
        PROTO=${1#mdcached-} ;;
    memcached)
        taskset -c 0 memcached -u nobody -t 1 -m 1024 -c 1024 -U 0 -s "$SOCK" > "$TMP/$1.log" 2>&1 &
        PROTO=text ;;
    redis)
        taskset -c 0 redis-server --save '' --appendonly no --maxmemory 1024mb \
            --port 0 --unixsocket "$SOCK" --unixsocketperm 700 --loglevel warning > "$TMP/$1.log" 2>&1 &
        PROTO=resp ;;
    floor)
        taskset -c 0 "$FLOOR" -s "$SOCK" -K 16 -v 32 > "$TMP/$1.log" 2>&1 &
        PROTO=text ;;
    esac
    SPID=$!
    for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
    taskset -c 1 "$LOAD" -P "$PROTO" -s "$SOCK" -k 100000 -K 16 -v 32 -c 8 -f -D 0 -w 0 -q
}
# load SECS JSON: one W1 run, no warmup, so the tracer sees all of it
load() {
    # shellcheck disable=SC2086
    taskset -c 1 "$LOAD" -P "$PROTO" -s "$SOCK" $W1 -D "$1" -w 0 -p "$SPID" -q -j "$2"
}
reqs() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["requests"])' "$1"; }

SUM=$DIR/summary.md
{
    echo "# W1 profile, $DATE, $(uname -n) $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "mdc-load $W1 (Unix socket); servers with 1 worker thread, -m 1024, on CPU 0."
    echo
} > "$SUM"

for t in $TARGETS; do
    echo "profile: $t" >&2
    start_server "$t"
    sleep 0.5
    # 1. syscall counts with perf stat
    # shellcheck disable=SC2086
    perf stat $EV -x, -o "$DIR/$t-syscalls.csv" -p "$SPID" &
    PS=$!
    sleep 0.3
    load "$DUR" "$TMP/stat.json"
    kill -INT $PS; wait $PS 2>/dev/null || true
    N=$(reqs "$TMP/stat.json")
    # 2. strace -c -f
    strace -c -f -o "$DIR/$t-strace.txt" -p "$SPID" 2>/dev/null &
    ST=$!
    sleep 0.5
    load 2 "$TMP/strace.json"
    kill -INT $ST; wait $ST 2>/dev/null || true
    NS=$(reqs "$TMP/strace.json")
    # 3. perf record
    load $((DUR + 1)) "$TMP/rec.json" &
    LP=$!
    sleep 0.5
    perf record -q -e cpu-clock -g -p "$SPID" -o "$TMP/perf.data" -- sleep "$DUR" 2>/dev/null
    wait $LP
    perf report -i "$TMP/perf.data" --no-children --stdio -g none --sort dso 2>/dev/null |
        grep -v '^#' | grep -v '^$' > "$DIR/$t-dso.txt"
    perf report -i "$TMP/perf.data" --no-children --stdio -g none --sort sym 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -60 > "$DIR/$t-symbols.txt"
    perf report -i "$TMP/perf.data" --no-children --stdio -G --sort sym --percent-limit 2 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -400 > "$DIR/$t-callers.txt"
    perf report -i "$TMP/perf.data" --no-children --stdio -g none --sort sym --dso "$(basename "$(readlink -f "/proc/$SPID/exe")")" 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -30 > "$DIR/$t-own-symbols.txt"
    kill "$SPID"; wait "$SPID" 2>/dev/null || true
    SPID=
    python3 - "$t" "$N" "$DIR/$t-syscalls.csv" "$NS" "$DIR/$t-strace.txt" \
        "$TMP/stat.json" "$DIR/$t-dso.txt" "$DIR/$t-symbols.txt" >> "$SUM" <<'EOF'
import json, sys
t, n, csv, ns, strace, sj, dso, sym = sys.argv[1:9]
n, ns = int(n), int(ns)
d = json.load(open(sj))
c = d.get("server_cpu") or {}
print("## %s\n" % t)
print("perf stat run: %d requests, %.0f req/s, server %.2f µs/req (user %.2f, sys %.2f)\n" % (
    n, d["throughput"], c.get("us_per_req", 0), c.get("user_us_per_req", 0),
    c.get("sys_us_per_req", 0)))
cnt = {}
for line in open(csv):
    p = line.strip().split(",")
    if len(p) > 2 and p[0].replace(".", "").isdigit():
        cnt[p[2].split(":")[-1].replace("sys_enter_", "")] = float(p[0])
tot = cnt.pop("sys_enter", None)
print("system calls per request (perf stat): " + ", ".join(
    "%s %.2f" % (k, v / n) for k, v in sorted(cnt.items(), key=lambda x: -x[1]) if v)
    + ("; all %.2f" % (tot / n) if tot else "") + "\n")
rows = []
for line in open(strace):
    p = line.split()
    if len(p) >= 5 and p[0].replace(".", "").isdigit() and p[-1] != "total":
        calls = int(p[3])
        errs = int(p[4]) if len(p) == 6 else 0
        rows.append((p[-1], calls, errs))
print("strace -c -f (%d requests): " % ns + ", ".join(
    "%s %.2f%s" % (s, c / ns, " (%.2f failed)" % (e / ns) if e else "")
    for s, c, e in rows if c / ns >= 0.005) + "\n")
print("perf record, by object: " + ", ".join(
    " ".join(l.split()[:2]) for l in open(dso) if l.strip()) + "\n")
print("top symbols:\n")
print("    " + "\n    ".join(l.rstrip() for l in list(open(sym))[:25]) + "\n")
EOF
done
# 4. Pricing the differences: the floor as it is, with one more (failed) read
# per event (-E), with sendmsg from an iovec instead of write (-M), both, and
# mdcached's text protocol, alternating for ROUNDS rounds; medians of server
# CPU per request.
if [ "$ROUNDS" -gt 0 ]; then
    echo "profile: pricing (floor variants against mdcached, $ROUNDS rounds)" >&2
    declare -A VP VS
    VARIANTS="floor floor-E floor-M floor-EM mdcached"
    for v in $VARIANTS; do
        VS[$v]=$TMP/$v.sock
        case $v in
        floor) taskset -c 0 "$FLOOR" -s "${VS[$v]}" -K 16 -v 32 & ;;
        floor-E) taskset -c 0 "$FLOOR" -s "${VS[$v]}" -K 16 -v 32 -E & ;;
        floor-M) taskset -c 0 "$FLOOR" -s "${VS[$v]}" -K 16 -v 32 -M & ;;
        floor-EM) taskset -c 0 "$FLOOR" -s "${VS[$v]}" -K 16 -v 32 -E -M & ;;
        mdcached) taskset -c 0 "$DAEMON" -n 1 -t 0 -m 1024 -p 0 -s "${VS[$v]}" -v 1 & ;;
        esac
        VP[$v]=$!
        VPIDS="$VPIDS $!"
        for _ in $(seq 100); do [ -S "${VS[$v]}" ] && break; sleep 0.1; done
        taskset -c 1 "$LOAD" -P text -s "${VS[$v]}" -k 100000 -K 16 -v 32 -c 8 -f -D 0 -w 0 -q
    done
    : > "$DIR/pricing.jsonl"
    for r in $(seq "$ROUNDS"); do
        for v in $VARIANTS; do
            # shellcheck disable=SC2086
            taskset -c 1 "$LOAD" -P text -s "${VS[$v]}" $W1 -D "$DUR" -w 1 -p "${VP[$v]}" -q -L "$v" -j - |
                python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)))' >> "$DIR/pricing.jsonl"
        done
    done
    for p in $VPIDS; do kill "$p" 2>/dev/null || true; done
    VPIDS=
    python3 - "$DIR/pricing.jsonl" "$ROUNDS" "$DUR" >> "$SUM" <<'EOF'
import json, statistics, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
print("## Pricing: floor variants beside mdcached (text), W1\n")
print("%s rounds × %s s alternating; medians. `-E`: read until EAGAIN; `-M`: "
      "sendmsg with a 3-piece iovec instead of write.\n" % (sys.argv[2], sys.argv[3]))
print("| server | req/s | server µs/req | user | sys | Δ vs floor | spread |")
print("|---|---:|---:|---:|---:|---:|---|")
base = None
for v in ("floor", "floor-E", "floor-M", "floor-EM", "mdcached"):
    x = [r for r in rs if r["label"] == v]
    m = lambda f: statistics.median(f(r) for r in x)
    us = m(lambda r: r["server_cpu"]["us_per_req"])
    base = us if base is None else base
    print("| %s | %.0f | %.2f | %.2f | %.2f | %+.2f | %s |" % (
        v, m(lambda r: r["throughput"]), us,
        m(lambda r: r["server_cpu"]["user_us_per_req"]),
        m(lambda r: r["server_cpu"]["sys_us_per_req"]), us - base,
        " ".join("%.2f" % r["server_cpu"]["us_per_req"] for r in x)))
print()
EOF
fi
cat "$SUM"
echo "profile: files in $DIR" >&2
