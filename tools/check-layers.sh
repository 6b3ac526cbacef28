#!/bin/sh
# tools/check-layers.sh - the layer check (docs/architecture.md, "Layers").
#
# Reads every #include "..." of the project's C sources and fails, naming
# the file and line, when an include goes against the direction of the
# layers or crosses into a folder its module may not use, or when includes
# form a loop.  Given a build directory, it also checks the calls: from
# nm(1) of the objects built there, every symbol an object of protocol/,
# server/, bpf/ or client-c/ uses and another of those defines (a function
# called, a variable read) must follow the same layers, so a function
# declared in a low header but defined in a higher layer's file (a call
# back up that no include shows) fails too.  Run by the README's test
# command, and with the build directory by tests/check_layers.sh in
# make check (with tools/check-backends.sh after it); run it by hand with
#     sh tools/check-layers.sh [SRCDIR [BUILDDIR]]
#
# Inside server/core/ the store has levels of its own (server/core/
# store_record.h): 1 the record, 2 the index, 3 the policies, 4 the
# operations, 5 the store's life.  A file may include only headers of its
# level or below, and with a build directory each object of the store may
# use only symbols defined at its level or below, an operation none of
# another operation's file.  A store file with no level fails, and so does
# a build directory in which a file of the store has no object: the calls
# would go unchecked.  Without a build directory (the README's command, run
# before anything is built) only the includes are checked, and it says so.
#
# A quoted include is resolved as the compiler does here: a name with a
# slash is a path from the top of the tree (-I$(top_srcdir), or a generated
# header under -I$(top_builddir)); a bare name is first the including
# file's own folder, then client-c/ (the tests' -I for mdcached.h).
set -u
# this script's folder, where check-backends.sh is too
tools_dir=$(cd "$(dirname "$0")" && pwd) || exit 2
# both made absolute: the checks below run from the top of the tree
top=$(cd "${1:-$(dirname "$0")/..}" && pwd) || exit 2
build=${2:-}
if [ -n "$build" ]; then
    build=$(cd "$build" && pwd) || exit 2
fi
cd "$top" || exit 2

# Every C source and header of the project, bench and tests included.
files=$(find protocol server bpf client-c client-php tests bench \
    -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)

# the objects built from SRC (a .c of the tree) in $build: automake names
# them DIR/BASE.o, or DIR/TARGET-BASE.o with per-target flags; libtool's
# PIC objects are in DIR/.libs/ (the only ones with --disable-static)
objects_of() {
    d=${1%/*}; b=${1##*/}; b=${b%.c}
    for o in "$build/$d/$b.o" "$build/$d"/*-"$b.o" \
        "$build/$d/.libs/$b.o" "$build/$d/.libs"/*-"$b.o"; do
        [ -f "$o" ] && echo "$o"
    done
}

# One line per include: i FILE LINE TARGET; with a build directory, one per
# global symbol an object defines (d FILE SYMBOL), then one per symbol it
# uses (u FILE SYMBOL), FILE being the object's source
{
    for f in $files; do
        awk -v f="$f" '
            /^[ \t]*#[ \t]*include[ \t]*"/ {
                s = $0; sub(/^[^"]*"/, "", s); sub(/".*$/, "", s)
                print "i", f, NR, s
            }' "$f"
    done
    if [ -n "$build" ]; then
        # the daemon's and the library's sources (not the BPF programs,
        # whose objects are BPF, nor tests and bench, which may use anything)
        srcs=$(find protocol server bpf client-c -type f -name '*.c' \
            ! -name '*.bpf.c' 2>/dev/null | sort)
        nobj=0
        for kind in d u; do
            for f in $srcs; do
                for o in $(objects_of "$f"); do
                    nobj=$((nobj + 1))
                    nm -P "$o" | awk -v k="$kind" -v f="$f" '
                        k == "d" && $2 ~ /^[TDBRCGSVW]$/ { print "d", f, $1 }
                        k == "u" && $2 == "U" { print "u", f, $1 }'
                done
            done
        done
        [ "$nobj" -gt 0 ] || echo "x $build"
        # every file of the store's levels must have been seen
        for f in $(find server/core -type f -name 'store*.c' | sort) \
            server/core/tags.c server/core/dump.c; do
            [ -n "$(objects_of "$f")" ] || echo "o $f $build"
        done
    fi
} | awk -v top="$top" '
# module(path): the layer a file belongs to
function module(p,   b) {
    if (p ~ /^protocol\//) return "protocol"
    if (p ~ /^server\/core\//) return "core"
    if (p ~ /^server\/proto\//) return "proto"
    if (p ~ /^server\/net\//) return "net"
    if (p ~ /^server\//) {
        b = p; sub(/^server\//, "", b)
        if (b ~ /^(server|stats|log|options|options_mc|queue|addr|auth)\.[ch]$/) return "base"
        if (b ~ /^report\.[ch]$/) return "report"
        # the Prometheus endpoint renders the same counters as the report
        if (b ~ /^metrics\.[ch]$/) return "report"
        # dumper: the dump thread and loading at start, part of the lifecycle;
        # notify: its readiness messages to systemd
        if (b ~ /^(daemon|dumper|notify)\.[ch]$/) return "daemon"
        if (b == "main.c") return "main"
        return "server-other"
    }
    if (p ~ /^bpf\/.*\.bpf\.c$/) return "bpfprog"
    if (p == "bpf/mirror_layout.h") return "layout"
    if (p ~ /^bpf\//) return "xdp"
    if (p ~ /^client-c\//) return "client"
    if (p ~ /^client-php\//) return "php"
    if (p ~ /^bench\//) return "bench"
    if (p ~ /^tests\//) return "tests"
    return "unknown"
}
# slevel(path): the level of a file in the store (store_record.h), -1 for a
# file of server/core/ under them all (alloc, lock, rbtree, readers, the
# public store.h ...), 0 for a store file with no level
function slevel(p,   b) {
    if (p !~ /^server\/core\//) return -1
    b = p; sub(/^server\/core\//, "", b)
    if (b ~ /^(store_record\.[ch]|store_hash\.h|tags\.h)$/) return 1
    if (b ~ /^(store_index\.h|store_forest\.c|store_hooks\.c|tags\.c)$/) return 2
    if (b ~ /^(store_policy\.h|store_expiry\.c|store_evict\.c|store_write\.c)$/) return 3
    if (b ~ /^(store_get|store_put|store_counter|store_tag)\.c$/) return 4
    if (b ~ /^(store\.c|store_check\.c|dump\.[ch])$/) return 5
    if (b == "store.h") return -1
    if (b ~ /^store/) return 0
    return -1
}
# the level rule of the store for a use of t by f; "" when allowed
function slevel_bad(f, t,   lf, lt) {
    lf = slevel(f); lt = slevel(t)
    if (lf == 0) return "a file of the store with no level (tools/check-layers.sh, slevel)"
    if (lf < 0 || lt < 0 || f == t) return ""
    if (lt == 0) return "a file of the store with no level (tools/check-layers.sh, slevel)"
    if (lt > lf) return "store level " lf " to level " lt ", above it"
    if (lf == 4 && lt == 4) return "from one operation of the store to another (move what they share down a level)"
    return ""
}
function exists(p,   cmd, r) {
    if (p in seen_exist) return seen_exist[p]
    cmd = "test -f \"" top "/" p "\""
    r = (system(cmd) == 0)
    seen_exist[p] = r
    return r
}
BEGIN {
    # allowed[from, to]: the layers, top to bottom (docs/architecture.md)
    n = split("protocol:protocol " \
              "core:core " \
              "base:base base:core base:protocol " \
              "net:net net:base net:core net:protocol " \
              "report:report report:base report:core report:protocol report:xdp " \
              "proto:proto proto:net proto:report proto:base proto:core proto:protocol " \
              "xdp:xdp xdp:base xdp:core xdp:protocol " \
              "bpfprog:bpfprog bpfprog:layout xdp:layout layout:layout " \
              "daemon:daemon daemon:base daemon:core daemon:protocol daemon:net " \
              "daemon:proto daemon:report daemon:xdp " \
              "main:main main:daemon main:base " \
              "client:client client:protocol " \
              "php:php php:client " \
              "bench:bench bench:protocol bench:core bench:client", a, " ")
    for (i = 1; i <= n; i++) { split(a[i], e, ":"); allowed[e[1], e[2]] = 1 }
    bad = 0
}
$1 == "x" {
    printf "%s: no object of the tree built there (not a build directory?)\n", $2
    bad++; next
}
$1 == "o" {
    printf "%s: no object of it in %s (not built there? its calls go unchecked)\n", $2, $3
    bad++; next
}
$1 == "d" { ncalls = 1; if (!($3 in def)) def[$3] = $2; next }
$1 == "u" {
    f = $2; sym = $3
    if (!(sym in def) || def[sym] == f || ((f, sym) in used)) next
    used[f, sym] = 1
    t = def[sym]; fm = module(f); tm = module(t)
    if (!((fm, tm) in allowed)) {
        printf "%s: uses %s, defined in %s: layer %s to layer %s, which %s may not use\n", \
            f, sym, t, fm, tm, fm
        bad++
    }
    why = slevel_bad(f, t)
    if (why != "") {
        printf "%s: uses %s, defined in %s: %s\n", f, sym, t, why
        bad++
    }
    next
}
{
    f = $2; line = $3; inc = $4
    if (inc == "config.h") next
    dir = f; sub(/\/[^\/]*$/, "", dir)
    # the PHP extension quote-includes the headers of PHP (php.h, zend_*.h,
    # ext/...), found on the include path phpize sets, outside the tree
    if (f ~ /^client-php\// && !exists(inc) && !exists(dir "/" inc) &&
        !exists("client-c/" inc)) next
    if (inc ~ /\//) {
        t = inc
        if (t !~ /\.skel\.h$/ && !exists(t)) {
            printf "%s:%s: include \"%s\" names no file of the tree\n", f, line, inc
            bad++; next
        }
    } else if (exists(dir "/" inc)) {
        t = dir "/" inc
    } else if (exists("client-c/" inc) && (f ~ /^(tests|bench|client-php)\//)) {
        t = "client-c/" inc
    } else {
        printf "%s:%s: include \"%s\" is not in %s/; name it by its path from the top\n", f, line, inc, dir
        bad++; next
    }
    fm = module(f); tm = module(t)
    if (fm != "tests" && !((fm, tm) in allowed)) {
        printf "%s:%s: include \"%s\" goes from layer %s to layer %s, which %s may not use\n", \
            f, line, inc, fm, tm, fm
        bad++
    }
    why = slevel_bad(f, t)
    if (why != "" && !(f in nolevel)) {
        printf "%s:%s: include \"%s\": %s\n", f, line, inc, why
        bad++
        if (slevel(f) == 0) nolevel[f] = 1
    }
    edges[f] = edges[f] " " t
    nodes[f] = 1; nodes[t] = 1
}
# a loop of includes among files: depth-first search for a back edge
function visit(v,   k, m, i, w) {
    state[v] = 1; path[++depth] = v
    m = split(edges[v], nb, " ")
    for (i = 1; i <= m; i++) {
        w = nb[i]
        if (w == "") continue
        if (state[w] == 1) {
            printf "include loop:"
            for (k = 1; k <= depth; k++) if (path[k] == w) break
            for (; k <= depth; k++) printf " %s ->", path[k]
            printf " %s\n", w
            bad++
        } else if (state[w] == 0) {
            visit(w)
            m = split(edges[v], nb, " ") # nb is global: re-split after the call
        }
    }
    state[v] = 2; depth--
}
END {
    depth = 0
    for (v in nodes) if (state[v] == 0) visit(v)
    if (bad) { printf "check-layers: %d violation(s)\n", bad; exit 1 }
    if (ncalls) print "check-layers: every include and every call follows the layers, no include loops"
    else print "check-layers: every include follows the layers, no loops (calls not checked: no build directory given)"
}'
rc=$?
# and the network backends keep libevent and io_uring to themselves
[ -f "$top/server/net/transport.h" ] && {
    sh "$tools_dir/check-backends.sh" "$top" || rc=1
}
exit $rc
