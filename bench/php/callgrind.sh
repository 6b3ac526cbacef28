#!/bin/sh
# bench/php/callgrind.sh - client instructions per mixed-workload operation
# for each contender, by valgrind --tool=callgrind on the PHP process:
# (population + OPS operations) minus (population alone), divided by OPS.
# Deterministic where wall-clock and CPU time are not (a shared machine).
# Run from the build top; starts the servers like run.sh (it reuses run.sh
# with a wrapper around php).  Environment: ITEMS (2000), OPS (2000),
# WHOS ("a b c"), SET (as run.sh: a Composer set's vendor/autoload.php).
set -eu
top=$(pwd)
src=$(cd "$(dirname "$0")/../.." && pwd)
ITEMS=${ITEMS:-2000}
OPS=${OPS:-2000}
export ITEMS OPS
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind missing" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# a php that runs under callgrind and prints the instruction total
cat >"$tmp/php" <<EOS
#!/bin/sh
case "\$*" in *tagbench.php*) ;; *) exec /usr/bin/php "\$@";; esac
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" /usr/bin/php "\$@" >/dev/null 2>"$tmp/vg.err"
echo "{\"test\":\"callgrind\",\"ir\":\$(sed -n 's/^summary: //p' "$tmp/cg.out")}"
EOS
chmod +x "$tmp/php"
for who in ${WHOS:-a b c}; do
    for only in mixed,populate-only mixed; do
        r=$(OUT="$tmp/out.jsonl" PATH="$tmp:$PATH" WHO=$who ONLY=$only ROUNDS=1 sh "$src/bench/php/run.sh" 2>/dev/null |
            sed -n 's/.*"test":"callgrind","ir":\([0-9]*\).*/\1/p' | head -1)
        echo "$who $only $r"
    done
done | awk -v ops="$OPS" '{ ir[$1, $2] = $3 }
    END { for (w = 1; w <= 3; w++) { c = substr("abc", w, 1)
            printf "%s: %.0f client instructions per operation\n", c,
                (ir[c, "mixed"] - ir[c, "mixed,populate-only"]) / ops } }'
