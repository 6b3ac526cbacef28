#!/bin/sh
# tools/deb-check.sh - the Debian packages, end to end (run by the README's
# test command, tools/test-all.sh, as root):
#  1. dpkg-buildpackage -us -uc -b from the release tarball (make dist) with
#     debian/ added, DEB_BUILD_OPTIONS=nocheck (the suite already ran);
#  2. lintian: no error; every warning tag is listed in docs/packaging.md;
#  3. dpkg -i of every package; the installed daemon started with the shipped
#     /etc/mdcached.conf outside systemd, as the mdcached user the package
#     created; a tagged record round-tripped with the installed
#     mdcached-tool and through the installed PHP extension (php-mdcached,
#     enabled with phpenmod: `php -m' lists it); the PHP library
#     (php-mdcached-cache) loaded by require 'Mdcached/Cache/autoload.php'
#     and used with the daemon; the extension's PECL package made from the
#     release tree and `pecl install'ed against the installed libmdcached-dev
#     (client-php/tests/pecl-install.sh, into a private PEAR directory), then
#     loaded with php -n -d extension= and used with the daemon; the daemon
#     stopped;
#  4. dpkg --purge of every package, then no file is left: nothing of
#     `dpkg -L' (taken while installed) exists any more, except directories
#     that existed before, /etc/mdcached*, /var/lib/mdcached are gone, and
#     `find /' (outside dpkg's and apt's own state, logs and caches) lists
#     no path that was not there before the install.
# Usage: sh tools/deb-check.sh [BUILDDIR]  (a configured build tree;
# default _build/normal).  Work files go to BUILDDIR/deb.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BD=${1:-$TOP/_build/normal}
W="$BD/deb"
PKGS="php-mdcached-cache php-mdcached mdcached libmdcached-dev libmdcached0"
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
DPID=

[ "$(id -u)" -eq 0 ] || { echo "deb-check: needs root (dpkg -i)"; exit 1; }
for c in dpkg-buildpackage lintian dh dh_php php pecl pear phpize; do
    command -v $c >/dev/null 2>&1 || { echo "deb-check: $c missing (tools/deps.sh)"; exit 1; }
done

# ---- 1. build -----------------------------------------------------------------
V=$(sed -n 's/^PACKAGE_VERSION = //p' "$BD/Makefile")
if [ "${DEB_REUSE:-0}" = 1 ] && ls "$W"/mdcached_"$V"-*_*.changes >/dev/null 2>&1; then
    echo "deb-check: DEB_REUSE=1: using the packages already built in $W"
else
rm -rf "$W"
mkdir -p "$W"
(cd "$BD" && make dist >"$W/dist.out" 2>&1) || { tail -20 "$W/dist.out"; exit 1; }
tar -xzf "$BD/mdcached-$V.tar.gz" -C "$W"
cp "$BD/mdcached-$V.tar.gz" "$W/mdcached_$V.orig.tar.gz"
cp -a "$TOP/debian" "$W/mdcached-$V/"
t0=$(date +%s)
if ! (cd "$W/mdcached-$V" && DEB_BUILD_OPTIONS="nocheck parallel=${JOBS:-2}" \
        dpkg-buildpackage -us -uc -b >"$W/build.log" 2>&1); then
    tail -40 "$W/build.log"
    echo "FAIL: dpkg-buildpackage"
    exit 1
fi
echo "dpkg-buildpackage: $(($(date +%s) - t0)) s"
fi
CHANGES=$(ls "$W"/mdcached_"$V"-*_*.changes)

# ---- 2. lintian ------------------------------------------------------------
lintian --pedantic "$CHANGES" >"$W/lintian.out" 2>&1
sed 's/^/   lintian: /' "$W/lintian.out"
if grep -q '^E: ' "$W/lintian.out"; then
    fail "lintian reports errors"
fi
for tag in $(sed -n 's/^W: [^:]*: \([^ ]*\).*/\1/p' "$W/lintian.out" | sort -u); do
    grep -q "\`$tag\`" "$TOP/docs/packaging.md" ||
        fail "lintian warning $tag is not listed with a reason in docs/packaging.md"
done

# ---- 3. install, run, round-trip ----------------------------------------------
# the packages are the machine's, not this tree's: a second run on the same
# machine (two clones tested at once) waits here until the first has
# purged, so neither installs over, purges under or counts the other's files
exec 9>/run/lock/mdcached-deb-check
flock 9
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "installed" &&
        dpkg --purge "$p" >/dev/null 2>&1
done
# the whole file system before (find), to compare after the purge
snapshot() {
    find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run \
        -o -path /tmp -o -path /var/tmp -o -path /work -o -path /root \
        -o -path /home -o -path "$TOP" -o -path "$BD" \) -prune -o -print 2>/dev/null |
        grep -v -e '^/var/lib/dpkg/' -e '^/var/log/' -e '^/var/cache/' \
            -e '^/var/lib/apt/' -e '^/etc/\(passwd\|group\|shadow\|gshadow\|subuid\|subgid\)-\?$' |
        sort
}
snapshot >"$W/find.before"
# what exists before: directories the packages share with the system stay
: >"$W/before"
DEBS=""
for p in $PKGS; do
    d=$(ls "$W"/${p}_"$V"-*_*.deb)
    DEBS="$DEBS $d"
    dpkg -c "$d" | awk '{print $6}' | sed 's|^\./|/|; s|/$||' | while read -r f; do
        [ -n "$f" ] && [ -e "$f" ] && echo "$f"
    done >>"$W/before"
done
# shellcheck disable=SC2086
if ! dpkg -i $DEBS >"$W/install.out" 2>&1; then
    cat "$W/install.out"
    fail "dpkg -i"
fi
for p in $PKGS; do dpkg -L "$p"; done | sort -u >"$W/owned"
[ -x /usr/sbin/mdcached ] && [ -x /usr/bin/mdcached-tool ] || fail "binaries not installed"
[ -f /etc/mdcached.conf ] || fail "/etc/mdcached.conf not installed"
getent passwd mdcached >/dev/null || fail "no mdcached system user"
[ -f /lib/systemd/system/mdcached.service ] || fail "unit not installed"
pkg-config --exists libmdcached || fail "libmdcached.pc not found by pkg-config"
PHPV=$(php -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;')
[ -f "$(php -r 'echo ini_get("extension_dir");')/mdcached.so" ] || fail "php-mdcached: mdcached.so not in PHP's extension_dir"
[ -f "/etc/php/$PHPV/mods-available/mdcached.ini" ] || fail "php-mdcached: no /etc/php/$PHPV/mods-available/mdcached.ini"
[ -L "/etc/php/$PHPV/cli/conf.d/20-mdcached.ini" ] || fail "php-mdcached: not enabled for the cli SAPI (phpenmod)"
php -m 2>&1 | grep -qx mdcached || fail "php-mdcached: php -m does not list mdcached: $(php -m 2>&1 | head -5)"

# -p auto: the kernel picks the port, the port file says which
/usr/sbin/mdcached -C /etc/mdcached.conf -p auto --port-file "$W/ports" -u mdcached >"$W/daemon.log" 2>&1 &
DPID=$!
i=0
while ! grep -q " ready" "$W/daemon.log" && kill -0 $DPID 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1; i=$((i + 1))
done
PORT=$(awk '$1 == "tcp" { sub(/.*:/, "", $2); print $2; exit }' "$W/ports" 2>/dev/null)
grep -q "running as user mdcached" "$W/daemon.log" || fail "not running as mdcached: $(cat "$W/daemon.log")"
T="/usr/bin/mdcached-tool -s 127.0.0.1:$PORT"
$T set deb:check "from the package" -t 16:4 -t 16:5 >"$W/tool.out" 2>&1 || fail "installed tool: set: $(cat "$W/tool.out")"
$T tget 16 5 >"$W/tool.out" 2>/dev/null || fail "installed tool: tget"
grep -q "$(printf '^deb:check\tfrom the package\t16:4,16:5$')" "$W/tool.out" ||
    fail "tagged record did not round-trip: $(cat "$W/tool.out")"
$T tdel 16 4 >"$W/tool.out" 2>&1
grep -q "^deleted 1$" "$W/tool.out" || fail "installed tool: tdel: $(cat "$W/tool.out")"
# the installed PHP extension: a record with tag 16:6 set, read back by key
# and by tag through Mdcached\Client, seen by the installed tool, deleted by tag
php -r '
$c = new Mdcached\Client();
$c->addServer("127.0.0.1", (int)$argv[1]);
if (!$c->set("deb:php", "from php-mdcached", 0, [16 => [6]])) { echo "set: ", $c->getResultMessage(), "\n"; exit(1); }
if ($c->get("deb:php") !== "from php-mdcached") { echo "get: ", var_export($c->get("deb:php"), true), "\n"; exit(1); }
$t = $c->getByTag(16, 6);
if ($t !== ["deb:php" => "from php-mdcached"]) { echo "getByTag: ", var_export($t, true), "\n"; exit(1); }
echo "ok\n";' "$PORT" >"$W/php.out" 2>&1 || fail "php-mdcached: round-trip: $(cat "$W/php.out")"
$T tget 16 6 >"$W/tool.out" 2>/dev/null
grep -q "$(printf '^deb:php\t')" "$W/tool.out" || fail "php-mdcached: record not seen by mdcached-tool: $(cat "$W/tool.out")"
php -r '
$c = new Mdcached\Client();
$c->addServer("127.0.0.1", (int)$argv[1]);
$n = $c->deleteByTag(16, 6);
if ($n !== 1 || $c->get("deb:php") !== false) { echo "deleteByTag: ", var_export($n, true), "\n"; exit(1); }' "$PORT" \
    >"$W/php.out" 2>&1 || fail "php-mdcached: deleteByTag: $(cat "$W/php.out")"
# the PHP library (php-mdcached-cache), from PHP's include path
[ -f /usr/share/php/Mdcached/Cache/autoload.php ] || fail "php-mdcached-cache: no /usr/share/php/Mdcached/Cache/autoload.php"
php -r '
require "Mdcached/Cache/autoload.php";
$c = new Mdcached\Client();
$c->addServer("127.0.0.1", (int)$argv[1]);
$s = new Mdcached\Cache\SimpleCache($c, "deb");
if (!$s->set("k", ["v"], 60) || $s->get("k") !== ["v"] || !$s->clear() || $s->get("k") !== null) { echo "PSR-16\n"; exit(1); }
$p = new Mdcached\Cache\CacheItemPool($c, "deb");
$p->save($p->getItem("i")->set(42));
if ($p->getItem("i")->get() !== 42) { echo "PSR-6\n"; exit(1); }
$cache = new Illuminate\Cache\Repository(new Mdcached\Cache\LaravelStore($c, "deb"));
$cache->tags(["t"])->put("l", "v", 60);
if (!$cache->tags(["t"]) instanceof Illuminate\Cache\TaggedCache || $cache->tags("t")->get("l") !== "v"
    || !$cache->tags("t")->flush() || $cache->tags("t")->get("l") !== null) { echo "Laravel store\n"; exit(1); }
if (!$cache->lock("x", 5)->get(fn() => true)) { echo "Laravel lock\n"; exit(1); }
echo (new ReflectionClass(Mdcached\Cache\SimpleCache::class))->getFileName(), "\n";' "$PORT" \
    >"$W/phplib.out" 2>&1 || fail "php-mdcached-cache: $(cat "$W/phplib.out")"
grep -qx /usr/share/php/Mdcached/Cache/SimpleCache.php "$W/phplib.out" ||
    fail "php-mdcached-cache: classes not loaded from /usr/share/php: $(cat "$W/phplib.out")"
# PECL: the package made from the release tree, installed against the
# installed libmdcached-dev (configure finds it by pkg-config)
if sh "$TOP/client-php/tests/pecl-install.sh" "$W/mdcached-$V" "$W/pecl" "" "$PORT" >"$W/pecl.out" 2>&1; then
    sed 's/^/   pecl: /' "$W/pecl.out"
    so=$(tail -n 1 "$W/pecl.out")
    ldd "$so" | grep -q "libmdcached.so.0 => /usr/lib/" ||
        fail "pecl: $so is not linked with the installed libmdcached: $(ldd "$so" | grep mdcached)"
else
    cat "$W/pecl.out"
    fail "pecl package / pecl install against libmdcached-dev"
fi
kill -TERM $DPID
wait $DPID || fail "installed daemon: exit $? after SIGTERM"
DPID=

# ---- 4. purge: nothing left ---------------------------------------------------
# shellcheck disable=SC2086
dpkg --purge $PKGS >"$W/purge.out" 2>&1 || { cat "$W/purge.out"; fail "dpkg --purge"; }
left=0
while read -r f; do
    case $f in "" | /. | /) continue ;; esac
    [ -e "$f" ] || [ -L "$f" ] || continue
    grep -qx "$f" "$W/before" && continue
    echo "   left after purge: $f"
    left=$((left + 1))
done <"$W/owned"
for f in /etc/mdcached.conf /etc/mdcached /var/lib/mdcached /usr/share/doc/mdcached \
    /etc/php/*/mods-available/mdcached.ini /etc/php/*/*/conf.d/*-mdcached.ini; do
    [ -e "$f" ] && { echo "   left after purge: $f"; left=$((left + 1)); }
done
[ $left -eq 0 ] || fail "$left files left after purge"
# and nothing new anywhere (maintainer scripts, systemd links, ...)
snapshot >"$W/find.after"
comm -13 "$W/find.before" "$W/find.after" >"$W/find.new"
if [ -s "$W/find.new" ]; then
    sed 's/^/   new after install and purge: /' "$W/find.new" | head -20
    fail "$(wc -l <"$W/find.new") paths appeared and stayed after purge"
fi

[ $fails -eq 0 ] || { echo "deb-check: $fails failure(s)"; exit 1; }
echo "deb-check: packages built, lintian clean of errors, installed, round-trip (tool, PHP extension, PHP library, PECL build), purged clean"
