#!/bin/sh
# send_zc.sh - --uring-send-zc off against on, side by side (bench/ab.sh:
# alternating rounds, server CPU per request), for GETs of large values
# over TCP: 64 KiB, 256 KiB and 1 MiB, 4 connections, GETs only.
#
# usage: bench/send_zc.sh [-r ROUNDS] [-D SECS] [-B BUILD] [loopback|veth]
#   loopback (default): 127.0.0.1, where the kernel copies a zero-copy
#   payload when the receiving socket takes it.  veth (root): the servers
#   run in a network namespace this script creates, behind a veth pair
#   (10.231.0.1 here, 10.231.0.2 there), removed on exit.
# SIZES="65536 262144 1048576" and ZC=BYTES (the threshold, 32768) may be set.
set -eu
R=5
D=2
BUILD=$(pwd)
while getopts r:D:B: o; do
    case $o in
    r) R=$OPTARG ;;
    D) D=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    *) sed -n '2,12p' "$0"; exit 2 ;;
    esac
done
shift $((OPTIND - 1))
MODE=${1:-loopback}
HERE=$(cd "$(dirname "$0")" && pwd)
SRV=$BUILD/server/mdcached
ZC=${ZC:-32768}
NS=mdczc$$
EXTRA=
if [ "$MODE" = veth ]; then
    [ "$(id -u)" = 0 ] || { echo "veth needs root" >&2; exit 2; }
    trap 'ip netns del $NS 2>/dev/null; ip link del vz$$a 2>/dev/null' EXIT INT TERM
    ip netns add "$NS"
    ip link add "vz$$a" type veth peer name "vz$$b"
    ip link set "vz$$b" netns "$NS"
    ip addr add 10.231.0.1/24 dev "vz$$a"
    ip link set "vz$$a" up
    ip netns exec "$NS" ip addr add 10.231.0.2/24 dev "vz$$b"
    ip netns exec "$NS" ip link set "vz$$b" up
    ip netns exec "$NS" ip link set lo up
    export AB_HOST=10.231.0.2 AB_WRAP="ip netns exec $NS"
    EXTRA="--protected-mode=no" # the client is not on loopback
fi
for v in ${SIZES:-65536 262144 1048576}; do
    echo "== $MODE, GET of $v-byte values"
    W=W2 V=$v K=64 LOAD_ARGS="-r 100:0 -c 4" \
        bash "$HERE/ab.sh" -r "$R" -D "$D" -B "$BUILD" \
        "zc-off=$SRV -n 1 -t 0 --io=uring -m 1024 -I 2m -U 0 $EXTRA --uring-send-zc=0" \
        "zc-on=$SRV -n 1 -t 0 --io=uring -m 1024 -I 2m -U 0 $EXTRA --uring-send-zc=$ZC"
done
