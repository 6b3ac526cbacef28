#!/bin/sh
# tools/busy-load.sh - run a command on a busy machine: the load a build
# machine or a laptop with other work has (docs/testing.md, "A busy
# machine").  While COMMAND runs: 16 CPU-bound loops
# (sh -c 'while :; do :; done') and 4 loopback TCP echo pairs passing
# 16 KiB back and forth, all at nice 0 (they inherit the caller's nice:
# call it unniced).  On a 2-CPU machine that is a load average of about 20.
# Give it the command rather than start the command from elsewhere: with
# autogroups (Debian's default) another session gets its own share of the
# CPUs beside all the loops (docs/testing.md).
#
#   sh tools/busy-load.sh [-t SECONDS] [COMMAND [ARG...]]
#
# With a COMMAND, the load runs while it does and the script exits with
# its status; without one, the load runs SECONDS in the foreground.
# Everything it starts is stopped when it exits (an EXIT/INT/TERM trap),
# and every part of the load ends by itself after SECONDS at most
# (default 10800, MDC_BUSY_SECONDS), under timeout(1): a SIGKILLed script
# leaves nothing running past that.  MDC_BUSY_LOOPS and MDC_BUSY_PAIRS
# change the counts (16 and 4).
set -u
secs=${MDC_BUSY_SECONDS:-10800}
loops=${MDC_BUSY_LOOPS:-16}
pairs=${MDC_BUSY_PAIRS:-4}
if [ "${1:-}" = -t ]; then
    secs=$2
    shift 2
fi
[ "${1:-}" = -- ] && shift

pids=""
stop() {
    # shellcheck disable=SC2086
    [ -n "$pids" ] && kill $pids 2>/dev/null
    # shellcheck disable=SC2086
    [ -n "$pids" ] && wait $pids 2>/dev/null
    pids=""
}
trap 'stop' EXIT
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM

i=0
while [ $i -lt "$loops" ]; do
    timeout "$secs" sh -c 'while :; do :; done' &
    pids="$pids $!"
    i=$((i + 1))
done

# one echo pair: a listener on 127.0.0.1 (a free port the kernel picks)
# echoing what it reads, and a client that sends 16 KiB and reads the
# 16 KiB back, over and over
ECHO_PAIR='
import os, socket, sys
CHUNK = 16384
ls = socket.socket()
ls.bind(("127.0.0.1", 0))
ls.listen(1)
port = ls.getsockname()[1]
if os.fork() == 0:
    c, _ = ls.accept()
    ls.close()
    while True:
        b = c.recv(CHUNK)
        if not b:
            os._exit(0)
        c.sendall(b)
ls.close()
s = socket.create_connection(("127.0.0.1", port))
buf = b"x" * CHUNK
while True:
    s.sendall(buf)
    got = 0
    while got < CHUNK:
        b = s.recv(CHUNK - got)
        if not b:
            sys.exit(0)
        got += len(b)
'
i=0
while [ $i -lt "$pairs" ]; do
    # the echoing child is in the same process group as its timeout:
    # timeout's signal reaches both
    timeout "$secs" python3 -c "$ECHO_PAIR" &
    pids="$pids $!"
    i=$((i + 1))
done
echo "busy-load: $loops CPU loops, $pairs TCP echo pairs (16 KiB), at most $secs s" >&2

if [ $# -eq 0 ]; then
    sleep "$secs" &
    pids="$pids $!"
    wait $!
    exit 0
fi
"$@"
rc=$?
stop
exit $rc
