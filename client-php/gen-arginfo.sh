#!/bin/sh
# client-php/gen-arginfo.sh - regenerate mdcached_arginfo.h from
# mdcached.stub.php with PHP's gen_stub.php (Debian php-dev) and the
# PHP-Parser Debian ships (php-parser), without any download: gen_stub.php
# looks for PHP-Parser-<version>/lib next to itself, so it runs from a
# temporary copy where that directory points at /usr/share/php.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
build=/usr/lib/php/$(php-config --phpapi)/build
ver=$(sed -n 's/.*\$version = "\([0-9.]*\)".*/\1/p' "$build/gen_stub.php" | head -1)
[ -d /usr/share/php/PhpParser ] || { echo "need Debian's php-parser" >&2; exit 1; }
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
cp "$build/gen_stub.php" "$t/"
mkdir "$t/PHP-Parser-$ver"
ln -s /usr/share/php "$t/PHP-Parser-$ver/lib"
php "$t/gen_stub.php" --force-regeneration "$here/mdcached.stub.php"
