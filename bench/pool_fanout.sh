#!/bin/sh
# bench/pool_fanout.sh - pool-wide tag delete at fan-out 4, 16 and 64: the
# client's CPU per operation over the poll loop ("tcp"), over io_uring and,
# as root with the BPF programs built, through the kernel scatter-gather
# ("bpf", docs/pool-bpf.md), side by side in one run (bench/pool_fanout.c
# rotates the paths on the same connections), on the pool test bed
# (tests/pool_bed.sh): the
# servers as local processes, and, as root, each in its own network
# namespace over veth.  Then the system calls per operation of each path
# (strace -c, a count that does not depend on the load) and the replay time
# of 10 000 spooled deletes.  Figures: docs/performance.md, "Pool fan-out".
#
#   MDC_BUILDDIR=_build/dev bench/pool_fanout.sh [FANOUTS] [MODES]
#   (defaults "4 16 64" and "local ns"; NO_BPF=1 leaves the kernel path out)
# With the kernel path the whole run is in a private network and mount
# namespace (the programs go on that loopback, not the host's).
B=${MDC_BUILDDIR:-.}
BPF=0
if [ -z "${NO_BPF:-}" ] && [ "$(id -u)" = 0 ] &&
    ! "$B/client-c/tool/mdcached-tool" pool-bpf load x 2>&1 |
    grep -q 'built without'; then
    BPF=1
    if [ -z "${POOL_BENCH_INNER:-}" ]; then
        POOL_BENCH_INNER=1 exec unshare -n -m --propagation private \
            sh "$0" "$@"
    fi
    ip link set lo up
fi
. "$(dirname "$0")/../tests/harness.sh"
. "$(dirname "$0")/../tests/pool_bed.sh"
H_DIR=$(cd "$(dirname "$0")/../tests" && pwd) # harness.sh took bench/
H_PY="$H_DIR/harness.py"

B=${MDC_BUILDDIR:-.}
PF="$B/bench/pool_fanout"
FANOUTS=${1:-"4 16 64"}
MODES=${2:-"local ns"}
OPS=${OPS:-2000}
TOOL="$B/client-c/tool/mdcached-tool"
CGROOT=/sys/fs/cgroup/unified
[ -f "$CGROOT/cgroup.procs" ] || CGROOT=/sys/fs/cgroup
CG="$CGROOT/mdcbench$$"
PIN="$H_TMP/bpffs"
bpf_off() {
    [ -f "$H_TMP/run/bench" ] && $NSX "$TOOL" pool-bpf unload bench \
        --pin-root "$PIN" --run-dir "$H_TMP/run" >/dev/null 2>&1
}
trap 'bpf_off; bed_stop; [ $BPF = 1 ] && { echo $$ > $CGROOT/cgroup.procs;
    rmdir $CG; umount $PIN; }; mdc_cleanup' EXIT
NSX=""
if [ $BPF = 1 ]; then
    mkdir -p "$PIN" "$H_TMP/run"
    mount -t bpf bpf "$PIN" || exit 1
    mkdir "$CG" && echo $$ > "$CG/cgroup.procs" || exit 1
fi

# bpf_on MODE: load the kernel path for the bed's servers; BARG the
# pool_fanout option that adds it
bpf_on() {
    BARG=""
    [ $BPF = 1 ] || return 0
    _spec=""
    _i=0
    for _s in $BED_SERVERS; do
        if [ "$1" = ns ]; then
            _m=$(ip -n "${BED_PFX}-$_i" -o link show eth0 |
                sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
            _spec="$_spec $_s@$_m"
            _x="$_x --xdp-dev v$_i"
        else
            _spec="$_spec $_s/$(mdc_port S$_i udp)"
        fi
        _i=$((_i + 1))
    done
    if [ "$1" = ns ]; then
        NSX="nsenter --net=/run/netns/${BED_PFX}-c"
        ip -n "${BED_PFX}-c" route add 10.77.0.250/32 via 10.77.0.2 dev br0
        $NSX "$TOOL" pool-bpf load bench --dev br0 $_x --xdp-mode native \
            --vip 10.77.0.250:11999 --cgroup "$CG" --pin-root "$PIN" \
            --run-dir "$H_TMP/run" $_spec >/dev/null || return 1
    else
        NSX=""
        "$TOOL" pool-bpf load bench --dev lo --vip 127.0.0.2:11999 \
            --cgroup "$CG" --pin-root "$PIN" --run-dir "$H_TMP/run" \
            $_spec >/dev/null || return 1
    fi
    BARG="-B $H_TMP/run/bench"
}

for mode in $MODES; do
    if [ "$mode" = ns ] && ! bed_can_ns; then
        echo "SKIP ns: needs root and ip netns"
        continue
    fi
    for n in $FANOUTS; do
        _x=""
        if [ $BPF = 1 ]; then
            if [ "$mode" = ns ]; then
                bed_start ns "$n" -U 11311 --udp-writes >/dev/null || exit 1
            else
                bed_start local "$n" -U auto --udp-writes >/dev/null ||
                    exit 1
            fi
            bpf_on "$mode" || exit 1
        else
            bed_start "$mode" "$n" >/dev/null || exit 1
            BARG=""
        fi
        echo "== $mode fan-out $n: servers' total RSS $(bed_rss) KiB"
        $BED_EXEC nice "$PF" -n "$OPS" -r "${ROUNDS:-6}" $BARG $BED_SERVERS
        if command -v strace >/dev/null 2>&1; then
            # system calls of 3 000 operations minus those of 1 000: the
            # setup and the warm-up cancel out
            _ms="poll uring"
            [ -n "$BARG" ] && _ms="poll uring bpf"
            for m in $_ms; do
                for k in 1000 3000; do
                    $BED_EXEC strace -f -c -o "$H_TMP/st.$m.$k" "$PF" \
                        -n $k -r 1 -M "$m" $BARG $BED_SERVERS >/dev/null
                done
                a=$(awk '$NF=="total" {print $4}' "$H_TMP/st.$m.1000")
                b=$(awk '$NF=="total" {print $4}' "$H_TMP/st.$m.3000")
                echo "$m syscalls_per_op $(echo "$a $b" |
                    awk '{printf "%.2f", ($2 - $1) / 2000}')"
            done
        fi
        bpf_off
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
