#!/bin/bash
# overfill.sh - issue 34's overfill load side by side in one run: 640 MiB
# of values log-uniform 16 B-64 KiB written into -m MIB (default 64) over
# 4 connections, no reads, every key read back (bench/overfill.py), with
# and without a quarter of the records tagged (mdcached only), on
# memcached -t 4 and mdcached -n 4 -t 0 on io_uring and on epoll: RSS after
# the writes and peak (VmHWM), records and key + value bytes held, and
# what FIFO over the same writes keeps.  Servers pinned to CPU 0.
#
# usage: bench/overfill.sh [-m MIB] [-b MIB_WRITTEN] [-B BUILD_DIR] [-o JSONL]
set -eu
MIB=64
WRITE=640
BUILD=${BUILD:-$(pwd)}
OUT=
while getopts "m:b:B:o:h" o; do
    case $o in
    m) MIB=$OPTARG ;;
    b) WRITE=$OPTARG ;;
    B) BUILD=$OPTARG ;;
    o) OUT=$OPTARG ;;
    *) sed -n '2,11p' "$0"; exit 64 ;;
    esac
done
MDCACHED=${MDCACHED:-$BUILD/server/mdcached}
OVF=$(dirname "$0")/overfill.py
. "$(dirname "$0")/lib.sh"
bl_init overfill.sh
echo "overfill.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(uname -n): $WRITE MiB into -m $MIB; $(memcached -V)"
printf '%-16s %-7s %9s %9s %9s %8s %11s %8s %8s %8s\n' server tagged "idle MiB" "RSS MiB" "peak MiB" held "bytes held" refused "n/FIFO" "B/FIFO"
for s in memcached mdcached-uring mdcached-epoll; do
    for tf in 0 0.25; do
        [ "$s" = memcached ] && [ "$tf" != 0 ] && continue
        case $s in
        memcached) bl_start memcached -m "$MIB" -U 0 -t 4 -c 1024 ;;
        mdcached-*) bl_start mdcached "$MDCACHED" -n 4 -t 0 -m "$MIB" --io="${s#mdcached-}" ;;
        esac
        sleep 0.5
        idle=$(bl_rss_kib "$BL_PID")
        j=$(python3 "$OVF" -s "127.0.0.1:$BL_PORT" -p "$BL_PID" -b "$WRITE" --tag-frac "$tf" --limit-mib "$MIB" -L "$s tag=$tf" -j)
        bl_stop
        [ -z "$OUT" ] || echo "$j" | python3 -c "import json,sys; d=json.load(sys.stdin); d['idle_kib']=$idle; print(json.dumps(d))" >> "$OUT"
        echo "$j" | python3 -c "
import json,sys; d=json.load(sys.stdin)
print('%-16s %-7s %9.1f %9.1f %9.1f %8d %11d %8d %8.3f %8.3f' % ('$s', '$tf', $idle/1024, d['rss_kib']/1024, d['peak_kib']/1024, d['held'], d['held_bytes'], d['refused'], d['held_vs_fifo'], d['bytes_vs_fifo']))"
    done
done
