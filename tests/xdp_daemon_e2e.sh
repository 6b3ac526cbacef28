#!/bin/sh
# xdp_daemon_e2e.sh - mdcached's XDP fast path end to end: the daemon with
# -U and -x in one network namespace, clients in another, joined by a veth
# pair; generic and native mode.
#
#  - refusals: -x without root (69), without -U (64), without the
#    interface (69), under protected mode (64);
#  - tests/xdp_daemon_check check: hits answered by XDP (xdp_hits moves,
#    udp_requests does not), misses by userspace, the same bytes; after
#    set, append, prepend, incr, delete, expiry, touch, flush and a set that
#    adds a tag - each acknowledged over TCP - the next GET sees the new
#    state; other destinations and commands pass;
#  - tests/xdp_daemon_check race: an acknowledged writer against UDP
#    readers through XDP, fills and invalidations racing; fails on any
#    stale or torn read (MDC_XDP_RACE_SECONDS, default 8, and on until
#    it made 100 writes, 1000 reads and 100 XDP hits, fills and
#    invalidations: a ceiling of 120 s only a hang crosses);
#  - the daemon runs with --udp-writes: tests/xdp_daemon_check udpw makes
#    the writes over UDP (set, append, prepend, ms, incr, decr, ma, md,
#    md I, touch, delete, tset), each acknowledged, and the next GET sees
#    the new state; flush_all over UDP is refused; race-udp is the race
#    with its writer on UDP;
#  - the daemon runs as nobody after attaching; SIGKILL leaves no XDP
#    program on the interface, nor does a graceful stop (SIGTERM, exit 0).
#
# Needs root; elsewhere prints SKIP and exits 77.
set -u

skip() { echo "SKIP: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root (network namespaces, XDP)"
command -v ip >/dev/null 2>&1 || skip "ip (iproute2) not installed"
command -v ethtool >/dev/null 2>&1 || skip "ethtool not installed"

B=${MDC_BUILDDIR:-.}
MDC=$B/server/mdcached
CHECK=$B/tests/xdp_daemon_check
TOOL=$B/bpf/mdc-xdp-tool
for f in "$MDC" "$CHECK" "$TOOL"; do
    [ -x "$f" ] || { echo "FAIL: $f not built"; exit 1; }
done
RACE_S=${MDC_XDP_RACE_SECONDS:-8}

id=$$
S=mdcdS$id
C=mdcdC$id
VS=vds$id
VC=vdc$id
SRV=10.78.0.1
OTHER=10.78.0.3
TPORT=11311
UPORT=11211
. "$(dirname "$0")/harness.sh"
W=$H_TMP
DPID=
PPID_=
failed=0
mode=setup

cleanup() {
    _st=$1
    [ -n "$PPID_" ] && kill "$PPID_" 2>/dev/null
    mdc_cleanup "$_st" # the daemons (tests/harness.sh), before their netns
    ip netns del "$S" 2>/dev/null
    ip netns del "$C" 2>/dev/null
}
trap 'cleanup $?' EXIT
trap 'exit 1' INT TERM

fail() { echo "FAIL [$mode]: $*"; failed=$((failed + 1)); }
ok() { echo "ok [$mode]: $*"; }

ip netns add "$S" || skip "cannot create network namespaces"
ip netns add "$C"
ip link add "$VS" type veth peer name "$VC" || skip "no veth support"
ip link set "$VS" netns "$S"
ip link set "$VC" netns "$C"
ip -n "$S" addr add $SRV/24 dev "$VS"
ip -n "$S" addr add $OTHER/24 dev "$VS"
ip -n "$C" addr add 10.78.0.2/24 dev "$VC"
for n in "$S:$VS" "$C:$VC"; do
    ns=${n%%:*}
    dev=${n#*:}
    ip -n "$ns" link set lo up
    ip -n "$ns" link set "$dev" up
    # requests must carry full checksums (docs/xdp.md, "veth")
    ip netns exec "$ns" ethtool -K "$dev" tx off >/dev/null 2>&1
done

# ---- refusals ---------------------------------------------------------------
# expect_exit STATUS PATTERN CMD...: CMD exits STATUS saying PATTERN
expect_exit() {
    st=$1
    pat=$2
    shift 2
    rm -f "$W/refuse.ports"
    "$@" --port-file "$W/refuse.ports" >"$W/refuse.out" 2>&1 &
    rp=$!
    # tests/harness.sh: its exit (1), or its port file if it starts (0);
    # the harness's start timeout: a refusal is quick, but not always on a
    # busy machine
    if [ "$(mdc_wait_ready "$W/refuse.ports" $rp; echo $?)" != 1 ]; then
        kill -9 $rp
        wait $rp 2>/dev/null
        fail "'$*' did not refuse to start"
        return
    fi
    wait $rp
    rc=$?
    if [ $rc -ne "$st" ] || ! grep -q "$pat" "$W/refuse.out"; then
        fail "'$*': exit $rc, want $st and '$pat': $(cat "$W/refuse.out")"
    else
        ok "refused with $st: $(grep "$pat" "$W/refuse.out" | head -1 | sed 's/.*\(error\|mdcached\): //')"
    fi
}
mode=refusals
if command -v setpriv >/dev/null 2>&1; then
    expect_exit 69 "needs root" ip netns exec "$S" setpriv --reuid=nobody \
        --regid=nogroup --clear-groups "$MDC" -l $SRV -p $TPORT -U $UPORT \
        -x "$VS"
fi
# what the systemd drop-in dist/systemd/xdp.conf grants is enough: a
# non-root user with CAP_BPF, CAP_NET_ADMIN and CAP_PERFMON ambient attaches
if command -v setpriv >/dev/null 2>&1; then
    : >"$W/caps.log"
    mkdir -p "$W/caps" && chmod 777 "$W/caps" # its port file, as nobody
    ip netns exec "$S" setpriv --reuid=nobody --regid=nogroup --clear-groups \
        --inh-caps=+bpf,+net_admin,+perfmon --ambient-caps=+bpf,+net_admin,+perfmon \
        "$MDC" -l $SRV -p $TPORT -U $UPORT -x "$VS" --protected-mode=no -n 1 \
        -m 64 --port-file "$W/caps/ports" >"$W/caps.log" 2>&1 &
    cp_=$!
    mdc_wait_ready "$W/caps/ports" $cp_ # tests/harness.sh
    if grep -q "XDP on $VS" "$W/caps.log"; then
        ok "attached as nobody with the drop-in's capabilities"
    else
        fail "the drop-in's capabilities do not attach: $(grep -v '^[0-9]*:\|^;' "$W/caps.log" | tail -5)"
    fi
    kill -TERM $cp_ 2>/dev/null
    wait $cp_ || fail "exit $? after SIGTERM (capabilities run)"
fi
expect_exit 64 "needs -U" ip netns exec "$S" "$MDC" -l $SRV -p $TPORT \
    -x "$VS"
# protected mode (a veth address, no authentication): XDP would answer any
# host before the sender could be checked, so -x needs --protected-mode=no
expect_exit 64 "protected mode is in force" ip netns exec "$S" "$MDC" \
    -l $SRV -p $TPORT -U $UPORT -x "$VS"
expect_exit 69 "no such network interface" ip netns exec "$S" "$MDC" \
    -l $SRV -p $TPORT -U $UPORT -x nosuch0
if ip -n "$S" link show "$VS" | grep -q xdp; then
    fail "a refused start left XDP on $VS"
fi

# ---- one mode ---------------------------------------------------------------
run_mode() {
    mode=$1
    if [ "$mode" = native ]; then
        # XDP_TX frames reach a veth peer only if it runs XDP too
        ip netns exec "$C" "$TOOL" pass -i "$VC" -m native >"$W/pass.out" 2>&1 &
        PPID_=$!
    fi
    # the daemon through tests/harness.sh, its output in $W/d-$mode.log
    MDC_WRAP="ip netns exec $S" MDC_LOG="$W/d-$mode.log"
    if ! mdc_start_raw d_$mode -l $SRV -p $TPORT -U $UPORT -x "$VS" \
        --protected-mode=no --xdp-mode "$mode" --sweep-interval 0 -n 2 -m 64 \
        --udp-writes; then
        MDC_WRAP= MDC_LOG=
        fail "daemon did not start (exit $(eval echo \$d_${mode}_STATUS))"
        DPID=
        return
    fi
    MDC_WRAP= MDC_LOG=
    eval "DPID=\$d_${mode}_PID"
    if ! grep -q "XDP on $VS ($mode mode)" "$W/d-$mode.log"; then
        fail "not attached in $mode mode: $(grep XDP "$W/d-$mode.log")"
    else
        ok "$(grep -o 'XDP on.*' "$W/d-$mode.log")"
    fi
    grep -q "running as user nobody" "$W/d-$mode.log" || fail "privileges not dropped"
    want=xdpgeneric
    [ "$mode" = native ] && want="xdp "
    ip -n "$S" link show "$VS" | grep -q "$want" ||
        fail "no $want program on $VS: $(ip -n "$S" link show "$VS")"

    if ip netns exec "$C" "$CHECK" check $SRV $TPORT $UPORT $OTHER \
        >"$W/check.out" 2>&1; then
        ok "check: $(grep -c '^ok' "$W/check.out") checks passed"
    else
        fail "check: $(grep -v '^ok' "$W/check.out")"
    fi
    sed "s/^/    /" "$W/check.out" | grep -v '^    ok'
    if ip netns exec "$C" "$CHECK" race $SRV $TPORT $UPORT "$RACE_S" \
        >"$W/race.out" 2>&1; then
        ok "$(tail -1 "$W/race.out")"
    else
        fail "race: $(cat "$W/race.out")"
    fi
    # --udp-writes: writes over UDP reach the mirror as TCP writes do
    if ip netns exec "$C" "$CHECK" udpw $SRV $TPORT $UPORT \
        >"$W/udpw.out" 2>&1; then
        ok "udpw: $(grep -c '^ok' "$W/udpw.out") checks passed"
    else
        fail "udpw: $(grep -v '^ok' "$W/udpw.out")"
    fi
    if ip netns exec "$C" "$CHECK" race-udp $SRV $TPORT $UPORT "$RACE_S" \
        >"$W/race-udp.out" 2>&1; then
        ok "writes over UDP: $(tail -1 "$W/race-udp.out")"
    else
        fail "race-udp: $(cat "$W/race-udp.out")"
    fi

    # SIGKILL: the link goes with the process
    mdc_stop d_$mode KILL
    DPID=
    # the kernel lets the link go once the dead process's descriptors are
    # released, a moment after it is reaped: poll, up to 30 s (a hang only)
    attached() {
        ip -n "$S" link show "$VS" | grep -q xdp ||
            { command -v bpftool >/dev/null 2>&1 &&
                ip netns exec "$S" bpftool net show dev "$VS" 2>/dev/null |
                grep -q mdc_xdp; }
    }
    i=0
    while attached && [ $i -lt 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    if attached; then
        fail "an XDP program outlived the daemon killed with SIGKILL"
    else
        ok "SIGKILL left no XDP program on $VS"
    fi
    if [ -n "$PPID_" ]; then
        kill "$PPID_"
        wait "$PPID_" 2>/dev/null
        PPID_=
    fi
}

for m in ${MDC_XDP_MODES:-generic native}; do
    run_mode $m
done
# a graceful stop (SIGTERM) detaches too, and exits 0
mode=sigterm
MDC_WRAP="ip netns exec $S" MDC_LOG="$W/d-$mode.log"
mdc_start_raw d_$mode -l $SRV -p $TPORT -U $UPORT -x "$VS" --protected-mode=no \
    --xdp-mode generic -n 1 -m 64 || fail "daemon did not start"
MDC_WRAP= MDC_LOG=
ip -n "$S" link show "$VS" | grep -q xdpgeneric || fail "not attached"
mdc_stop d_$mode
rc=$?
DPID=
if [ $rc -ne 0 ]; then
    fail "exit $rc after SIGTERM: $(tail -5 "$W/d-$mode.log")"
elif ip -n "$S" link show "$VS" | grep -q xdp; then
    fail "XDP program left after a graceful stop"
else
    ok "SIGTERM: exit 0, no XDP program left"
fi

if [ $failed -ne 0 ]; then
    echo "FAIL: $failed checks"
    exit 1
fi
echo "PASS"
exit 0
