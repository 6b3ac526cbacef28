#!/bin/sh
# tests/test_tool.sh - mdcached-tool against a real daemon: every command
# (stats [group], settings, tags, get/set/tget/tdel, flush, version, dump
# against a stand-in server that answers the text command "dump" late),
# the errors for an unreachable server, and `top` driven in tmux with the
# screen checked: refreshed in place, per-thread ops/s and hit ratio under
# load, q quits.  Skips (77) without tmux or python3 outside CI.
set -u
B=${MDC_BUILDDIR:-.}
D="$B/server/mdcached"
TOOL="$B/client-c/tool/mdcached-tool"
[ -x "$TOOL" ] || TOOL="$B/client-c/tool/.libs/mdcached-tool"
for need in tmux python3; do
    if ! command -v $need >/dev/null 2>&1; then
        echo "SKIP: $need not installed"; exit 77
    fi
done
. "$(dirname "$0")/harness.sh"
T=$H_TMP
SOCK="$T/sock"
TM="tmux -L mdct$$"
FPID=
cleanup() {
    $TM kill-server 2>/dev/null
    [ -n "$FPID" ] && kill "$FPID" 2>/dev/null && wait "$FPID" 2>/dev/null
    mdc_cleanup "$1" # the daemons (tests/harness.sh)
}
trap 'cleanup $?' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
# expect STATUS CMD... : run the tool, keep its output in $T/out
expect() {
    want=$1; shift
    "$TOOL" -s "unix:$SOCK" -T 30000 "$@" >"$T/out" 2>"$T/err"
    got=$?
    [ "$got" -eq "$want" ] || fail "mdcached-tool $*: exit $got, want $want: $(cat "$T/err")"
}
has() { grep -q -- "$1" "$T/out" || fail "'$1' not in the output of: $2: $(head -20 "$T/out")"; }

# --- an unreachable server: clear error, exit 69 -------------------------
"$TOOL" -s "unix:$T/none" stats >"$T/out" 2>&1; rc=$?
[ $rc -eq 69 ] || fail "unreachable unix socket: exit $rc, want 69"
grep -q "cannot reach the server" "$T/out" || fail "no clear message: $(cat "$T/out")"
"$TOOL" -s 127.0.0.1:1 -T 1000 get k >"$T/out" 2>&1; rc=$?
[ $rc -eq 69 ] || fail "unreachable TCP port: exit $rc, want 69"
grep -q "Connection refused" "$T/out" || fail "no reason given: $(cat "$T/out")"
"$TOOL" -s "unix:$T/none" dump >"$T/out" 2>&1; rc=$?
[ $rc -eq 69 ] || fail "dump, unreachable: exit $rc, want 69"
"$TOOL" -s "[::1" stats >"$T/out" 2>&1; rc=$?
[ $rc -eq 64 ] || fail "malformed server address: exit $rc, want 64"
"$TOOL" -s "unix:$SOCK" frobnicate >"$T/out" 2>&1; rc=$?
[ $rc -eq 64 ] || fail "unknown command: exit $rc, want 64"

# --- the command line: -h and -V answer 0; a malformed one exits 64 with a
# message, before any connection ($T/none is nobody's socket) --------------
"$TOOL" -h >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q "^Usage: mdcached-tool" "$T/out" || fail "-h: exit $rc"
"$TOOL" -V >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] && grep -q "^mdcached-tool .* (libmdcached " "$T/out" || fail "-V: exit $rc"
# usage STDERR-TEXT ARGS...: exit 64 and the text on stderr
usage() {
    want=$1; shift
    "$TOOL" -s "unix:$T/none" "$@" >"$T/out" 2>"$T/err"; got=$?
    [ $got -eq 64 ] || fail "mdcached-tool $*: exit $got, want 64"
    grep -q -- "$want" "$T/err" || fail "mdcached-tool $*: no '$want' in: $(cat "$T/err")"
}
usage "^Usage:"
usage "^Usage:" --bogus stats
usage "-T: want milliseconds" -T 0 stats
usage "get KEY" get
usage "get KEY" get a b
usage "set KEY VALUE" set k
usage "set KEY VALUE" set k v -e soon
usage "set KEY VALUE" set k v -f x
usage "set KEY VALUE" set k v extra
usage "tget TKEY TVAL" tget 7
usage "tags N: 1..100" tags 0
usage "top -i: want seconds" top -i 0
usage "top -n: want a count" top -n 0
usage "dump -w: want seconds" dump -w 0
usage "dump does not support TLS" --tls dump
# the server from the environment when there is no -s
MDCACHED_SERVER="unix:$T/none" "$TOOL" stats >"$T/out" 2>&1; rc=$?
[ $rc -eq 69 ] && grep -q "$T/none" "$T/out" || fail "MDCACHED_SERVER: exit $rc: $(cat "$T/out")"

# --- a daemon ----------------------------------------------------------------
mdc_start_raw daemon -p 0 -s "$SOCK" -n 2 -m 64 -v 1 ||
    { echo "FAIL: the daemon did not start"; exit 1; }

expect 0 set k1 one -t 7:1 -t 7:2
has STORED "set"
expect 0 set k2 two -t 7:1 -f 5 -e 3600
expect 0 set k3 three -t 7:1 -t 8:9
printf 'from stdin' | "$TOOL" -s "unix:$SOCK" set k4 - >/dev/null || fail "set from stdin"
expect 0 get k4
has "^from stdin$" "get k4"
expect 0 get k1
has "^one$" "get k1"
expect 0 get -l k2
has "^flags 5$" "get -l k2"
has "^tags 7:1$" "get -l k2"
expect 0 get -l k1
has "^tags 7:1,7:2$" "get -l k1"
expect 1 get nosuchkey
grep -q "not found" "$T/err" || fail "get miss: no message"
expect 64 set k5 v -t notatag

expect 0 stats
has "^curr_items 4$" "stats"
expect 0 stats settings
has "^memory-limit 64$" "stats settings"
expect 0 settings
has "^threads 2$" "settings"
expect 0 stats threads
has "^0:role main$" "stats threads"
has "^1:role network$" "stats threads"
has "^2:cmd_set " "stats threads"
expect 1 stats nosuchgroup
expect 0 version
has "^0\.\|^[0-9]" "version"

expect 0 tags
# largest first: 7:1 carries 3 records, then 7:2 and 8:9 one each
sed -n 2p "$T/out" | grep -Eq '^ +7 +1 +3$' || fail "tags: first row: $(cat "$T/out")"
[ "$(wc -l <"$T/out")" -eq 4 ] || fail "tags: want a header and 3 rows: $(cat "$T/out")"
expect 0 tags 1
[ "$(wc -l <"$T/out")" -eq 2 ] || fail "tags 1: want one row"

expect 0 tget 7 1
[ "$(wc -l <"$T/out")" -eq 3 ] || fail "tget 7 1: want 3 records: $(cat "$T/out")"
grep -q "$(printf '^k3\tthree\t7:1,8:9$')" "$T/out" || fail "tget: k3 line: $(cat "$T/out")"
expect 0 tget 8 9 2
[ "$(wc -l <"$T/out")" -eq 1 ] || fail "tget 8 9 2: want 1 record"
expect 0 tdel 7 2
has "^deleted 1$" "tdel 7 2"
expect 1 get k1
expect 0 get k2
expect 64 tdel 7 x

# --- dump: a daemon without -f refuses clearly; one with -f writes it -----
expect 1 dump
grep -q "no dump file" "$T/err" || fail "dump refusal: $(cat "$T/err")"
mkdir -p "$T/dd" && chmod 777 "$T/dd" # the daemon may run as nobody
mdc_start_raw daemon2 -p 0 -s "$T/dsock" -n 1 -m 64 -v 1 -f "$T/dd/cache.dump" ||
    fail "the daemon with -f did not start"
"$TOOL" -s "unix:$T/dsock" set dk hello >/dev/null 2>&1
"$TOOL" -s "unix:$T/dsock" dump >"$T/out" 2>&1; rc=$?
[ $rc -eq 0 ] || fail "dump (-f): exit $rc: $(cat "$T/out")"
[ -s "$T/dd/cache.dump" ] || fail "dump (-f): no file written"
mdc_stop daemon2

# --- dump against a stand-in that answers after 1 s: the tool waits -------
cat >"$T/fake.py" <<'EOF'
import socket, sys, time, os
path = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path + ".tmp"); s.listen(1)
os.rename(path + ".tmp", path)  # the path appears listening
for delay in (1, 3):
    c, _ = s.accept()
    got = c.recv(64)
    open(path + ".got", "ab").write(got)
    time.sleep(delay)
    c.sendall(b"OK dumped 4 records\r\n" if got == b"dump\r\n" else b"ERROR\r\n")
    c.close()
EOF
python3 "$T/fake.py" "$T/fake" &
FPID=$!
i=0
while [ ! -S "$T/fake" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done # 30 s: a hang
t0=$(date +%s%N)
"$TOOL" -s "unix:$T/fake" dump >"$T/out" 2>&1; rc=$?
t1=$(date +%s%N)
[ $rc -eq 0 ] || fail "dump (stand-in): exit $rc: $(cat "$T/out")"
has "^OK dumped 4 records$" "dump"
[ $(( (t1 - t0) / 1000000 )) -ge 900 ] || fail "dump did not wait for the answer"
grep -q "^dump" "$T/fake.got" || fail "the stand-in did not receive 'dump'"
# an answer later than -w: a clear timeout
"$TOOL" -s "unix:$T/fake" dump -w 1 >"$T/out" 2>"$T/err"; rc=$?
[ $rc -eq 75 ] || fail "dump -w 1 (late answer): exit $rc, want 75"
grep -q "no answer in time" "$T/err" || fail "dump timeout message: $(cat "$T/err")"
kill $FPID 2>/dev/null; wait $FPID 2>/dev/null; FPID=

# --- top in tmux: redrawn in place, live figures, q quits -------------------
$TM new-session -d -x 100 -y 30 -s top \
    "$TOOL -s unix:$SOCK top -i 0.3; echo TOP-EXITED \$?; sleep 30"
# load: gets that hit, until the screens are taken (30 s: a hang)
( end=$(($(date +%s) + 30)); while [ "$(date +%s)" -lt $end ] &&
      [ ! -e "$T/load.stop" ]; do
      "$TOOL" -s "unix:$SOCK" get k2 >/dev/null 2>&1; done ) &
LPID=$!
# wait for the condition, never a fixed time (a busy machine draws and
# gets late): at least 3 draws and a live rate - a network row with
# ops/s > 0 and 100.0 % hits - on the screen; then a later draw.  30 s
# (300 looks) is a hang.
live() {
    awk '$2 == "network" && $3 > 0 && $4 == "100.0" { ok = 1 } END { exit !ok }' "$1"
}
refresh_of() { sed -n 's/.*refresh \([0-9]*\).*/\1/p' "$1" | head -1; }
i=0
while [ $i -lt 300 ]; do
    $TM capture-pane -p -t top >"$T/screen1"
    r1=$(refresh_of "$T/screen1")
    [ -n "$r1" ] && [ "$r1" -ge 3 ] && live "$T/screen1" && break
    sleep 0.1; i=$((i + 1))
done
$TM capture-pane -p -S - -t top >"$T/hist1"
i=0
while [ $i -lt 300 ]; do
    $TM capture-pane -p -t top >"$T/screen2"
    r2=$(refresh_of "$T/screen2")
    [ -n "$r2" ] && [ -n "$r1" ] && [ "$r2" -gt "$r1" ] && break
    sleep 0.1; i=$((i + 1))
done
touch "$T/load.stop"
wait $LPID
[ -n "$r1" ] && [ "$r1" -ge 3 ] || fail "top: not refreshing: $(cat "$T/screen1")"
[ -n "$r2" ] && [ "$r2" -gt "$r1" ] || fail "top: refresh did not advance ($r1 -> $r2)"
# in place: one header on the screen and in the scrollback, after >= 3 draws
[ "$(grep -c '^THREAD' "$T/hist1")" -eq 1 ] || fail "top: not redrawn in place: $(cat "$T/hist1")"
grep -Eq '^0 +main ' "$T/screen1" || fail "top: no main thread row"
grep -Eq '^2 +network ' "$T/screen1" || fail "top: no second network thread row"
grep -q '^memory .* / 64.0 MiB' "$T/screen1" || fail "top: no memory line"
# the gets run in network threads: some row has ops/s > 0 and 100.0 % hits
live "$T/screen1" || fail "top: no live ops/s and hit ratio: $(cat "$T/screen1")"
$TM send-keys -t top q
i=0
while [ $i -lt 300 ]; do
    $TM capture-pane -p -t top >"$T/screen3" 2>/dev/null
    grep -q "TOP-EXITED" "$T/screen3" && break
    sleep 0.1; i=$((i + 1))
done
grep -q "TOP-EXITED 0" "$T/screen3" || fail "top: q did not quit with 0: $(cat "$T/screen3")"
$TM kill-server 2>/dev/null

# top without a terminal: -n N blocks, then exit 0
"$TOOL" -s "unix:$SOCK" top -i 0.1 -n 2 >"$T/out" </dev/null; rc=$?
[ $rc -eq 0 ] || fail "top -n 2: exit $rc"
[ "$(grep -c '^THREAD' "$T/out")" -eq 2 ] || fail "top -n 2: want 2 blocks"

expect 0 flush
has "^OK$" "flush"
# the flush hides the records at once; the sweeper reclaims them just
# after (flush_pending 0; 30 s: a hang)
for _ in $(seq 300); do
    expect 0 stats
    grep -q "^flush_pending 0$" "$T/out" && break
    sleep 0.1
done
has "^flush_pending 0$" "stats after flush"
has "^curr_items 0$" "stats after flush"
expect 0 tags
has "^(no tagged records)$" "tags after flush"
expect 1 get k2
# a clean exit after the session (and the daemon's coverage counts
# written: the EXIT trap's SIGKILL would lose them)
mdc_stop daemon || fail "mdcached: exit $? after SIGTERM"

if [ $fails -ne 0 ]; then
    echo "$fails failure(s)"; cat "$T/daemon.log"; exit 1
fi
echo "PASS: mdcached-tool"
exit 0
