#!/bin/sh
# client-php/tests/pecl-install.sh - the extension's PECL package, made and
# installed as a user would: client-php/pecl-package.sh (`pecl package' of
# the extension and libmdcached's sources), then `pecl install
# mdcached-<version>.tgz` (phpize, configure, make by PEAR's builder)
# against php-dev and an installed libmdcached or the bundled sources, then
# the installed mdcached.so loaded with `php -n -d extension=...`.
#
# Usage: pecl-install.sh SRCTOP WORK [PREFIX [PORT]]
#   SRCTOP  the source tree (client-php/package.xml)
#   WORK    a scratch directory (created; everything is written below it)
#   PREFIX  libmdcached's prefix (include/mdcached.h, lib/libmdcached.so),
#           or "bundled", passed as -D with-mdcached="PREFIX"; without it
#           configure finds the installed one (pkg-config's libmdcached,
#           /usr/local, /usr), else builds the bundled sources.
# The environment reaches configure (e.g. ac_cv_header_zlib_h=no).
#   PORT    a daemon on 127.0.0.1:PORT: the loaded extension round-trips a
#           tagged record with it (set, get, getByTag, deleteByTag).
# Prints the path of the installed mdcached.so as its last line; exit 0
# when it was built, installed and loads, 1 otherwise.
#
# The install goes to a private PEAR configuration (pecl -c WORK/pearrc:
# registry, temp, cache and extension directories under WORK) and a
# php-config that names WORK/ext as the extension directory, so it needs no
# root and leaves the system as it was.  (`pecl install --installroot=DIR'
# cannot do this with PEAR 1.10.13, Debian 12's: for a compiled extension
# it ignores DIR, writes mdcached.so into PHP's own extension_dir, and then
# stops with "Call to a member function getFilelist() on null".)
set -u
SRCTOP=$1
W=$2
PREFIX=${3:-}
PORT=${4:-}
PHP=$(php-config --php-binary 2>/dev/null || command -v php)
for c in pecl pear phpize php-config; do
    command -v $c >/dev/null 2>&1 || { echo "pecl-install: $c missing (php-pear, php-dev)"; exit 1; }
done
rm -rf "$W"
mkdir -p "$W/bin" "$W/ext" "$W/pkg" || exit 1
W=$(cd "$W" && pwd)
HOME=$W
export HOME
rc=$W/pearrc
# a private PEAR configuration: every directory under WORK, for both channels
pear config-create "$W/pear" "$rc" >/dev/null || { echo "pecl-install: pear config-create failed"; exit 1; }
for k in temp_dir cache_dir download_dir man_dir; do
    pear -c "$rc" config-set $k "$W/pear/$k" >/dev/null || exit 1
done
for ch in pear pecl; do
    for k in php_dir ext_dir bin_dir doc_dir data_dir test_dir www_dir cfg_dir; do
        $ch -c "$rc" config-set $k "$W/pear/$k" >/dev/null || exit 1
    done
done
# PEAR's builder runs <php_prefix>phpize and <php_prefix>php-config, and
# installs what `make install' put under `php-config --prefix`
cat >"$W/bin/pecltest-php-config" <<EOF
#!/bin/sh
case "\$1" in
--extension-dir) echo "$W/ext" ;;
--prefix) echo "$W" ;;
*) exec php-config "\$@" ;;
esac
EOF
chmod +x "$W/bin/pecltest-php-config"
ln -s "$(command -v phpize)" "$W/bin/pecltest-phpize"
pear -c "$rc" config-set php_prefix pecltest- >/dev/null || exit 1
PATH=$W/bin:$PATH
export PATH

# pecl package: the release tarball of the extension
PECL="pecl -c $rc" sh "$SRCTOP/client-php/pecl-package.sh" "$W/pkg" >"$W/package.out" 2>&1 ||
    { cat "$W/package.out"; echo "pecl-install: pecl package failed"; exit 1; }
tgz=$(ls "$W"/pkg/mdcached-*.tgz 2>/dev/null)
[ -n "$tgz" ] || { cat "$W/package.out"; echo "pecl-install: no mdcached-*.tgz"; exit 1; }
echo "pecl package: $(basename "$tgz") ($(tar -tzf "$tgz" | grep -c .) files)"

# pecl install: phpize, configure, make, install into WORK/ext
if [ -n "$PREFIX" ]; then
    set -- -D "with-mdcached=\"$PREFIX\""
else
    set --
fi
t0=$(date +%s)
if ! pecl -c "$rc" install "$@" "$tgz" </dev/null >"$W/install.out" 2>&1; then
    tail -40 "$W/install.out"
    echo "pecl-install: pecl install failed"
    exit 1
fi
grep -q '^install ok: channel://pecl.php.net/mdcached-' "$W/install.out" ||
    { tail -20 "$W/install.out"; echo "pecl-install: no 'install ok'"; exit 1; }
grep -E 'running: .*configure|checking (which libmdcached|for TLS in|for compression)' "$W/install.out" | sed 's/^/  /'
echo "pecl install: $(($(date +%s) - t0)) s"
so=$W/ext/mdcached.so
[ -f "$so" ] || { tail -20 "$W/install.out"; echo "pecl-install: $so not installed"; exit 1; }
pecl -c "$rc" list 2>/dev/null | grep -q '^mdcached ' ||
    { echo "pecl-install: mdcached not in PEAR's registry"; exit 1; }
v=$("$PHP" -n -d extension="$so" -r 'echo phpversion("mdcached");' 2>&1)
want=$(sed -n 's:.*<release>\(.*\)</release>.*:\1:p' "$SRCTOP/client-php/package.xml" | head -n 1)
[ "$v" = "$want" ] || { echo "pecl-install: php -n -d extension=$so: '$v', want '$want'"; exit 1; }
echo "php -d extension=$so loads mdcached $v"
if [ -n "$PORT" ]; then
    "$PHP" -n -d extension="$so" -r '
    $c = new Mdcached\Client();
    $c->addServer("127.0.0.1", (int)$argv[1]);
    $ok = $c->set("pecl:k", ["from", "pecl"], 0, [16 => 7, "pecl"])
        && $c->get("pecl:k") === ["from", "pecl"]
        && $c->getByTag(16, 7) === ["pecl:k" => ["from", "pecl"]]
        && $c->deleteByTag("pecl") === 1 && $c->get("pecl:k") === false;
    echo $ok ? "ok\n" : "failed: " . $c->getResultMessage() . "\n";
    exit($ok ? 0 : 1);' "$PORT" >"$W/roundtrip.out" 2>&1 ||
        { cat "$W/roundtrip.out"; echo "pecl-install: round-trip with the daemon on port $PORT failed"; exit 1; }
    echo "round-trip with 127.0.0.1:$PORT: set, get, getByTag, deleteByTag"
fi
echo "$so"
exit 0
