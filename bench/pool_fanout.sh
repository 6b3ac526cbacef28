#!/bin/sh
# bench/pool_fanout.sh - pool-wide tag delete at fan-out 4, 16 and 64: the
# client's CPU per operation over the poll loop ("tcp") and over io_uring,
# side by side in one run (bench/pool_fanout.c alternates the two paths on
# the same connections), on the pool test bed (tests/pool_bed.sh): the
# servers as local processes, and, as root, each in its own network
# namespace over veth.  Then the system calls per operation of each path
# (strace -c, a count that does not depend on the load) and the replay time
# of 10 000 spooled deletes.  Figures: docs/performance.md, "Pool fan-out".
#
#   MDC_BUILDDIR=_build/dev bench/pool_fanout.sh [FANOUTS] [MODES]
#   (defaults "4 16 64" and "local ns")
. "$(dirname "$0")/../tests/harness.sh"
. "$(dirname "$0")/../tests/pool_bed.sh"
H_DIR=$(cd "$(dirname "$0")/../tests" && pwd) # harness.sh took bench/
H_PY="$H_DIR/harness.py"

B=${MDC_BUILDDIR:-.}
PF="$B/bench/pool_fanout"
FANOUTS=${1:-"4 16 64"}
MODES=${2:-"local ns"}
OPS=${OPS:-2000}
trap 'bed_stop; mdc_cleanup' EXIT

for mode in $MODES; do
    if [ "$mode" = ns ] && ! bed_can_ns; then
        echo "SKIP ns: needs root and ip netns"
        continue
    fi
    for n in $FANOUTS; do
        bed_start "$mode" "$n" >/dev/null || exit 1
        echo "== $mode fan-out $n: servers' total RSS $(bed_rss) KiB"
        $BED_EXEC nice "$PF" -n "$OPS" -r 6 $BED_SERVERS
        if command -v strace >/dev/null 2>&1; then
            # system calls of 3 000 operations minus those of 1 000: the
            # setup and the warm-up cancel out
            for m in poll uring; do
                for k in 1000 3000; do
                    $BED_EXEC strace -f -c -o "$H_TMP/st.$m.$k" "$PF" \
                        -n $k -r 1 -M "$m" $BED_SERVERS >/dev/null
                done
                a=$(awk '$NF=="total" {print $4}' "$H_TMP/st.$m.1000")
                b=$(awk '$NF=="total" {print $4}' "$H_TMP/st.$m.3000")
                echo "$m syscalls_per_op $(echo "$a $b" |
                    awk '{printf "%.2f", ($2 - $1) / 2000}')"
            done
        fi
        bed_stop
    done
done

# the replay of 10 000 spooled tag deletes (one server, a local process)
if [ -z "${NO_SPOOL:-}" ]; then
    bed_start local 1 >/dev/null || exit 1
    SP="$H_TMP/spool"
    mkdir -m 700 "$SP"
    RUNAS=""
    if [ "$(id -u)" = 0 ]; then
        chown 65534:65534 "$SP"
        RUNAS="setpriv --reuid=65534 --regid=65534 --clear-groups"
    fi
    bed_cut 0
    $RUNAS "$PF" -S "$SP" -n 10000 $BED_SERVERS || exit 1
    bed_restore 0
    t0=$(date +%s%N)
    out=$($RUNAS "$B/client-c/tool/mdcached-tool" spool-replay "$SP") || exit 1
    t1=$(date +%s%N)
    echo "spool replay: $out in $(( (t1 - t0) / 1000000 )) ms" \
        "($(ls -l "$SP"/*.spool | awk '{print $5}') bytes left)"
    bed_stop
fi
