#!/bin/sh
# tests/client_tls_server.sh - libmdcached's TLS tests (tests/test_client_tls)
# once more, against the daemon's own TLS listener (--tls-listen, --tls-cert,
# --tls-key, --tls-ca) instead of a socat TLS endpoint in front of a plain
# daemon: the client and the server sides of TLS agree (verification,
# names, mutual TLS, handshake timeout, session tickets, pools, auth).
set -u
B=${MDC_BUILDDIR:-.}
[ -x "$B/tests/test_client_tls" ] || { echo "FAIL: $B/tests/test_client_tls not built"; exit 1; }
MDC_TEST_TLS_ENDPOINT=mdcached exec "$B/tests/test_client_tls"
