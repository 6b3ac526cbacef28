# tests/pool_bed.sh - a pool test bed: N real mdcached servers (up to 64,
# -m 1 each), as local processes on 127.0.0.1, or each in its own network
# namespace joined by veth to a bridge in a client namespace (root).
# Sourced after tests/harness.sh by the pool tests and bench/pool_fanout.sh.
#
#   bed_start local N [ARGS...]   # or: bed_start ns N [ARGS...]
#   $BED_EXEC prog $BED_SERVERS   # the client: "ip netns exec NS" in ns mode
#   bed_cut I / bed_restore I     # ns: link down/up in server I's namespace;
#                                 # local: SIGSTOP/SIGCONT (no reply)
#   bed_rss                       # total VmRSS of the servers, KiB
#   bed_stop                      # servers stopped, namespaces removed
#
# Namespaces are named mdcbed<pid>-c (the client) and mdcbed<pid>-<i>, the
# bridge and veth ends live in the client namespace: nothing is added to
# the host's.  bed_can_ns says whether this process may build them.

BED_MODE=""
BED_N=0
BED_SERVERS=""
BED_EXEC=""
BED_PFX="mdcbed$$"

bed_can_ns() {
    [ "$(id -u)" = 0 ] || return 1
    command -v ip >/dev/null 2>&1 || return 1
    ip netns add "${BED_PFX}-probe" 2>/dev/null || return 1
    ip netns del "${BED_PFX}-probe"
    return 0
}

bed_start() {
    BED_MODE=$1
    BED_N=$2
    shift 2
    BED_SERVERS=""
    if [ "$BED_N" -gt 64 ]; then
        echo "bed_start: at most 64 servers"
        return 1
    fi
    if [ "$BED_MODE" = ns ]; then
        _c="${BED_PFX}-c"
        ip netns add "$_c" || return 1
        ip -n "$_c" link set lo up
        ip -n "$_c" link add br0 type bridge
        ip -n "$_c" addr add 10.77.0.1/24 dev br0
        ip -n "$_c" link set br0 up
        BED_EXEC="ip netns exec $_c"
    else
        BED_EXEC=""
    fi
    _i=0
    while [ "$_i" -lt "$BED_N" ]; do
        if [ "$BED_MODE" = ns ]; then
            _ns="${BED_PFX}-$_i"
            _ip="10.77.0.$((_i + 2))"
            ip netns add "$_ns" || return 1
            ip -n "$_c" link add "v$_i" type veth peer name eth0 netns "$_ns"
            ip -n "$_c" link set "v$_i" master br0 up
            ip -n "$_ns" link set lo up
            ip -n "$_ns" addr add "$_ip/24" dev eth0
            ip -n "$_ns" link set eth0 up
            MDC_WRAP="ip netns exec $_ns" mdc_start_raw "S$_i" -l "$_ip" \
                -p 11311 -m 1 -I 512k -t 1 -u nobody --protected-mode=no "$@" || return 1
            BED_SERVERS="$BED_SERVERS $_ip:11311"
        else
            mdc_start "S$_i" -l 127.0.0.1 -m 1 -I 512k -t 1 "$@" || return 1
            eval "_p=\$S${_i}_PORT"
            BED_SERVERS="$BED_SERVERS 127.0.0.1:$_p"
        fi
        _i=$((_i + 1))
    done
    BED_SERVERS=${BED_SERVERS# }
    return 0
}

bed_cut() {
    if [ "$BED_MODE" = ns ]; then
        ip -n "${BED_PFX}-$1" link set eth0 down
    else
        eval "kill -STOP \$S${1}_PID"
    fi
}

bed_restore() {
    if [ "$BED_MODE" = ns ]; then
        ip -n "${BED_PFX}-$1" link set eth0 up
    else
        eval "kill -CONT \$S${1}_PID"
    fi
}

bed_rss() {
    _t=0
    _i=0
    while [ "$_i" -lt "$BED_N" ]; do
        eval "_pid=\$S${_i}_PID"
        _r=$(awk '/^VmRSS:/ {print $2}' "/proc/$_pid/status" 2>/dev/null)
        _t=$((_t + ${_r:-0}))
        _i=$((_i + 1))
    done
    echo "$_t"
}

bed_stop() {
    _i=0
    while [ "$_i" -lt "$BED_N" ]; do
        [ "$BED_MODE" = local ] && bed_restore "$_i" 2>/dev/null
        mdc_stop "S$_i" >/dev/null 2>&1
        [ "$BED_MODE" = ns ] && ip netns del "${BED_PFX}-$_i" 2>/dev/null
        _i=$((_i + 1))
    done
    [ "$BED_MODE" = ns ] && ip netns del "${BED_PFX}-c" 2>/dev/null
    BED_N=0
    return 0
}
