#!/bin/sh
# mdc_load_seed.sh - bench/mdc-load's --seed: windows with seeds N and
# N + 2 draw different keys.  The generator's state was seed * step + 1 and
# each draw adds the step, so seed N + 2's stream was seed N's two draws
# (one request: the get/set draw, the key draw) later, and bench/run's
# windows, all with one seed, set the keys the window before had set:
# W1E's sets replaced records instead of evicting.  Checked
# with sets only over a large key space: the second window's sets must
# nearly all be keys the first did not set (new records in the server).
# Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/realclients/common.sh"
LOAD=${MDC_BUILDDIR:-.}/bench/mdc-load
[ -x "$LOAD" ] || { echo "FAIL: $LOAD not built"; exit 1; }
need timeout
load() { ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 60 "$LOAD" "$@"; }

# stat NAME: a field of the daemon's stats
stat() {
    python3 - "$S_PORT" "$1" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=10)
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    d = s.recv(65536)
    if not d:
        break
    buf += d
for l in buf.decode().split("\r\n"):
    w = l.split()
    if len(w) == 3 and w[1] == sys.argv[2]:
        print(w[2])
PY
}

# the windows last D seconds, twice as long again while the second had
# fewer than 1000 sets (a count, not a rate: a busy machine makes fewer
# sets in a window; a fresh daemon each time), up to 16 s
run() { load -P text -s 127.0.0.1:$S_PORT -k 100000000 -K 16 -v 8 -c 4 -r 0:100 -D "$D" -w 0 -q --seed "$1"; }
for D in 0.5 1 2 4 8 16; do
    mdc_start S -l 127.0.0.1 -n 1 -m 256 || { echo "FAIL: mdcached did not start"; exit 1; }
    run 5 || fail "mdc-load --seed 5 failed"
    s1=$(stat cmd_set); i1=$(stat curr_items)
    run 7 || fail "mdc-load --seed 7 failed"
    s2=$(stat cmd_set); i2=$(stat curr_items)
    sets=$((s2 - s1)); new=$((i2 - i1))
    echo "windows of $D s: first $s1 sets, $i1 keys; second: $sets sets, $new new keys"
    [ "$sets" -ge 1000 ] && break
    [ "$D" = 16 ] && break
    stop_mdc S
done
[ "$sets" -ge 1000 ] || fail "too few sets in the second window ($sets in $D s)"
# 10^8 keys: a few repeats by chance; with the old seeding only the sets
# beyond the first window's count were new
[ $((new * 100)) -ge $((sets * 95)) ] && ok "seed 7's keys are not seed 5's" ||
    fail "seed 7 set $sets keys, only $new new: its stream repeats seed 5's"
# the same seed again draws the same keys (repeatable runs)
run 7 || fail "mdc-load --seed 7 (again) failed"
i3=$(stat curr_items)
s3=$(stat cmd_set)
# (its first min(this window, the last) sets are the last window's keys)
rep=$((s3 - s2)); [ "$rep" -le "$sets" ] || rep=$sets
[ $(( (i3 - i2) * 10)) -le $(( (s3 - s2) * 10 - rep * 9)) ] && ok "seed 7 again repeats its keys" ||
    fail "seed 7 again: $((s3 - s2)) sets, $((i3 - i2)) new keys"
rc_finish
