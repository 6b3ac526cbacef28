#!/bin/sh
# client-php/pecl-package.sh - make the PECL package mdcached-<version>.tgz
# from this tree: the files client-php/package.xml lists, the extension's
# from client-php/ and libmdcached's (libmdcached/X from X of the tree:
# client-c/, protocol/, LICENSE) staged in a scratch directory, then
# `pecl package' there.  The package builds on php-dev alone
# (client-php/config.m4: the bundled sources when no libmdcached is
# installed).
# Usage: sh client-php/pecl-package.sh [OUTDIR]   (default: .)
# PECL names the command (e.g. "pecl -c pearrc"; default pecl).  Prints the
# path of the package as its last line.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out=${1:-.}
mkdir -p "$out" && out=$(cd "$out" && pwd) || exit 1
stage=$(mktemp -d "${TMPDIR:-/tmp}/mdc-pecl.XXXXXX") || exit 1
trap 'rm -rf "$stage"' EXIT
for f in $(sed -n 's:.*<file name="\([^"]*\)".*:\1:p' "$here/package.xml"); do
    case $f in
    libmdcached/*) src=$top/${f#libmdcached/} ;;
    *) src=$here/$f ;;
    esac
    [ -f "$src" ] || { echo "pecl-package: $src (package.xml: $f) missing"; exit 1; }
    mkdir -p "$stage/$(dirname "$f")" && cp "$src" "$stage/$f" || exit 1
done
cp "$here/package.xml" "$stage/" || exit 1
(cd "$stage" && ${PECL:-pecl} package package.xml) >"$stage/package.out" 2>&1 ||
    { cat "$stage/package.out"; echo "pecl-package: pecl package failed"; exit 1; }
tgz=$(ls "$stage"/mdcached-*.tgz 2>/dev/null | head -n 1)
[ -n "$tgz" ] || { cat "$stage/package.out"; echo "pecl-package: no mdcached-*.tgz"; exit 1; }
grep -i warning "$stage/package.out"
mv "$tgz" "$out/" || exit 1
echo "$out/$(basename "$tgz")"
