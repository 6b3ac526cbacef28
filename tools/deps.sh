#!/bin/sh
# tools/deps.sh - install what mdcached needs, on Debian 12, as root.  Safe
# to run again.
#
#   sh tools/deps.sh run    building and running the server (tools/run.sh,
#                           the README's first command): a compiler, the
#                           autotools and the libraries of a default
#                           ./configure (cmocka too: configure requires it)
#   sh tools/deps.sh        everything: the above and what the test suite
#                           uses (tools/test-all.sh, the second command):
#                           the XDP front's toolchain, PHP, the peers and
#                           clients the tests run against, packaging tools,
#                           the virtual machine of the kernel TLS test, ...
set -eu
RUN_PKGS="build-essential autoconf automake libtool pkg-config
  libevent-dev libjemalloc-dev libcmocka-dev libbsd-dev libxxhash-dev
  liburing-dev libssl-dev"
TEST_PKGS="clang llvm libclang-rt-14-dev clang-format
  libmemcached-dev libhiredis-dev memcached redis-server
  libbpf-dev bpftool iproute2 ethtool python3 python3-matplotlib
  libmemcached-tools php-cli php-memcached nutcracker
  tmux man-db groff-base systemd
  debhelper dpkg-dev lintian adduser prometheus dh-php
  php-dev php-cgi php-igbinary php-msgpack zlib1g-dev libzstd-dev
  phpunit php-psr-simple-cache php-psr-cache php-symfony-cache
  php-illuminate-cache php-redis composer php-symfony-framework-bundle php-symfony-yaml
  openssl socat
  php-illuminate-container php-illuminate-config php-pear php-xml
  qemu-system-x86 busybox-static lcov
  python3-venv golang-go sasl2-bin"
case "${1:-all}" in
run) PKGS=$RUN_PKGS ;;
all) PKGS="$RUN_PKGS $TEST_PKGS" ;;
*)
    echo "usage: sh tools/deps.sh [run]" >&2
    exit 64
    ;;
esac
if [ "$(id -u)" -ne 0 ]; then
    echo "tools/deps.sh: must run as root (apt-get install)" >&2
    exit 1
fi
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # shellcheck disable=SC2086
    apt-get install -y -q --no-install-recommends $missing
fi
