#!/bin/sh
# tests/check_layers.sh - tools/check-layers.sh checks calls, not only
# includes (docs/architecture.md, "Layers"):
#  - on this source tree and the objects of this build it passes;
#  - on a temporary copy of both it passes too, and fails, naming the file
#    and the symbol, once a call up the layers is planted there that no
#    include shows: a file of server/net/ calling server_setup() (daemon.c)
#    and one of server/core/ calling server_uptime() (server.c, the base
#    layer), each declaring the function itself.
set -u
. "$(dirname "$0")/layers_copy.sh"
layers_setup layers

# --- the real tree ------------------------------------------------------
if sh "$CHECK" "$S" "$B" >"$T/real.out" 2>&1; then
    grep -q 'every include and every call' "$T/real.out" ||
        fail "the real tree: the calls were not checked: $(cat "$T/real.out")"
else
    fail "the real tree:"; cat "$T/real.out"
fi

# --- a copy: the C files of the tree and the objects of this build -------
layers_copy
sh "$CHECK" "$T/src" "$T/build" >"$T/copy.out" 2>&1 ||
    { fail "the unplanted copy:"; cat "$T/copy.out"; }

# --- plant the calls ------------------------------------------------------
cat >"$T/src/server/net/planted_net.c" <<'C'
/* planted by tests/check_layers.sh: net calls the lifecycle */
struct options;
struct server *server_setup(const struct options *opt);
void *planted_net(void);
void *planted_net(void) { return server_setup(0); }
C
cat >"$T/src/server/core/planted_core.c" <<'C'
/* planted by tests/check_layers.sh: the store calls a base clock */
unsigned long server_uptime(const void *srv);
unsigned long planted_core(void);
unsigned long planted_core(void) { return server_uptime(0); }
C
for p in net/planted_net core/planted_core; do
    ${CC:-cc} -c -o "$T/build/server/$p.o" "$T/src/server/$p.c" ||
        { echo "FAIL: cannot compile the planted $p.c"; exit 1; }
done
if sh "$CHECK" "$T/src" "$T/build" >"$T/planted.out" 2>&1; then
    fail "the planted calls were not seen:"; cat "$T/planted.out"
else
    cat "$T/planted.out"
    grep -q '^server/net/planted_net.c: uses server_setup, defined in server/daemon.c: layer net to layer daemon' "$T/planted.out" ||
        fail "no report of net/planted_net.c calling server_setup"
    grep -q '^server/core/planted_core.c: uses server_uptime, defined in server/server.c: layer core to layer base' "$T/planted.out" ||
        fail "no report of core/planted_core.c calling server_uptime"
    grep -q '^check-layers: 2 violation(s)' "$T/planted.out" ||
        fail "not exactly the two planted violations"
fi
[ "$fails" -eq 0 ] || exit 1
echo "PASS: the layer check passes on the tree and sees both planted calls"
