#!/bin/sh
# missratio.sh - bench/missratio's tools on a tiny trace (the bench itself,
# bench/missratio/run.sh, is never run by make check): mr-gen writes the
# same bytes for the same seed and other bytes for another; replayed
# read-through into an mdcached large enough for all of it, every distinct
# object misses exactly once and is then held, key + value bytes as the
# trace's header counts them.  The wide-size model (-g, -b, -B: format 2,
# its 128-byte header recording it) is as deterministic, --info and
# --oracle read it, the default model still writes format 1 byte for byte,
# and a wide trace replays as exactly.  mdcached's --memory-limit-kib (the
# bench's equal-RSS search) sets the store's limit in KiB.
# Exit 0 pass, 1 fail.
set -u
. "$(dirname "$0")/realclients/common.sh"
B=${MDC_BUILDDIR:-.}/bench/missratio
for p in mr-gen mr-replay; do
    [ -x "$B/$p" ] || { echo "FAIL: $B/$p not built"; exit 1; }
done
info() { "$B/mr-gen" --info "$1" | sed -n "s/^$2=//p"; }

"$B/mr-gen" -o "$RC_TMP/a" -n 20000 -N 2000 -a 1.0 -w 0.1 -s 0.1 -L 100 -S 7
check "mr-gen ran" 0 $?
"$B/mr-gen" -o "$RC_TMP/b" -n 20000 -N 2000 -a 1.0 -w 0.1 -s 0.1 -L 100 -S 7
if cmp -s "$RC_TMP/a" "$RC_TMP/b"; then ok "same seed, same trace"
else fail "same seed, different traces"; fi
"$B/mr-gen" -o "$RC_TMP/c" -n 20000 -N 2000 -a 1.0 -w 0.1 -s 0.1 -L 100 -S 8
if cmp -s "$RC_TMP/a" "$RC_TMP/c"; then fail "another seed, the same trace"
else ok "another seed, another trace"; fi
check "96-byte header + 8 bytes a request" $((96 + 8 * 20000)) "$(wc -c <"$RC_TMP/a")"
"$B/mr-gen" -o "$RC_TMP/d" -n 10 -a x 2>/dev/null
check "a bad alpha is refused" 64 $?

check "format 1 for the default size model" MRTRACE1 "$(head -c 8 "$RC_TMP/a")"
check "format 1's --info: sigma 0.8, no big objects" "1 0.8 0" \
    "$(info "$RC_TMP/a" format) $(info "$RC_TMP/a" size_sigma) $(info "$RC_TMP/a" big_share)"

# the wide-size model: lognormal sigma 1.5, 1 % big objects of 10-100 KiB
W="-n 20000 -N 2000 -a 0.8 -w 0.1 -s 0.05 -L 500 -S 7 -g 1.5 -b 0.01 -B 10240,102400"
# shellcheck disable=SC2086
"$B/mr-gen" -o "$RC_TMP/w1" $W
check "mr-gen wide ran" 0 $?
# shellcheck disable=SC2086
"$B/mr-gen" -o "$RC_TMP/w2" $W
if cmp -s "$RC_TMP/w1" "$RC_TMP/w2"; then ok "wide: same seed, same trace"
else fail "wide: same seed, different traces"; fi
check "wide: format 2" MRTRACE2 "$(head -c 8 "$RC_TMP/w1")"
check "wide: 128-byte header + 8 bytes a request" $((128 + 8 * 20000)) \
    "$(wc -c <"$RC_TMP/w1")"
check "wide: --info records the size model" "2 1.5 0.01 10240 102400" \
    "$(info "$RC_TMP/w1" format) $(info "$RC_TMP/w1" size_sigma) $(info "$RC_TMP/w1" big_share) $(info "$RC_TMP/w1" big_min) $(info "$RC_TMP/w1" big_max)"
check "wide: --info keeps the format 1 fields" "20000 0.8 500" \
    "$(info "$RC_TMP/w1" requests) $(info "$RC_TMP/w1" alpha) $(info "$RC_TMP/w1" scan_len)"
# the values: distinct objects' sizes, from the records (u32 id, u32 size)
sizes=$(od -An -v -tu4 -w8 -j128 "$RC_TMP/w1" | sort -u -k1,1n | awk '
    $2 >= 10240 && $2 <= 102400 && $2 > 16384 { big++ }
    $2 > 102400 { over++ } { n++ }
    END { printf "%d %d %d", n, big + 0, over + 0 }')
set -- $sizes
check "wide: every distinct object once" "$(info "$RC_TMP/w1" distinct)" "$1"
# 1 % of the objects are big: about 37 of 3 700; above the lognormal's
# 16 KiB clamp only big ones are
if [ "$2" -ge 15 ] && [ "$2" -le 75 ]; then ok "wide: about 1 % big objects ($2 of $1)"
else fail "wide: $2 big objects of $1, want about 1 %"; fi
check "wide: none above -B's maximum" 0 "$3"
# the same arguments with the default size model: format 1, as before
"$B/mr-gen" -o "$RC_TMP/w3" -n 20000 -N 2000 -a 1.0 -w 0.1 -s 0.1 -L 100 -S 7 -g 0.8 -b 0
if cmp -s "$RC_TMP/a" "$RC_TMP/w3"; then ok "-g 0.8 -b 0: the format 1 trace"
else fail "-g 0.8 -b 0 differs from the format 1 trace"; fi
"$B/mr-gen" --oracle "$RC_TMP/w1" "$RC_TMP/w1.oracle"
check "wide: --oracle ran" 0 $?
check "wide: --oracle, 24 bytes a request" $((24 * 20000)) "$(wc -c <"$RC_TMP/w1.oracle")"
"$B/mr-gen" -o "$RC_TMP/e" -n 10 -B 100,10 2>/dev/null
check "a big-object range MIN > MAX is refused" 64 $?
"$B/mr-gen" -o "$RC_TMP/e" -n 10 -B 100 2>/dev/null
check "a big-object range without MAX is refused" 64 $?
"$B/mr-gen" -o "$RC_TMP/e" -n 10 -g 9 2>/dev/null
check "a size sigma above 4 is refused" 64 $?

start_mdc D
distinct=$(info "$RC_TMP/a" distinct)
ws=$(info "$RC_TMP/a" working_set_bytes)
for proto_b in 1 64; do
    r=$("$B/mr-replay" -t "$RC_TMP/a" -p "$D_PORT" -w 0 -b "$proto_b" -x)
    check "mr-replay -b $proto_b ran" 0 $?
    f() { echo "$r" | sed -n "s/.*\\b$1=\\([0-9.]*\\).*/\\1/p"; }
    check "-b $proto_b: requests" 20000 "$(f requests)"
    if [ "$proto_b" = 1 ]; then
        check "every distinct object misses once" "$distinct" "$(f misses)"
    else
        check "the second replay hits everything" 0 "$(f misses)"
    fi
    check "-b $proto_b: all of it held" "$distinct" "$(f held_records)"
    check "-b $proto_b: key + value bytes held" "$ws" "$(f held_bytes)"
done
# the wide trace (about 5 MB) fits in -m 32 as well; a daemon of its own,
# since its keys are trace a's with other sizes
start_mdc W
distinct=$(info "$RC_TMP/w1" distinct)
r=$("$B/mr-replay" -t "$RC_TMP/w1" -p "$W_PORT" -w 0 -b 1 -x)
check "mr-replay wide ran" 0 $?
check "wide: every distinct object misses once" "$distinct" "$(f misses)"
check "wide: all of it held" "$distinct" "$(f held_records)"
check "wide: key + value bytes held" "$(info "$RC_TMP/w1" working_set_bytes)" "$(f held_bytes)"
check "wide: no set refused" 0 "$(f refused_sets)"

# --memory-limit-kib: the store's limit in KiB, overriding -m
if mdc_start K -l 127.0.0.1 -m 32 -n 1 --memory-limit-kib 2560; then
    RC_MDC="$RC_MDC K"
    check "--memory-limit-kib 2560: limit_maxbytes" 2621440 \
        "$(python3 - "$K_PORT" <<'EOF'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=30)
s.sendall(b"stats\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    d = s.recv(65536)
    if not d:
        break
    buf += d
for l in buf.decode().split("\r\n"):
    f = l.split()
    if len(f) == 3 and f[1] == "limit_maxbytes":
        print(f[2])
EOF
)"
else
    fail "mdcached --memory-limit-kib 2560 did not start"
fi
rc_finish
