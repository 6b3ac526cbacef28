#!/bin/sh
# tools/deps.sh - install everything mdcached needs to build and test, on
# Debian 12, as root.  Safe to run again.
set -eu
PKGS="build-essential autoconf automake libtool pkg-config
  libevent-dev libjemalloc-dev libcmocka-dev libbsd-dev libxxhash-dev
  clang llvm libclang-rt-14-dev
  libmemcached-dev libhiredis-dev memcached redis-server
  libbpf-dev bpftool iproute2 ethtool python3-matplotlib liburing-dev
  libmemcached-tools php-cli php-memcached nutcracker
  tmux man-db groff-base systemd
  debhelper dpkg-dev lintian adduser prometheus dh-php
  php-dev php-cgi php-igbinary php-msgpack zlib1g-dev libzstd-dev
  phpunit php-psr-simple-cache php-psr-cache php-symfony-cache
  php-illuminate-cache php-redis composer php-symfony-framework-bundle php-symfony-yaml
  libssl-dev openssl socat
  php-illuminate-container php-illuminate-config php-pear php-xml
  qemu-system-x86 busybox-static lcov
  python3-venv golang-go sasl2-bin"
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
