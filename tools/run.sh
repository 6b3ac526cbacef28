#!/bin/sh
# tools/run.sh - the README's first command: install what building and
# running the server needs (tools/deps.sh run: not the test suite's
# packages, which tools/test-all.sh installs), build in-tree, and start
# the reference deployment in the foreground.
set -eu
cd "$(dirname "$0")/.."
sh tools/deps.sh run
[ -x configure ] || autoreconf -fi
[ -f Makefile ] || ./configure
make -j"$(nproc)"
echo "starting: server/mdcached -n 4 -t 0 $*"
exec server/mdcached -n 4 -t 0 "$@"
