#!/bin/sh
# rc_mcbin.sh - memcached's binary protocol with real clients: Debian's
# libmemcached with MEMCACHED_BEHAVIOR_BINARY_PROTOCOL
# (tests/realclients/lmc_binary: every operation, a multi-get, noreply,
# stats, version, verbosity, flush), then with a SASL PLAIN login against
# --auth-file (a wrong password refused); then pylibmc 1.6.3 with
# binary=True, plain and with SASL, when it is importable or pip installs
# that exact version into a private venv (else that part is skipped, said
# so).  Exit 0 pass, 1 fail, 77 skip (no libmemcached program).
set -u
. "$(dirname "$0")/realclients/common.sh"
LMC="${MDC_BUILDDIR:-.}/tests/realclients/lmc_binary"
[ -x "$LMC" ] || skip "tests/realclients/lmc_binary not built (libmemcached-dev)"

start_mdc D
"$LMC" "127.0.0.1:$D_PORT"
check "libmemcached binary protocol" 0 $?

# SASL: memcached -S deployments, users from --auth-file
printf 'lmcuser:lmc-pass\n' >"$RC_TMP/users"
chmod 0644 "$RC_TMP/users"
if mdc_start S -l 127.0.0.1 -m 32 -n 1 --auth-file="$RC_TMP/users"; then
    RC_MDC="$RC_MDC S"
else
    fail "daemon with --auth-file did not start"
    rc_finish
fi
"$LMC" "127.0.0.1:$S_PORT" --sasl lmcuser lmc-pass
r=$?
if [ $r -eq 77 ]; then echo "SKIP: libmemcached without SASL"
else check "libmemcached binary protocol with SASL PLAIN" 0 $r; fi
# the text login still works on the same daemon
got=$(python3 - "$S_PORT" <<'PYEOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"set a 0 0 16\r\nlmcuser lmc-pass\r\n")
print(s.recv(100).decode().strip())
PYEOF
)
check "text login beside SASL" "STORED" "$got"

# pylibmc, pinned
PY=python3
if ! $PY -c 'import pylibmc, sys; sys.exit(pylibmc.__version__ != "1.6.3")' \
    2>/dev/null; then
    PY=
    if python3 -m venv "$RC_TMP/venv" >/dev/null 2>&1 &&
        "$RC_TMP/venv/bin/pip" install -q pylibmc==1.6.3 >"$RC_TMP/pip.log" 2>&1
    then
        PY="$RC_TMP/venv/bin/python"
    fi
fi
# the pylibmc wheel's own libsasl2 finds no plugin (PLAIN) by itself: the
# system's, where Debian puts them
for d in /usr/lib/*/sasl2 /usr/lib/sasl2; do
    [ -d "$d" ] && { SASL_PATH=$d; export SASL_PATH; break; }
done
if [ -z "$PY" ]; then
    echo "SKIP: pylibmc==1.6.3 not importable and pip could not install it:"
    tail -3 "$RC_TMP/pip.log" 2>/dev/null
else
    $PY "$RC_DIR/pylibmc_binary.py" "127.0.0.1:$D_PORT"
    check "pylibmc 1.6.3 binary=True" 0 $?
    $PY "$RC_DIR/pylibmc_binary.py" "127.0.0.1:$S_PORT" lmcuser lmc-pass
    check "pylibmc 1.6.3 binary=True with SASL" 0 $?
fi
rc_finish
