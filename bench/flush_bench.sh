#!/bin/bash
# bench/flush_bench.sh - flush_all at scale, mdcached and memcached in one
# run (docs/performance.md "flush_all at 10^7 records"): each server is
# started in turn (not pinned: the sweeper and the network threads share
# the machine's CPUs as in production), loaded with RECORDS records and
# measured by bench/flush_bench (its comment says what it measures).
#
#   bench/flush_bench.sh [BUILDDIR [RECORDS [WINDOW_S [ROUNDS]]]]
#
# Defaults: _build/dev, 10^7 records, 5 s windows, 1 round.  mdcached runs
# -n 4 -t 0 -m 1500 (the reference deployment), memcached -t 4 -m 1500.
# Results: bench/results/flush-DATE.jsonl (one line per server and round,
# with the server's label and command) and a summary on stdout.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bdir=${1:-$here/../_build/dev}
records=${2:-10000000}
window=${3:-5}
rounds=${4:-1}
bin=$bdir/server/mdcached
fb=$bdir/bench/flush_bench
[ -x "$bin" ] && [ -x "$fb" ] || bl_die "build $bin and $fb first"
command -v memcached >/dev/null || bl_die "memcached not installed"
bl_init flush_bench
out=$here/results/flush-$(date -u +%Y-%m-%dT%H%M%SZ).jsonl
mkdir -p "$here/results"
{
    printf '{"what":"run","date":"%s","host_cpus":%s,"loadavg":"%s",' \
        "$(date -u +%FT%TZ)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf '"mdcached":"%s","commit":"%s","memcached":"%s",' \
        "$("$bin" -V | head -1)" \
        "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo none)" \
        "$(memcached -V)"
    printf '"records":%s,"window_s":%s,"rounds":%s}\n' "$records" "$window" "$rounds"
} >"$out"

run_one() { # LABEL CMD... (the server on 127.0.0.1:$port, pid $pid)
    local label=$1 line
    shift
    "$fb" 127.0.0.1 "$port" "$records" "$window" "$rounds" | while read -r line; do
        printf '{"server":"%s","cmd":"%s",%s\n' "$label" "$*" "${line#\{}"
    done >>"$out"
}

# mdcached: -p auto and its port file (lib.sh)
pf=$BL_TMP/mdcached.ports
args=(-n 4 -t 0 -m 1500)
"$bin" -p auto -l 127.0.0.1 --port-file "$pf" "${args[@]}" >"$BL_TMP/mdcached.log" 2>&1 &
pid=$!; BL_PIDS+=("$pid")
bl_wait_file "$pf" "$pid" || { cat "$BL_TMP/mdcached.log" >&2; bl_die "mdcached did not start"; }
port=$(bl_port_of "$pf" tcp)
run_one mdcached "mdcached ${args[*]}"
bl_stop "$pid"

# memcached: a probed port (lib.sh)
port=$(bl_free_port random)
margs=(-t 4 -m 1500)
memcached -u nobody -p "$port" -l 127.0.0.1 "${margs[@]}" >"$BL_TMP/memcached.log" 2>&1 &
pid=$!; BL_PIDS+=("$pid")
for _ in $(seq 100); do bl_listens "$port" "$pid" && break; sleep 0.1; done
bl_listens "$port" "$pid" || bl_die "memcached did not start"
run_one memcached "memcached ${margs[*]}"
bl_stop "$pid"

python3 - "$out" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
run = rows[0]
print("run %s, %d CPUs, load average %s, %d records" % (
    run["date"], run["host_cpus"], run["loadavg"], run["records"]))
for r in rows[1:]:
    if r["what"] == "empty":
        print("%-9s empty cache: flush_all median %.0f us, max %.0f us" % (
            r["server"], r["flush_us_median"], r["flush_us_max"]))
    else:
        aft = r.get("after", {"worst_us": 0, "p99_us": 0, "s": 0})
        print("%-9s round %d: %d loaded (%.1f s), flush_all %.0f us, walk "
              "%.2f s, curr_items after %d; GET worst %.0f us without, "
              "%.0f us with the flush (x%.2f; while the reply: %.0f, the "
              "walk: %.0f); p99 %.0f / %.0f us; GETs %d / %d; the %.0f s "
              "after: worst %.0f us, p99 %.0f us" % (
            r["server"], r["round"], r["curr_items_loaded"], r["load_s"],
            r["flush_us"], r["walk_s"], r["curr_items_after"],
            r["base"]["worst_us"], r["flush"]["worst_us"], r["worst_ratio"],
            r["during_reply"]["worst_us"], r["during_walk"]["worst_us"],
            r["base"]["p99_us"], r["flush"]["p99_us"], r["base"]["n"],
            r["flush"]["n"], aft["s"], aft["worst_us"], aft["p99_us"]))
print("raw:", sys.argv[1])
PY
