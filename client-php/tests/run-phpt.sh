#!/bin/sh
# client-php/tests/run-phpt.sh - the extension's .phpt suite: start an
# mdcached daemon (TCP on a free loopback port, and a Unix socket), then
# PHP's run-tests.php (Debian php-dev) on client-php/tests/*.phpt with the
# extension built in client-php/ext/ loaded.  The tests reach the daemon
# through MDC_TEST_HOST/MDC_TEST_PORT/MDC_TEST_SOCK and start further
# daemons with MDC_TEST_BIN.  A skipped test is a failure here: every test
# can run wherever the extension builds.
# In an ASan build (the extension links libasan) PHP runs with the ASan
# runtime preloaded and USE_ZEND_ALLOC=0, so every emalloc is checked and
# leaks are reported.  Exit 0 pass, 1 fail.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(pwd) # automake runs the tests in the build directory
so=$top/client-php/ext/modules/mdcached.so
bin=$top/server/mdcached
PHP=$(php-config --php-binary 2>/dev/null || command -v php)
RT=/usr/lib/php/$(php-config --phpapi)/build/run-tests.php
[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }
[ -x "$bin" ] || { echo "FAIL: $bin not built"; exit 1; }
[ -f "$RT" ] || { echo "FAIL: $RT missing (php-dev)"; exit 1; }

. "$here/daemon.sh"
echo "mdcached pid $pid on 127.0.0.1:$port and $tmp/mdc.sock"

MDC_TEST_HOST=127.0.0.1 MDC_TEST_PORT=$port MDC_TEST_SOCK=$tmp/mdc.sock
MDC_TEST_BIN=$bin MDC_TEST_EXT=$so MDC_TEST_TMP=$tmp
export MDC_TEST_HOST MDC_TEST_PORT MDC_TEST_SOCK MDC_TEST_BIN MDC_TEST_EXT MDC_TEST_TMP
TEST_PHP_EXECUTABLE=$PHP
TEST_PHP_CGI_EXECUTABLE=$(command -v php-cgi || echo /usr/bin/php-cgi)
export TEST_PHP_EXECUTABLE TEST_PHP_CGI_EXECUTABLE
# run-tests.php writes .out/.diff/.log files next to each test: copy the
# tests to the scratch directory (the source tree may be read-only)
mkdir "$tmp/t"
cp "$here"/*.phpt "$here"/*.inc "$tmp/t/"
# the serializer extensions and php-memcached (placement is compared
# with it) are loaded for the tests, in dependency order
ini=""
for e in igbinary msgpack memcached; do
    f=$(php-config --extension-dir)/$e.so
    [ -f "$f" ] && ini="$ini -d extension=$f"
done
ini="$ini -d extension=$so"
MDC_TEST_INI=$ini
export MDC_TEST_INI
if ldd "$so" | grep -q libasan; then
    asan=$(ldd "$so" | awk '/libasan/ { print $3; exit }')
    ${CC:-gcc} -shared -fPIC -o "$tmp/nodeepbind.so" "$here/nodeepbind.c" -ldl ||
        { echo "FAIL: cannot build nodeepbind.so"; exit 1; }
    LD_PRELOAD="$tmp/nodeepbind.so $asan" USE_ZEND_ALLOC=0 ZEND_DONT_UNLOAD_MODULES=1
    ASAN_OPTIONS=detect_leaks=1:verify_asan_link_order=0
    export LD_PRELOAD USE_ZEND_ALLOC ZEND_DONT_UNLOAD_MODULES ASAN_OPTIONS
    echo "ASan build: LD_PRELOAD=$asan USE_ZEND_ALLOC=0"
fi
NO_INTERACTION=1 REPORT_EXIT_STATUS=1
export NO_INTERACTION REPORT_EXIT_STATUS
# shellcheck disable=SC2086
"$PHP" -n "$RT" -q -n $ini --show-diff -j1 "$tmp/t" >"$tmp/rt.out" 2>&1
rc=$?
cat "$tmp/rt.out"
# REPORT_EXIT_STATUS makes a WARN (passed on retry) exit 1: judged below
grep -q 'warn: Test passed on retry attempt' "$tmp/rt.out" && rc=0
for f in "$tmp"/t/*.diff "$tmp"/t/*.out; do
    [ -f "$f" ] && { echo "---- $f"; head -80 "$f"; }
done
kill -0 "$pid" 2>/dev/null || { echo "FAIL: the daemon died"; cat "$tmp/mdc.log"; exit 1; }
if grep -qE '^Tests skipped *: *[1-9]|^SKIP ' "$tmp/rt.out"; then
    echo "FAIL: tests were skipped"; exit 1
fi
# run-tests.php retries once a failed test that uses time functions and
# calls it WARN ("passed on retry"); those pass here, and are named
n=$(ls "$tmp"/t/*.phpt | wc -l)
p=$(sed -n 's/^Tests passed *: *\([0-9]*\).*/\1/p' "$tmp/rt.out")
w=$(sed -n 's/^Tests warned *: *\([0-9]*\).*/\1/p' "$tmp/rt.out")
retried=$(grep -o '\[/[^] ]*\.phpt\] (warn: Test passed on retry attempt)' "$tmp/rt.out" | sort -u)
r=$(printf '%s' "$retried" | grep -c phpt)
[ -n "$retried" ] && printf '%s\n' "$retried" | sed 's/^/NOTE: passed on retry: /'
[ "${w:-0}" -eq "$r" ] || { echo "FAIL: a test warned for another reason"; exit 1; }
[ $((${p:-0} + r)) -eq "$n" ] || { echo "FAIL: not all $n tests passed"; exit 1; }
grep -qE '^Tests failed *: *[1-9]' "$tmp/rt.out" && exit 1
[ $rc -eq 0 ] || exit 1
exit 0
