#!/bin/sh
# tests/check_store_levels.sh - tools/check-layers.sh checks the store's
# levels (server/core/store_record.h: the record, the index, the policies,
# the operations, the store's life), by include and by call:
#  - on a copy of this tree and of this build's objects it passes;
#  - it fails, naming file and symbol, on each of these planted in the copy:
#    a call up a level (an object of store_hooks.c, the index, using
#    mem_reserve of store_evict.c, a policy), a call from one operation to
#    another (store_counter.c using store_visit of store_get.c), an include
#    up a level (store_forest.c including store_policy.h), a file of the
#    store with no level, and a file of the store with no object in the
#    build directory (its calls would go unchecked: store_check.c's
#    objects removed).
set -u
. "$(dirname "$0")/layers_copy.sh"
layers_setup levels

# plant NAME: compile $T/NAME.c as an object the check takes for a file of
# the store (automake's DIR/TARGET-BASE.o naming)
plant() {
    ${CC:-cc} -c -o "$T/build/server/core/planted-$1.o" "$T/$1.c" ||
        { echo "FAIL: cannot compile the planted $1.c"; exit 1; }
}
# expect WHAT LINE...: the check fails and prints every LINE (fixed strings)
expect() {
    what=$1; shift
    if sh "$CHECK" "$T/src" "$T/build" >"$T/out" 2>&1; then
        fail "$what: not seen"; cat "$T/out"; return
    fi
    for l in "$@"; do
        grep -qF -- "$l" "$T/out" || { fail "$what: no line '$l'"; cat "$T/out"; }
    done
}

layers_copy
sh "$CHECK" "$T/src" "$T/build" >"$T/out" 2>&1 ||
    { fail "the unplanted copy:"; cat "$T/out"; }
grep -q 'every include and every call' "$T/out" ||
    fail "the unplanted copy: the calls were not checked: $(cat "$T/out")"

# every breach at once (one more run of the check, as it reads every
# object): a call up a level, the index calling a policy
cat >"$T/store_hooks.c" <<'C'
#include <stddef.h>
struct store;
int mem_reserve(struct store *st, size_t size);
int planted_up(struct store *st);
int planted_up(struct store *st) { return mem_reserve(st, 64); }
C
plant store_hooks
# one operation calling another
cat >"$T/store_counter.c" <<'C'
struct store;
int store_visit(struct store *st, const void *key, unsigned klen,
                void *fn, void *ctx);
int planted_side(struct store *st);
int planted_side(struct store *st) { return store_visit(st, "k", 1, 0, 0); }
C
plant store_counter
# an include up a level, and a store file with no level (nor object)
printf '#include "store_policy.h"\n' >>"$T/src/server/core/store_forest.c"
printf '#include "store_record.h"\n' >"$T/src/server/core/store_new.c"
# a file of the store not built: its calls would go unchecked
find "$T/build" -name '*store_check.o' -exec rm -f {} +
expect "the planted breaches" \
    'server/core/store_hooks.c: uses mem_reserve, defined in server/core/store_evict.c: store level 2 to level 3, above it' \
    'server/core/store_counter.c: uses store_visit, defined in server/core/store_get.c: from one operation of the store to another' \
    'server/core/store_forest.c:' \
    'include "store_policy.h": store level 2 to level 3, above it' \
    'server/core/store_new.c:1: include "store_record.h": a file of the store with no level' \
    'server/core/store_new.c: no object of it in' \
    'server/core/store_check.c: no object of it in' \
    'check-layers: 6 violation(s)'

[ "$fails" -eq 0 ] || exit 1
echo "PASS: the store's levels pass on the tree, and each planted breach is seen"
