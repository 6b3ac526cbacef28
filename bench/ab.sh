#!/bin/bash
# ab.sh - side-by-side A/B of mdcached builds or settings: each target is
# started once (pinned to CPU 0, the generator on CPU 1 as in compare.sh)
# and prefilled, then ROUNDS rounds run every target in turn (A B A B ...).
# Reports per target the median server CPU µs per request with its spread
# (min-max over rounds), the throughput and latency percentiles, and the
# ratio of each median to the first target's.  A closed loop by default;
# LOAD_ARGS adds mdc-load options (e.g. "-R 100000" for a fixed rate).
#
# usage: bench/ab.sh [-r ROUNDS] [-D SECS] [-B BUILD] 'NAME=CMD ARGS' ...
#   CMD ARGS start a server (any binary: mdcached, memcached -u nobody ...);
#   ab.sh adds "-s SOCKET" (Unix socket, W1) and "-p 0".  W1 by default:
#   50 connections, 90:10 get:set, 100 000 keys of 16 B, 32 B values.
#   W=W2 uses TCP loopback instead of the Unix socket; V=N sets the value
#   size, K=N the key count (prefill and run); SCPUS=LIST the servers'
#   CPUs (taskset list, default 0); AB_SUMMARY=FILE appends
#   the medians as one JSON line.  With W2, AB_HOST=ADDR listens and
#   connects there instead of 127.0.0.1, and AB_WRAP=CMD prefixes each
#   server's command (e.g. "ip netns exec NS": bench/send_zc.sh).
set -eu
ROUNDS=5
DUR=3
BUILD=$(pwd)
while getopts r:D:B: o; do
    case $o in
    r) ROUNDS=$OPTARG ;;
    D) DUR=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
LOAD=$BUILD/bench/mdc-load
W=${W:-W1}
V=${V:-32}
K=${K:-100000}
TMP=$(mktemp -d)
chmod 1777 "$TMP" # servers that drop to nobody create their socket here
declare -a NAMES PIDS ADDRS
cleanup() {
    for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
i=0
port=$((21000 + RANDOM % 20000))
for t in "$@"; do
    name=${t%%=*}
    cmd=${t#*=}
    if [ "$W" = W2 ]; then
        addr=${AB_HOST:-127.0.0.1}:$((port + i))
        listen="-l ${AB_HOST:-127.0.0.1} -p $((port + i))"
    else
        addr=$TMP/s$i.sock
        listen="-s $addr -p 0"
    fi
    # shellcheck disable=SC2086
    taskset -c "${SCPUS:-0}" ${AB_WRAP:-} $cmd $listen >"$TMP/$name.log" 2>&1 &
    PIDS[i]=$!
    NAMES[i]=$name
    ADDRS[i]=$addr
    i=$((i + 1))
done
sleep 0.5
for i in "${!NAMES[@]}"; do # wait (up to 10 s) for each server to listen
    for _ in $(seq 100); do
        if [ "$W" = W2 ] || [ -S "${ADDRS[i]}" ]; then break; fi
        sleep 0.1
    done
done
for i in "${!NAMES[@]}"; do
    taskset -c 1 "$LOAD" -P text -s "${ADDRS[i]}" -v "$V" -k "$K" -c 8 -f -D 0 -w 0 -q
done
for r in $(seq 1 "$ROUNDS"); do
    for i in "${!NAMES[@]}"; do
        # shellcheck disable=SC2086
        taskset -c 1 "$LOAD" -P text -s "${ADDRS[i]}" -v "$V" -k "$K" -D "$DUR" -w 0.5 \
            -p "${PIDS[i]}" -L "${NAMES[i]}" -q -j - ${LOAD_ARGS:-} \
            | tr -d '\n' >>"$TMP/all.jsonl"
        echo >>"$TMP/all.jsonl"
    done
done
python3 - "$TMP/all.jsonl" "${AB_SUMMARY:-}" "${LOAD_ARGS:-}" <<'PY'
import json, sys, statistics as st
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bad = [r for r in runs if r.get("server_cpu", {}).get("us_per_req", 0) <= 0]
if bad:  # the server's CPU could not be read over the window: not counted
    print("%d round(s) without a server CPU reading left out" % len(bad))
runs = [r for r in runs if r not in bad]
order = []
by = {}
for r in runs:
    if r["label"] not in by:
        order.append(r["label"])
    by.setdefault(r["label"], []).append(r)
base = None
summary = {}
print("%-14s %9s %18s %9s %9s %9s %9s %7s" % ("target", "us/req", "spread", "sys", "req/s",
      "p50 us", "p99 us", "p99.9"))
for l in order:
    rs = by[l]
    u = [r["server_cpu"]["us_per_req"] for r in rs]
    m = st.median(u)
    base = base or m
    md = lambda f: st.median(f(r) for r in rs)
    print("%-14s %9.3f %8.3f-%-9.3f %9.3f %9.0f %9.1f %9.1f %7.1f  x%.3f" % (
        l, m, min(u), max(u), md(lambda r: r["server_cpu"]["sys_us_per_req"]),
        md(lambda r: r["throughput"]), md(lambda r: r["latency_us"]["p50"]),
        md(lambda r: r["latency_us"]["p99"]), md(lambda r: r["latency_us"]["p999"]), m / base))
    print("%-14s rounds: %s" % ("", " ".join("%.3f" % x for x in u)))
    summary[l] = {"us_per_req": m, "us_per_req_min": min(u), "us_per_req_max": max(u),
                  "throughput": md(lambda r: r["throughput"]),
                  "p50": md(lambda r: r["latency_us"]["p50"]),
                  "p99": md(lambda r: r["latency_us"]["p99"]),
                  "p999": md(lambda r: r["latency_us"]["p999"]),
                  "p99_max": max(r["latency_us"]["p99"] for r in rs),
                  "rounds": len(rs)}
if len(sys.argv) > 2 and sys.argv[2]:
    with open(sys.argv[2], "a") as f:
        f.write(json.dumps({"load_args": sys.argv[3], "targets": summary}) + "\n")
PY
