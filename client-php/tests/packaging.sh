#!/bin/sh
# client-php/tests/packaging.sh - how PHP users install mdcached, checked:
#  1. the PHP library as `make install' installs it (the Debian package
#     php-mdcached-cache ships the same files): every class of
#     client-php/lib/src, and beside them autoload.php and every other
#     PHP file of client-php/lib but the tests, in $(datadir)/php/Mdcached/Cache,
#     and `require "Mdcached/Cache/autoload.php"' through PHP's include path
#     loads them (PSR-16 round trip with the daemon, Laravel store);
#  2. the PECL package: client-php/package.xml names the version of
#     configure.ac and php_mdcached.h and every source of the extension;
#     `pecl package' makes mdcached-<version>.tgz and `pecl install' of it
#     builds it against the build tree's libmdcached (staged as a prefix:
#     include/mdcached.h, lib/libmdcached.so), after which
#     `php -n -d extension=...' loads it and round-trips a tagged record
#     (client-php/tests/pecl-install.sh); and the same package installed
#     with no libmdcached anywhere, as on a machine with php-dev only
#     (zlib's and libzstd's headers hidden from configure): configure
#     chooses the bundled libmdcached sources, with TLS (OpenSSL's headers
#     come with php-dev), and the .so links no libmdcached, zlib or zstd;
#  3. PIE's composer.json of the extension (client-php/composer.json):
#     `composer validate --strict' clean, and its php-ext section as PIE
#     reads it (extension-name, priority, configure-options that config.m4
#     defines);
#  4. the library's Composer package (client-php/lib/composer.json) installed
#     by `composer install' from a path repository (offline: Packagist off,
#     the PSR packages from Debian's copies) and loaded by vendor/autoload.php.
# Needs pecl (php-pear, php-xml) and composer: without them SKIP (77),
# under CI=true a failure.  Exit 0 pass, 1 fail.
set -u
here=$(cd "$(dirname "$0")" && pwd)
srctop=$(cd "$here/../.." && pwd)
top=$(pwd) # automake runs the tests in the build directory
so=$top/client-php/ext/modules/mdcached.so
bin=$top/server/mdcached
PHP=$(php-config --php-binary 2>/dev/null || command -v php)
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
missing=""
for c in pecl pear composer; do
    command -v $c >/dev/null 2>&1 || missing="$missing $c"
done
"$PHP" -r 'exit(extension_loaded("xml") ? 0 : 1);' || missing="$missing php-xml"
if [ -n "$missing" ]; then
    echo "SKIP: needs$missing (tools/deps.sh: php-pear php-xml composer)"
    [ "${CI:-}" = true ] && { echo "FAIL: CI=true and a requirement is missing"; exit 1; }
    exit 77
fi
[ -f "$so" ] || { echo "FAIL: $so not built"; exit 1; }
[ -x "$bin" ] || { echo "FAIL: $bin not built"; exit 1; }
. "$here/daemon.sh"
echo "mdcached pid $pid on 127.0.0.1:$port"
lib=$top/client-c/.libs/libmdcached.so
if ldd "$lib" | grep -q libasan; then
    # ASan build: libmdcached needs the sanitizer runtime first, which PHP's
    # binary does not load (see run-phpt.sh)
    ${CC:-gcc} -shared -fPIC -o "$tmp/nodeepbind.so" "$here/nodeepbind.c" -ldl ||
        { echo "FAIL: cannot build nodeepbind.so"; exit 1; }
    LD_PRELOAD="$tmp/nodeepbind.so $(ldd "$lib" | awk '/libasan/ { print $3; exit }')"
    ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0
    export LD_PRELOAD ASAN_OPTIONS
fi

# ---- 1. the library as make install installs it -------------------------------
echo "== make install of the PHP library"
# install-data: every data directory (the library's and its subdirectories')
make -s -C "$top" install-data DESTDIR="$tmp/inst" >"$tmp/install.out" 2>&1 ||
    { cat "$tmp/install.out"; fail "make install-data"; }
auto=$(find "$tmp/inst" -path '*/php/Mdcached/Cache/autoload.php' | head -n 1)
if [ -z "$auto" ]; then
    fail "no Mdcached/Cache/autoload.php installed"
else
    incdir=${auto%/Mdcached/Cache/autoload.php}
    echo "installed in ${incdir#"$tmp/inst"}/Mdcached/Cache"
    # every PHP file of the library but its tests: src/X.php as X.php beside
    # autoload.php, anything else (e.g. DIR/X.php) at its own relative path
    for f in $(cd "$srctop/client-php/lib" && find . -name '*.php' ! -path './tests/*' ! -path './vendor/*' | sed 's|^\./||'); do
        case $f in src/*) to=${f#src/} ;; *) to=$f ;; esac
        [ -f "$incdir/Mdcached/Cache/$to" ] ||
            fail "client-php/lib/$f is not installed as Mdcached/Cache/$to (PHPLIB_INSTALL in client-php/include.am)"
    done
    [ -e "$incdir/Mdcached/Cache/src" ] && fail "installed with a src/ directory: the classes go beside autoload.php"
    "$PHP" -d extension="$so" -d include_path=".:$incdir:$(php -r 'echo get_include_path();')" -r '
        require "Mdcached/Cache/autoload.php";
        $r = new ReflectionClass(Mdcached\Cache\SimpleCache::class);
        if (strpos($r->getFileName(), $argv[2]) !== 0) { echo "loaded from ", $r->getFileName(), "\n"; exit(1); }
        $c = new Mdcached\Client();
        $c->addServer("127.0.0.1", (int)$argv[1]);
        $s = new Mdcached\Cache\SimpleCache($c, "inst");
        if (!$s->set("k", [1, 2], 60) || $s->get("k") !== [1, 2]) { echo "PSR-16 round trip\n"; exit(1); }
        $cache = new Illuminate\Cache\Repository(new Mdcached\Cache\LaravelStore($c, "inst"));
        $cache->tags(["t"])->put("l", "v", 60);
        if ($cache->tags("t")->get("l") !== "v" || !$cache->tags("t")->flush() || $cache->tags("t")->get("l") !== null) { echo "Laravel store\n"; exit(1); }
        echo "ok\n";' "$port" "$incdir/Mdcached/Cache/" >"$tmp/lib.out" 2>&1 ||
        fail "require 'Mdcached/Cache/autoload.php' from the include path: $(cat "$tmp/lib.out")"
    echo "require 'Mdcached/Cache/autoload.php': $(cat "$tmp/lib.out")"
fi

# ---- 2. PECL ------------------------------------------------------------------------
echo "== PECL package"
pkg=$srctop/client-php/package.xml
V=$(sed -n 's/^#define PACKAGE_VERSION "\(.*\)"/\1/p' "$top/config.h")
rel=$(sed -n 's:.*<release>\(.*\)</release>.*:\1:p' "$pkg" | head -n 1)
api=$(sed -n 's:.*<api>\(.*\)</api>.*:\1:p' "$pkg" | head -n 1)
hv=$(sed -n 's/^#define PHP_MDCACHED_VERSION "\(.*\)"/\1/p' "$srctop/client-php/php_mdcached.h")
[ "$rel" = "$V" ] || fail "package.xml release $rel, configure.ac says $V"
[ "$hv" = "$V" ] || fail "php_mdcached.h PHP_MDCACHED_VERSION $hv, configure.ac says $V"
[ -n "$api" ] || fail "package.xml has no <api> version"
# every source the project's build copies to phpize (PHPEXT_SRC) is packaged
for f in $(sed -n '/^PHPEXT_SRC =/,/[^\\]$/p' "$srctop/client-php/include.am" |
        tr ' \\\t' '\n\n\n' | grep '^client-php/'); do
    grep -q "<file name=\"${f#client-php/}\"" "$pkg" || fail "package.xml does not list ${f#client-php/}"
done
# libmdcached's sources are packaged too (libmdcached/ = client-c/, protocol/)
for f in $(sed -n '/^client_c_libmdcached_la_SOURCES =/,/[^\\]$/p; /^protocol_libmdcproto_la_SOURCES =/,/[^\\]$/p' \
        "$srctop/client-c/include.am" "$srctop/protocol/include.am" | tr ' \\\t' '\n\n\n' | grep -E '^(client-c|protocol)/'); do
    grep -q "<file name=\"libmdcached/$f\"" "$pkg" || fail "package.xml does not list libmdcached/$f"
done
stage=$tmp/libmdcached
mkdir -p "$stage/include" "$stage/lib"
cp "$srctop/client-c/mdcached.h" "$stage/include/"
for l in "$top"/client-c/.libs/libmdcached.so*; do ln -s "$l" "$stage/lib/"; done
if sh "$here/pecl-install.sh" "$srctop" "$tmp/pecl" "$stage" "$port" >"$tmp/pecl.out" 2>&1; then
    sed 's/^/  /' "$tmp/pecl.out"
else
    cat "$tmp/pecl.out"
    fail "pecl package / pecl install / load"
fi
# php-dev only: no libmdcached installed (this machine must have none:
# configure would take it), zlib.h and zstd.h hidden (autoconf's cache
# variables), OpenSSL's headers there (php-dev depends on libssl-dev)
if pkg-config --exists libmdcached 2>/dev/null || [ -e /usr/include/mdcached.h ] ||
        [ -e /usr/local/include/mdcached.h ]; then
    echo "  (a libmdcached is installed: the bundled build is forced with -D with-mdcached=bundled)"
    how=bundled
else
    how=""
fi
if ac_cv_header_zlib_h=no ac_cv_header_zstd_h=no \
        sh "$here/pecl-install.sh" "$srctop" "$tmp/pecl-alone" "$how" "$port" >"$tmp/pecl-alone.out" 2>&1; then
    sed 's/^/  alone: /' "$tmp/pecl-alone.out"
    aso=$(tail -n 1 "$tmp/pecl-alone.out")
    grep -q 'checking which libmdcached to use\.\.\. bundled' "$tmp/pecl-alone.out" ||
        fail "pecl install with no libmdcached did not use the bundled sources"
    grep -q 'checking for TLS in the bundled libmdcached\.\.\. yes' "$tmp/pecl-alone.out" ||
        fail "bundled libmdcached without TLS though OpenSSL's headers are there"
    ldd "$aso" | grep -E 'libmdcached|libz\.|libzstd' &&
        fail "the bundled build links an outside libmdcached, zlib or zstd"
    ldd "$aso" | grep -q libssl || fail "the bundled build does not link libssl"
    "$PHP" -n -d extension="$aso" -r '
        $c = new Mdcached\Client();
        $c->addServer("127.0.0.1", (int)$argv[1]);
        $big = str_repeat("compressible ", 1000);
        $e = [];
        if (!$c->set("alone:big", $big) || $c->get("alone:big") !== $big) $e[] = "a large value (stored plain)";
        if ($c->setOption(Mdcached\Client::OPT_COMPRESSION_TYPE, Mdcached\Client::COMPRESSION_ZSTD)
            || $c->getResultCode() !== Mdcached\Client::RES_NOT_SUPPORTED) $e[] = "zstd without libzstd is not RES_NOT_SUPPORTED";
        if (!$c->setTls(["insecure" => true]) || !$c->setTls(null)) $e[] = "setTls: " . $c->getResultMessage();
        echo $e ? implode("; ", $e) . "\n" : "ok\n";
        exit($e ? 1 : 0);' "$port" >"$tmp/alone.out" 2>&1 ||
        fail "the bundled build: $(cat "$tmp/alone.out")"
    echo "  alone: large value stored plain, zstd refused, TLS built in: $(cat "$tmp/alone.out")"
else
    cat "$tmp/pecl-alone.out"
    fail "pecl install with no libmdcached installed (bundled sources)"
fi

# ---- 3. PIE's composer.json ------------------------------------------------------
echo "== composer.json (PIE)"
cj=$srctop/client-php/composer.json
COMPOSER_HOME=$tmp/composer COMPOSER_NO_INTERACTION=1
export COMPOSER_HOME COMPOSER_NO_INTERACTION
cv=$(composer --version 2>/dev/null | head -n 1)
composer validate --strict "$cj" >"$tmp/validate.out" 2>&1
vr=$?
sed 's/^/  /' "$tmp/validate.out"
if [ $vr -ne 0 ]; then
    # Composer < 2.7 (Debian 12 has 2.5.5) predates the php-ext section in
    # its schema: that one finding is accepted, the section is checked below
    other=$(grep '^- ' "$tmp/validate.out" | grep -v 'The property php-ext is not defined')
    if grep -q 'The property php-ext is not defined' "$tmp/validate.out" && [ -z "$other" ]; then
        echo "  ($cv does not know php-ext; everything else is valid)"
        composer validate --strict --no-check-publish "$cj" >/dev/null 2>&1 ||
            fail "composer validate --strict --no-check-publish"
    else
        fail "composer validate --strict $cj"
    fi
fi
# the php-ext section as PIE's schema defines it
"$PHP" -r '
$j = json_decode(file_get_contents($argv[1]), true, 512, JSON_THROW_ON_ERROR);
$m4 = file_get_contents($argv[2]);
$e = [];
if (($j["type"] ?? "") !== "php-ext") $e[] = "type is not php-ext";
$x = $j["php-ext"] ?? null;
if (!is_array($x)) { echo "no php-ext section\n"; exit(1); }
$known = ["extension-name", "priority", "support-zts", "support-nts", "build-path",
          "override-download-url-method", "os-families", "os-families-exclude", "configure-options"];
foreach (array_diff(array_keys($x), $known) as $k) $e[] = "unknown php-ext key $k";
if (($x["extension-name"] ?? "") !== "mdcached") $e[] = "extension-name is not mdcached";
$p = $x["priority"] ?? 80;
if (!is_int($p) || $p < 10 || $p > 99) $e[] = "priority must be an int in 10..99";
foreach (["support-zts", "support-nts"] as $k)
    if (isset($x[$k]) && !is_bool($x[$k])) $e[] = "$k must be a bool";
foreach ($x["configure-options"] ?? [] as $o) {
    $n = $o["name"] ?? "";
    if (!preg_match("/^[a-zA-Z0-9][a-zA-Z0-9-_]*$/", $n)) $e[] = "bad configure option name \"$n\"";
    foreach (array_diff(array_keys($o), ["name", "needs-value", "description"]) as $k) $e[] = "option $n: unknown key $k";
    if (isset($o["needs-value"]) && !is_bool($o["needs-value"])) $e[] = "option $n: needs-value must be a bool";
    if (!preg_match("/PHP_ARG_WITH\(\[" . preg_quote(preg_replace("/^with-/", "", $n), "/") . "\]/", $m4))
        $e[] = "option $n is not defined in config.m4";
}
if ($e) { echo implode("\n", $e), "\n"; exit(1); }
echo "php-ext: extension-name mdcached, ", count($x["configure-options"] ?? []), " configure options\n";' \
    "$cj" "$srctop/client-php/config.m4" >"$tmp/phpext.out" 2>&1 || fail "composer.json php-ext: $(cat "$tmp/phpext.out")"
sed 's/^/  /' "$tmp/phpext.out"

# ---- 4. the library with Composer, from a path repository -------------------------
# as docs/client-php.md "Composer (the library)" says, offline: Packagist
# off, psr/cache and psr/simple-cache from Debian's copies as local packages
echo "== composer install of mdcached/cache from a path repository"
if [ ! -f "$srctop/client-php/lib/composer.json" ]; then
    fail "client-php/lib/composer.json missing"
else
    app=$tmp/app
    mkdir -p "$app"
    psr=$("$PHP" -r 'echo stream_resolve_include_path("Psr/Cache/CacheItemPoolInterface.php");')
    psr=${psr%/Cache/CacheItemPoolInterface.php}
    "$PHP" -r '
        $pkg = fn($name, $dir, $ns) => ["type" => "package", "package" => [
            "name" => $name, "version" => "1.0.1", "dist" => ["type" => "path", "url" => $dir],
            "autoload" => ["psr-4" => [$ns => ""]]]];
        echo json_encode(["name" => "mdcached-test/app",
            "repositories" => [["type" => "path", "url" => $argv[1]],
                $pkg("psr/cache", $argv[2] . "/Cache", "Psr\\Cache\\"),
                $pkg("psr/simple-cache", $argv[2] . "/SimpleCache", "Psr\\SimpleCache\\"),
                ["packagist.org" => false]],
            "require" => ["mdcached/cache" => "*@dev"]], JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES), "\n";' \
        "$srctop/client-php/lib" "$psr" >"$app/composer.json"
    # composer's PHP has the extension, as the platform check (ext-mdcached) wants
    if (cd "$app" && "$PHP" -d extension="$so" "$(command -v composer)" install) >"$tmp/composer.out" 2>&1; then
        "$PHP" -d extension="$so" -r '
            require $argv[2] . "/vendor/autoload.php";
            $c = new Mdcached\Client();
            $c->addServer("127.0.0.1", (int)$argv[1]);
            $s = new Mdcached\Cache\SimpleCache($c, "composer");
            if (!$s->set("k", "v", 60) || $s->get("k") !== "v") { echo "PSR-16 round trip\n"; exit(1); }
            echo "vendor/autoload.php loads ", (new ReflectionClass($s))->getFileName(), "\n";' "$port" "$app" \
            >"$tmp/app.out" 2>&1 || fail "the Composer-installed library: $(cat "$tmp/app.out")"
        sed 's/^/  /' "$tmp/app.out"
    else
        cat "$tmp/composer.out"
        fail "composer install of mdcached/cache from a path repository"
    fi
fi

kill -0 "$pid" 2>/dev/null || fail "the daemon died"
[ $fails -eq 0 ] || { echo "packaging: $fails failure(s)"; exit 1; }
echo "packaging: library installed (make install, Composer) and loaded, PECL package built, installed and loaded, composer.json valid"
exit 0
