#!/bin/sh
# tests/test_pool_bpf.sh - the kernel scatter-gather of pool-wide tag
# deletes (docs/pool-bpf.md), end to end, as root:
#   A. loopback, 4 local servers (tests/pool_bed.sh, -U --udp-writes) in a
#      private network namespace: one datagram deletes the tag on all four
#      (each server's part carried by the kernel path); the same from the
#      PHP extension (OPT_POOL_BPF) where it is built; the stale form;
#      a lost datagram (one server's UDP port wrong in the map): the poll
#      shows it missing and the library retries it over TCP, nothing left;
#      a policy of 2 of 4; nothing loaded: the TCP fan-out.  Privileges:
#      the pins' modes, the frozen map (root cannot change it either), an
#      unprivileged process (nobody) cannot change it, and what it sends
#      to the virtual address that is not a tag delete, to another port of
#      it, or from a cgroup not permitted, reaches no server (the servers'
#      UDP datagram counters).
#   B. namespaces over veth (pool_bed.sh ns mode: a bridge in the client
#      namespace, each server in its own), XDP generic on the bridge, then
#      native on the veth ends.
# Needs root, ip, unshare, setpriv, bpftool and a build with the XDP
# programs (configure's xdp); else SKIP, and under CI=true as root FAIL.
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/pool_bed.sh"

B=${MDC_BUILDDIR:-.}
B=$(cd "$B" && pwd)
SG="$B/tests/pool_sg"
TOOL="$B/client-c/tool/mdcached-tool"
CGROOT=/sys/fs/cgroup/unified
[ -f "$CGROOT/cgroup.procs" ] || CGROOT=/sys/fs/cgroup
CG="$CGROOT/mdcsg$$"
PIN="$H_TMP/bpffs"
RUN="$H_TMP/run"

skip() {
    if [ "$(id -u)" = 0 ] && [ "${CI:-}" = true ]; then
        echo "FAIL: root under CI=true, but $*"
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (loads BPF programs)"
for c in ip unshare nsenter setpriv bpftool; do
    command -v $c >/dev/null 2>&1 || skip "no $c"
done
if "$TOOL" pool-bpf load x 2>&1 | grep -q 'built without libbpf'; then
    skip "mdcached-tool built without the BPF programs (configure --enable-xdp)"
fi
[ -f "$CGROOT/cgroup.procs" ] && grep -q cgroup2 /proc/mounts ||
    skip "no cgroup v2 hierarchy"

# once, in a private mount namespace: the bpf file system of the pins and
# the namespaces' mounts go away with it
if [ -z "${MDC_SG_INNER:-}" ]; then
    MDC_SG_INNER=1 exec unshare -m --propagation private sh "$0" "$@"
fi

fail() {
    echo "FAIL: $*"
    exit 1
}
cleanup() {
    st=$?
    for n in t1 t2 t3 t4 t5; do
        [ -f "$RUN/$n" ] && ${NSX:-} "$TOOL" pool-bpf unload $n \
            --pin-root "$PIN" --run-dir "$RUN" >/dev/null 2>&1
    done
    bed_stop
    echo $$ > "$CGROOT/cgroup.procs" 2>/dev/null
    rmdir "$CG" 2>/dev/null
    umount "$PIN" 2>/dev/null
    mdc_cleanup $st
}
trap cleanup EXIT

mkdir -p "$PIN" "$RUN"
mount -t bpf bpf "$PIN" || fail "mount bpffs"
# this script and its children send from the permitted cgroup
mkdir "$CG" || fail "mkdir $CG"
echo $$ > "$CG/cgroup.procs" || fail "join $CG"

# expect LINE KEY=VALUE...: each KEY of LINE has VALUE (a pattern)
expect() {
    _l=$1
    shift
    for _kv in "$@"; do
        _k=${_kv%%=*}
        _v=$(echo "$_l" | tr ' ' '\n' | sed -n "s/^$_k=//p")
        case $_v in
        ${_kv#*=}) ;;
        *) fail "$_k=$_v, want ${_kv#*=} in: $_l" ;;
        esac
    done
}

# counts TAG: the records of (1, TAG) on every server, space separated
counts() {
    _o=""
    for _s in $BED_SERVERS; do
        _o="$_o $($BED_EXEC "$SG" count "$1" "$_s")"
    done
    echo $_o
}

# dgrams: UDP datagrams the servers received, summed
dgrams() {
    _t=0
    for _s in $BED_SERVERS; do
        _d=$($BED_EXEC "$TOOL" -s "$_s" stats |
            awk '$1 == "udp_datagrams_in" {print $2}')
        _t=$((_t + ${_d:-0}))
    done
    echo $_t
}

# ---- A. loopback, 4 local servers ----------------------------------------
partA() {
    ip link set lo up || fail "lo up"
    bed_start local 4 -U auto --udp-writes || fail "servers"
    SPEC=""
    LOST=""
    i=0
    for s in $BED_SERVERS; do
        u=$(mdc_port S$i udp)
        SPEC="$SPEC $s/$u"
        # the last server's UDP port wrong: its datagram is lost
        if [ $i = 3 ]; then LOST="$LOST $s/9"; else LOST="$LOST $s/$u"; fi
        i=$((i + 1))
    done
    echo "# servers $BED_SERVERS (UDP:$SPEC)"
    VIP=127.0.0.2:11999
    "$TOOL" pool-bpf load t1 --dev lo --vip $VIP --cgroup "$CG" \
        --pin-root "$PIN" --run-dir "$RUN" $SPEC || fail "load"
    D="$RUN/t1"
    sed 's/^/# /' "$D"

    # one datagram, four servers, every part by the kernel path
    "$SG" fill 5 3 $BED_SERVERS || fail "fill"
    d0=$(dgrams)
    out=$("$SG" del "$D" 0 30000 5 $BED_SERVERS) || fail "del: $out"
    echo "# bpf: $out"
    expect "$out" rc=0 total=12 last=bpf paths=bpf,bpf,bpf,bpf ops_bpf=1 \
        polls=0 tcp_retries=0 fallbacks=0
    [ "$(counts 5)" = "0 0 0 0" ] || fail "left after the delete: $(counts 5)"
    d1=$(dgrams)
    [ $((d1 - d0)) = 4 ] || fail "servers got $((d1 - d0)) datagrams, want 4"

    # the PHP extension's OPT_POOL_BPF takes the same path: four
    # datagrams reach the servers (the TCP fan-out sends none)
    # (not in sanitizer builds: PHP cannot load an extension linking
    # libtsan, and libasan needs run-phpt.sh's preloading)
    PHPSO="$B/client-php/ext/modules/mdcached.so"
    if [ -f "$PHPSO" ] && command -v php >/dev/null 2>&1 &&
        ! ldd "$PHPSO" 2>/dev/null | grep -q 'lib[at]san'; then
        "$SG" fill 9 2 $BED_SERVERS || fail "fill"
        d0=$(dgrams)
        out=$(php -n -d extension="$PHPSO" -r '
            $c = new Mdcached\Client();
            foreach (array_slice($argv, 2) as $s) {
                [$h, $p] = explode(":", $s);
                $c->addServer($h, (int)$p);
            }
            if (!$c->setOption(Mdcached\Client::OPT_POOL_BPF, $argv[1]))
                exit(2);
            echo "n=", var_export($c->deleteByTag(1, 9), true),
                " opt=", $c->getOption(Mdcached\Client::OPT_POOL_BPF),
                " msg=", str_replace(" ", "_", $c->getResultMessage()), "\n";
        ' -- "$D" $BED_SERVERS) || fail "php: $out"
        echo "# php: $out"
        expect "$out" n=8 "opt=$D"
        d1=$(dgrams)
        [ $((d1 - d0)) = 4 ] ||
            fail "php: servers got $((d1 - d0)) datagrams, want 4"
        [ "$(counts 9)" = "0 0 0 0" ] || fail "php left: $(counts 9)"
    else
        echo "# no PHP extension loadable here (not built, or a" \
            "sanitizer build): its OPT_POOL_BPF step not run"
    fi

    # the stale form: marked, counted, still readable
    "$SG" fill 6 2 $BED_SERVERS || fail "fill"
    out=$("$SG" del "$D" 0 30000 6 stale $BED_SERVERS) || fail "stale: $out"
    echo "# stale: $out"
    expect "$out" rc=0 total=8 paths=bpf,bpf,bpf,bpf

    # a policy of 2 of 4: done over the kernel for those that answered in
    # time, the others over TCP; nothing left anywhere
    "$SG" fill 7 3 $BED_SERVERS || fail "fill"
    out=$("$SG" del "$D" 2 30000 7 $BED_SERVERS) || fail "2 of 4: $out"
    echo "# 2 of 4: $out"
    # (a straggler's datagram may have deleted before its TCP retry: the
    # total counts what the answers seen said, at least the first two's)
    expect "$out" rc=0 ops_bpf=1 polls=1
    t=$(echo "$out" | sed -n 's/.*total=\([0-9]*\).*/\1/p')
    [ "$t" -ge 6 ] && [ "$t" -le 12 ] || fail "2 of 4: total $t"
    [ "$(counts 7)" = "0 0 0 0" ] || fail "2 of 4 left $(counts 7)"

    # privileges: the pins' modes, the frozen map, an unprivileged process
    [ "$(stat -c %a "$PIN/mdcached/t1/servers")" = 644 ] || fail "map mode"
    [ "$(stat -c %a "$PIN/mdcached/t1/egress")" = 600 ] || fail "prog mode"
    if bpftool map update pinned "$PIN/mdcached/t1/servers" key 0 0 0 0 \
        value 127 0 0 1 0 9 0 0 0 0 0 0 >/dev/null 2>&1; then
        fail "root changed the frozen map"
    fi
    if setpriv --reuid=65534 --regid=65534 --clear-groups \
        bpftool map update pinned "$PIN/mdcached/t1/servers" key 0 0 0 0 \
        value 127 0 0 1 0 9 0 0 0 0 0 0 >/dev/null 2>&1; then
        fail "nobody changed the map"
    fi
    if setpriv --reuid=65534 --regid=65534 --clear-groups \
        bpftool map dump pinned "$PIN/mdcached/t1/servers" >/dev/null 2>&1
    then
        fail "nobody opened the map"
    fi
    "$SG" fill 8 1 $BED_SERVERS || fail "fill"
    d0=$(dgrams)
    # nobody, permitted cgroup: not a tag delete; another port of the
    # virtual address; then nobody from a cgroup not permitted
    setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$SG" udp $VIP "set k 0 0 1 x" || fail "udp send"
    setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$SG" udp $VIP "flush_all" || fail "udp send"
    setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$SG" udp 127.0.0.2:12000 "tdel 1 8" || fail "udp send"
    sh -c "echo \$\$ > $CGROOT/cgroup.procs && exec setpriv --reuid=65534 \
        --regid=65534 --clear-groups $SG udp $VIP 'tdel 1 8'" ||
        fail "udp send"
    d1=$(dgrams)
    [ "$d1" = "$d0" ] || fail "the servers got $((d1 - d0)) datagrams"
    [ "$(counts 8)" = "1 1 1 1" ] || fail "records gone: $(counts 8)"
    # and the permitted web user (nobody) does reach all four
    out=$(setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$SG" del "$D" 0 30000 8 $BED_SERVERS) || fail "nobody: $out"
    expect "$out" rc=0 total=4 paths=bpf,bpf,bpf,bpf
    d2=$(dgrams)
    [ $((d2 - d1)) = 4 ] || fail "$((d2 - d1)) datagrams, want 4"
    "$TOOL" pool-bpf unload t1 --pin-root "$PIN" --run-dir "$RUN" ||
        fail "unload"
    [ -e "$PIN/mdcached/t1" ] && fail "pins left after unload"
    tc filter show dev lo egress | grep -q . && fail "tc filter left"
    tc qdisc show dev lo | grep -q clsact && fail "clsact qdisc left"
    ip link show lo | grep -q xdp && fail "XDP left on lo"

    # a lost datagram: the poll shows server 3 missing, TCP retries it
    "$TOOL" pool-bpf load t2 --dev lo --vip $VIP --cgroup "$CG" \
        --pin-root "$PIN" --run-dir "$RUN" $LOST || fail "load t2"
    "$SG" fill 9 3 $BED_SERVERS || fail "fill"
    out=$("$SG" del "$RUN/t2" 0 100 9 $BED_SERVERS) || fail "lost: $out"
    echo "# lost: $out"
    expect "$out" rc=0 total=12 last=bpf 'paths=bpf,bpf,bpf,[tu][cr]*' \
        polls=1 tcp_retries=1
    [ "$(counts 9)" = "0 0 0 0" ] || fail "left after the retry: $(counts 9)"
    "$TOOL" pool-bpf unload t2 --pin-root "$PIN" --run-dir "$RUN" ||
        fail "unload t2"

    # nothing loaded: the description is gone, the TCP fan-out
    "$SG" fill 10 1 $BED_SERVERS || fail "fill"
    out=$("$SG" del "$RUN/t2" 0 100 10 $BED_SERVERS 2>/dev/null) ||
        fail "unloaded: $out"
    echo "# nothing loaded: $out"
    expect "$out" rc=0 total=4 'last=[tu][cr]*' ops_bpf=0
    bed_stop
}

# ---- B. namespaces over veth ---------------------------------------------
partB() {
    mode=$1
    bed_start ns 4 -U 11311 --udp-writes || fail "ns servers"
    c="${BED_PFX}-c"
    SPEC=""
    LOST=""
    XDEV=""
    i=0
    for s in $BED_SERVERS; do
        mac=$(ip -n "${BED_PFX}-$i" -o link show eth0 |
            sed -n 's/.*link\/ether \([0-9a-f:]*\).*/\1/p')
        SPEC="$SPEC $s@$mac"
        if [ $i = 3 ]; then LOST="$LOST $s/9@$mac"; else LOST="$LOST $s@$mac"; fi
        XDEV="$XDEV --xdp-dev v$i"
        i=$((i + 1))
    done
    [ "$mode" = generic ] && XDEV="--xdp-dev br0"
    # the virtual address is routed through a server: its neighbour is
    # resolved, the egress program rewrites every clone's MAC
    ip -n "$c" route add 10.77.0.100/32 via 10.77.0.2 dev br0 ||
        fail "route"
    # (nsenter: ip netns exec would hide the cgroup file system)
    NSX="nsenter --net=/run/netns/$c"
    $NSX "$TOOL" pool-bpf load t3 --dev br0 $XDEV --xdp-mode "$mode" \
        --vip 10.77.0.100:11999 --cgroup "$CG" --pin-root "$PIN" \
        --run-dir "$RUN" $SPEC || fail "load ($mode)"
    $BED_EXEC "$SG" fill 5 3 $BED_SERVERS || fail "fill"
    out=$($BED_EXEC "$SG" del "$RUN/t3" 0 30000 5 $BED_SERVERS) ||
        fail "del ($mode): $out"
    echo "# veth, XDP $mode: $out"
    expect "$out" rc=0 total=12 last=bpf paths=bpf,bpf,bpf,bpf polls=0
    [ "$(counts 5)" = "0 0 0 0" ] || fail "left ($mode): $(counts 5)"
    $NSX "$TOOL" pool-bpf unload t3 --pin-root "$PIN" --run-dir "$RUN" ||
        fail "unload ($mode)"
    ip -n "$c" link show | grep -q xdp && fail "XDP left ($mode)"
    # a lost datagram: the poll comes back up the receive path of br0
    $NSX "$TOOL" pool-bpf load t4 --dev br0 $XDEV --xdp-mode "$mode" \
        --vip 10.77.0.100:11999 --cgroup "$CG" --pin-root "$PIN" \
        --run-dir "$RUN" $LOST || fail "load t4 ($mode)"
    $BED_EXEC "$SG" fill 6 3 $BED_SERVERS || fail "fill"
    out=$($BED_EXEC "$SG" del "$RUN/t4" 0 100 6 $BED_SERVERS) ||
        fail "lost ($mode): $out"
    echo "# veth, XDP $mode, lost: $out"
    expect "$out" rc=0 total=12 'paths=bpf,bpf,bpf,[tu][cr]*' polls=1 \
        tcp_retries=1
    [ "$(counts 6)" = "0 0 0 0" ] || fail "left ($mode): $(counts 6)"
    $NSX "$TOOL" pool-bpf unload t4 --pin-root "$PIN" --run-dir "$RUN" ||
        fail "unload t4 ($mode)"
    bed_stop
}

# A in a network namespace of its own (its lo is not the host's)
MDC_SG_PART=A
export MDC_SG_PART
if [ "${MDC_SG_NETNS:-}" != 1 ]; then
    MDC_SG_NETNS=1 MDC_SG_INNER=1 unshare -n sh "$0" A || exit 1
    echo "ok A: loopback"
    bed_can_ns || fail "no network namespaces"
    partB generic
    echo "ok B: veth, XDP generic"
    partB native
    echo "ok B: veth, XDP native"
    exit 0
fi
partA
exit 0
