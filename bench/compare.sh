#!/bin/bash
# compare.sh - docs/benchmarking.md end to end: mdcached against memcached and
# Redis (Debian's) and the floor (bench/floor), W1 W2 W3 W4 W6 W7.
#
# Every server runs pinned to CPU 0 (taskset -c 0), the generator
# (bench/mdc-load, one thread) on CPU 1; one worker thread each (memcached
# -t 1, mdcached -n 1 -t 0, Redis as it comes, the floor); the same memory
# limit (-m / --maxmemory: 1024 MiB for W1-W4, 4096 MiB for W6/W7).  The
# reference model mdcached -n 4 -t 0 and mdcached's native protocol run
# beside, outside the ratios.  Protocols: mdcached and the floor speak
# memcached's text protocol like memcached; Redis speaks RESP from the same
# generator (mdcached has no RESP).
#
# Each workload starts its servers fresh, prefills every key, then runs
# ROUNDS rounds in which every target takes its turn (A B C ... A B C ...),
# DURATION s measured after WARMUP s.  Before each run the script waits (up
# to QUIET_WAIT s, WAIT_BUDGET s in all) for the machine to be idle; a run
# during which other work took more than 0.25 CPU is repeated (up to TRIES
# attempts; all kept in the results, the ones not counted marked
# "discarded"; the first clean attempt counts, else the least noisy).
#
#   W1  90:10 get:set, 100 000 keys, 16-byte keys, 32-byte values, uniform,
#       50 connections, no pipelining, Unix socket
#   W2  W1 over TCP loopback
#   W3  W1 with 16 requests written per batch per connection (mdc-load -d 16)
#   W3S W3 as a sliding window: 16 in flight per connection, a new request
#       for each reply (mdc-load --window 16; not in the default list)
#   W3E W3S with one write per reply (--window 16 --window-each; not in
#       the default list)
#   W4  Zipf 0.99 over 1 000 000 keys, 100-byte values, 95:5, Unix socket
#   W6  RSS per record after loading 10^7 records (16 B keys, 32 B values)
#   W7  W1 at 10^3, 10^5 and 10^7 records (the W6 servers hold the 10^7)
#   W1M W1 against mdcached with --metrics on and off (not in the default
#       list; the Prometheus endpoint's cost, docs/packaging.md)
#
# usage: bench/compare.sh [options]            (from the build directory)
#   -B, --build DIR        build directory (default: .)
#   -r, --rounds N         rounds (default 3)
#   -D, --duration S       measured seconds per run (default 5)
#   -W, --warmup S         warmup seconds per run (default 1)
#   -w, --workloads LIST   e.g. "W1 W3" (default "W1 W2 W3 W4 W6 W7")
#   -o, --results DIR      where the JSON lines go (default bench/results)
#   -u, --doc FILE         replace the "compare" section of FILE (the table
#                          and plots; plots go to the results directory)
#   -q, --quiet-wait S     longest wait for an idle machine before a run (10)
#   -b, --wait-budget S    total seconds of such waiting allowed (300)
#   -t, --tries N          attempts per run while neighbours spoil it (3)
#   -N, --big N            records for W6 and W7's largest size (10^7)
#   -a, --append FILE      add to an earlier run's JSON lines: the report
#                          takes each workload from the latest run that has it
#   -A, --against BIN      a second mdcached binary (e.g. a build of an
#                          earlier commit), run as target mdcached-base
#                          (-n 1 -t 0) beside mdcached in the W1-W4 rounds:
#                          before/after figures of a change, side by side
#                          With liburing, mdcached --io=uring (-n 1 -t 0)
#                          and bench/floor_uring run as mdcached-uring and
#                          floor-uring, and the reference model -n 4 -t 0
#                          on io_uring as mdcached-ref-uring.
#   -T, --targets LIST     only these W1-W4 targets, e.g.
#                          "mdcached mdcached-base memcached" (default all)
#       --quick            3 rounds of 2 s, 10^6 records: checks the script
# Results: RESULTS/compare-DATE.jsonl (one JSON object per line: a "meta"
# line, one line per run, W6 lines) and compare-DATE-summary.json.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=$(pwd)
ROUNDS=3
DUR=5
WARM=1
WORKLOADS="W1 W2 W3 W4 W6 W7"
RESULTS=$HERE/results
DOC=
QWAIT=10
WAIT_BUDGET=300
TRIES=3
BIG=10000000
QUICK=0
APPEND=
AGAINST=
ONLY=
CMDLINE="bench/compare.sh $*"
while [ $# -gt 0 ]; do
    case $1 in
    -B | --build) BUILD=$2; shift ;;
    -r | --rounds) ROUNDS=$2; shift ;;
    -D | --duration) DUR=$2; shift ;;
    -W | --warmup) WARM=$2; shift ;;
    -w | --workloads) WORKLOADS=$2; shift ;;
    -o | --results) RESULTS=$2; shift ;;
    -u | --doc) DOC=$2; shift ;;
    -q | --quiet-wait) QWAIT=$2; shift ;;
    -b | --wait-budget) WAIT_BUDGET=$2; shift ;;
    -t | --tries) TRIES=$2; shift ;;
    -N | --big) BIG=$2; shift ;;
    -a | --append) APPEND=$2; shift ;;
    -A | --against) AGAINST=$2; shift ;;
    -T | --targets) ONLY=$2; shift ;;
    --quick) QUICK=1; DUR=2; WARM=0.5; BIG=1000000; QWAIT=0; TRIES=1 ;;
    -h | --help) sed -n '2,52p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option $1" >&2; sed -n '30,52p' "$0" >&2; exit 64 ;;
    esac
    shift
done

LOAD=${MDC_LOAD:-$BUILD/bench/mdc-load}
DAEMON=${MDCACHED:-$BUILD/server/mdcached}
FLOOR=${MDC_FLOOR:-$BUILD/bench/floor}
FLOOR_URING=${MDC_FLOOR_URING:-$BUILD/bench/floor_uring}
for f in "$LOAD" "$DAEMON" "$FLOOR" ${AGAINST:+"$AGAINST"}; do
    [ -x "$f" ] || { echo "compare.sh: $f not built (make; or -B BUILD_DIR)" >&2; exit 1; }
done
# mdcached-uring runs when this mdcached has --io and the kernel lets it
HAVE_URING=0
"$DAEMON" --io=uring -p 0 -s /nonexistent/x -h >/dev/null 2>&1 && "$DAEMON" -h 2>&1 | grep -q -- '--io' && HAVE_URING=1
# "mdcached" and "mdcached-ref" stay the epoll backend (--io=auto is
# io_uring now), so the two backends are side by side as before
EPOLL=
"$DAEMON" -h 2>&1 | grep -q -- '--io' && EPOLL=--io=epoll
for c in memcached redis-server taskset; do
    command -v $c >/dev/null || { echo "compare.sh: $c missing (apt-get install memcached redis-server)" >&2; exit 1; }
done
# matplotlib for the plots: Debian's python3-matplotlib may sit beside
# another python3 first on PATH
PY=python3
for p in python3 /usr/bin/python3; do
    if $p -c 'import matplotlib' 2>/dev/null; then PY=$p; break; fi
done
REPORT="$HERE/compare_report.py"

DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
TMP=$(mktemp -d /tmp/mdc-compare.XXXXXX)
chmod 1777 "$TMP" # memcached drops to nobody before creating its socket
mkdir -p "$RESULTS"
if [ -n "$APPEND" ]; then
    RUNS=$APPEND
else
    RUNS=$RESULTS/compare-${DATE//:/}.jsonl
    : > "$RUNS"
fi

declare -A SPID SADDR SFLAGS SARGS SPRE
SERVERS=()
cleanup() {
    for s in "${SERVERS[@]}"; do kill -CONT "${SPID[$s]}" 2>/dev/null || true; done
    for s in "${SERVERS[@]}"; do kill "${SPID[$s]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

log() { echo "$(date +%T) $*" >&2; }
loadavg() { cut -d' ' -f1 /proc/loadavg; }
free_port() {
    local p
    for p in $(seq "$1" $(($1 + 200))); do
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; return; fi
    done
    echo "compare.sh: no free port near $1" >&2; exit 1
}
NEXTPORT=24100

# start NAME KIND TRANSPORT MEM_MIB [ARGS...]: KIND memcached|redis|mdcached|
# floor; TRANSPORT unix|tcp.  Sets SPID, SADDR (mdc-load -s) and SFLAGS.
start() {
    local name=$1 kind=$2 tr=$3 mem=$4 addr listen
    SARGS[$name]="$*"
    shift 4
    if [ "$tr" = unix ]; then
        addr=$TMP/$name.sock
    else
        NEXTPORT=$(free_port $NEXTPORT)
        addr=127.0.0.1:$NEXTPORT
        NEXTPORT=$((NEXTPORT + 1))
    fi
    case $kind in
    memcached)
        if [ "$tr" = unix ]; then listen=(-s "$addr" -a 0700); else listen=(-p "${addr##*:}" -l 127.0.0.1); fi
        SFLAGS[$name]="memcached -t 1 -m $mem -c 1024 -U 0 $*"
        taskset -c 0 memcached -u nobody -t 1 -m "$mem" -c 1024 -U 0 "${listen[@]}" "$@" \
            > "$TMP/$name.log" 2>&1 &
        ;;
    redis)
        if [ "$tr" = unix ]; then listen=(--port 0 --unixsocket "$addr" --unixsocketperm 700); else listen=(--port "${addr##*:}" --bind 127.0.0.1); fi
        SFLAGS[$name]="redis-server --save '' --appendonly no --maxmemory ${mem}mb $*"
        taskset -c 0 redis-server --save '' --appendonly no --maxmemory "${mem}mb" \
            --daemonize no --loglevel warning "${listen[@]}" "$@" > "$TMP/$name.log" 2>&1 &
        ;;
    mdcached | mdcached-base)
        local bin=$DAEMON
        [ "$kind" = mdcached-base ] && bin=$AGAINST
        if [ "$tr" = unix ]; then listen=(-p 0 -s "$addr"); else listen=(-p "${addr##*:}" -l 127.0.0.1); fi
        SFLAGS[$name]="$kind $* -m $mem"
        taskset -c 0 "$bin" "$@" -m "$mem" "${listen[@]}" -v 1 > "$TMP/$name.log" 2>&1 &
        ;;
    floor | floor-uring)
        local fbin=$FLOOR
        [ "$kind" = floor-uring ] && fbin=$FLOOR_URING
        if [ "$tr" = unix ]; then listen=(-s "$addr"); else listen=(-p "${addr##*:}"); fi
        SFLAGS[$name]="$kind $*"
        taskset -c 0 "$fbin" "${listen[@]}" "$@" > "$TMP/$name.log" 2>&1 &
        ;;
    esac
    SPID[$name]=$!
    SADDR[$name]=$addr
    SERVERS+=("$name")
    local i
    for i in $(seq 100); do
        if [ "$tr" = unix ]; then [ -S "$addr" ] && return 0
        else (exec 3<>"/dev/tcp/127.0.0.1/${addr##*:}") 2>/dev/null && return 0; fi
        kill -0 "${SPID[$name]}" 2>/dev/null || break
        sleep 0.1
    done
    echo "compare.sh: $name did not start:" >&2; cat "$TMP/$name.log" >&2; exit 1
}
stop_all() {
    local s
    for s in "${SERVERS[@]}"; do kill -CONT "${SPID[$s]}" 2>/dev/null || true; done
    for s in "${SERVERS[@]}"; do kill "${SPID[$s]}" 2>/dev/null || true; done
    for s in "${SERVERS[@]}"; do wait "${SPID[$s]}" 2>/dev/null || true; done
    SERVERS=()
}
# prefill NAME PROTO KEYS VALUE_SIZE
prefill() {
    SPRE[$1]="$*"
    taskset -c 1 "$LOAD" -P "$2" -s "${SADDR[$1]}" -k "$3" -K 16 -v "$4" -c 8 -f -D 0 -w 0 -q
}
# A server gone (on a shared machine someone's cleanup may kill it, or it
# crashed): keep its log, start it again the same way and prefill it again.
ensure_alive() {
    local s=$1
    if kill -0 "${SPID[$s]}" 2>/dev/null && { [[ ${SADDR[$s]} != /* ]] || [ -S "${SADDR[$s]}" ]; }; then
        return 0
    fi
    wait "${SPID[$s]}" 2>/dev/null && rc=0 || rc=$?
    log "  server $s (pid ${SPID[$s]}) is gone (exit status $rc); log kept in ${RUNS%.jsonl}-$s.log; restarting"
    cp "$TMP/$s.log" "${RUNS%.jsonl}-$s.log" 2>/dev/null || true
    echo "{\"kind\": \"restart\", \"server\": \"$s\", \"status\": $rc, \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}" >> "$RUNS"
    # shellcheck disable=SC2086
    start ${SARGS[$s]}
    # shellcheck disable=SC2086
    [ -n "${SPRE[$s]:-}" ] && prefill ${SPRE[$s]}
    return 0
}
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# Busy CPUs (in hundredths of a CPU) over half a second, all CPUs together.
busy_centi() {
    local a b
    read -r _ a1 a2 a3 a4 a5 a6 a7 a8 _ < /proc/stat
    sleep 0.5
    read -r _ b1 b2 b3 b4 b5 b6 b7 b8 _ < /proc/stat
    a=$((b1 - a1 + b2 - a2 + b3 - a3 + b6 - a6 + b7 - a7 + b8 - a8))
    b=$((a + b4 - a4 + b5 - a5))
    echo $((b > 0 ? a * 100 * NCPU / b : 0))
}
NCPU=$(nproc)
WAITED=0 # seconds spent waiting for quiet, against WAIT_BUDGET
# Wait (up to QWAIT s, while the budget lasts) until other work uses less
# than a quarter of a CPU.  Our servers are idle between runs.
wait_quiet() {
    local t=0 b
    b=$(busy_centi)
    while [ "$b" -gt 25 ] && [ "$t" -lt "$((QWAIT * 2))" ] && [ "$WAITED" -lt "$WAIT_BUDGET" ]; do
        b=$(busy_centi)
        t=$((t + 1))
        [ $((t % 2)) = 0 ] && WAITED=$((WAITED + 1))
    done
    return 0
}

# Only the measured server may run: the others are stopped (SIGSTOP) during
# its window, so their housekeeping threads (mdcached's expiry sweep,
# memcached's LRU maintainer, Redis's cron) do not take CPU 0 from it.
# freeze_others SERVER / thaw_all
freeze_others() {
    local x
    for x in "${SERVERS[@]}"; do
        [ "$x" = "$1" ] || kill -STOP "${SPID[$x]}" 2>/dev/null || true
    done
}
thaw_all() {
    local x
    for x in "${SERVERS[@]}"; do kill -CONT "${SPID[$x]}" 2>/dev/null || true; done
}

# run_one WORKLOAD TARGET SERVER PROTO ROUND RECORDS MDC_LOAD_ARGS...
# Up to TRIES attempts while a neighbour's work spoils them (more than 0.25
# CPU besides ours during the window); the first clean one counts, else the
# least noisy.  Every attempt is kept; the ones that do not count are marked
# "discarded".
run_one() {
    local w=$1 t=$2 s=$3 proto=$4 r=$5 n=$6 try line best= bestf=999 f lines=()
    shift 6
    for try in $(seq "$TRIES"); do
        ensure_alive "$s"
        freeze_others "$s"
        wait_quiet
        if ! taskset -c 1 "$LOAD" -P "$proto" -s "${SADDR[$s]}" "$@" -D "$DUR" -w "$WARM" \
            -p "${SPID[$s]}" -q -L "$w $t round $r" -j "$TMP/one.json"; then
            # the server vanished under the run: once more on a fresh one
            ensure_alive "$s"
            taskset -c 1 "$LOAD" -P "$proto" -s "${SADDR[$s]}" "$@" -D "$DUR" -w "$WARM" \
                -p "${SPID[$s]}" -q -L "$w $t round $r" -j "$TMP/one.json" ||
                { echo "compare.sh: $w $t failed" >&2; cat "$TMP/$s.log" >&2; exit 1; }
        fi
        thaw_all
        line=$($PY "$REPORT" line "$TMP/one.json" kind=run workload="$w" target="$t" \
            server="$s" round="$r" records="$n" try="$try" flags="\"${SFLAGS[$s]}\"" \
            args="\"$*\"")
        lines+=("$line")
        f=$(echo "$line" | $PY -c 'import json,sys; d=json.load(sys.stdin); print(int(100 * (d.get("foreign_cpu0", 0) + d.get("foreign_cpu1", 0))))')
        if [ "$f" -lt "$bestf" ]; then bestf=$f; best=$((try - 1)); fi
        [[ $line == *'"noisy": true'* ]] || break
        [ "$WAITED" -ge "$WAIT_BUDGET" ] && break # out of patience: keep the best
        [ "$try" -lt "$TRIES" ] && log "  $w $t round $r: noisy (neighbours $(printf '%d.%02d' $((f / 100)) $((f % 100))) CPU), once more"
    done
    for i in "${!lines[@]}"; do
        if [ "$i" = "$best" ]; then echo "${lines[$i]}" >> "$RUNS"
        else echo "${lines[$i]%\}}, \"discarded\": true}" >> "$RUNS"; fi
    done
    log "  $w $t round $r: $(echo "${lines[$best]}" | $PY -c 'import json,sys; d=json.load(sys.stdin); c=d["server_cpu"] or {}; print("%.0f req/s, p50 %.0f us, p99 %.0f us, server %.2f us/req, neighbours %.2f CPU" % (d["throughput"], d["latency_us"]["p50"], d["latency_us"]["p99"], c.get("us_per_req", 0), d.get("foreign_cpu0", 0) + d.get("foreign_cpu1", 0)))')"
}

# rounds WORKLOAD RECORDS "TARGET:SERVER:PROTO ..." MDC_LOAD_ARGS...
rounds() {
    local w=$1 n=$2 targets=$3 r tsp
    shift 3
    for r in $(seq "$ROUNDS"); do
        for tsp in $targets; do
            IFS=: read -r t s p <<< "$tsp"
            run_one "$w" "$t" "$s" "$p" "$r" "$n" "$@"
        done
    done
}

# A W1-like workload against the six targets: phase W TRANSPORT KEYS VSIZE ARGS
phase() {
    local w=$1 tr=$2 keys=$3 vs=$4
    shift 4
    log "$w: starting servers ($tr socket), prefilling $keys keys of $vs bytes"
    start mc memcached "$tr" 1024
    start redis redis "$tr" 1024
    start mdc1 mdcached "$tr" 1024 -n 1 -t 0 $EPOLL
    start mdc4 mdcached "$tr" 1024 -n 4 -t 0 $EPOLL
    start floor floor "$tr" 0 -K 16 -v "$vs"
    prefill mc text "$keys" "$vs"
    prefill redis resp "$keys" "$vs"
    prefill mdc1 text "$keys" "$vs"
    prefill mdc4 text "$keys" "$vs"
    local all="memcached:mc:text mdcached:mdc1:text redis:redis:resp floor:floor:text mdcached-native:mdc1:native mdcached-ref:mdc4:text"
    if [ -n "$AGAINST" ]; then
        start mdcb mdcached-base "$tr" 1024 -n 1 -t 0
        prefill mdcb text "$keys" "$vs"
        all="memcached:mc:text mdcached:mdc1:text mdcached-base:mdcb:text redis:redis:resp floor:floor:text mdcached-native:mdc1:native mdcached-ref:mdc4:text"
    fi
    # io_uring (--io=uring, docs/performance.md "io_uring") and its floor
    if [ "$HAVE_URING" = 1 ]; then
        start mdcu mdcached "$tr" 1024 -n 1 -t 0 --io=uring
        prefill mdcu text "$keys" "$vs"
        all="$all mdcached-uring:mdcu:text"
        start mdc4u mdcached "$tr" 1024 -n 4 -t 0 --io=uring
        prefill mdc4u text "$keys" "$vs"
        all="$all mdcached-ref-uring:mdc4u:text"
        if [ -x "$FLOOR_URING" ]; then
            start flooru floor-uring "$tr" 0 -K 16 -v "$vs"
            all="$all floor-uring:flooru:text"
        fi
    fi
    if [ -n "$ONLY" ]; then
        local keep="" tsp t
        for tsp in $all; do
            t=${tsp%%:*}
            case " $ONLY " in *" $t "*) keep="$keep $tsp" ;; esac
        done
        all=$keep
    fi
    rounds "$w" "$keys" "$all" -K 16 -v "$vs" -k "$keys" -c 50 "$@"
    stop_all
}

# W6: load BIG records into a fresh server and take its RSS.
w6_load() {
    local name=$1 kind=$2 proto=$3 before after t0 t1 says
    freeze_others "$name"
    sleep 0.5
    before=$(rss_kib "${SPID[$name]}")
    t0=$(date +%s.%N)
    prefill "$name" "$proto" "$BIG" 32
    t1=$(date +%s.%N)
    # settled: RSS steady (within 0.2 %) for a second and no hash table
    # growing (memcached resizes its hash in a background thread, keeping
    # the old table until the move ends); at most 60 s
    local prev=0 i
    for i in $(seq 60); do
        sleep 1
        after=$(rss_kib "${SPID[$name]}")
        says=$($PY "$REPORT" stats "$proto" "${SADDR[$name]}" 2>/dev/null || echo "?")
        [[ $says == *hash_is_expanding=1* ]] && { prev=$after; continue; }
        [ $(( (after - prev) * 500 )) -le "$after" ] && [ $(( (prev - after) * 500 )) -le "$after" ] && break
        prev=$after
    done
    thaw_all
    echo "{\"kind\": \"w6\", \"workload\": \"W6\", \"server\": \"$kind\", \"flags\": \"${SFLAGS[$name]}\", \"records\": $BIG, \"rss_before_kib\": $before, \"rss_after_kib\": $after, \"rss_per_record\": $(echo "scale=2; $after * 1024 / $BIG" | bc), \"rss_delta_per_record\": $(echo "scale=2; ($after - $before) * 1024 / $BIG" | bc), \"load_s\": $(echo "$t1 - $t0" | bc), \"settle_s\": $i, \"server_says\": \"$says\", \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\"}" >> "$RUNS"
    log "W6 $kind: $(echo "scale=1; $after * 1024 / $BIG" | bc) bytes/record (RSS $((after / 1024)) MiB; $says)"
}

echo "{\"kind\": \"meta\", \"bench\": \"compare\", \"date\": \"$DATE\", \"host\": \"$(uname -n)\", \"kernel\": \"$(uname -sr)\", \"cpus\": $(nproc), \"command\": \"$CMDLINE\", \"rounds\": $ROUNDS, \"duration\": $DUR, \"warmup\": $WARM, \"quick\": $([ $QUICK = 1 ] && echo true || echo false), \"workloads\": \"$WORKLOADS\", \"big\": $BIG, \"loadavg_start\": \"$(cut -d' ' -f1-3 /proc/loadavg)\", \"memcached\": \"$(memcached -V)\", \"redis\": \"$(redis-server --version | cut -d' ' -f3)\", \"mdcached\": \"$("$DAEMON" -V 2>&1 | head -1)\", \"source\": \"$(git -C "$HERE" describe --always --dirty 2>/dev/null || echo unknown)\", \"daemon_md5\": \"$(md5sum < "$DAEMON" | cut -c1-12)\"}" >> "$RUNS"
log "compare $DATE on $(uname -n), load $(cut -d' ' -f1-3 /proc/loadavg): $WORKLOADS; $ROUNDS rounds x $DUR s (+$WARM s); results $RUNS"

W1ARGS="-r 90:10"
for w in $WORKLOADS; do
    case $w in
    W1) phase W1 unix 100000 32 $W1ARGS -d 1 ;;
    W2) phase W2 tcp 100000 32 $W1ARGS -d 1 ;;
    W3) phase W3 unix 100000 32 $W1ARGS -d 16 ;;
    W3S) phase W3S unix 100000 32 $W1ARGS --window 16 ;;
    W3E) phase W3E unix 100000 32 $W1ARGS --window 16 --window-each ;;
    W4) phase W4 unix 1000000 100 -r 95:5 -z 0.99 -d 1 ;;
    W6 | W7) ;;
    W1M)
        # W1 with --metrics on against off (docs/packaging.md, "Prometheus"):
        # two mdcached -n 1 -t 0, the same rounds, only the flag differs
        log "W1M: mdcached with and without --metrics, prefilling"
        start mdcoff mdcached unix 1024 -n 1 -t 0
        start mdcon mdcached unix 1024 -n 1 -t 0 --metrics="$(( 20000 + RANDOM % 20000 ))"
        prefill mdcoff text 100000 32
        prefill mdcon text 100000 32
        rounds W1M 100000 "metrics-off:mdcoff:text metrics-on:mdcon:text" \
            -K 16 -v 32 -k 100000 -c 50 $W1ARGS -d 1
        stop_all
        ;;
    *) echo "compare.sh: unknown workload $w" >&2; exit 64 ;;
    esac
done

if [[ " $WORKLOADS " == *" W6 "* || " $WORKLOADS " == *" W7 "* ]]; then
    # W6: one fresh server of each kind, -m 4096, loaded with BIG records.
    log "W6: loading $BIG records into each server in turn"
    start mcB memcached unix 4096
    w6_load mcB memcached text
    start mdcB mdcached unix 4096 -n 1 -t 0
    w6_load mdcB mdcached text
    start redisB redis unix 4096
    w6_load redisB redis resp
    if [[ " $WORKLOADS " == *" W7 "* ]]; then
        SIZES=(1000 100000)
        TARGETS=""
        for n in "${SIZES[@]}"; do
            start "mc$n" memcached unix 4096
            start "mdc$n" mdcached unix 4096 -n 1 -t 0
            start "redis$n" redis unix 4096
            prefill "mc$n" text "$n" 32
            prefill "mdc$n" text "$n" 32
            prefill "redis$n" resp "$n" 32
        done
        for r in $(seq "$ROUNDS"); do
            for n in "${SIZES[@]}" "$BIG"; do
                [ "$n" = "$BIG" ] && sfx=B || sfx=$n
                for t in memcached mdcached redis; do
                    case $t in memcached) s=mc$sfx p=text ;; mdcached) s=mdc$sfx p=text ;; redis) s=redis$sfx p=resp ;; esac
                    run_one W7 "$t" "$s" "$p" "$r" "$n" -K 16 -v 32 -k "$n" -c 50 $W1ARGS -d 1
                done
            done
        done
    fi
    stop_all
fi
echo "{\"kind\": \"end\", \"date\": \"$(date -u +%Y-%m-%dT%H:%M:%SZ)\", \"loadavg_end\": \"$(cut -d' ' -f1-3 /proc/loadavg)\"}" >> "$RUNS"
log "done; load $(cut -d' ' -f1-3 /proc/loadavg)"

ARGS=(--png-dir "$RESULTS")
[ -n "$DOC" ] && ARGS+=(--doc "$DOC")
$PY "$REPORT" report "$RUNS" "${ARGS[@]}"
