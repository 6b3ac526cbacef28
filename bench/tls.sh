#!/bin/bash
# bench/tls.sh - W2 over TLS (docs/performance.md, "W2 over TLS"):
# server CPU per request of
#   memcached 1.6 over TLS  (memcached -Z -o ssl_chain_cert=...,ssl_key=...)
#   mdcached over TLS       (--tls-listen, OpenSSL's user-space records
#                            where the kernel has no kTLS)
#   mdcached over plain TCP (the same daemon's -p port)
# side by side in one run, alternating rounds.  W2 is W1 over TCP
# loopback: bench/mdc-load -P text -r 90:10 -k 100000 -K 16 -v 32 -c 50
# -d 1, every key prefilled.  Servers on CPU 0 (one worker thread each),
# the generator on CPU 1, both with the same certificate (EC P-256, made
# here with the openssl CLI; TLS 1.3, TLS_AES_256_GCM_SHA384 negotiated
# by both).  Connections are set up before the measured window, so the
# figure is the steady state of the record layer, not the handshakes.
#
# usage: bench/tls.sh [-r ROUNDS] [-D SECS] [-b BUILDDIR] [-a BASEBUILD] [-E]
# Prints one line per window and the medians, ranges and ratios.
# mdcached runs its default backend (--io=auto: io_uring where the kernel
# allows it; the log line says which).
# -a adds a series, mdcached over TLS from another build
# (base-tls: e.g. the commit before a change), in the same rounds, and
# the ratio mdcached-tls / base-tls: a change's own side-by-side figure.
# -E adds a series, the same daemon binary over TLS with --io=epoll
# (epoll-tls), and the ratio mdcached-tls / epoll-tls: TLS on io_uring
# against TLS on epoll.
set -eu
ROUNDS=3
DUR=5
B=${MDC_BUILDDIR:-_build}
BASE=
EPOLL=
while getopts "r:D:b:a:E" o; do
    case $o in
    r) ROUNDS=$OPTARG ;;
    D) DUR=$OPTARG ;;
    b) B=$OPTARG ;;
    a) BASE=$OPTARG ;;
    E) EPOLL=1 ;;
    *) echo "usage: $0 [-r ROUNDS] [-D SECS] [-b BUILDDIR] [-a BASEBUILD] [-E]" >&2; exit 64 ;;
    esac
done
MDC="$B/server/mdcached"
LOAD="$B/bench/mdc-load"
for x in "$MDC" "$LOAD" ${BASE:+"$BASE/server/mdcached"}; do [ -x "$x" ] || { echo "no $x (build first)" >&2; exit 1; }; done
command -v memcached >/dev/null || { echo "memcached not installed" >&2; exit 1; }
T=$(mktemp -d /tmp/mdc-tlsbench-XXXXXX)
chmod 755 "$T"
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$T"
}
trap cleanup EXIT
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/key.pem" -out "$T/cert.pem" -days 2 -subj /CN=localhost 2>/dev/null
chmod 644 "$T/key.pem" "$T/cert.pem"

MC=$(freeport); MT=$(freeport); MP=$(freeport)
taskset -c 0 memcached -u nobody -t 1 -m 1024 -c 1024 -U 0 -l 127.0.0.1 -p "$MC" \
    -Z -o "ssl_chain_cert=$T/cert.pem,ssl_key=$T/key.pem" >"$T/mc.log" 2>&1 &
MCPID=$!; PIDS+=("$MCPID")
taskset -c 0 "$MDC" -n 1 -t 0 -m 1024 -l 127.0.0.1 -p "$MP" \
    --tls-listen="127.0.0.1:$MT" --tls-cert="$T/cert.pem" --tls-key="$T/key.pem" \
    -v 2 >"$T/mdc.log" 2>&1 &
MDPID=$!; PIDS+=("$MDPID")
if [ -n "$EPOLL" ]; then
    ET=$(freeport)
    taskset -c 0 "$MDC" -n 1 -t 0 -m 1024 -l 127.0.0.1 -p "$(freeport)" --io=epoll \
        --tls-listen="127.0.0.1:$ET" --tls-cert="$T/cert.pem" --tls-key="$T/key.pem" \
        >"$T/epoll.log" 2>&1 &
    EPID=$!; PIDS+=("$EPID")
fi
if [ -n "$BASE" ]; then
    BT=$(freeport)
    taskset -c 0 "$BASE/server/mdcached" -n 1 -t 0 -m 1024 -l 127.0.0.1 -p "$(freeport)" \
        --tls-listen="127.0.0.1:$BT" --tls-cert="$T/cert.pem" --tls-key="$T/key.pem" \
        >"$T/base.log" 2>&1 &
    BPID=$!; PIDS+=("$BPID")
fi
sleep 1

W2=(-P text -r 90:10 -k 100000 -K 16 -v 32 -c 50 -d 1)
run() { # name port pid tlsflag...
    local name=$1 port=$2 pid=$3; shift 3
    taskset -c 1 "$LOAD" -s "127.0.0.1:$port" "${W2[@]}" "$@" -D "$DUR" -w 1 \
        -p "$pid" -q -L "$name" -j "$T/$name.$r.json"
    python3 - "$T/$name.$r.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["server_cpu"]
print("%-14s %9.0f req/s  server %.3f us/req (user %.3f sys %.3f)  load %s" % (
    d["label"], d["throughput"], c["us_per_req"], c["user_us_per_req"],
    c["sys_us_per_req"], d["loadavg"][0]))
EOF
}
# prefill each (every GET hits)
r=pre
taskset -c 1 "$LOAD" -s "127.0.0.1:$MC" --tls "${W2[@]}" -f -D 0.2 -w 0 -q
taskset -c 1 "$LOAD" -s "127.0.0.1:$MP" "${W2[@]}" -f -D 0.2 -w 0 -q
[ -z "$BASE" ] || taskset -c 1 "$LOAD" -s "127.0.0.1:$BT" --tls "${W2[@]}" -f -D 0.2 -w 0 -q
[ -z "$EPOLL" ] || taskset -c 1 "$LOAD" -s "127.0.0.1:$ET" --tls "${W2[@]}" -f -D 0.2 -w 0 -q
# each round starts one series later than the last (round 1: memcached
# first, round 2: mdcached-tls first, ...), so no series always runs first
# or last after the others have warmed or loaded the machine
SERIES=("memcached-tls $MC $MCPID --tls" "mdcached-tls $MT $MDPID --tls"
        "mdcached-tcp $MP $MDPID")
[ -z "$BASE" ] || SERIES+=("base-tls $BT $BPID --tls")
[ -z "$EPOLL" ] || SERIES+=("epoll-tls $ET $EPID --tls")
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r"
    for i in "${!SERIES[@]}"; do
        # shellcheck disable=SC2086 # the words of one series
        run ${SERIES[$(((i + r - 1) % ${#SERIES[@]}))]}
    done
done
grep -i "ktls\|kernel tls\|network I/O\|using epoll" "$T/mdc.log" || true
python3 - "$T" "$ROUNDS" "$BASE" "$EPOLL" <<'EOF'
import json, os, statistics, sys
t, rounds, base, epoll = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
v = {}
for n in ("memcached-tls", "mdcached-tls", "mdcached-tcp") + (
        ("base-tls",) if base else ()) + (("epoll-tls",) if epoll else ()):
    v[n] = [json.load(open(os.path.join(t, "%s.%d.json" % (n, r))))
            ["server_cpu"]["us_per_req"] for r in range(1, rounds + 1)]
    print("%-14s median %.3f us/req  range %.3f-%.3f" % (
        n, statistics.median(v[n]), min(v[n]), max(v[n])))
def ratio(a, b):
    per = [x / y for x, y in zip(v[a], v[b])]
    print("%s / %s: %.2f (per round %s)" % (a, b, statistics.median(v[a]) /
          statistics.median(v[b]), " ".join("%.2f" % x for x in per)))
ratio("mdcached-tls", "memcached-tls")
ratio("mdcached-tls", "mdcached-tcp")
if base:
    ratio("mdcached-tls", "base-tls")
    ratio("base-tls", "memcached-tls")
if epoll:
    ratio("mdcached-tls", "epoll-tls")
EOF
