#!/bin/sh
# tests/test_pool_fault.sh - invalidations that survive a server's absence
# (docs/client-c.md): 4 servers, one cut off (its link down in its network
# namespace) while 8 processes run 1 000 tag deletes through pools with a
# spool, then brought back; mdcached-tool spool-replay (as nobody) replays
# what did not reach it, and not one record of an invalidated tag is
# readable on it afterwards.  Without the namespaces (not root) the server
# is stopped with SIGSTOP instead (it does not answer either); as root
# under CI=true the namespaces are required.
. "$(dirname "$0")/harness.sh"
. "$(dirname "$0")/pool_bed.sh"

B=${MDC_BUILDDIR:-.}
PF="$B/tests/pool_fault"
TOOL="$B/client-c/tool/mdcached-tool"
NTAGS=1000
fail() {
    echo "FAIL: $*"
    bed_stop
    exit 1
}
trap 'bed_stop; mdc_cleanup' EXIT

MODE=local
if [ "${MDC_BED_MODE:-}" = local ]; then
    echo "# MDC_BED_MODE=local: the server is stopped (SIGSTOP)"
elif bed_can_ns; then
    MODE=ns
elif [ "$(id -u)" = 0 ] && [ "${CI:-}" = true ]; then
    echo "FAIL: root under CI=true but no network namespaces"
    exit 1
else
    echo "SKIP: network namespaces (needs root and ip): the server is" \
        "stopped (SIGSTOP) instead of cut off"
fi
echo "# mode $MODE"
bed_start "$MODE" 4 || fail "the bed did not start"
echo "# servers: $BED_SERVERS; total RSS $(bed_rss) KiB"
set -- $BED_SERVERS
CUT=$4

$BED_EXEC "$PF" populate $NTAGS 8 $BED_SERVERS || fail "populate"
before=$($BED_EXEC "$PF" check $NTAGS "$CUT")
echo "# records of the tags on the server to cut: $before"
[ "$before" -gt 0 ] || fail "nothing stored on $CUT"

SPOOL="$H_TMP/spool"
mkdir -m 700 "$SPOOL"
[ "$(id -u)" = 0 ] && chown 65534:65534 "$SPOOL"

(sleep 0.15; bed_cut 3) &
cutter=$!
out=$($BED_EXEC "$PF" delete "$SPOOL" 8 $NTAGS $BED_SERVERS) ||
    fail "deletes: $out"
wait $cutter
echo "# deletes: $out"
spooled=$(echo "$out" | sed -n 's/.*spooled \([0-9]*\).*/\1/p')
[ "${spooled:-0}" -gt 0 ] || fail "nothing was spooled"
ls -l "$SPOOL"

bed_restore 3
# back, and still holding records of tags that were deleted meanwhile
left=$($BED_EXEC "$PF" check $NTAGS "$CUT")
echo "# records of invalidated tags readable on $CUT before the replay: $left"
[ "$left" -gt 0 ] || fail "the cut server lost its records: no test"
for s in $1 $2 $3; do
    n=$($BED_EXEC "$PF" check $NTAGS "$s")
    [ "$n" = 0 ] || fail "$s still serves $n records of deleted tags"
done

if [ "$(id -u)" = 0 ]; then
    # the replayer refuses root
    "$TOOL" spool-replay "$SPOOL" >/dev/null 2>&1
    rc=$?
    [ $rc = 77 ] || fail "spool-replay as root: exit $rc, want 77"
    RUNAS="setpriv --reuid=65534 --regid=65534 --clear-groups"
else
    RUNAS=""
fi
rep=$($BED_EXEC $RUNAS "$TOOL" -T 30000 spool-replay "$SPOOL") ||
    fail "spool-replay: exit $?: $rep"
echo "# replay: $rep"
after=$($BED_EXEC "$PF" check $NTAGS "$CUT")
echo "# records of invalidated tags readable on $CUT after the replay: $after"
[ "$after" = 0 ] || fail "$after records of invalidated tags still served"
# a second replay finds nothing left
rep=$($BED_EXEC $RUNAS "$TOOL" -T 30000 spool-replay "$SPOOL") ||
    fail "second spool-replay: $rep"
case $rep in *"replayed 0 "*) ;; *) fail "second replay: $rep" ;; esac
echo "PASS"
exit 0
