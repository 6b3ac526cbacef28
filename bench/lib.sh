# bench/lib.sh - what the bench scripts share, sourced (bash): servers
# started pinned to CPU 0 on a port got the least racy way, their resident
# memory and their text "stats".  Used by bench/bytes.sh and
# bench/mem_compare.sh (which start and stop servers one at a time) and by
# bench/run (bl_free_port, bl_port_of, bl_wait_file, bl_rss_kib; it starts
# its servers itself, several at once, in namespaces and over TLS).
#
#   . "$(dirname "$0")/lib.sh"
#   bl_init NAME                 # messages say NAME; BL_TMP; an EXIT trap
#   bl_start mdcached BIN ARGS... | memcached ARGS... | redis ARGS...
#                                # ready when it returns: BL_PID, BL_PORT
#   ... the measurement, on 127.0.0.1:$BL_PORT ...
#   bl_stop                      # the last one started (or bl_stop PID)
#
# Ports.  mdcached is started with -p auto and --port-file, as the tests
# start it (docs/testing.md): the kernel picks the port when the daemon
# binds it and the daemon writes it down once every listener is bound, so
# no other process can take it in between and the port file is the sign
# that it is ready.  memcached and Redis have no such option (memcached's
# -p 0 and Redis's --port 0 mean no TCP listener), so for them a port is
# probed (bl_free_port) and passed, which can race with another process
# binding it meanwhile.  It is made as unlikely as it can be, and caught
# when it happens: the probe starts at a random port below the kernel's
# ephemeral range (net.ipv4.ip_local_port_range), where no outgoing
# connection gets its port; the server is then ready only when a
# connection to the port succeeds while it is alive and, where ss(8) can
# tell, the listening socket is its own; one that lost its port (it exits:
# "Address already in use") or finds the port held by another process is
# started again on another, up to 5 times.

# bl_init NAME: messages prefixed with NAME; BL_TMP a temporary directory
# (servers' output in BL_TMP/KIND.log); an EXIT trap that stops every server
# started and removes BL_TMP (a script with its own EXIT trap calls
# bl_cleanup from it)
bl_init() {
    BL_NAME=$1
    BL_TMP=$(mktemp -d "${TMPDIR:-/tmp}/mdc-bench.XXXXXX")
    chmod 755 "$BL_TMP" # memcached drops to nobody
    BL_PIDS=()
    trap bl_cleanup EXIT
}
bl_cleanup() {
    local p
    for p in "${BL_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${BL_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
    BL_PIDS=()
    [ -z "${BL_TMP:-}" ] || rm -rf "$BL_TMP"
}
bl_die() { echo "${BL_NAME:-bench}: $*" >&2; exit 1; }

# bl_free_port FIRST [HOST]: a port nothing listens on, from FIRST upwards
# (HOST 127.0.0.1); FIRST "random": a random one below the ephemeral range.
# Probing races with any other process binding it afterwards: for
# memcached and Redis only (see above; mdcached takes -p auto).
bl_free_port() {
    local first=$1 p lo
    if [ "$first" = random ]; then
        lo=$(cut -f1 /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || echo 32768)
        [ "$lo" -gt 12000 ] 2>/dev/null || lo=32768
        first=$((10000 + RANDOM % (lo - 11000)))
    fi
    for p in $(seq "$first" $((first + 200))); do
        if ! (exec 3<>"/dev/tcp/${2:-127.0.0.1}/$p") 2>/dev/null; then echo "$p"; return 0; fi
    done
    bl_die "no free port near $first"
}

# bl_port_of PORTFILE KIND: the port of mdcached's first KIND (tcp, udp,
# tls, metrics) line in its --port-file
bl_port_of() {
    awk -v k="$2" '$1 == k { sub(/.*:/, "", $2); print $2; exit }' "$1"
}

# bl_wait_file FILE PID [SECS]: wait until FILE (a --port-file) is there,
# while PID lives; 0 when it is, 1 when PID exited first, 2 after SECS
# (default 60)
bl_wait_file() {
    local i
    for i in $(seq $((${3:-60} * 20))); do
        [ -s "$1" ] && return 0
        kill -0 "$2" 2>/dev/null || { [ -s "$1" ] && return 0; return 1; }
        sleep 0.05
    done
    return 2
}

# bl_listens PORT PID: PORT accepts connections while PID is alive and,
# where ss can tell, PID (or its child) holds the listener
bl_listens() {
    kill -0 "$2" 2>/dev/null || return 2
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null || return 1
    command -v ss >/dev/null || return 0
    local who
    who=$(ss -Hltnp "sport = :$1" 2>/dev/null | grep -o 'pid=[0-9]*' | sort -u)
    [ -z "$who" ] && return 0 # ss cannot show the processes
    echo "$who" | grep -qx "pid=$2" && return 0
    return 3 # somebody else's
}

# bl_start KIND ARGS...: start a server pinned to CPU 0 on 127.0.0.1 and
# wait until it is ready; sets BL_PID and BL_PORT.
#   mdcached BIN ARGS...   BIN -p auto -l 127.0.0.1 --port-file ... ARGS
#   memcached ARGS...      memcached -u nobody -p PORT -l 127.0.0.1 ARGS
#   redis ARGS...          redis-server --port PORT --bind 127.0.0.1
#                          --daemonize no ARGS
bl_start() {
    local kind=$1 log try st
    shift
    log=$BL_TMP/$kind.log
    if [ "$kind" = mdcached ]; then
        local bin=$1 pf=$BL_TMP/mdcached.ports
        shift
        rm -f "$pf"
        taskset -c 0 "$bin" -p auto -l 127.0.0.1 --port-file "$pf" "$@" >"$log" 2>&1 &
        BL_PID=$!; BL_PIDS+=("$BL_PID")
        bl_wait_file "$pf" "$BL_PID" || { cat "$log" >&2; bl_die "mdcached did not start"; }
        BL_PORT=$(bl_port_of "$pf" tcp)
        return 0
    fi
    for try in 1 2 3 4 5; do
        BL_PORT=$(bl_free_port random)
        case $kind in
        memcached)
            taskset -c 0 memcached -u nobody -p "$BL_PORT" -l 127.0.0.1 "$@" >"$log" 2>&1 & ;;
        redis)
            taskset -c 0 redis-server --port "$BL_PORT" --bind 127.0.0.1 --daemonize no \
                "$@" >"$log" 2>&1 & ;;
        *) bl_die "bl_start: unknown server $kind" ;;
        esac
        BL_PID=$!; BL_PIDS+=("$BL_PID")
        for _ in $(seq 100); do
            bl_listens "$BL_PORT" "$BL_PID" && st=0 || st=$?
            [ "$st" = 1 ] || break
            sleep 0.1
        done
        [ "$st" = 0 ] && return 0
        # gone (most likely its port was taken meanwhile) or not its port
        kill "$BL_PID" 2>/dev/null || true
        wait "$BL_PID" 2>/dev/null || true
        echo "$BL_NAME: $kind on port $BL_PORT did not start (try $try):" >&2
        tail -5 "$log" >&2
    done
    bl_die "$kind did not start"
}

# bl_stop [PID]: SIGTERM to the server (the last one started) and wait
bl_stop() {
    local p=${1:-$BL_PID} x rest=()
    kill "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    for x in "${BL_PIDS[@]}"; do [ "$x" = "$p" ] || rest+=("$x"); done
    BL_PIDS=("${rest[@]}")
}

bl_rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# bl_settled_rss PID: RSS that has not moved for a second (memcached
# resizes its hash table in a background thread after a load); at most 30 s
bl_settled_rss() {
    local a b
    b=$(bl_rss_kib "$1")
    for _ in $(seq 30); do
        sleep 1
        a=$(bl_rss_kib "$1")
        [ "$a" = "$b" ] && break
        b=$a
    done
    echo "$a"
}

# bl_stat PORT FIELD: the value of memcached text "stats" field FIELD on
# 127.0.0.1:PORT (memcached and mdcached answer it)
bl_stat() {
    exec 3<>"/dev/tcp/127.0.0.1/$1"
    printf 'stats\r\nquit\r\n' >&3
    tr -d '\r' <&3 | awk -v k="$2" '$1 == "STAT" && $2 == k { print $3 }'
    exec 3<&-
}
