#!/bin/bash
# bench/scale.sh - issue 13's target table in one run: every ratio of it
# that the store benchmark and the XDP program benchmark can give, old code
# against new side by side, in alternating rounds, with spreads.
#
#   bash bench/scale.sh                       from the build directory
#   bash bench/scale.sh -r 5 -d 0.5           rounds, window seconds
#   bash bench/scale.sh -q                    quick: 2 rounds, no 10^7
#
# Builds two store_bench binaries with the same compiler flags from this
# tree's bench/store_bench.c: "new" against this tree's server/core, "old"
# against server/core of BASE (default 8b41fb4, the code before issue 13's
# batched lookup and tag work; `git archive`, so the work tree is not
# touched).  Then ROUNDS rounds, each running old then new (the order
# alternates from round to round):
#   G  -n 1e3,1e5,1e7 -t 1,2 -o get,get_private,get_pf,get_batch
#   T  -n 1e5 -t 1,2 -o put_3tags,del_by_tag   (3 tkeys: every tag of a
#      record shares one of three tkeys with a third of all tags)
# and, as root with kernel.bpf_stats_enabled settable, ROUNDS rounds of
# `mdc-xdp-tool progbench -n 4000 -k 1000` and `-k 100000` plus a pointer
# chase over 1 GiB (the DRAM miss).  Every figure is a median over rounds of
# each run's own median window; [min-max] over rounds.  Raw output and a
# JSON summary go to bench/results/scale-<stamp>.*
#
# Ratios of throughput are only meaningful on a quiet machine (two threads
# need two idle CPUs); CPU time per operation is printed beside them and
# holds up better under foreign load.  The load average is recorded.
set -eu

SRC=$(cd "$(dirname "$0")/.." && pwd)
B=$(pwd)
ROUNDS=5
WIN=0.5
QUICK=0
BASE=8b41fb4
while getopts r:d:qb: o; do
    case $o in
    r) ROUNDS=$OPTARG ;;
    d) WIN=$OPTARG ;;
    q) QUICK=1 ROUNDS=2 ;;
    b) BASE=$OPTARG ;;
    *) sed -n '2,30p' "$0"; exit 2 ;;
    esac
done
[ -f "$B/config.h" ] || { echo "scale.sh: run from a configured build directory" >&2; exit 1; }
OUTDIR=$SRC/bench/results
mkdir -p "$OUTDIR"
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RAW=$OUTDIR/scale-$STAMP.jsonl
TMP=$(mktemp -d /tmp/scale.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

CF="-O2 -g -pthread -DHAVE_CONFIG_H -I$B -isystem /usr/include/bsd -DLIBBSD_OVERLAY"
LIBS="-lbsd -lxxhash"
grep -q '^#define HAVE_JEMALLOC 1' "$B/config.h" && LIBS="$LIBS -ljemalloc"
mkdir -p "$TMP/old"
git -C "$SRC" archive "$BASE" server/core | tar -x -C "$TMP/old"
# shellcheck disable=SC2086
gcc $CF -I"$TMP/old" "$SRC/bench/store_bench.c" "$TMP"/old/server/core/*.c \
    $LIBS -o "$TMP/sb_old"
# shellcheck disable=SC2086
gcc $CF -I"$SRC" "$SRC/bench/store_bench.c" "$SRC"/server/core/*.c \
    $LIBS -o "$TMP/sb_new"
OLDREV=$(git -C "$SRC" rev-parse --short "$BASE")
NEWREV=$(git -C "$SRC" describe --always --dirty)

GN=1e3,1e5,1e7
[ $QUICK = 1 ] && GN=1e3,1e5
echo "scale.sh $STAMP: old = $OLDREV, new = $NEWREV, $ROUNDS rounds, windows $WIN s; load $(cut -d' ' -f1-3 /proc/loadavg)"
{
    printf '{"kind": "meta", "stamp": "%s", "old": "%s", "new": "%s", "rounds": %s, "window": %s, "load_start": "%s", "nproc": %s}\n' \
        "$STAMP" "$OLDREV" "$NEWREV" "$ROUNDS" "$WIN" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"
} >"$RAW"

run_sb() { # VARIANT ROUND SET ARGS...
    local v=$1 r=$2 set=$3
    shift 3
    "$TMP/sb_$v" "$@" -d "$WIN" -R 3 --json "$TMP/j.json" >>"$TMP/sb.log" 2>&1
    python3 - "$TMP/j.json" "$v" "$r" "$set" >>"$RAW" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for x in d["results"]:
    if x["kind"] != "ops":
        continue
    x.update(kind="sb", variant=sys.argv[2], round=int(sys.argv[3]), set=sys.argv[4],
             loadavg=d["loadavg"])
    print(json.dumps(x))
PY
}

for r in $(seq 1 "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="old new"; else order="new old"; fi
    for v in $order; do
        echo "round $r: $v get ($GN) ..."
        run_sb "$v" "$r" G -n "$GN" -t 1,2 -o get,get_private,get_pf,get_batch
        echo "round $r: $v put_3tags, del_by_tag (1e5) ..."
        run_sb "$v" "$r" T -n 1e5 -t 1,2 -o put_3tags,del_by_tag
    done
done

XDP=0
TOOL=$B/bpf/mdc-xdp-tool
if [ -x "$TOOL" ] && [ "$(id -u)" = 0 ]; then
    old_stats=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
    if sysctl -qw kernel.bpf_stats_enabled=1 2>/dev/null; then
        XDP=1
        for r in $(seq 1 "$ROUNDS"); do
            for k in 1000 100000; do
                "$TOOL" progbench -n 4000 -k $k | python3 -c '
import json, sys
d = json.loads(sys.stdin.read()); d.update(kind="xdp", round=int(sys.argv[1])); print(json.dumps(d))' "$r" >>"$RAW"
            done
            "$TMP/sb_new" --chase 1024 | python3 -c '
import json, sys
d = json.loads(sys.stdin.read()); d.update(kind="chase", round=int(sys.argv[1])); print(json.dumps(d))' "$r" >>"$RAW"
        done
        sysctl -qw kernel.bpf_stats_enabled="$old_stats" || true
    fi
fi
[ $XDP = 1 ] || echo "(XDP figures skipped: needs root, bpf_stats and $TOOL)"
printf '{"kind": "meta_end", "load_end": "%s"}\n' "$(cut -d' ' -f1-3 /proc/loadavg)" >>"$RAW"
cp "$TMP/sb.log" "$OUTDIR/scale-$STAMP.log"
python3 "$SRC/bench/scale_report.py" "$RAW" | tee "$OUTDIR/scale-$STAMP.txt"
echo "raw: $RAW"
