#!/bin/sh
# rc_php.sh - PHP's php-memcached extension (Debian's php-memcached, on
# libmemcached, text protocol) against mdcached: set/get with PHP types,
# add/replace/append/prepend, getMulti/getDelayed, cas via GET_EXTENDED
# (and a stale-cas mismatch), increment/decrement, delete/deleteMulti,
# touch, getStats/getVersion, flush; and the extension's binary-protocol
# option, which mdcached refuses: it must fail fast, not hang.
# The checks are in tests/realclients/php_memcached.php.
# Exit 0 pass, 1 fail, 77 skip.
set -u
. "$(dirname "$0")/realclients/common.sh"
need php
php -r 'exit(extension_loaded("memcached") ? 0 : 1);' ||
    skip "php's memcached extension (php-memcached) not installed"

start_mdc D
echo "mdcached pid $D_PID on 127.0.0.1:$D_PORT"
# bounded: the script's own timeouts are 2 s per operation
if command -v timeout >/dev/null 2>&1; then T="timeout 45"; else T=; fi
$T php -d display_errors=stderr "$RC_DIR/php_memcached.php" "$D_PORT"
r=$?
check "php_memcached.php" 0 $r
alive "$D_PID"
check "daemon still running" 0 $?
rc_finish
