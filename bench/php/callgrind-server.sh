#!/bin/sh
# bench/php/callgrind-server.sh - server instructions per mixed-workload
# operation (bench/php/tagbench.php) for Redis (b, RedisTagAwareAdapter)
# and mdcached (c, the adapter): each server run under valgrind
# --tool=callgrind by bench/php/run.sh (RD_WRAP, MDC_WRAP), (population +
# OPS operations) minus (population alone), divided by OPS; the callgrind
# files are kept in OUTDIR for callgrind_annotate.  User-space instructions
# only: the kernel's share of a request (the system calls) is not counted
# (valgrind cannot run io_uring: mdcached runs with --io=epoll here, and
# as root, so that the file is written after its -u nobody)
# (tagbench.php's server_sys_us_per_op measures it).  Run from the build
# top.  Environment: ITEMS (2000), OPS (2000), WHOS ("b c"), SET (as
# run.sh), OUTDIR (default: a temporary directory, removed).
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
ITEMS=${ITEMS:-2000}
OPS=${OPS:-2000}
export ITEMS OPS
command -v valgrind >/dev/null || { echo "callgrind-server.sh: valgrind missing" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=${OUTDIR:-$tmp}
mkdir -p "$out"
for who in ${WHOS:-b c}; do
    for only in mixed,populate-only mixed; do
        f=$out/server-$who-$(echo "$only" | tr ',' '-').out
        rm -f "$f"
        wrap="valgrind --tool=callgrind --callgrind-out-file=$f"
        if [ "$who" = b ]; then
            RD_WRAP=$wrap MDC_WRAP= OUT="$tmp/o.jsonl" WHO=$who ONLY=$only ROUNDS=1 \
                sh "$src/bench/php/run.sh" >/dev/null 2>&1 || true
        else
            MDC_ARGS="--io=epoll -u root" MDC_WRAP=$wrap RD_WRAP= OUT="$tmp/o.jsonl" WHO=$who ONLY=$only ROUNDS=1 \
                sh "$src/bench/php/run.sh" >/dev/null 2>&1 || true
        fi
        # run.sh's exit trap stopped the server: callgrind writes its file
        i=0
        until grep -q '^totals:' "$f" 2>/dev/null; do
            i=$((i + 1)); [ $i -lt 600 ] || { echo "callgrind-server.sh: no $f" >&2; exit 1; }
            sleep 0.1
        done
        echo "$who $only $(sed -n 's/^totals: //p' "$f")"
    done
done | awk -v ops="$OPS" '{ ir[$1, $2] = $3; w[$1] = 1 }
    END { for (c in w) printf "%s: %.0f server instructions per operation\n", c,
                (ir[c, "mixed"] - ir[c, "mixed,populate-only"]) / ops }'
