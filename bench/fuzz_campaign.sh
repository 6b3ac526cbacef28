#!/bin/sh
# fuzz_campaign.sh - the long fuzz runs of docs/security.md: each target in
# turn for a slice of wall time, at low priority, until each has had its CPU
# budget.  The CPU time every slice really got (user + system, from the
# fuzzer's own rusage) is appended to a ledger, so a campaign can be stopped
# and resumed, across sessions, and the ledger says how far each target got.
#
#   bench/fuzz_campaign.sh [target ...]     default: every tests/fuzz/fuzz_*.c
#
# Environment:
#   CAMPAIGN_DIR    build directory, corpora and ledger
#                   (default: _build/fuzz-campaign in the source tree)
#   BUDGET_S        CPU seconds per target to reach (default 3600)
#   SLICE_S         wall seconds per slice (default 600)
#   STREAMS         targets run at once (default 1)
#   NICE            niceness (default 19: only idle CPU)
#
# The ledger ($CAMPAIGN_DIR/ledger.tsv) has one line per slice:
#   date  target  cpu_s  executions  corpus_files  result
# A finding stops that target: its artifact is in $CAMPAIGN_DIR/fuzz-artifacts
# and the script exits non-zero at the end.
set -eu

srcdir=$(cd "$(dirname "$0")/.." && pwd)
dir=${CAMPAIGN_DIR:-$srcdir/_build/fuzz-campaign}
budget=${BUDGET_S:-3600}
slice=${SLICE_S:-600}
streams=${STREAMS:-1}
nice=${NICE:-19}

if [ $# -gt 0 ]; then
    targets="$*"
else
    targets=
    for f in "$srcdir"/tests/fuzz/fuzz_*.c; do
        n=$(basename "$f" .c)
        targets="$targets ${n#fuzz_}"
    done
fi

mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
# Build (and a 1 s smoke run) through the CI script, in the campaign's dir.
FUZZ_BUILD_DIR="$dir" FUZZ_TIME=1 sh "$srcdir/tools/fuzz.sh" $targets \
    >"$dir/build.log" 2>&1 || { tail -20 "$dir/build.log"; exit 1; }

ledger="$dir/ledger.tsv"
touch "$ledger"

spent() { # target -> CPU seconds in the ledger
    awk -v t="$1" '$2 == t { s += $3 } END { printf "%d\n", s }' "$ledger"
}

# One slice of target $1; appends to the ledger.
run_slice() {
    t=$1
    seeds="$srcdir/tests/fuzz/corpus/$t"
    work="$dir/fuzz-corpus/$t"
    log="$dir/log-$t.txt"
    mkdir -p "$work" "$dir/fuzz-artifacts"
    [ -d "$seeds" ] || seeds=
    set +e
    # shellcheck disable=SC2086
    python3 - "$nice" "$dir/tests/fuzz/fuzz_$t" "$slice" "$work" "$t" \
        "$log" $seeds <<'EOF'
import os, resource, subprocess, sys
nice, exe, slice_s, work, t, log = sys.argv[1:7]
seeds = sys.argv[7:]
cmd = [exe, f"-max_total_time={slice_s}", "-timeout=10", "-rss_limit_mb=2048",
       "-print_final_stats=1", f"-artifact_prefix=fuzz-artifacts/{t}-",
       work] + seeds
before = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(log, "w") as f:
    rc = subprocess.call(cmd, stdout=f, stderr=subprocess.STDOUT,
                         preexec_fn=lambda: os.nice(int(nice)))
after = resource.getrusage(resource.RUSAGE_CHILDREN)
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
execs = "?"
for line in open(log, errors="replace"):
    if line.startswith("stat::number_of_executed_units:"):
        execs = line.split(":")[-1].strip()
print(f"{cpu:.0f}\t{execs}\t{len(os.listdir(work))}\t{'ok' if rc == 0 else 'FINDING rc=%d' % rc}")
sys.exit(0 if rc == 0 else 1)
EOF
    rc=$?
    set -e
    return $rc
}

status=0
stream() { # the targets of one stream, round robin until their budgets
    while :; do
        left=0
        for t in "$@"; do
            [ "$(spent "$t")" -lt "$budget" ] || continue
            awk -v t="$t" '$2 == t && /FINDING/ { f = 1 } END { exit !f }' "$ledger" && continue
            left=1
            line=$(cd "$dir" && run_slice "$t") || true
            printf '%s\t%s\t%s\n' "$(date -u +%FT%TZ)" "$t" "$line" >>"$ledger"
            echo "fuzz_campaign: $t: $line (total $(spent "$t") of $budget CPU s)"
        done
        [ "$left" = 1 ] || break
    done
}

# Split the targets over the streams.
i=0
pids=
for s in $(seq 1 "$streams"); do
    mine=
    i=0
    for t in $targets; do
        [ $((i % streams + 1)) = "$s" ] && mine="$mine $t"
        i=$((i + 1))
    done
    # shellcheck disable=SC2086
    stream $mine &
    pids="$pids $!"
done
for p in $pids; do wait "$p" || status=1; done
if grep -q FINDING "$ledger"; then
    echo "fuzz_campaign: findings; see $dir/fuzz-artifacts" >&2
    status=1
fi
echo "fuzz_campaign: CPU seconds per target:"
for t in $targets; do echo "  $t $(spent "$t")"; done
exit $status
