#!/bin/bash
# run_models.sh - W1 and W3 of docs/benchmarking.md over the native protocol
# for every thread model of docs/threads-models.md.
#
# One daemon per model is started at once (server pinned to CPU 0, Unix
# socket, no TCP) and prefilled with the key space; then ROUNDS rounds run
# every (workload, model) pair in turn, so models alternate A B C ... A B C
# rather than one model's runs sitting together in one noisy stretch.  The
# generator (bench/mdc-load, CPU 1) reads each daemon's CPU time from /proc.
# Writes every run plus the medians to RESULTS/models-DATE.json and prints a
# Markdown table of medians; with -u it also replaces the table between the
# "models" markers in docs/performance-history.md.
#
# usage: bench/run_models.sh [-B BUILD_DIR] [-r ROUNDS] [-D SECS] [-W SECS]
#                            [-o RESULTS_DIR] [-u DOC] [-M "NAME:flags;..."]
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${BUILD:-$(pwd)}
ROUNDS=3
DUR=5
WARM=1
RESULTS=$HERE/results
DOC=
MODELS="SPED:-n 0 -t 0;AMPED-0:-n 0 -t 1;SYMPED-1:-n 1 -t 0;SYMPED-4:-n 4 -t 0;AMPED-1:-n 1 -t 1;SEDA:-n 2 -t 1;SEDA-S:-n 2 -t 2"
while getopts "B:r:D:W:o:u:M:h" o; do
    case $o in
    B) BUILD=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    D) DUR=$OPTARG ;;
    W) WARM=$OPTARG ;;
    o) RESULTS=$OPTARG ;;
    u) DOC=$OPTARG ;;
    M) MODELS=$OPTARG ;;
    *) sed -n '2,17p' "$0"; exit 64 ;;
    esac
done
LOAD=${MDC_LOAD:-$BUILD/bench/mdc-load}
DAEMON=${MDCACHED:-$BUILD/server/mdcached}
for f in "$LOAD" "$DAEMON"; do
    [ -x "$f" ] || { echo "run_models: $f not built (use -B BUILD_DIR)" >&2; exit 1; }
done

# Workloads: name and mdc-load arguments (W1: docs/benchmarking.md; W3: W1 with
# 16 requests written per batch on each connection).
KEYS=100000
COMMON="-r 90:10 -k $KEYS -K 16 -v 32 -c 50"
declare -A WL=([W1]="$COMMON -d 1" [W3]="$COMMON -d 16")
WORKLOADS="W1 W3"

DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
TMP=$(mktemp -d /tmp/mdc-models.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$RESULTS"

IFS=';' read -r -a MLIST <<< "$MODELS"
declare -A MPID MSOCK MFLAGS
NAMES=()
for m in "${MLIST[@]}"; do
    name=${m%%:*}
    flags=${m#*:}
    sock=$TMP/$name.sock
    # shellcheck disable=SC2086
    taskset -c 0 "$DAEMON" $flags -m 1024 -p 0 -s "$sock" -v 1 \
        2> "$TMP/$name.log" &
    MPID[$name]=$!
    PIDS+=("$!")
    MSOCK[$name]=$sock
    MFLAGS[$name]=$flags
    NAMES+=("$name")
done
for name in "${NAMES[@]}"; do
    for _ in $(seq 100); do [ -S "${MSOCK[$name]}" ] && break; sleep 0.1; done
    [ -S "${MSOCK[$name]}" ] || { echo "run_models: $name did not start:" >&2; cat "$TMP/$name.log" >&2; exit 1; }
    taskset -c 1 "$LOAD" -s "${MSOCK[$name]}" $COMMON -f -D 0 -w 0 -q
done

echo "run_models $DATE on $(uname -n), load $(cut -d' ' -f1 /proc/loadavg): $ROUNDS rounds x $DUR s (+$WARM s warmup)" >&2
RUNS=$TMP/runs.jsonl
: > "$RUNS"
for r in $(seq "$ROUNDS"); do
    for w in $WORKLOADS; do
        for name in "${NAMES[@]}"; do
            # shellcheck disable=SC2086
            taskset -c 1 "$LOAD" -s "${MSOCK[$name]}" ${WL[$w]} -D "$DUR" -w "$WARM" \
                -p "${MPID[$name]}" -q -L "$name $w round $r" -j "$TMP/one.json" ||
                { echo "run_models: $name $w failed" >&2; cat "$TMP/$name.log" >&2; exit 1; }
            python3 - "$TMP/one.json" "$name" "${MFLAGS[$name]}" "$w" "$r" >> "$RUNS" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d.update(model=sys.argv[2], flags=sys.argv[3], workload=sys.argv[4], round=int(sys.argv[5]))
print(json.dumps(d))
EOF
            printf '%s %-9s %-3s round %s: %s\n' "$(date +%T)" "$name" "$w" "$r" \
                "$(python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).readlines()[-1]); c=d["server_cpu"] or {}; print("%.0f req/s, p50 %.0f us, p99 %.0f us, server %.2f us/req" % (d["throughput"], d["latency_us"]["p50"], d["latency_us"]["p99"], c.get("us_per_req", 0)))' "$RUNS")" >&2
        done
    done
done

OUT=$RESULTS/models-${DATE//:/}.json
python3 - "$RUNS" "$OUT" "$DATE" "$ROUNDS" "$DUR" "$WARM" "$(uname -n)" "${NAMES[*]}" "$WORKLOADS" > "$TMP/table.md" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
out, date, rounds, dur, warm, host = sys.argv[2:8]
names, workloads = sys.argv[8].split(), sys.argv[9].split()
med = []
for w in workloads:
    for m in names:
        rs = [r for r in runs if r["model"] == m and r["workload"] == w]
        if not rs:
            continue
        f = lambda k: statistics.median(k(r) for r in rs)
        med.append(dict(model=m, flags=rs[0]["flags"], workload=w, runs=len(rs),
                        throughput=f(lambda r: r["throughput"]),
                        p50_us=f(lambda r: r["latency_us"]["p50"]),
                        p99_us=f(lambda r: r["latency_us"]["p99"]),
                        p999_us=f(lambda r: r["latency_us"]["p999"]),
                        server_us_per_req=f(lambda r: (r["server_cpu"] or {}).get("us_per_req", 0)),
                        server_sys_us_per_req=f(lambda r: (r["server_cpu"] or {}).get("sys_us_per_req", 0)),
                        client_us_per_req=f(lambda r: r["client_cpu"]["us_per_req"])))
json.dump(dict(bench="run_models", date=date, host=host, rounds=int(rounds),
               duration_s=float(dur), warmup_s=float(warm), medians=med, runs=runs),
          open(out, "w"), indent=1)
print("| workload | model | flags | req/s | p50 µs | p99 µs | p99.9 µs | server µs/req | of which sys | client µs/req |")
print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
for x in med:
    print("| %s | %s | `%s` | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f | %.2f |" % (
        x["workload"], x["model"], x["flags"], x["throughput"], x["p50_us"], x["p99_us"],
        x["p999_us"], x["server_us_per_req"], x["server_sys_us_per_req"], x["client_us_per_req"]))
print()
print("Medians of %s rounds × %s s (+%s s warmup) per cell, %s, host %s; results: `bench/results/%s`." % (
    rounds, dur, warm, date, host, out.rsplit("/", 1)[-1]))
EOF
cat "$TMP/table.md"

if [ -n "$DOC" ]; then
    python3 - "$DOC" "$TMP/table.md" <<'EOF'
import sys
doc, table = sys.argv[1], open(sys.argv[2]).read()
text = open(doc).read()
b, e = "<!-- models:begin -->", "<!-- models:end -->"
if b in text and e in text:
    text = text[:text.index(b) + len(b)] + "\n" + table + text[text.index(e):]
else:
    text += "\n" + b + "\n" + table + e + "\n"
open(doc, "w").write(text)
EOF
fi
