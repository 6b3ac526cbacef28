#!/bin/sh
# tests/test_files.sh - the files mdcached writes (port file, pid file,
# dump, log file) in a private directory (mode 0755, not sticky: the
# kernel's protected links do not apply, so this fails on a daemon that
# writes through PATH.tmp whatever the sysctls say), as root with -u root
# when run as root (CI), as the user running it otherwise.
#
# At each old fixed temporary name (PATH.tmp) a symbolic link, a hard link
# to a victim file and a file owned by another user are planted; under
# umask 000 the daemon starts, writes every file as a regular file of its
# own with its documented mode (port and pid files 0644, dump 0600, a new
# log file 0640), and the victim and what was planted are left as they
# were.  A log file that is a link is refused at start (exit 73, a message
# naming the link) and on SIGHUP's reopen.
. "$(dirname "$0")/harness.sh"
set -u

fails=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fails=$((fails + 1)); }
check() { # check WHAT COMMAND...
    _what=$1
    shift
    if "$@"; then ok "$_what"; else bad "$_what"; fi
}
mode_of() { stat -c %a "$1"; }
is_own_file() { # a regular file, not a link, one name
    [ -f "$1" ] && [ ! -L "$1" ] && [ "$(stat -c %h "$1")" = 1 ]
}

d=$H_TMP
user=""
other=""
if [ "$(id -u)" -eq 0 ]; then
    user="-u root"
    other=nobody
fi
umask 000

# plant KIND AT: a link to victim, a hard link to it, another user's file
plant() {
    case $1 in
    sym) ln -s victim "$2" ;;
    hard) ln "$d/victim" "$2" ;;
    other)
        echo theirs >"$2"
        [ -n "$other" ] && chown "$other" "$2" ;;
    esac
}

for kind in sym hard other; do
    echo "== $kind at every PATH.tmp"
    rm -f "$d"/victim "$d"/pid* "$d"/D.ports* "$d"/dump* "$d"/.dump.* \
        "$d"/log
    echo precious >"$d/victim"
    chmod 600 "$d/victim"
    plant "$kind" "$d/D.ports.tmp"
    plant "$kind" "$d/pid.tmp"
    plant "$kind" "$d/dump.tmp"
    # shellcheck disable=SC2086
    if ! mdc_start D -n 1 $user -P "$d/pid" -f "$d/dump" \
        --log-file "$d/log"; then
        bad "$kind: the daemon starts (status ${D_STATUS:-?})"
        continue
    fi
    ok "$kind: the daemon starts"
    check "$kind: port file a file of its own" is_own_file "$d/D.ports"
    check "$kind: port file mode 0644 under umask 000" \
        test "$(mode_of "$d/D.ports")" = 644
    check "$kind: pid file a file of its own" is_own_file "$d/pid"
    check "$kind: pid file mode 0644" test "$(mode_of "$d/pid")" = 644
    check "$kind: pid file holds the pid" test "$(cat "$d/pid")" = "$D_PID"
    check "$kind: log file mode 0640" test "$(mode_of "$d/log")" = 640
    mdc_stop D || bad "$kind: exit status $D_STATUS"
    # the dump at exit
    check "$kind: dump a file of its own" is_own_file "$d/dump"
    check "$kind: dump mode 0600" test "$(mode_of "$d/dump")" = 600
    check "$kind: the victim is untouched" \
        test "$(cat "$d/victim")" = precious
    check "$kind: the victim's mode is untouched" \
        test "$(mode_of "$d/victim")" = 600
    for t in D.ports.tmp pid.tmp dump.tmp; do
        case $kind in
        sym) check "$kind: $t still the link" test -L "$d/$t" ;;
        hard) check "$kind: $t still the hard link" \
            test "$(stat -c %h "$d/$t")" = 4 ;;
        other) check "$kind: $t still theirs" \
            test "$(cat "$d/$t")" = theirs ;;
        esac
    done
    check "$kind: no temporary file left" \
        test -z "$(ls -A "$d" | grep '^\.' || true)"
done

echo "== the port file, pid file and dump themselves links"
rm -f "$d"/victim "$d"/pid* "$d"/D.ports* "$d"/dump* "$d"/log
echo precious >"$d/victim"
ln -s victim "$d/pid"
ln -s victim "$d/dump"
# shellcheck disable=SC2086
if mdc_start D -n 1 $user -P "$d/pid" -f "$d/dump" --dump-load=ignore; then
    check "pid: the link replaced by a file" is_own_file "$d/pid"
    mdc_stop D || bad "exit status $D_STATUS"
    check "dump: the link replaced by a file" is_own_file "$d/dump"
    check "the victim is untouched" test "$(cat "$d/victim")" = precious
else
    bad "the daemon starts with links at its paths (status ${D_STATUS:-?})"
fi

echo "== a log file that is a link is refused"
rm -f "$d"/log*
ln -s victim "$d/loglink"
# shellcheck disable=SC2086
mdc_run R -n 1 $user --log-file "$d/loglink"
st=$?
check "symbolic link: exit 73" test "$st" = 73
check "symbolic link: the message says so" \
    grep -q "cannot open log file .*symbolic link" "$R_LOG"
ln "$d/victim" "$d/loghard"
# shellcheck disable=SC2086
mdc_run R -n 1 $user --log-file "$d/loghard"
st=$?
check "hard link: exit 73" test "$st" = 73
check "hard link: the message says so" \
    grep -q "cannot open log file .*hard link" "$R_LOG"
check "the victim is untouched" test "$(cat "$d/victim")" = precious

echo "== SIGHUP does not reopen the log file through a link"
rm -f "$d"/loglink "$d"/loghard "$d/log"
# shellcheck disable=SC2086
if mdc_start D -n 1 $user -v 2 --log-file "$d/log"; then
    mv "$d/log" "$d/log.1"
    ln -s victim "$d/log"
    kill -HUP "$D_PID"
    # the refusal is logged to the file still open (log.1): wait for it,
    # with a ceiling only a hang crosses
    i=0
    while ! grep -q "cannot reopen log file" "$d/log.1" && [ $i -lt 300 ]; do
        sleep 0.1
        i=$((i + 1))
    done
    check "reopen refused, and logged" \
        grep -q "cannot reopen log file: a symbolic link" "$d/log.1"
    check "the victim is untouched" test "$(cat "$d/victim")" = precious
    mdc_stop D || bad "exit status $D_STATUS"
else
    bad "the daemon starts with a log file"
fi

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "all checks passed"
