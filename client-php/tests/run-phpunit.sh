#!/bin/sh
# client-php/tests/run-phpunit.sh - PHPUnit (Debian phpunit) on the pure-PHP
# libraries of client-php/lib/ (PSR-16, PSR-6, Symfony, Laravel) with the
# extension built in client-php/ext/ loaded, against a daemon started here.
# A skipped or incomplete test is a failure.  Exit 0 pass, 1 fail.
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=$(cd "$here/../lib" && pwd)
top=$(pwd)
so=$top/client-php/ext/modules/mdcached.so
bin=$top/server/mdcached
PHP=$(php-config --php-binary 2>/dev/null || command -v php)
PHPUNIT=$(command -v phpunit || echo /usr/bin/phpunit)
[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }
[ -x "$bin" ] || { echo "FAIL: $bin not built"; exit 1; }
[ -f "$PHPUNIT" ] || { echo "FAIL: phpunit not installed"; exit 1; }
. "$here/daemon.sh"
echo "mdcached pid $pid on 127.0.0.1:$port"
MDC_TEST_HOST=127.0.0.1 MDC_TEST_PORT=$port
export MDC_TEST_HOST MDC_TEST_PORT
if ldd "$so" | grep -q libasan; then
    # ASan build: see run-phpt.sh (the .phpt suite is the leak check; PHPUnit
    # runs with Debian's ini and extensions, so leaks are not reported here)
    ${CC:-gcc} -shared -fPIC -o "$tmp/nodeepbind.so" "$here/nodeepbind.c" -ldl ||
        { echo "FAIL: cannot build nodeepbind.so"; exit 1; }
    LD_PRELOAD="$tmp/nodeepbind.so $(ldd "$so" | awk '/libasan/ { print $3; exit }')"
    ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
    export LD_PRELOAD ASAN_OPTIONS
fi
# Debian's php.ini and conf.d (dom, mbstring, ... for PHPUnit) plus ours
"$PHP" -d extension="$so" "$PHPUNIT" --do-not-cache-result --fail-on-skipped \
    --fail-on-incomplete --fail-on-risky --bootstrap "$lib/tests/bootstrap.php" \
    "$lib/tests" >"$tmp/phpunit.out" 2>&1
rc=$?
cat "$tmp/phpunit.out"
kill -0 "$pid" 2>/dev/null || { echo "FAIL: the daemon died"; cat "$tmp/mdc.log"; exit 1; }
grep -qE '^OK \(' "$tmp/phpunit.out" || exit 1
[ $rc -eq 0 ] || exit 1
exit 0
