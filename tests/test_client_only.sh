#!/bin/sh
# tests/test_client_only.sh - the client-only build (configure
# --disable-server) works alone:
#  - configure succeeds when pkg-config knows nothing but OpenSSL (no
#    libevent, jemalloc, libbsd, libxxhash, cmocka, liburing, libsystemd,
#    libbpf: PKG_CONFIG_LIBDIR holds only libssl.pc and libcrypto.pc), and
#    finds TLS;
#  - make builds the library and mdcached-tool, and no server;
#  - make install puts libmdcached (shared and static), mdcached.h,
#    libmdcached.pc and mdcached-tool under the prefix, and no mdcached;
#  - the installed library links none of the server's libraries, and a
#    program built with `pkg-config --cflags --libs libmdcached' against
#    the prefix stores and reads a tagged record on this build's daemon.
# Needs the source tree configured out of tree (as tools/test-all.sh does):
# an in-tree configured source cannot take a second build directory (SKIP,
# a failure under CI=true).
set -u
S=$(cd "${srcdir:-.}" && pwd)
. "$(dirname "$0")/harness.sh"
T=$H_TMP
if [ -f "$S/config.status" ]; then
    echo "SKIP: $S is configured in tree; configure it out of tree to run this test"
    [ "${CI:-}" = true ] && exit 1
    exit 77
fi
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# pkg-config sees OpenSSL only
mkdir -p "$T/pc" "$T/build" "$T/prefix"
for m in libssl libcrypto; do
    f=$(pkg-config --variable=pcfiledir $m 2>/dev/null)/$m.pc
    [ -f "$f" ] && cp "$f" "$T/pc/"
done
t0=$(date +%s)
if ! (cd "$T/build" && PKG_CONFIG_LIBDIR=$T/pc PKG_CONFIG_PATH= \
        "$S/configure" --disable-server --without-php --prefix="$T/prefix" \
        CFLAGS="-O1" >configure.out 2>&1); then
    tail -30 "$T/build/configure.out"
    echo "FAIL: configure --disable-server with only OpenSSL known to pkg-config"
    exit 1
fi
grep -q '^  server: *no' "$T/build/configure.out" || fail "configure's summary does not say server: no"
grep -q '^  tls: *yes' "$T/build/configure.out" || fail "TLS not found (OpenSSL 3 is installed)"
# not niced: beside tools/busy-load.sh's 16 loops at nice 0, a build at
# nice 10 gets about a hundredth of the CPUs (2095 s where it took 50 s)
if ! (cd "$T/build" && make -j2 >make.out 2>&1 && make install >install.out 2>&1); then
    tail -30 "$T/build/make.out" "$T/build/install.out"
    echo "FAIL: make / make install of the client-only build"
    exit 1
fi
echo "client-only configure, make, make install: $(($(date +%s) - t0)) s"
[ -e "$T/build/server/mdcached" ] && fail "the client-only build built the server"
P=$T/prefix
for f in include/mdcached.h lib/libmdcached.so.0 lib/libmdcached.a lib/pkgconfig/libmdcached.pc bin/mdcached-tool; do
    [ -e "$P/$f" ] || fail "not installed: $f"
done
[ -e "$P/sbin/mdcached" ] && fail "the server was installed"
if ldd "$P/lib/libmdcached.so.0" | grep -E 'libevent|jemalloc|libbsd|xxhash|liburing|libsystemd|libbpf|cmocka'; then
    fail "the installed libmdcached links a server library"
fi
ldd "$P/lib/libmdcached.so.0" | grep -q libssl || fail "the installed libmdcached has no TLS (libssl)"

# a program built against the installed library, on this build's daemon
cat >"$T/prog.c" <<'EOF'
#include <mdcached.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    struct mdc_tag tag = {7, 42};
    struct mdc_item *it = NULL;
    mdc_t *m = mdc_create_tcp("127.0.0.1", (uint16_t)atoi(argv[1]));
    if (argc < 2 || !m)
        return 1;
    if (mdc_set(m, "k", 1, "v1", 2, 0, 0, &tag, 1) != MDC_OK)
        return 2;
    if (mdc_get(m, "k", 1, &it) != MDC_OK || it->vlen != 2 ||
        memcmp(it->value, "v1", 2) != 0 || it->ntags != 1 ||
        it->tags[0].tkey != 7 || it->tags[0].tval != 42)
        return 3;
    mdc_item_free(it);
    printf("ok %s\n", mdc_lib_version());
    mdc_destroy(m);
    return 0;
}
EOF
PKG_CONFIG_PATH=$P/lib/pkgconfig:$T/pc
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
if ! ${CC:-cc} -o "$T/prog" "$T/prog.c" $(pkg-config --cflags --libs libmdcached) >"$T/cc.out" 2>&1; then
    cat "$T/cc.out"
    fail "a program does not build with pkg-config --cflags --libs libmdcached"
else
    mdc_start D -n 1 -m 16
    out=$(LD_LIBRARY_PATH=$P/lib "$T/prog" "$D_PORT")
    rc=$?
    [ $rc -eq 0 ] || fail "the program on the installed library: exit $rc"
    echo "program on the installed library: $out"
    LD_LIBRARY_PATH=$P/lib ldd "$T/prog" | grep -q "$P/lib/libmdcached" ||
        fail "the program did not load the installed libmdcached"
    mdc_stop D || fail "daemon exit"
fi
[ $fails -eq 0 ] || exit 1
echo "PASS"
