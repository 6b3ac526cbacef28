#!/bin/sh
# bench/w8.sh - W8 (docs/benchmarking.md, docs/xdp.md): UDP GETs of hot keys, in one
# run, side by side, rounds alternating:
#   a  mdcached -U -x (native XDP): hits answered by the XDP program
#   b  the same daemon without -x: mdcached's userspace UDP path
#   c  Debian's memcached -U (memcached -t 1)
#   d  the bare bounce-back XDP program (mdc-xdp-tool bounce): the floor
#   ag mdcached -U -x in generic mode (for reference)
# Two network namespaces joined by veth: the server side in one (pinned to
# CPU 0), bench/udpload in the other (pinned to CPU 1); the client's veth
# runs an XDP_PASS program in every case (native XDP_TX needs it, and the
# client side must be the same for all).  For each: requests/s, latency, and
# CPU-seconds per million requests over all CPUs from /proc/stat (softirq
# included - the XDP program runs there) and, as a figure that other
# sessions' processes on a shared machine do not inflate, the CPU of this
# run's own threads (generator, server, ksoftirqd: the softirq work runs in
# their context); the marginal costs (a-d), (b-d), (c-d); the programs' own run_time_ns/run_cnt for a and d with
# kernel.bpf_stats_enabled=1 (separate rounds: the stats cost time); the
# mirror's memory per cached byte.
#
#   bench/w8.sh [-r ROUNDS] [-d SECONDS] [-k KEYS] [-v VLEN] [-w WINDOW]
#               [-o RESULTS_DIR] [-s SCENARIOS]
# Run as root from the build directory (or set MDC_BUILDDIR).  Writes
# RESULTS_DIR/w8-<UTC stamp>.json (default bench/results in the source
# tree), then bench/w8_report.py prints the summary and draws the plot.
set -u

ROUNDS=3
SECS=5
KEYS=1000
VLEN=32
WINDOW=256
SCEN="a b c d ag"
HERE=$(cd "$(dirname "$0")" && pwd)
OUTDIR=$HERE/results
while getopts r:d:k:v:w:o:s: c; do
    case $c in
    r) ROUNDS=$OPTARG ;;
    d) SECS=$OPTARG ;;
    k) KEYS=$OPTARG ;;
    v) VLEN=$OPTARG ;;
    w) WINDOW=$OPTARG ;;
    o) OUTDIR=$OPTARG ;;
    s) SCEN=$OPTARG ;;
    *) echo "usage: $0 [-r ROUNDS] [-d SECONDS] [-k KEYS] [-v VLEN] [-w WINDOW] [-o DIR] [-s 'a b c d ag']" >&2
       exit 2 ;;
    esac
done

die() { echo "w8: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (namespaces, XDP, sysctl)"
for t in ip ethtool taskset bpftool python3; do
    command -v $t >/dev/null 2>&1 || die "$t not installed"
done
MEMCACHED=$(command -v memcached) || die "memcached not installed"
B=${MDC_BUILDDIR:-.}
MDC=$B/server/mdcached
TOOL=$B/bpf/mdc-xdp-tool
LOAD=$B/bench/udpload
for f in "$MDC" "$TOOL" "$LOAD"; do
    [ -x "$f" ] || die "$f not built (run from the build directory)"
done

id=$$
S=w8S$id
C=w8C$id
VS=w8s$id
VC=w8c$id
SRV=10.79.0.1
CLI=10.79.0.2
TPORT=11311
UPORT=11211
W=$(mktemp -d)
chmod 755 "$W"
SPID=
PPID_=
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
OUT=$OUTDIR/w8-$STAMP.json
ROWS=$W/rows.jsonl
BPF_WAS=$(sysctl -n kernel.bpf_stats_enabled)

cleanup() {
    [ -n "$SPID" ] && kill -9 "$SPID" 2>/dev/null
    [ -n "$PPID_" ] && kill "$PPID_" 2>/dev/null
    sysctl -qw kernel.bpf_stats_enabled="$BPF_WAS"
    ip netns del "$S" 2>/dev/null
    ip netns del "$C" 2>/dev/null
    rm -rf "$W"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

ip netns add "$S" || die "cannot create namespaces"
ip netns add "$C"
ip link add "$VS" type veth peer name "$VC"
ip link set "$VS" netns "$S"
ip link set "$VC" netns "$C"
ip -n "$S" addr add $SRV/24 dev "$VS"
ip -n "$C" addr add $CLI/24 dev "$VC"
for n in "$S:$VS" "$C:$VC"; do
    ns=${n%%:*}
    dev=${n#*:}
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$dev" up
    ip netns exec "$ns" ethtool -K "$dev" tx off >/dev/null 2>&1
done
ip netns exec "$C" "$TOOL" pass -i "$VC" -m native >"$W/pass.out" 2>&1 &
PPID_=$!
sleep 0.3
grep -q "^ready native" "$W/pass.out" || die "pass program: $(cat "$W/pass.out")"

# (servers are started without a wrapper function: "f &" would fork a
# subshell, and $! would not be the server's pid)
inc() { ip netns exec "$C" taskset -c 1 "$@"; }

# utime+stime of a process, in clock ticks
proc_cpu() {
    [ -n "$1" ] && [ -r /proc/$1/stat ] || { echo 0; return; }
    sed 's/.*) //' /proc/"$1"/stat | awk '{ print $12 + $13 }'
}
# utime+stime of the softirq threads, in clock ticks
ksoftirqd_cpu() {
    t=0
    for p in $(ps -eo pid=,comm= | awk '$2 ~ /^ksoftirqd\// { print $1 }'); do
        t=$((t + $(proc_cpu "$p")))
    done
    echo $t
}
stats() { inc "$LOAD" stats -a $SRV -P $TPORT >"$1" 2>/dev/null; }
sget() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
xdp_prog_id() {
    ip -j -n "$S" link show "$VS" | python3 -c '
import json, sys
l = json.load(sys.stdin)[0]
print(l.get("xdp", {}).get("prog", {}).get("id", 0))'
}
# run_time_ns run_cnt of a program
prog_rt() {
    bpftool prog show id "$1" -j | python3 -c '
import json, sys
p = json.load(sys.stdin)
print(p.get("run_time_ns", 0), p.get("run_cnt", 0))'
}

wait_tcp() { # the server answers stats
    i=0
    while ! stats "$W/st.txt" && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
}

start_server() { # scenario
    case $1 in
    a | ag)
        mode=native
        [ "$1" = ag ] && mode=generic
        ip netns exec "$S" taskset -c 0 "$MDC" -l $SRV -p $TPORT -U $UPORT \
            -n 1 -t 0 -m 256 --protected-mode=no -x "$VS" --xdp-mode $mode ${W8_XDP_OPTS:-} \
            >"$W/srv.log" 2>&1 &
        SPID=$! ;;
    b)
        ip netns exec "$S" taskset -c 0 "$MDC" -l $SRV -p $TPORT -U $UPORT \
            -n 1 -t 0 -m 256 --protected-mode=no >"$W/srv.log" 2>&1 &
        SPID=$! ;;
    c)
        ip netns exec "$S" taskset -c 0 "$MEMCACHED" -l $SRV -p $TPORT \
            -U $UPORT -t 1 -m 256 -u nobody >"$W/srv.log" 2>&1 &
        SPID=$! ;;
    d)
        ip netns exec "$S" "$TOOL" bounce -i "$VS" -p $UPORT -m native \
            >"$W/srv.log" 2>&1 &
        SPID=$!
        sleep 0.3
        grep -q "^ready native" "$W/srv.log" || die "bounce: $(cat "$W/srv.log")"
        return ;;
    esac
    wait_tcp
    inc "$LOAD" prefill -a $SRV -P $TPORT -k "$KEYS" -v "$VLEN" ||
        die "prefill of $1 failed: $(cat "$W/srv.log")"
}

stop_server() {
    kill "$SPID" 2>/dev/null
    wait "$SPID" 2>/dev/null
    # the interface must be free for the next scenario's program
    i=0
    while [ "$(xdp_prog_id)" != 0 ] && [ $i -lt 50 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    SPID=
    sleep 0.2
}

# measure SCENARIO ROUND BPFSTATS SECONDS: one row of $ROWS
measure() {
    scen=$1
    round=$2
    bpfst=$3
    start_server "$scen"
    # warm up: fills the mirror in a/ag (the first GET of a key is
    # userspace's), faults everything in elsewhere
    inc "$LOAD" get -a $SRV -p $UPORT -k "$KEYS" -w "$WINDOW" -d 1 -W 0 \
        >/dev/null
    pid=
    case $scen in a | ag | b | c) pid=$SPID ;; esac
    prog=0
    case $scen in a | ag | d) prog=$(xdp_prog_id) ;; esac
    [ "$scen" != d ] && stats "$W/s0.txt"
    [ "$bpfst" = 1 ] && sysctl -qw kernel.bpf_stats_enabled=1
    rt0="0 0"
    [ "$prog" != 0 ] && rt0=$(prog_rt "$prog")
    p0=$(proc_cpu "$pid")
    k0=$(ksoftirqd_cpu)
    inc "$LOAD" get -a $SRV -p $UPORT -k "$KEYS" -w "$WINDOW" -d "$4" -W 0 \
        >"$W/load.json" || die "udpload failed in $scen"
    p1=$(proc_cpu "$pid")
    k1=$(ksoftirqd_cpu)
    rt1="0 0"
    [ "$prog" != 0 ] && rt1=$(prog_rt "$prog")
    [ "$bpfst" = 1 ] && sysctl -qw kernel.bpf_stats_enabled=0
    : >"$W/s1.txt"
    [ "$scen" != d ] && stats "$W/s1.txt"
    python3 - "$scen" "$round" "$bpfst" "$p0" "$p1" "$rt0" "$rt1" \
        "$W/load.json" "$W/s0.txt" "$W/s1.txt" "$k0" "$k1" >>"$ROWS" <<'EOF'
import json, os, sys
scen, rnd, bpfst, p0, p1, rt0, rt1, load, s0f, s1f, k0, k1 = sys.argv[1:]
def st(f):
    d = {}
    if os.path.exists(f):
        for l in open(f):
            k, _, v = l.strip().partition(" ")
            d[k] = v
    return d
s0, s1 = st(s0f), st(s1f)
def delta(k):
    try:
        return int(s1[k]) - int(s0[k])
    except (KeyError, ValueError):
        return None
r0, r1 = [int(x) for x in rt0.split()], [int(x) for x in rt1.split()]
row = {"scenario": scen, "round": int(rnd), "bpf_stats": bpfst == "1",
       "load": json.load(open(load)),
       "server_cpu_s": (int(p1) - int(p0)) / os.sysconf("SC_CLK_TCK"),
       "ksoftirqd_cpu_s": (int(k1) - int(k0)) / os.sysconf("SC_CLK_TCK"),
       "prog_run_ns": r1[0] - r0[0], "prog_run_cnt": r1[1] - r0[1]}
for k in ("udp_requests", "get_hits", "xdp_hits", "xdp_misses",
          "xdp_conflicts", "xdp_pass_no_room", "xdp_fills"):
    v = delta(k)
    if v is not None:
        row["d_" + k] = v
for k in ("xdp_mode", "xdp_items", "xdp_item_bytes", "xdp_slot_bytes",
          "xdp_mem_bytes", "xdp_slot_bytes_per_cached_byte",
          "xdp_mem_per_cached_byte", "xdp_verified_insns", "version"):
    if k in s1:
        row[k] = s1[k]
print(json.dumps(row))
EOF
    stop_server
    tail -1 "$ROWS" | python3 -c '
import json, sys
r = json.loads(sys.stdin.read()); l = r["load"]
print("w8: %-2s round %d%s: %8.0f req/s  %6.3f CPU-s/Mreq  p50 %4.0f us  p99 %5.0f us  lost %d%s" % (
    r["scenario"], r["round"], " (bpf stats)" if r["bpf_stats"] else "",
    l["rps"], l["cpu_s_per_mreq"], l["p50_us"], l["p99_us"], l["lost"],
    "  prog %.0f ns/run" % (r["prog_run_ns"] / r["prog_run_cnt"]) if r["prog_run_cnt"] else ""))' >&2
}

# the machine's own load (other sessions share it): CPU busy while idle here
idle_cpu() {
    python3 - <<'EOF'
import time
def rd():
    v = [int(x) for x in open("/proc/stat").readline().split()[1:9]]
    return sum(v) - v[3] - v[4], sum(v)
b0, t0 = rd(); time.sleep(3); b1, t1 = rd()
print("%.3f" % ((b1 - b0) / (t1 - t0)))
EOF
}

echo "w8: $ROUNDS rounds of $SECS s, $KEYS keys, $VLEN-byte values, $WINDOW in flight; scenarios: $SCEN" >&2
IDLE0=$(idle_cpu)
: >"$ROWS"
sysctl -qw kernel.bpf_stats_enabled=0
r=1
while [ $r -le "$ROUNDS" ]; do
    for s in $SCEN; do
        measure "$s" $r 0 "$SECS"
    done
    r=$((r + 1))
done
for s in $SCEN; do
    case $s in a | ag | d) measure "$s" 1 1 "$SECS" ;; esac
done
IDLE1=$(idle_cpu)

mkdir -p "$OUTDIR"
python3 - "$ROWS" "$OUT" "$ROUNDS" "$SECS" "$KEYS" "$VLEN" "$WINDOW" \
    "$IDLE0" "$IDLE1" "$STAMP" "$*" <<'EOF'
import json, os, platform, subprocess, sys
rows_f, out, rounds, secs, keys, vlen, window, i0, i1, stamp, args = sys.argv[1:]
rows = [json.loads(l) for l in open(rows_f)]
cpu = ""
for l in open("/proc/cpuinfo"):
    if l.startswith("model name"):
        cpu = l.split(":", 1)[1].strip()
        break
def ver(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True).stdout.strip().splitlines()[0]
    except Exception:
        return ""
doc = {"workload": "W8", "date": stamp, "command": "bench/w8.sh " + args,
       "params": {"rounds": int(rounds), "seconds": float(secs),
                  "keys": int(keys), "value_bytes": int(vlen),
                  "key_bytes": 12, "in_flight": int(window),
                  "server_cpu": 0, "generator_cpu": 1},
       "machine": {"kernel": platform.release(), "cpu": cpu,
                   "cpus": os.cpu_count(),
                   "busy_fraction_idle_before": float(i0),
                   "busy_fraction_idle_after": float(i1)},
       "versions": {"memcached": ver(["memcached", "-V"])},
       "rows": rows}
json.dump(doc, open(out, "w"), indent=1)
print(out)
EOF
PY=python3
/usr/bin/python3 -c 'import matplotlib' 2>/dev/null && PY=/usr/bin/python3
$PY "$HERE/w8_report.py" "$OUT" --png "${OUT%.json}.png" --md "${OUT%.json}.md"
