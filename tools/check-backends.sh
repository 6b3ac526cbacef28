#!/bin/sh
# tools/check-backends.sh - the network backends keep their libraries to
# themselves (server/net/transport.h): outside the readiness backend
# (server/net/epoll.c, evloop.c, evloop.h) and the io_uring one
# (server/net/uring*.c, uring_int.h), no file of the daemon names a libevent
# or io_uring type, function or header, nor a backend's private symbols;
# the rest reaches them through the transport table and evloop.h.
#
# Fails, naming file, line and text, at the first file that does.  Tests
# and bench are not checked (they drive the backends directly), nor the
# client library (its own io_uring fan-out).  The one other user of
# libevent is the metrics endpoint (server/metrics.c): an HTTP server
# (evhttp) on a thread of its own, no network backend, allowed by name.
#     sh tools/check-backends.sh [SRCDIR]
set -u
top=$(cd "${1:-$(dirname "$0")/..}" && pwd) || exit 2
cd "$top" || exit 2

# the backends' own files, and the allowed other user of libevent
allowed='^server/net/(epoll\.c|evloop\.[ch]|uring(_[a-z]+)?\.c|uring_int\.h)$'
allowed_libevent='^server/metrics\.c$'

# libevent: its headers, types and the functions of its loop
libevent='event2/|struct event(_base)?\b|\bevent_(base_[a-z_]+|new|add|del|free|active|assign|get_version)\(|\bev(signal|timer|util|connlistener|http|buffer|thread)_[a-z_]*|\bevutil_socket_t\b|\bEV_(READ|WRITE|PERSIST|ET|CLOSED|TIMEOUT|SIGNAL)\b|\bEVLOOP_[A-Z]+\b'
# io_uring: liburing, its types and functions, and the backend's private
# symbols (uring_int.h: ur_/uw_/uc_ functions, struct uring_worker)
uring='liburing|\bio_uring_[a-z_]+\(|struct io_uring[a-z_]*\b|\bIORING_[A-Z_]+|struct (uring_worker|uconn|usend|ugroup)\b|\b(ur|uw|uc)_[a-z_]+\(|"uring_int\.h"|\buring_(resolve|worker_setup|worker_teardown|outer|run|wake|accept_arm|accept_cancel)\('

fail=0
for f in $(find server -type f \( -name '*.c' -o -name '*.h' \) | sort); do
    if echo "$f" | grep -Eq "$allowed"; then
        continue
    fi
    pat="$libevent|$uring"
    if echo "$f" | grep -Eq "$allowed_libevent"; then
        pat=$uring
    fi
    # comments and strings may name them (they say what a backend does,
    # or a message does); an include's name is kept
    hits=$(sed -E -e 's://.*$::' \
        -e '/^[ \t]*#[ \t]*include/!s/"([^"\\]|\\.)*"/""/g' "$f" | awk '
        { line = $0; out = "" }
        incomment {
            e = index(line, "*/")
            if (e == 0) { print ""; next }
            line = substr(line, e + 2); incomment = 0
        }
        {
            while ((s = index(line, "/*")) > 0) {
                out = out substr(line, 1, s - 1)
                rest = substr(line, s + 2)
                e = index(rest, "*/")
                if (e == 0) { incomment = 1; line = ""; break }
                line = substr(rest, e + 2)
            }
            print out line
        }' | grep -nE "$pat")
    if [ -n "$hits" ]; then
        echo "$hits" | sed "s|^|$f:|" >&2
        fail=1
    fi
done
if [ "$fail" -ne 0 ]; then
    echo "check-backends: the files above name a network backend's" \
        "library or private symbols (server/net/transport.h)" >&2
    exit 1
fi
echo "check-backends: ok"
