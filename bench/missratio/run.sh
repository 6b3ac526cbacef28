#!/bin/bash
# The miss-ratio bench (bench/missratio/README.md): per trace and per cache
# size, the same read-through replay against mdcached, memcached and Redis
# (allkeys-lru, allkeys-lfu), and the same trace through libCacheSim's LRU,
# SIEVE, S3-FIFO and W-TinyLFU given the key + value bytes mdcached held.
#
#   bench/missratio/run.sh [BUILD_DIR]      (default _build/dev)
#
# Environment (defaults in brackets):
#   MR_REQUESTS [10000000]  requests per trace
#   MR_OBJECTS  [1000000]   Zipf population N
#   MR_TRACES   [z0.8 z1.0 z1.2 scan wide]
#   MR_SIZES    [1 5 20]    cache sizes, % of the trace's working set
#   MR_WIDE_SIZES [2 8]     the same for the trace "wide"
#   MR_WARMUP   [0.2]       share of the trace replayed before counting
#   MR_BATCH    [64]        requests per pipelined batch
#   MR_SEED     [1]
#   MR_OUT      [a new /tmp/mr-bench.XXXXXX]  traces, logs, results.tsv, plot
#   MR_VENV     [$MR_OUT/venv]  libcachesim's venv (reuse one to save time)
#   MR_EQUAL    [malloced]  the extra row "mdcached@mc-mem": mdcached again,
#               given as -m the memory memcached used in the same row, its
#               slab pages (`total_malloced`), rounded up to whole MiB;
#               `rss` takes memcached's RSS instead, `bytes` its `bytes`
#               stat, `off` leaves the row out (README.md, "Equal memory")
#   MR_RSS      [on]        the rows "mdcached@mc-rss", "mdcached@redis-lru-rss"
#               and "mdcached@redis-lfu-rss": mdcached at the limit (searched
#               in KiB, --memory-limit-kib) where its RSS after the replay
#               and the probe is that server's within MR_RSS_TOL; `off`
#               leaves them out (README.md, "Equal RSS")
#   MR_RSS_TOL  [0.02]      the RSS match wanted, a share of the target
#   MR_RSS_TRIES [5]        at most this many replays searching one target
#   MR_SIM      [on]        `off`: no libCacheSim columns (no venv made)
#
# Servers listen on 127.0.0.1 only and run one at a time; every replay is
# bounded by `timeout`.
set -u
cd "$(dirname "$0")/../.." || exit 1
SRC=$PWD
BUILD=${1:-_build/dev}
GEN=$BUILD/bench/missratio/mr-gen
REPLAY=$BUILD/bench/missratio/mr-replay
MDC=$BUILD/server/mdcached
for f in "$GEN" "$REPLAY" "$MDC"; do
	[ -x "$f" ] || { echo "run.sh: $f not built (make in $BUILD)" >&2; exit 1; }
done
command -v memcached >/dev/null || { echo "run.sh: memcached not found" >&2; exit 1; }
command -v redis-server >/dev/null || { echo "run.sh: redis-server not found" >&2; exit 1; }

REQUESTS=${MR_REQUESTS:-10000000}
OBJECTS=${MR_OBJECTS:-1000000}
TRACES=${MR_TRACES:-z0.8 z1.0 z1.2 scan wide}
SIZES=${MR_SIZES:-1 5 20}
WIDE_SIZES=${MR_WIDE_SIZES:-2 8}
RSS_EQ=${MR_RSS:-on}
RSS_TOL=${MR_RSS_TOL:-0.02}
RSS_TRIES=${MR_RSS_TRIES:-5}
SIM_ON=${MR_SIM:-on}
WARMUP=${MR_WARMUP:-0.2}
BATCH=${MR_BATCH:-64}
SEED=${MR_SEED:-1}
OUT=${MR_OUT:-$(mktemp -d /tmp/mr-bench.XXXXXX)}
VENV=${MR_VENV:-$OUT/venv}
mkdir -p "$OUT" || exit 1
RESULTS=$OUT/results.tsv
LIMIT=900	# seconds per replay
EQUAL=${MR_EQUAL:-malloced}
case $EQUAL in
malloced | rss | bytes | off) ;;
*) echo "run.sh: MR_EQUAL=$EQUAL: malloced, rss, bytes or off" >&2; exit 1 ;;
esac
case $RSS_EQ in
on | off) ;;
*) echo "run.sh: MR_RSS=$RSS_EQ: on or off" >&2; exit 1 ;;
esac
case $SIM_ON in
on | off) ;;
*) echo "run.sh: MR_SIM=$SIM_ON: on or off" >&2; exit 1 ;;
esac
case $RSS_TRIES in
'' | *[!0-9]*) echo "run.sh: MR_RSS_TRIES=$RSS_TRIES: a number" >&2; exit 1 ;;
esac
python3 -c "import sys; t = float(sys.argv[1]); sys.exit(not 0 < t < 1)" "$RSS_TOL" 2>/dev/null ||
	{ echo "run.sh: MR_RSS_TOL=$RSS_TOL: a share between 0 and 1" >&2; exit 1; }

PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# libCacheSim, pinned, in a venv of the bench's own
SIM=
if [ "$SIM_ON" = off ]; then
	:
elif [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import libcachesim' 2>/dev/null; then
	SIM=$VENV/bin/python
elif python3 -m venv "$VENV" >"$OUT/venv.log" 2>&1 &&
	"$VENV/bin/pip" install -q libcachesim==0.3.5 >>"$OUT/venv.log" 2>&1; then
	SIM=$VENV/bin/python
else
	echo "run.sh: libcachesim 0.3.5 did not install; simulated columns left out:" >&2
	tail -5 "$OUT/venv.log" >&2
fi

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT PID: until the server answers, or give up after 10 s
wait_port() {
	local i
	for i in $(seq 100); do
		kill -0 "$2" 2>/dev/null || return 1
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# srvstat PORT NAME [GROUP]: one field of a memcached-text `stats [GROUP]`
srvstat() {
	python3 - "$1" "$2" "${3:-}" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(("stats %s\r\n" % sys.argv[3]).strip().encode() + b"\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    d = s.recv(65536)
    if not d:
        break
    buf += d
for l in buf.decode().split("\r\n"):
    f = l.split()
    if len(f) == 3 and f[1] == sys.argv[2]:
        print(f[2])
EOF
}

# rss PID: its resident set in KiB
rss() {
	awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status" 2>/dev/null || echo -
}

stop() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	PIDS=()
}

# replay NAME PORT PROTO: one replay with the probe; appends to $ROW
replay() {
	local r
	r=$(timeout "$LIMIT" "$REPLAY" -t "$TRACE" -p "$2" -P "$3" -b "$BATCH" -w "$WARMUP" -x \
		2>>"$OUT/replay.err")
	echo "$TR $PCT $1 $r" >>"$OUT/replay.log"
	echo "$r"
}

field() {	# field NAME LINE
	sed -n "s/.*\\b$1=\\([^ ]*\\).*/\\1/p" <<<"$2"
}

# mib: the -m (maxmemory) the server was given; rss_kib: its resident set
# after the replay and the probe
# limit_kib: the memory limit given in KiB (mdcached's equal-RSS rows get
# a limit in KiB, their mib column is it in MiB, 3 decimals);
# target_rss_kib: for those rows, the RSS of the server matched, else -
printf 'trace\tpct\tmib\tserver\tmiss_ratio\trecords\tobject_bytes\tstats_bytes\trss_kib\tlimit_kib\ttarget_rss_kib\n' >"$RESULTS"
row() {	# server miss records objbytes statsbytes rss [mib [limit_kib [target]]]
	local m=${7:-$MIB}
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$TR" "$PCT" "$m" "$1" "$2" "$3" "$4" "$5" \
		"$6" "${8:-$((m * 1024))}" "${9:--}" >>"$RESULTS"
}

# run_mdc NAME MIB [KIB]: mdcached at -m MIB (or --memory-limit-kib KIB),
# one replay; sets r, sb, rs
run_mdc() {
	local lim=(-m "$2") ilim=
	[ -z "${3:-}" ] || lim=(--memory-limit-kib "$3")
	rm -f "$OUT/mdc.port"
	# -I at most half of the limit, as memcached requires (below)
	if [ -n "${3:-}" ]; then [ "$3" -ge 2048 ] || ilim="-I 512k"
	else [ "$2" -ge 2 ] || ilim="-I 512k"; fi
	# shellcheck disable=SC2086
	"$MDC" -n 4 -t 0 "${lim[@]}" $ilim -l 127.0.0.1 -p auto --port-file "$OUT/mdc.port" \
		2>>"$OUT/mdcached.err" &
	PIDS=($!)
	for _ in $(seq 100); do [ -s "$OUT/mdc.port" ] && break; sleep 0.1; done
	port=$(awk '$1 == "tcp" { sub(/.*:/, "", $2); print $2; exit }' "$OUT/mdc.port" 2>/dev/null)
	r=$(replay "$1" "$port" text)
	sb=$(srvstat "$port" bytes)
	rs=$(rss "${PIDS[0]}")
	stop "${PIDS[0]}"
}

# Equal RSS (README.md, "Equal RSS"). TRIED maps a limit in KiB to what
# mdcached did at it in this row: "rss_kib miss records held stats_bytes".
declare -A TRIED
# tried KIB: mdcached replayed at KIB (once per row); sets the TRIED entry
tried() {
	[ -n "${TRIED[$1]:-}" ] && return
	run_mdc "mdcached@$1k" 0 "$1"
	TRIED[$1]="$rs $(field miss_ratio "$r") $(field held_records "$r") $(field held_bytes "$r") $sb"
	echo "$TR $PCT try --memory-limit-kib $1: rss_kib=$rs miss_ratio=$(field miss_ratio "$r")" \
		>>"$OUT/equal_rss.log"
}
# rss_match LABEL TARGET_KIB: the limit whose RSS is TARGET within RSS_TOL,
# reusing this row's earlier replays; at most RSS_TRIES new ones. The next
# limit tried: between the closest below and above the target, by linear
# interpolation kept inside the bracket's middle half (so it shrinks to
# 3/4 at least, however curved RSS is in the limit); with
# points on one side only, a slope of 1 KiB of RSS per KiB of limit from
# the nearest. Adds the row LABEL with the closest replay (target missed:
# its RSS says by how much; the log says so).
rss_match() {
	local label=$1 target=$2 n=0 k best lo hi next
	while :; do
		read -r best lo hi next < <(
			for k in "${!TRIED[@]}"; do echo "$k ${TRIED[$k]%% *}"; done |
				python3 -c '
import sys
t, tol = float(sys.argv[1]), float(sys.argv[2])
pts = sorted((int(a), int(b)) for a, b in (l.split() for l in sys.stdin) if b.isdigit())
best = min(pts, key=lambda p: abs(p[1] - t)) if pts else None
below = [p for p in pts if p[1] < t]
above = [p for p in pts if p[1] >= t]
lo = max(below, key=lambda p: p[0]) if below else None
hi = min(above, key=lambda p: p[0]) if above else None
if best and abs(best[1] - t) <= tol * t:
    nxt = 0
elif lo and hi and hi[0] <= lo[0] + 1:
    nxt = 0  # adjacent, or RSS not monotonic in the limit here: stop
elif lo and hi:
    x = lo[0] + (t - lo[1]) * (hi[0] - lo[0]) / max(hi[1] - lo[1], 1)
    q = (hi[0] - lo[0]) / 4
    nxt = int(round(min(max(x, lo[0] + q), hi[0] - q)))
elif lo and not hi and len(below) > 1 and \
        below[-1][1] - below[-2][1] < 0.1 * (below[-1][0] - below[-2][0]):
    nxt = 0  # RSS no longer grows with the limit: it holds the whole trace
elif lo and not hi:
    nxt = int(lo[0] + (t - lo[1]))
elif hi and not lo:
    nxt = int(hi[0] - (hi[1] - t))
else:
    nxt = 0
if nxt and nxt < 1024:
    nxt = 1024 if 1024 not in [p[0] for p in pts] else 0
print(best[0] if best else 0, lo[0] if lo else 0, hi[0] if hi else 0, nxt)
' "$target" "$RSS_TOL")
		[ "$next" -gt 0 ] && [ "$n" -lt "$RSS_TRIES" ] || break
		tried "$next"
		n=$((n + 1))
	done
	if [ "$best" -gt 0 ]; then
		local v=(${TRIED[$best]})
		local ok=yes
		python3 -c "import sys; sys.exit(abs($v - $target) > $RSS_TOL * $target)" || ok=no
		row "$label" "${v[1]}" "${v[2]}" "${v[3]}" "${v[4]}" "${v[0]}" \
			"$(python3 -c "print('%.3f' % ($best / 1024))")" "$best" "$target"
		echo "$TR $PCT $label: --memory-limit-kib $best rss_kib=${v[0]} target_rss_kib=$target within=$ok ($n new replays)" \
			>>"$OUT/equal_rss.log"
	fi
}

for TR in $TRACES; do
	sizes=$SIZES
	case $TR in
	z0.8) args="-a 0.8 -w 0.1 -d 0.01" ;;
	z1.0) args="-a 1.0 -w 0.1 -d 0.01" ;;
	z1.2) args="-a 1.2 -w 0.1 -d 0.01" ;;
	scan) args="-a 1.0 -w 0.1 -d 0.01 -s 0.2 -L 10000" ;;
	# wide sizes: lognormal sigma 1.5, 0.3 % of the objects 10-100 KiB,
	# scan bursts of 50 000 (README.md, "The traces")
	wide) args="-a 0.8 -w 0.1 -d 0.01 -s 0.05 -L 50000 -g 1.5 -b 0.003 -B 10240,102400"
		sizes=$WIDE_SIZES ;;
	*) echo "run.sh: unknown trace $TR" >&2; exit 1 ;;
	esac
	TRACE=$OUT/$TR.trace
	# shellcheck disable=SC2086
	"$GEN" -o "$TRACE" -n "$REQUESTS" -N "$OBJECTS" -S "$SEED" $args || exit 1
	[ -n "$SIM" ] && { "$GEN" --oracle "$TRACE" "$TRACE.oracle" || exit 1; }
	WS=$("$GEN" --info "$TRACE" | sed -n 's/^working_set_bytes=//p')
	echo "trace $TR: $("$GEN" --info "$TRACE" | tr '\n' ' ')" >&2
	for PCT in $sizes; do
		MIB=$(( (WS * PCT / 100 + 1048575) / 1048576 ))
		[ "$MIB" -ge 1 ] || MIB=1
		echo "trace $TR, $PCT % = $MIB MiB" >&2

		TRIED=()
		run_mdc mdcached "$MIB"
		row mdcached "$(field miss_ratio "$r")" "$(field held_records "$r")" \
			"$(field held_bytes "$r")" "$sb" "$rs"
		HELD=$(field held_bytes "$r")
		# the bisection starts from this replay (same server, same trace)
		case $rs in *[!0-9]* | '') ;; *)
			TRIED[$((MIB * 1024))]="$rs $(field miss_ratio "$r") $(field held_records "$r") $(field held_bytes "$r") $sb" ;;
		esac

		port=$(free_port)
		# memcached refuses an -m below twice its item size limit (1 MiB)
		ilim=
		[ "$MIB" -ge 2 ] || ilim="-I 512k"
		# shellcheck disable=SC2086
		memcached -l 127.0.0.1 -p "$port" -U 0 -m "$MIB" $ilim -u nobody 2>>"$OUT/memcached.err" &
		PIDS=($!)
		wait_port "$port" "${PIDS[0]}"
		r=$(replay memcached "$port" text)
		sb=$(srvstat "$port" bytes)
		mall=$(srvstat "$port" total_malloced slabs)
		rs=$(rss "${PIDS[0]}")
		stop "${PIDS[0]}"
		row memcached "$(field miss_ratio "$r")" "$(field held_records "$r")" \
			"$(field held_bytes "$r")" "$sb" "$rs"
		mc_rss=$rs
		echo "$TR $PCT memcached -m $MIB: bytes=$sb total_malloced=$mall rss_kib=$rs" \
			>>"$OUT/equal.log"

		# Equal memory: mdcached given the memory memcached really took
		# in this row (README.md, "Equal memory"); the rows above stay
		# at the issue's -m, this one is an addition, labelled
		if [ "$EQUAL" != off ]; then
			case $EQUAL in
			malloced) used=$mall ;;
			bytes) used=$sb ;;
			rss) case $rs in '' | *[!0-9]*) used= ;; *) used=$((rs * 1024)) ;; esac ;;
			esac
			if [ -n "$used" ] && [ "$used" -gt 0 ] 2>/dev/null; then
				emib=$(( (used + 1048575) / 1048576 ))
				run_mdc mdcached@mc-mem "$emib"
				row mdcached@mc-mem "$(field miss_ratio "$r")" "$(field held_records "$r")" \
					"$(field held_bytes "$r")" "$sb" "$rs" "$emib"
				case $rs in *[!0-9]* | '') ;; *)	# a point for the RSS search
					TRIED[$((emib * 1024))]="$rs $(field miss_ratio "$r") $(field held_records "$r") $(field held_bytes "$r") $sb" ;;
				esac
				echo "$TR $PCT mdcached@mc-mem -m $emib ($EQUAL=$used)" >>"$OUT/equal.log"
			else
				echo "run.sh: $TR $PCT %: memcached's $EQUAL unknown, no mdcached@mc-mem row" >&2
			fi
		fi

		for pol in lru lfu; do
			port=$(free_port)
			redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
				--maxmemory "${MIB}mb" --maxmemory-policy "allkeys-$pol" \
				>>"$OUT/redis.log" 2>&1 &
			PIDS=($!)
			wait_port "$port" "${PIDS[0]}"
			r=$(replay "redis-$pol" "$port" resp)
			rs=$(rss "${PIDS[0]}")
			stop "${PIDS[0]}"
			row "redis-$pol" "$(field miss_ratio "$r")" "$(field held_records "$r")" \
				"$(field held_bytes "$r")" - "$rs"
			eval "redis_${pol}_rss=\$rs"
		done

		# Equal RSS: mdcached where its RSS is each server's
		if [ "$RSS_EQ" = on ]; then
			for t in "mc-rss $mc_rss" "redis-lru-rss $redis_lru_rss" \
				"redis-lfu-rss $redis_lfu_rss"; do
				set -- $t
				case ${2:-} in
				'' | *[!0-9]*) echo "run.sh: $TR $PCT %: no RSS for $1" >&2 ;;
				*) rss_match "mdcached@$1" "$2" ;;
				esac
			done
		fi

		if [ -n "$SIM" ] && [ -n "$HELD" ] && [ "$HELD" -gt 0 ]; then
			warm=$(python3 -c "print(int($WARMUP * $REQUESTS))")
			s=$(timeout "$LIMIT" "$SIM" "$SRC/bench/missratio/mr_sim.py" "$TRACE.oracle" \
				"$HELD" "$warm" 2>>"$OUT/sim.err")
			for pol in LRU SIEVE S3-FIFO W-TinyLFU; do
				row "sim-$pol" "$(field "$pol" "$s")" - "$HELD" - -
			done
		fi
	done
	rm -f "$TRACE.oracle"
done

# the report wants matplotlib for its plot: the system's python3 has it
PY=python3
python3 -c 'import matplotlib' 2>/dev/null || { [ -x /usr/bin/python3 ] && PY=/usr/bin/python3; }
MR_RSS_TOL=$RSS_TOL "$PY" "$SRC/bench/missratio/report.py" "$RESULTS" "$OUT/missratio.png"
echo "results: $RESULTS, plot: $OUT/missratio.png" >&2
