#!/bin/sh
# bench/udp_ab.sh - server CPU per UDP get, two mdcached builds side by side:
# each is started once (-U auto, pinned to CPU 0; bench/udpload on CPU 1 as
# bench/ab.sh does) and prefilled, then ROUNDS rounds run A B A B ...; a
# round is one `udpload get` of SECS seconds, and the server's CPU (utime +
# stime from /proc/PID/stat) over it divided by the replies it sent.
# Prints every round, then each build's median and the ratio B/A.
#
# usage: bench/udp_ab.sh [-r ROUNDS] [-D SECS] [-B BUILD] A_BIN B_BIN [ARGS...]
#   A_BIN, B_BIN  mdcached binaries; ARGS their options (default -n 1 -t 0)
#   BUILD         the build tree with bench/udpload (default: .)
#   K=N keys (default 1000), V=N value bytes (default 32)
set -eu
ROUNDS=5
DUR=3
BUILD=.
while getopts r:D:B: o; do
    case $o in
    r) ROUNDS=$OPTARG ;;
    D) DUR=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    *) sed -n '2,13p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
[ $# -ge 2 ] || { sed -n '2,13p' "$0"; exit 2; }
A=$1 B=$2
shift 2
[ $# -gt 0 ] || set -- -n 1 -t 0
LOAD=$BUILD/bench/udpload
K=${K:-1000}
V=${V:-32}
T=$(mktemp -d)
PA= PB=
cleanup() {
    for p in $PA $PB; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT INT TERM

taskset -c 0 "$A" -l 127.0.0.1 -p auto -U auto --port-file "$T/a.ports" "$@" \
    >"$T/a.log" 2>&1 &
PA=$!
taskset -c 0 "$B" -l 127.0.0.1 -p auto -U auto --port-file "$T/b.ports" "$@" \
    >"$T/b.log" 2>&1 &
PB=$!
for n in a b; do
    i=0
    while [ ! -s "$T/$n.ports" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
    [ -s "$T/$n.ports" ] || { cat "$T/$n.log" >&2; exit 1; }
done
port() { awk -v k="$2" '$1 == k { sub(/.*:/, "", $2); print $2; exit }' "$T/$1.ports"; }
for n in a b; do
    "$LOAD" prefill -a 127.0.0.1 -P "$(port $n tcp)" -k "$K" -v "$V" >/dev/null
done
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
HZ=$(getconf CLK_TCK)
r=0
while [ $r -lt "$ROUNDS" ]; do
    r=$((r + 1))
    for n in a b; do
        if [ $n = a ]; then pid=$PA; else pid=$PB; fi
        c0=$(cpu $pid)
        taskset -c 1 "$LOAD" get -a 127.0.0.1 -p "$(port $n udp)" -k "$K" \
            -d "$DUR" -W 0 >"$T/out" 2>/dev/null
        c1=$(cpu $pid)
        python3 - "$n" "$r" "$c0" "$c1" "$HZ" "$T/out" >>"$T/rounds" <<'EOF'
import json, sys
n, r, c0, c1, hz, f = sys.argv[1:]
o = json.load(open(f))
rep = o.get("replies", 0)
if isinstance(rep, dict):
    rep = sum(v for v in rep.values() if isinstance(v, (int, float)))
us = (int(c1) - int(c0)) * 1e6 / int(hz) / max(rep, 1)
print(n, r, rep, "%.3f" % us)
EOF
        tail -1 "$T/rounds" | awk '{ printf "round %s %s: %s replies, %s us server CPU per get\n", $2, $1 == "a" ? "A" : "B", $3, $4 }'
    done
done
python3 - "$T/rounds" <<'EOF'
import statistics, sys
v = {"a": [], "b": []}
for ln in open(sys.argv[1]):
    n, r, rep, us = ln.split()
    v[n].append(float(us))
ma, mb = statistics.median(v["a"]), statistics.median(v["b"])
print("A median %.3f us/get (%.3f-%.3f)" % (ma, min(v["a"]), max(v["a"])))
print("B median %.3f us/get (%.3f-%.3f)" % (mb, min(v["b"]), max(v["b"])))
print("B/A %.3f" % (mb / ma))
EOF
