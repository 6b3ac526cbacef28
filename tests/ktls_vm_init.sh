#!/bin/sh
# tests/ktls_vm_init.sh - /init of the virtual machine that tests/ktls_vm.sh
# boots (busybox sh, PID 1).  It loads the kernel's tls module and the
# AEADs it uses, starts mdcached on a TLS listener over loopback, runs
# tests/ktls_client against it and tests/test_tls_alloc over kernel TLS,
# prints one line "KTLS-VM: PASS" or "KTLS-VM: FAIL <why>" on the console,
# and powers the machine off.  The host script greps for that line.
/bin/busybox mkdir -p /proc /sys /dev /tmp /sbin /usr/bin
/bin/busybox --install -s /bin
export PATH=/bin:/sbin:/usr/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
ln -sf /bin/busybox /sbin/modprobe # the kernel's request_module() helper
exec </dev/console >/dev/console 2>&1

why=""
bad() { why="$why; $*"; echo "ktls-vm: FAIL: $*"; }
finish() {
    if [ -z "$why" ]; then echo "KTLS-VM: PASS"; else echo "KTLS-VM: FAIL$why"; fi
    sync
    poweroff -f
}

echo "ktls-vm: kernel $(uname -r), $(nproc) CPUs"
depmod
for m in tls gcm ctr ghash-generic ghash-clmulni-intel aesni-intel \
    chacha20poly1305 chacha-x86_64 poly1305-x86_64; do
    modprobe "$m" || echo "ktls-vm: modprobe $m failed"
done
ulp=$(cat /proc/sys/net/ipv4/tcp_available_ulp)
echo "ktls-vm: tcp_available_ulp: $ulp"
case " $ulp " in
*" tls "*) ;;
*) bad "no tls in tcp_available_ulp"; finish ;;
esac
ip link set lo up

cd /t || { bad "no /t"; finish; }
chmod 644 srv.key
# the backends to run on: mdc_io=epoll|uring|both on the kernel command
# line (tests/ktls_vm.sh --io), both by default; TLS is the same byte
# filter over either
IOS="epoll uring"
case " $(cat /proc/cmdline) " in
*" mdc_io=epoll "*) IOS=epoll ;;
*" mdc_io=uring "*) IOS=uring ;;
esac
PORT=11312
for io in $IOS; do
echo "ktls-vm: --io=$io"
./mdcached -n 2 -p 0 --io=$io --tls-listen=127.0.0.1:$PORT --tls-cert srv.pem \
    --tls-key srv.key -I 2m -m 64 -v 3 >d.log 2>&1 &
DPID=$!
i=0
while [ $i -lt 300 ] && ! grep -q " ready" d.log; do
    sleep 0.1
    i=$((i + 1))
done
grep -q " ready" d.log || { cat d.log; bad "mdcached --io=$io did not start"; finish; }
if [ "$io" = uring ] && ! grep -q "network I/O: io_uring" d.log; then
    bad "mdcached --io=uring is not on io_uring"
fi

echo "ktls-vm: ktls_client ($io)"
./ktls_client 127.0.0.1 $PORT ca.pem || bad "ktls_client ($io)"

# the zero-allocation GET test over kernel TLS, TLS 1.3 (kTLS send) and
# TLS 1.2 (kTLS send and receive), its connection on the same backend
for v in 1.3 1.2; do
    echo "ktls-vm: test_tls_alloc over kernel TLS, TLS $v ($io)"
    MDC_TEST_IO=$io MDC_TLS_ALLOC_KTLS=$v ./test_tls_alloc >/tmp/alloc.out 2>&1
    rc=$?
    sed 's/^/ktls-vm:   /' /tmp/alloc.out
    # 77: no allocation counter, in a build without jemalloc (sanitizers),
    # where the host script says so with /t/no-jemalloc
    if [ $rc -eq 77 ] && [ -f no-jemalloc ]; then
        echo "ktls-vm: test_tls_alloc needs jemalloc: not run in this build"
    elif [ $rc -ne 0 ]; then
        bad "test_tls_alloc TLS $v ($io)"
    fi
done

kill -TERM $DPID
wait $DPID
rc=$?
[ $rc -eq 0 ] || bad "mdcached --io=$io exited $rc"
grep "kernel TLS" d.log | sed 's/^/ktls-vm: mdcached: /' | head -20
# a TLS control record (the client's close_notify alert) read by the
# kernel must end the stream cleanly, not fail the read
if grep -E "read: |TLS read: " d.log; then
    bad "mdcached --io=$io logged a failed read"
fi
# a sanitizer build's findings (ASan aborts, UBSan may only print)
if grep -E "runtime error|Sanitizer" d.log; then
    bad "a sanitizer report in mdcached's log ($io)"
fi
done
finish
