#!/bin/sh
# tools/port-check.sh - what can be checked of the FreeBSD port
# (dist/freebsd/) without a FreeBSD machine (docs/packaging.md, "FreeBSD"):
#  - pkg-plist equals what `make install' of the portable build installs,
#    mapped as the port's Makefile maps it (libdata/pkgconfig, no .la, no
#    systemd files, docs under %%PORTDOCS%%, the config as @sample);
#  - the rc.d script parses (sh -n), honours mdcached_enable, _flags, _user,
#    _config and _pidfile, and, run against a stand-in rc.subr, builds the
#    daemon(8) command line the port means;
#  - that command line's mdcached part starts the built daemon with the
#    shipped config and stops on SIGTERM.
# Usage: sh tools/port-check.sh BUILDDIR  (a build configured like the port:
# --disable-linux-features --without-jemalloc)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
BD=${1:?usage: port-check.sh BUILDDIR}
P="$TOP/dist/freebsd"
T=$(mktemp -d /tmp/mdc-port-XXXXXX)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

for f in Makefile pkg-descr pkg-plist files/mdcached.in; do
    [ -f "$P/$f" ] || fail "dist/freebsd/$f missing"
done
grep -q '^USE_RC_SUBR=.*mdcached' "$P/Makefile" || fail "Makefile: no USE_RC_SUBR"
grep -q '^\.include <bsd.port.mk>' "$P/Makefile" || fail "Makefile: no bsd.port.mk"

# ---- pkg-plist against make install ----------------------------------------
(cd "$BD" && make install DESTDIR="$T/stage" \
    pkgconfigdir=/usr/local/libdata/pkgconfig >"$T/install.out" 2>&1) ||
    { tail -20 "$T/install.out"; fail "make install"; }
(cd "$T/stage/usr/local" && find . -type f -o -type l) | sed 's|^\./||' |
    grep -v -e '^lib/libmdcached\.la$' -e '^lib/systemd/' -e '^share/mdcached/systemd/' |
    sed 's|^share/doc/mdcached/|%%PORTDOCS%%%%DOCSDIR%%/|' >"$T/plist"
echo "@sample etc/mdcached.conf.sample" >>"$T/plist"
sort "$T/plist" >"$T/plist.want"
sort "$P/pkg-plist" >"$T/plist.have"
if ! diff -u "$T/plist.have" "$T/plist.want" >"$T/plist.diff"; then
    fail "dist/freebsd/pkg-plist differs from make install (+ missing, - extra):"
    cat "$T/plist.diff"
fi

# ---- the rc.d script -------------------------------------------------------------
rc="$P/files/mdcached.in"
sh -n "$rc" || fail "rc.d script: syntax"
for v in mdcached_enable mdcached_flags mdcached_user mdcached_config pidfile; do
    grep -q "$v" "$rc" || fail "rc.d script does not handle $v"
done
cat >"$T/rc.subr" <<'EOF'
load_rc_config() { :; }
run_rc_command() {
    echo "rcvar=$rcvar enable=$mdcached_enable"
    echo "pidfile=$pidfile procname=$procname"
    echo "flags=[$mdcached_flags]"
    echo "$command $command_args"
}
EOF
sed -e "s|^\. /etc/rc.subr|. $T/rc.subr|" -e 's|%%PREFIX%%|/usr/local|g' "$rc" >"$T/rc"
mdcached_enable=YES mdcached_flags="-m 128 -n 2" mdcached_user=www \
    sh "$T/rc" start >"$T/rc.out" 2>&1 || fail "rc.d script failed: $(cat "$T/rc.out")"
want="/usr/sbin/daemon -f -S -T mdcached -p /var/run/mdcached/mdcached.pid /usr/local/sbin/mdcached -C /usr/local/etc/mdcached.conf -u www -m 128 -n 2"
grep -qx "$want" "$T/rc.out" || fail "rc.d command line: $(cat "$T/rc.out"), want $want"
grep -qx "flags=\[\]" "$T/rc.out" || fail "rc.d: mdcached_flags would reach daemon(8)"
grep -q "rcvar=mdcached_enable enable=YES" "$T/rc.out" || fail "rc.d: rcvar"
mdcached_config=/etc/x.conf mdcached_pidfile=/tmp/p.pid sh "$T/rc" start >"$T/rc.out" 2>&1
grep -q -- "-p /tmp/p.pid .* -C /etc/x.conf -u nobody" "$T/rc.out" ||
    fail "rc.d: mdcached_config/_pidfile/default user: $(cat "$T/rc.out")"

# the mdcached part of that command line, with the shipped config
"$BD/server/mdcached" -C "$TOP/dist/mdcached.conf" -u nobody -m 128 -n 2 -p auto >"$T/d.log" 2>&1 &
D=$!
i=0
while ! grep -q " ready" "$T/d.log" && kill -0 $D 2>/dev/null && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done
grep -q "ready: model SYMPED, 2 network and 0 payload threads, 128 MiB" "$T/d.log" ||
    fail "the rc.d command line's mdcached did not start as configured: $(cat "$T/d.log")"
kill -TERM $D
wait $D || fail "mdcached exit $? on SIGTERM"

[ $fails -eq 0 ] || { echo "port-check: $fails failure(s)"; exit 1; }
echo "port-check: pkg-plist, rc.d script and its command line agree"
