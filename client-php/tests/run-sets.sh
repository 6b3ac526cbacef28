#!/bin/sh
# client-php/tests/run-sets.sh - the PHP library's PHPUnit suite
# (client-php/lib/tests/*Test.php, Debian's phpunit 9.6) once per PHP
# dependency set, with the extension built in client-php/ext/ loaded,
# against one daemon started here.  Exit 0 pass, 1 fail.
#
# Conventions (for whoever adds tests):
# - Every *Test.php in client-php/lib/tests runs in every set, except the
#   test classes in a PHPUnit @group that the set does not provide (below):
#   those are "not applicable" there and are not loaded as skips.  Put a
#   test that needs a framework in its group (docblock "@group symfony"):
#     symfony               symfony/cache (+ contracts)
#     laravel               illuminate/cache (+ support, contracts)
#     framework-bundle      Symfony's FrameworkBundle (Debian set only)
#     illuminate-container  illuminate/container (Debian set only)
#   A test file must load in every set: do not declare at file level a
#   class that implements a framework's interface (declare it inside the
#   test, or in a file only a group's test requires).
# - The sets: "debian" (the system's /usr/share/php: PSR 1.0, Symfony 5.4,
#   Laravel 8; client-php/lib/autoload.php) and psr1, symfony64, symfony7,
#   laravel11, laravel12: Composer vendor/ trees in $MDC_PHP_COMPAT, else
#   configure's MDC_PHP_COMPAT_DIR (make check sets it), else
#   ../shared/php-compat beside the source tree's top.  For those
#   the bootstrap requires <set>/vendor/autoload.php first and autoloads
#   Mdcached\Cache by client-php/lib/composer.json's PSR-4 map; no Debian
#   autoloader is registered.  Tests see MDC_PHP_SET (the set's name).
# - A skipped, incomplete or risky test is a failure.  A group a set should
#   provide but cannot (e.g. a package missing) and a missing set directory
#   print SKIP; with CI=true they fail the run.
# - First, composer validate --strict on client-php/lib/composer.json.
# - MDC_PHP_SETS="debian symfony7" runs only those sets; PHPUNIT_ARGS are
#   passed to phpunit (e.g. --filter).
# Each run prints the set, the versions it ran against and its counts.
set -u
here=$(cd "$(dirname "$0")" && pwd)
lib=$(cd "$here/../lib" && pwd)
srctop=$(cd "$here/../.." && pwd)
top=$(pwd) # automake runs the tests in the build directory
so=$top/client-php/ext/modules/mdcached.so
bin=$top/server/mdcached
PHP=$(php-config --php-binary 2>/dev/null || command -v php)
PHPUNIT=$(command -v phpunit || echo /usr/bin/phpunit)
COMPAT=${MDC_PHP_COMPAT:-${MDC_PHP_COMPAT_DIR:-$srctop/../shared/php-compat}}
SETS=${MDC_PHP_SETS:-debian psr1 symfony64 symfony7 laravel11 laravel12}
[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }
[ -x "$bin" ] || { echo "FAIL: $bin not built"; exit 1; }
[ -f "$PHPUNIT" ] || { echo "FAIL: phpunit not installed"; exit 1; }
. "$here/daemon.sh"
echo "mdcached pid $pid on 127.0.0.1:$port and $tmp/mdc.sock"
MDC_TEST_HOST=127.0.0.1 MDC_TEST_PORT=$port MDC_TEST_SOCK=$tmp/mdc.sock
MDC_TEST_BIN=$bin MDC_TEST_EXT=$so
export MDC_TEST_HOST MDC_TEST_PORT MDC_TEST_SOCK MDC_TEST_BIN MDC_TEST_EXT
if ldd "$so" | grep -q libasan; then
    # ASan build: see run-phpt.sh (the .phpt suite is the leak check; PHPUnit
    # runs with Debian's ini and extensions, so leaks are not reported here)
    ${CC:-gcc} -shared -fPIC -o "$tmp/nodeepbind.so" "$here/nodeepbind.c" -ldl ||
        { echo "FAIL: cannot build nodeepbind.so"; exit 1; }
    LD_PRELOAD="$tmp/nodeepbind.so $(ldd "$so" | awk '/libasan/ { print $3; exit }')"
    ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
    export LD_PRELOAD ASAN_OPTIONS
fi

# the groups each set must provide; other groups are not applicable there
groups_of() {
    case $1 in
    debian) echo "symfony laravel framework-bundle illuminate-container" ;;
    symfony64|symfony7) echo "symfony" ;;
    laravel11|laravel12) echo "laravel" ;;
    *) echo "" ;;
    esac
}
ALLGROUPS="symfony laravel framework-bundle illuminate-container"
# the class that shows a group is available
probe_class() {
    case $1 in
    symfony) echo 'Symfony\Component\Cache\Adapter\AbstractTagAwareAdapter' ;;
    laravel) echo 'Illuminate\Cache\Repository' ;;
    framework-bundle) echo 'Symfony\Bundle\FrameworkBundle\FrameworkBundle' ;;
    illuminate-container) echo 'Illuminate\Container\Container' ;;
    esac
}

# "package version" lines of what a set holds
versions() {
    if [ "$1" = debian ]; then
        dpkg-query -W -f '${Package} ${Version}\n' php-psr-cache \
            php-psr-simple-cache php-symfony-cache php-symfony-cache-contracts \
            php-symfony-framework-bundle php-illuminate-cache \
            php-illuminate-container 2>/dev/null | awk 'NF == 2 && $2 != ""'
    else
        "$PHP" -r 'require $argv[1];
            foreach (["psr/cache", "psr/simple-cache", "symfony/cache",
                      "symfony/cache-contracts", "illuminate/cache",
                      "illuminate/support"] as $p)
                if (Composer\InstalledVersions::isInstalled($p))
                    echo $p, " ", Composer\InstalledVersions::getPrettyVersion($p), "\n";' \
            "$COMPAT/$1/vendor/autoload.php"
    fi
}

fail=0
skip=0
# the Composer package: composer.json valid (Debian's composer, offline)
if command -v composer >/dev/null 2>&1; then
    if COMPOSER_HOME=$tmp/composer COMPOSER_ALLOW_SUPERUSER=1 composer validate \
            --no-interaction --strict "$lib/composer.json" >"$tmp/validate.out" 2>&1; then
        echo "composer validate client-php/lib/composer.json: valid"
    else
        cat "$tmp/validate.out"; echo "FAIL: composer validate client-php/lib/composer.json"; fail=1
    fi
else
    echo "SKIP: composer not installed: client-php/lib/composer.json not validated"
    skip=$((skip + 1))
fi

PU="$PHP -d extension=$so $PHPUNIT --do-not-cache-result --fail-on-skipped
    --fail-on-incomplete --fail-on-risky --bootstrap $lib/tests/bootstrap.php"
summary=""
used=""
for set in $SETS; do
    echo "==== set $set"
    if [ "$set" = debian ]; then
        MDC_PHP_SET_AUTOLOAD=""
    else
        MDC_PHP_SET_AUTOLOAD=$COMPAT/$set/vendor/autoload.php
        if [ ! -f "$MDC_PHP_SET_AUTOLOAD" ]; then
            echo "SKIP: set $set: $COMPAT/$set not found (MDC_PHP_COMPAT)"
            skip=$((skip + 1))
            summary="$summary
set $set: SKIP (missing)"
            continue
        fi
    fi
    MDC_PHP_SET=$set
    export MDC_PHP_SET MDC_PHP_SET_AUTOLOAD
    versions "$set" | sed 's/^/  version: /'
    # the groups the tests use (phpunit --list-groups loads every test file)
    # shellcheck disable=SC2086
    used=$($PU --list-groups "$lib/tests" 2>&1 | sed -n 's/^ - //p')
    exclude=""
    for g in $ALLGROUPS; do
        printf '%s\n' "$used" | grep -qx "$g" || continue
        if ! printf ' %s ' "$(groups_of "$set")" | grep -q " $g "; then
            echo "  not applicable: group $g"
            exclude="$exclude,$g"
            continue
        fi
        if ! "$PHP" -d extension="$so" -r 'require $argv[1];
                exit(class_exists($argv[2]) ? 0 : 1);' \
                "$lib/tests/bootstrap.php" "$(probe_class "$g")" >/dev/null 2>&1; then
            echo "SKIP: set $set: group $g: $(probe_class "$g") not installed"
            skip=$((skip + 1))
            exclude="$exclude,$g"
        fi
    done
    ex=""
    [ -n "$exclude" ] && ex="--exclude-group ${exclude#,}"
    # shellcheck disable=SC2086
    $PU $ex ${PHPUNIT_ARGS:-} "$lib/tests" >"$tmp/phpunit.out" 2>&1
    rc=$?
    cat "$tmp/phpunit.out"
    # "OK (12 tests, 40 assertions)" or "Tests: 12, Assertions: 40, Failures: 1."
    n=$(sed -n 's/^OK (\([0-9]*\) tests\{0,1\},.*/\1/p; s/^Tests: \([0-9]*\),.*/\1/p' "$tmp/phpunit.out" | tail -n 1)
    if [ $rc -eq 0 ] && grep -qE '^OK \(' "$tmp/phpunit.out"; then
        echo "set $set: tests ${n:-0}, passed ${n:-0}"
        summary="$summary
set $set: tests ${n:-0}, passed ${n:-0}"
    else
        bad=$(sed -n 's/^Tests: [0-9]*, Assertions: [0-9]*, \(.*\)\./\1/p' "$tmp/phpunit.out" |
            grep -oE '(Errors|Failures|Skipped|Incomplete|Risky): [0-9]+' |
            awk -F': ' '{ s += $2 } END { print s + 0 }')
        echo "FAIL: set $set: tests ${n:-?}, passed $(( ${n:-0} - bad ))"
        summary="$summary
set $set: FAIL tests ${n:-?}, passed $(( ${n:-0} - bad ))"
        fail=1
    fi
    kill -0 "$pid" 2>/dev/null || { echo "FAIL: the daemon died"; cat "$tmp/mdc.log"; exit 1; }
done
echo "==== summary$summary"
if [ $skip -gt 0 ] && [ "${CI:-}" = true ]; then
    echo "FAIL: CI=true and $skip set(s)/group(s) could not run"
    fail=1
fi
exit $fail
