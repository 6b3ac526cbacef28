#!/bin/bash
# bench/auth_flood.sh - good logins during a failed-login flood (issue 25
# item 1; docs/security.md, "Authentication").  For each case (io_uring,
# epoll, TLS on epoll) a daemon with --auth-file and -c 1024 takes
# RATE bad logins a second (connect, wrong login, close; bench/auth_flood)
# for SECS seconds while one client logs in with the right password every
# 100 ms; printed: the flood's rate reached and the good logins that
# succeeded.  Target: >= 99 % at 10 000 a second for 10 s.
#
# usage: bench/auth_flood.sh [-b BUILDDIR] [-r RATE] [-d SECS] [-j THREADS]
#                            [-c MAXCONNS] [CASE...]   (CASE: uring epoll tls)
set -eu
B=${MDC_BUILDDIR:-_build}
RATE=10000
SECS=10
JOBS=2
MAXC=1024
while getopts "b:r:d:j:c:" o; do
    case $o in
    b) B=$OPTARG ;;
    r) RATE=$OPTARG ;;
    d) SECS=$OPTARG ;;
    j) JOBS=$OPTARG ;;
    c) MAXC=$OPTARG ;;
    *) echo "usage: $0 [-b BUILDDIR] [-r RATE] [-d SECS] [-j THREADS] [-c MAXCONNS] [uring|epoll|tls]..." >&2; exit 64 ;;
    esac
done
shift $((OPTIND - 1))
CASES=${*:-uring epoll tls}
MDC="$B/server/mdcached"
FLOOD="$B/bench/auth_flood"
for x in "$MDC" "$FLOOD"; do [ -x "$x" ] || { echo "no $x (build first)" >&2; exit 1; }; done
T=$(mktemp -d /tmp/mdc-authflood-XXXXXX)
chmod 755 "$T"
PID=
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
echo "alice:s3cret" >"$T/users"
chmod 644 "$T/users"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$T/key.pem" -out "$T/cert.pem" -days 2 -subj /CN=localhost 2>/dev/null
chmod 644 "$T/key.pem" "$T/cert.pem"
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

for case in $CASES; do
    P=$(freeport)
    case $case in
    uring) args=(-p "$P" --io=uring) ;;
    epoll) args=(-p "$P" --io=epoll) ;;
    tls) args=(-p 0 --tls-listen="127.0.0.1:$P" --tls-cert="$T/cert.pem" --tls-key="$T/key.pem") ;;
    *) echo "unknown case $case" >&2; exit 64 ;;
    esac
    "$MDC" -l 127.0.0.1 -c "$MAXC" --auth-file "$T/users" -v 2 "${args[@]}" >"$T/$case.log" 2>&1 &
    PID=$!
    for _ in $(seq 100); do
        grep -q " ready" "$T/$case.log" && break
        sleep 0.05
    done
    grep -q " ready" "$T/$case.log" || { cat "$T/$case.log"; exit 1; }
    printf '%-6s ' "$case"
    "$FLOOD" -p "$P" -r "$RATE" -d "$SECS" -j "$JOBS" $([ "$case" = tls ] && echo -T) 2>"$T/$case.flood"
    sort "$T/$case.flood" | sed 's/^good login [0-9]*: /  refused: /' | uniq -c | head -3
    kill "$PID"
    wait "$PID" 2>/dev/null || true
    PID=
done
