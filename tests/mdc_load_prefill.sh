#!/bin/sh
# mdc_load_prefill.sh - bench/mdc-load's prefill (-f) against a cache that
# refuses sets for want of memory.  memcached lets a set fail now and then
# while it evicts ("SERVER_ERROR out of memory storing object" when the
# items at its LRU tail are locked: by design, items.c says); bench/run's
# W1E prefill of 12 M keys into -m 64 stopped on such refusals.  So:
#   - a set refused for memory is sent again until stored, the prefill
#     succeeds with every key stored and says how many were refused;
#   - a cache that keeps refusing (full, not evicting: mdcached -M, over
#     text and the native protocol; Redis with noeviction over RESP) stops
#     the prefill within seconds, with a message that says so;
#   - any other refusal still fails the prefill, naming the reply.
# The flaky cache is a small fake memcached (text protocol) in Python.
# Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/realclients/common.sh"
LOAD=${MDC_BUILDDIR:-.}/bench/mdc-load
[ -x "$LOAD" ] || { echo "FAIL: $LOAD not built"; exit 1; }
need python3 timeout
# the generator keeps its buffers to the end (exit frees them): no leak
# report for it from the sanitizer builds (the daemon keeps its checks)
load() { ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" timeout 60 "$LOAD" "$@"; }

# fake MODE SOCK: a memcached text server on Unix socket SOCK; "count"
# answers "COUNT n", the keys stored.  MODE flaky: the first set of every
# 5th key is refused for memory; toolarge: key 10 is refused as too large.
fake() {
    python3 - "$1" "$2" <<'EOF' &
import os, socket, sys, threading
mode, path = sys.argv[1], sys.argv[2]
stored, tried, lock = set(), set(), threading.Lock()

def serve(s):
    buf = b""
    while True:
        d = s.recv(65536)
        if not d:
            return
        buf += d
        out = []
        while True:
            nl = buf.find(b"\r\n")
            if nl < 0:
                break
            w = buf[:nl].split()
            if w and w[0] == b"count":
                buf = buf[nl + 2:]
                with lock:
                    out.append(b"COUNT %d\r\n" % len(stored))
                continue
            n = int(w[4])
            if len(buf) < nl + 2 + n + 2:
                break
            buf = buf[nl + 2 + n + 2:]
            k = int(w[1][1:])
            with lock:
                if mode == "flaky" and k % 5 == 0 and k not in tried:
                    tried.add(k)
                    out.append(b"SERVER_ERROR out of memory storing object\r\n")
                elif mode == "toolarge" and k == 10:
                    out.append(b"SERVER_ERROR object too large for cache\r\n")
                else:
                    stored.add(k)
                    out.append(b"STORED\r\n")
        if out:
            s.sendall(b"".join(out))

ls = socket.socket(socket.AF_UNIX)
ls.bind(path + ".tmp")
ls.listen(16)
os.rename(path + ".tmp", path)  # the path appears listening
while True:
    c, _ = ls.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
EOF
    RC_PIDS="$RC_PIDS $!"
    i=0
    while [ ! -S "$2" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
}
count() {
    python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"count\r\n")
print(s.recv(100).split()[1].decode())' "$1"
}

# 1. refused now and then: sent again, every key stored, the refusals said
fake flaky "$RC_TMP/flaky.sock"
load -P text -s "$RC_TMP/flaky.sock" -k 2000 -c 4 -f -D 0 -w 0 -q 2>"$RC_TMP/flaky.err"
check "a prefill with sets refused for memory succeeds" 0 $?
check "every key stored" 2000 "$(count "$RC_TMP/flaky.sock")"
grep -q '^prefill: 400 sets refused for want of memory and sent again (at most 1 refusal of one key)' \
    "$RC_TMP/flaky.err" && ok "the refusals are reported" ||
    fail "no report of 400 refusals: $(cat "$RC_TMP/flaky.err")"

# 2. any other refusal fails the prefill, the reply named
fake toolarge "$RC_TMP/large.sock"
load -P text -s "$RC_TMP/large.sock" -k 100 -c 2 -f -D 0 -w 0 -q 2>"$RC_TMP/large.err"
[ $? -ne 0 ] && ok "a set refused as too large fails the prefill" ||
    fail "a set refused as too large passed"
grep -q '1 of 100 prefill sets failed (one reply: "SERVER_ERROR object too large for cache")' \
    "$RC_TMP/large.err" && ok "the failure names the reply" ||
    fail "message: $(cat "$RC_TMP/large.err")"

# 3. a full cache that does not evict: stops within seconds, says why
mdc_start F -l 127.0.0.1 -n 1 -m 1 -I 512k -M || { echo "FAIL: mdcached did not start"; exit 1; }
for p in text native; do
    t0=$(date +%s)
    load -P $p -s 127.0.0.1:$F_PORT -k 200000 -v 100 -c 4 -f -D 0 -w 0 -q 2>"$RC_TMP/full-$p.err"
    rc=$?
    t=$(($(date +%s) - t0))
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "$p: a full mdcached -M fails the prefill" ||
        fail "$p: a full mdcached -M: exit status $rc"
    grep -q 'prefill stopped: a key was still refused 1.0 s after its first refusal' \
        "$RC_TMP/full-$p.err" && ok "$p: the prefill stopped, saying why" ||
        fail "$p: message: $(cat "$RC_TMP/full-$p.err")"
    # a ceiling only a hang crosses (docs/testing.md, "A busy machine"):
    # the stop itself is the message above
    [ $t -le 60 ] && ok "$p: stopped in $t s" || fail "$p: took $t s"
done
stop_mdc F
if command -v redis-server >/dev/null 2>&1; then
    redis-server --port 0 --unixsocket "$RC_TMP/redis.sock" --save '' \
        --appendonly no --daemonize no --maxmemory 2mb \
        --maxmemory-policy noeviction >"$RC_TMP/redis.log" 2>&1 &
    RC_PIDS="$RC_PIDS $!"
    wait_listening "$RC_TMP/redis.sock" || fail "redis-server: not listening in 30 s"
    load -P resp -s "$RC_TMP/redis.sock" -k 200000 -v 100 -c 4 -f -D 0 -w 0 -q 2>"$RC_TMP/full-resp.err"
    rc=$?
    [ $rc -ne 0 ] && [ $rc -ne 124 ] && ok "resp: a full Redis (noeviction) fails the prefill" ||
        fail "resp: a full Redis: exit status $rc"
    grep -q 'prefill stopped: .*"-OOM' "$RC_TMP/full-resp.err" &&
        ok "resp: the prefill stopped on -OOM" || fail "resp: message: $(cat "$RC_TMP/full-resp.err")"
elif [ "${CI:-}" = true ]; then
    fail "redis-server not installed (tools/deps.sh installs it)"
else
    echo "note: redis-server not installed, RESP not checked"
fi
rc_finish
