#!/bin/sh
# tools/run.sh - the README's first command: install dependencies, build
# in-tree, and start the reference deployment in the foreground.
set -eu
cd "$(dirname "$0")/.."
sh tools/deps.sh
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure
make -j"$(nproc)"
echo "starting: server/mdcached -n 4 -t 0 $*"
exec server/mdcached -n 4 -t 0 "$@"
