#!/bin/sh
# tests/ktls_vm.sh - kernel TLS, tested in a virtual machine.
#
# The machines the suite runs on may have a kernel without CONFIG_TLS (the
# development machine's has none), so mdcached's kernel TLS path
# (server/net/tls.c: SSL_OP_ENABLE_KTLS, then plain recv/send/sendmsg on
# the socket) would never run there.  This boots Debian 12's stock kernel
# (CONFIG_TLS=m) under qemu with a small initramfs: busybox, the build's
# server/mdcached, tests/ktls_client and tests/test_tls_alloc with the
# libraries ldd lists, the tls module and the AEAD modules it uses, and
# test certificates.  tests/ktls_vm_init.sh, its /init, runs the tests and
# prints "KTLS-VM: PASS" or "KTLS-VM: FAIL ..." on the serial console.
# docs/security.md, "Kernel TLS, and the user-space fallback".
#
# The kernel package is fetched with `apt-get download` (never installed
# on the host) and its kernel and the few modules needed are kept in a
# cache: $MDC_KTLS_CACHE, else /var/cache/mdcached-test as root, else
# BUILDDIR/ktls-cache.  KVM when usable, else TCG (software emulation).
#
# Usage: sh tests/ktls_vm.sh [--io=epoll|uring|both] [BUILDDIR]
#   (BUILDDIR: default $MDC_BUILDDIR, else .; --io: the backends the daemon
#   and test_tls_alloc run on in the machine, both by default)
# after `make check` (or `make check TESTS=`) built the test programs.
# tools/test-all.sh runs it with the normal (jemalloc) build; with an
# --enable-asan build it runs the same under AddressSanitizer+UBSan, all
# but test_tls_alloc (no jemalloc counter there).
# Exit 0 pass, 1 fail, 77 skip (no qemu, busybox or kernel package); under
# CI=true as root a skip is a failure.
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
IO=both
case "${1:-}" in
--io=epoll | --io=uring | --io=both) IO=${1#--io=}; shift ;;
--io=*) echo "usage: $0 [--io=epoll|uring|both] [BUILDDIR]" >&2; exit 64 ;;
esac
B=$(cd "${1:-${MDC_BUILDDIR:-.}}" && pwd) || exit 1
VM_TIMEOUT=${MDC_KTLS_TIMEOUT:-300}

fail() { echo "FAIL: $*"; exit 1; }
skip() {
    if [ "${CI:-}" = true ] && [ "$(id -u)" -eq 0 ]; then
        fail "$* (a skip under CI as root is a failure; tools/deps.sh installs qemu-system-x86 and busybox-static)"
    fi
    echo "SKIP: $*"
    exit 77
}

for f in server/mdcached tests/ktls_client tests/test_tls_alloc; do
    [ -x "$B/$f" ] || {
        if [ -f "$B/config.h" ] && ! grep -q '^#define HAVE_TLS 1' "$B/config.h"; then
            skip "built without TLS"
        fi
        fail "$B/$f is not built (make check builds it)"
    }
done
command -v qemu-system-x86_64 >/dev/null 2>&1 || skip "no qemu-system-x86_64"
BUSYBOX=/bin/busybox
[ -x "$BUSYBOX" ] || skip "no $BUSYBOX (busybox-static)"
ldd "$BUSYBOX" >/dev/null 2>&1 && skip "$BUSYBOX is not static (busybox-static)"
command -v openssl >/dev/null 2>&1 || skip "no openssl"

# ---- the kernel: Debian 12's linux-image-amd64 dependency, cached ----------
if [ -n "${MDC_KTLS_CACHE:-}" ]; then
    C=$MDC_KTLS_CACHE
elif [ "$(id -u)" -eq 0 ]; then
    C=/var/cache/mdcached-test
else
    C=$B/ktls-cache
fi
mkdir -p "$C" || skip "cannot create $C"
pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*-amd64\)$/\1/p' | head -1)
if [ -z "$pkg" ]; then
    # no apt lists: a kernel cached before will do
    pkg=$(ls -d "$C"/linux-image-*/ok 2>/dev/null | tail -1)
    pkg=${pkg%/ok}
    pkg=${pkg##*/}
    [ -n "$pkg" ] || skip "apt-cache does not know linux-image-amd64 and none is cached in $C"
fi
K=$C/$pkg
if [ ! -f "$K/ok" ]; then
    echo "ktls_vm: fetching $pkg into $C"
    rm -rf "$K" "$C/dl"
    mkdir -p "$C/dl"
    (cd "$C/dl" && apt-get download "$pkg" >download.log 2>&1) ||
        { cat "$C/dl/download.log"; rm -rf "$C/dl"; skip "apt-get download $pkg failed"; }
    dpkg-deb -x "$C/dl/$pkg"_*.deb "$C/dl/x" || fail "dpkg-deb -x failed"
    # keep the kernel, its config and the modules this test can need
    ver=$(ls "$C/dl/x/lib/modules")
    mkdir -p "$K/boot" "$K/lib/modules/$ver/kernel/arch/x86" "$K/lib/modules/$ver/kernel/net" \
        "$K/lib/modules/$ver/kernel/lib"
    cp "$C/dl/x/boot/vmlinuz-$ver" "$C/dl/x/boot/config-$ver" "$K/boot/"
    for d in crypto arch/x86/crypto net/tls lib; do
        cp -a "$C/dl/x/lib/modules/$ver/kernel/$d" "$K/lib/modules/$ver/kernel/$(dirname $d)/"
    done
    cp "$C/dl/x/lib/modules/$ver"/modules.builtin* "$C/dl/x/lib/modules/$ver/modules.order" \
        "$K/lib/modules/$ver/"
    (cd "$K" && "$BUSYBOX" depmod -b . "$ver") || fail "depmod failed"
    rm -rf "$C/dl"
    # older kernels cached before
    for o in "$C"/linux-image-*; do [ "$o" = "$K" ] || rm -rf "$o"; done
    touch "$K/ok"
fi
ver=$(ls "$K/lib/modules")
grep -q '^CONFIG_TLS=[ym]' "$K/boot/config-$ver" || fail "$pkg has no CONFIG_TLS"

# ---- the initramfs -----------------------------------------------------------
W=$B/ktls-vm
rm -rf "$W"
R=$W/root
mkdir -p "$R/bin" "$R/t" "$R/etc" "$R/usr/bin" "$R/usr/lib/ssl" "$W/certs" || exit 1
cp "$BUSYBOX" "$R/bin/busybox"
ln -s busybox "$R/bin/sh"
cp "$SRC/tests/ktls_vm_init.sh" "$R/init"
chmod 755 "$R/init"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$R/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$R/etc/group"
cp "$B/server/mdcached" "$B/tests/ktls_client" "$B/tests/test_tls_alloc" "$R/t/"
osl=$(command -v openssl) # test_tls_alloc makes its certificate with it
cp "$osl" "$R/usr/bin/openssl"
[ -f /usr/lib/ssl/openssl.cnf ] && cp -L /usr/lib/ssl/openssl.cnf "$R/usr/lib/ssl/"
for exe in "$B/server/mdcached" "$B/tests/ktls_client" "$B/tests/test_tls_alloc" "$osl"; do
    ldd "$exe" | sed -n 's/.*=> \(\/[^ ]*\) .*/\1/p; s/^[[:space:]]*\(\/[^ ]*\) (.*/\1/p'
done | sort -u >"$W/libs"
while read -r lib; do
    mkdir -p "$R$(dirname "$lib")"
    cp -L "$lib" "$R$lib" || fail "cannot copy $lib"
done <"$W/libs"
# the modules: tls and the AEADs (AES-GCM, ChaCha20-Poly1305) with what
# modules.dep says they need
M=lib/modules/$ver
for m in tls gcm ctr ghash-generic ghash-clmulni-intel aesni-intel \
    chacha20poly1305 chacha-x86_64 poly1305-x86_64 chacha_generic poly1305_generic; do
    sed -n "s|^\(kernel/[^:]*/$m\.ko\):\(.*\)|\1\2|p" "$K/$M/modules.dep"
done | tr ' ' '\n' | sed '/^$/d' | sort -u >"$W/modules"
[ -s "$W/modules" ] || fail "no modules found in $K/$M/modules.dep"
while read -r ko; do
    mkdir -p "$R/$M/$(dirname "$ko")"
    cp "$K/$M/$ko" "$R/$M/$ko"
done <"$W/modules"
cp "$K/$M"/modules.builtin* "$K/$M/modules.order" "$R/$M/"
# certificates: a CA and a server certificate for localhost/127.0.0.1
(
    cd "$W/certs" &&
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout ca.key -out ca.pem -days 2 -subj /CN=mdc-ktls-ca \
        -addext basicConstraints=critical,CA:TRUE \
        -addext keyUsage=critical,keyCertSign,cRLSign &&
    printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n' >srv.ext &&
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
        -keyout srv.key -out srv.csr -subj /CN=localhost &&
    openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -days 2 -extfile srv.ext -out srv.pem
) >"$W/openssl.log" 2>&1 || { cat "$W/openssl.log"; fail "cannot make certificates"; }
cp "$W/certs/ca.pem" "$W/certs/srv.pem" "$W/certs/srv.key" "$R/t/"
# a sanitizer build has no jemalloc: test_tls_alloc cannot count there
grep -q '^#define HAVE_JEMALLOC 1' "$B/config.h" 2>/dev/null || : >"$R/t/no-jemalloc"
(cd "$R" && find . | "$BUSYBOX" cpio -o -H newc -R 0:0 >"$W/initrd.cpio" 2>/dev/null) ||
    fail "cpio failed"

# ---- boot -------------------------------------------------------------------
# boot ACCEL: the console goes to $W/console.log; sets rc.  no_timer_check:
# under TCG on a busy host the guest's timer runs too slowly for the
# kernel's IO-APIC timer check, which panics ("IO-APIC + timer doesn't
# work!", seen at load average 50); the check proves nothing of TLS
boot() {
    echo "ktls_vm: booting $pkg ($1; initramfs $(($(wc -c <"$W/initrd.cpio") / 1024)) KiB)"
    timeout -k 10 "$VM_TIMEOUT" qemu-system-x86_64 -accel "$1" -cpu max -m 1024 -smp 2 \
        -nographic -serial stdio -monitor none -nic none -no-reboot \
        -kernel "$K/boot/vmlinuz-$ver" -initrd "$W/initrd.cpio" \
        -append "console=ttyS0 panic=-1 quiet no_timer_check mdc_io=$IO" </dev/null >"$W/console.log" 2>&1
    rc=$?
}
t0=$(date +%s)
# KVM when the CPU offers virtualisation and /dev/kvm is usable; a KVM
# that fails to run the machine (some nested setups: /dev/kvm without
# vmx) leaves no KTLS-VM line, and TCG (software emulation) runs it again
rc=1
if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qE '\b(vmx|svm)\b' /proc/cpuinfo; then
    boot kvm
    grep -q 'KTLS-VM:' "$W/console.log" || { tail -5 "$W/console.log"; rc=1; }
fi
grep -q 'KTLS-VM:' "$W/console.log" 2>/dev/null || boot tcg
t1=$(date +%s)
tr -d '\r' <"$W/console.log" | grep -E '^(ktls|KTLS)' 
echo "ktls_vm: the machine ran $((t1 - t0)) s (qemu exit $rc)"
if tr -d '\r' <"$W/console.log" | grep -q '^KTLS-VM: PASS$'; then
    echo "PASS: kernel TLS in a virtual machine ($pkg)"
    rm -rf "$R" "$W/initrd.cpio" # the console log stays
    exit 0
fi
echo "---- console (last 80 lines)"
tr -d '\r' <"$W/console.log" | tail -80
[ $rc -eq 124 ] || [ $rc -eq 137 ] && fail "the virtual machine did not finish within $VM_TIMEOUT s"
fail "no KTLS-VM: PASS on the console"
