#!/bin/sh
# missratio_run.sh - bench/missratio/run.sh end to end on a tiny trace (one
# trace, one size): a row per server, each with its RSS, and the
# equal-memory row mdcached@mc-mem, mdcached given as -m memcached's slab
# pages (total_malloced) of the same row rounded up to whole MiB; MR_EQUAL=off
# leaves that row out, a bad MR_EQUAL is refused.  libCacheSim is not
# installed here (no PyPI in a test): a stand-in for the bench's venv
# answers the import check and prints fixed simulated miss ratios, which
# this test does not check.  Needs memcached and redis-server (tools/deps.sh).
# Exit 0 pass, 1 fail, 77 skip.
set -u
. "$(dirname "$0")/realclients/common.sh"
need memcached redis-server
BUILD=$(cd "${MDC_BUILDDIR:-.}" && pwd)
RUN=$(cd "$(dirname "$0")/../bench/missratio" && pwd)/run.sh
for p in mr-gen mr-replay; do
    [ -x "$BUILD/bench/missratio/$p" ] || { echo "FAIL: $p not built"; exit 1; }
done

mkdir -p "$RC_TMP/venv/bin"
cat >"$RC_TMP/venv/bin/python" <<'EOF'
#!/bin/sh
[ "$1" = -c ] && exit 0
echo "LRU=0.5 SIEVE=0.5 S3-FIFO=0.5 W-TinyLFU=0.5"
EOF
chmod +x "$RC_TMP/venv/bin/python"

# bench OUT [VAR=VALUE...]: run.sh into OUT; its exit status
bench() {
    _o=$1
    shift
    env MR_REQUESTS=20000 MR_OBJECTS=5000 MR_TRACES=z1.0 MR_SIZES=1 \
        MR_OUT="$_o" MR_VENV="$RC_TMP/venv" "$@" \
        timeout 300 "$RUN" "$BUILD" >"$_o.out" 2>"$_o.err"
}
# col FILE SERVER COLUMN: one cell of results.tsv
col() {
    awk -F'\t' -v s="$2" -v c="$3" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
        $4 == s { print $h[c] }' "$1/results.tsv"
}

bench "$RC_TMP/a"
check "run.sh ran" 0 $?
R=$RC_TMP/a/results.tsv
check "results.tsv has an rss_kib column" 1 "$(head -1 "$R" | grep -c 'rss_kib$')"
for s in mdcached memcached mdcached@mc-mem redis-lru redis-lfu; do
    check "one $s row" 1 "$(awk -F'\t' -v s="$s" '$4 == s' "$R" | wc -l)"
    case $(col "$RC_TMP/a" "$s" rss_kib) in
    '' | *[!0-9]*) fail "$s: rss_kib not a number" ;;
    *) ok "$s: rss_kib a number" ;;
    esac
done
m=$(col "$RC_TMP/a" mdcached mib)
e=$(col "$RC_TMP/a" mdcached@mc-mem mib)
mall=$(sed -n 's/.*memcached -m [0-9]*: .*total_malloced=\([0-9]*\).*/\1/p' "$RC_TMP/a/equal.log")
check "equal.log has memcached's total_malloced" 1 "$(echo "$mall" | grep -c '^[0-9][0-9]*$')"
check "mdcached@mc-mem's -m is memcached's pages in whole MiB" \
    $(((mall + 1048575) / 1048576)) "$e"
# memcached takes a page per slab class past a small -m: the row differs
if [ "$e" -gt "$m" ] 2>/dev/null; then ok "memcached took more than -m $m ($e MiB)"
else fail "mdcached@mc-mem at -m $e, the row's -m $m"; fi
check "the normal rows keep the issue's -m" "$m" "$(col "$RC_TMP/a" memcached mib)"
case $(col "$RC_TMP/a" mdcached@mc-mem miss_ratio) in
0.*) ok "mdcached@mc-mem has a miss ratio" ;;
*) fail "mdcached@mc-mem has no miss ratio" ;;
esac
grep -q "mdcached at memcached's memory" "$RC_TMP/a.out"
check "the report prints the equal-memory table" 0 $?

bench "$RC_TMP/b" MR_EQUAL=off
check "run.sh MR_EQUAL=off ran" 0 $?
check "MR_EQUAL=off: no mdcached@mc-mem row" 0 \
    "$(awk -F'\t' '$4 == "mdcached@mc-mem"' "$RC_TMP/b/results.tsv" | wc -l)"
check "MR_EQUAL=off: the mdcached row stays" 1 \
    "$(awk -F'\t' '$4 == "mdcached"' "$RC_TMP/b/results.tsv" | wc -l)"

bench "$RC_TMP/c" MR_EQUAL=pages
check "a bad MR_EQUAL is refused" 1 $?
check "and named" 1 "$(grep -c 'MR_EQUAL=pages' "$RC_TMP/c.err")"

rc_finish
