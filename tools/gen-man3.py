#!/usr/bin/env python3
"""tools/gen-man3.py - write the libmdcached(3) function-group pages
(man/mdc_*.3) from the doc comments of client-c/mdcached.h.  Run it after
changing the header's API; tests/test_man.sh fails when a function of the
header is missing from every page or a page names a function the header
lacks.  Usage: python3 tools/gen-man3.py [SRCDIR]"""
import re, sys, os

top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
hdr = open(os.path.join(top, "client-c/mdcached.h")).read()

GROUPS = [
    ("mdc_create", "create, configure and inspect a server handle",
     ["mdc_lib_version", "mdc_strerror", "mdc_create", "mdc_create_tcp", "mdc_create_unix",
      "mdc_destroy", "mdc_set_timeouts", "mdc_set_retry_delay", "mdc_connect",
      "mdc_close", "mdc_check", "mdc_set_auth", "mdc_set_tls", "mdc_error", "mdc_errstr", "mdc_server_name"]),
    ("mdc_get", "fetch records",
     ["mdc_get", "mdc_gat", "mdc_lease_get", "mdc_mget", "mdc_item_free", "mdc_itemset_free"]),
    ("mdc_store", "store, delete and touch records",
     ["mdc_store", "mdc_set", "mdc_add", "mdc_replace", "mdc_cas", "mdc_append",
      "mdc_prepend", "mdc_mset", "mdc_delete", "mdc_delete_stale", "mdc_touch"]),
    ("mdc_incr", "counters and atomic operations on 64-bit values",
     ["mdc_incr", "mdc_decr", "mdc_atomic_add", "mdc_atomic_fetch_add",
      "mdc_atomic_cmpset", "mdc_atomic_read_clear"]),
    ("mdc_get_by_tag", "tag operations: fetch or delete by tag, tag stacks",
     ["mdc_get_by_tag", "mdc_del_by_tag", "mdc_del_by_tag_stale", "mdc_tstack_push", "mdc_tstack_pop"]),
    ("mdc_stats", "server operations: flush, statistics, version, noop, quit",
     ["mdc_flush", "mdc_stats", "mdc_stats_u64", "mdc_version", "mdc_noop", "mdc_quit"]),
    ("mdc_pool", "pools of servers with consistent hashing and tag fan-out",
     None),  # every mdc_pool_* function
]

# every prototype with the comment before it
protos = {}
order = []
# (a comment is the one right before the prototype: no "*/" inside it)
for m in re.finditer(r"/\*\*((?:(?!\*/).)*?)\*/\s*\n((?:[a-z][^;{]*?\b(mdc_\w+)\s*\([^;]*?\));)", hdr, re.S):
    comment, proto, name = m.group(1), m.group(2), m.group(3)
    protos[name] = (comment, " ".join(proto.split()))
    order.append(name)

def esc(s):
    s = s.replace("\\", "\\\\").replace("-", "\\-")
    return s

def render_comment(c):
    lines = [re.sub(r"^\s*\* ?", "", l) for l in c.strip("\n").split("\n")]
    text, params, ret = [], [], None
    cur = None
    for l in lines:
        if l.startswith("@param"):
            m = re.match(r"@param(\[out\])?\s+(\w+)\s*(.*)", l)
            cur = [m.group(2), (("(out) " if m.group(1) else "") + m.group(3))]
            params.append(cur)
        elif l.startswith("@return"):
            cur = ["", l[len("@return"):].strip()]
            ret = cur
        elif cur is not None and l.strip():
            cur[1] += " " + l.strip()
        elif l.strip():
            text.append(l.strip())
    return " ".join(text), params, ret[1] if ret else None

def page(name, title, funcs):
    out = []
    out.append('.\\" %s(3) - written by tools/gen-man3.py from client-c/mdcached.h' % name)
    out.append('.TH %s 3 "2026-11-24" "libmdcached 0.1.0" "Library Functions Manual"' % name.upper().replace("_", "\\_"))
    out.append(".SH NAME")
    out.append(", ".join(esc(f) for f in funcs) + " \\- " + esc(title))
    out.append(".SH LIBRARY")
    out.append("libmdcached, the mdcached client library\n.RI ( \\-lmdcached ,\n.B pkg\\-config libmdcached\\fR)")
    out.append(".SH SYNOPSIS")
    out.append(".nf\n.B #include <mdcached.h>\n.PP")
    for f in funcs:
        out.append(".BI \"" + esc(protos[f][1]).replace('"', '\\(dq') + "\"")
    out.append(".fi")
    out.append(".SH DESCRIPTION")
    for f in funcs:
        text, params, ret = render_comment(protos[f][0])
        out.append(".SS %s()" % esc(f))
        if text:
            out.append(esc(text))
        for p, d in params:
            out.append(".TP\n.I %s\n%s" % (esc(p), esc(d)))
        if ret:
            out.append(".PP\nReturns %s" % esc(ret))
    out.append(".SH RETURN VALUE")
    out.append('Functions returning\n.B int\nreturn\n.B MDC_OK\n(0) on success, a positive server status\n.RB ( MDC_NOT_FOUND ", " MDC_EXISTS ", ...)"'
               '\nwhen the server answered but did not do it, or a negative\n.B MDC_ERR_*\ncode for a client\\-side failure; see\n.BR libmdcached (3).')
    out.append(".SH SEE ALSO")
    others = [g[0] for g in GROUPS if g[0] != name]
    out.append(",\n".join([".BR libmdcached (3)"] + [".BR %s (3)" % esc(o) for o in others]))
    return "\n".join(out) + "\n"

seen = set()
for name, title, funcs in GROUPS:
    if funcs is None:
        funcs = [f for f in order if f.startswith("mdc_pool_")]
    missing = [f for f in funcs if f not in protos]
    if missing:
        sys.exit("gen-man3: not in mdcached.h: %s" % missing)
    seen.update(funcs)
    open(os.path.join(top, "man", name + ".3"), "w").write(page(name, title, funcs))
left = [f for f in order if f not in seen]
if left:
    sys.exit("gen-man3: functions in no group: %s" % left)
# the link pages: one per function, for `man mdc_set'
links = []
for name, title, funcs in GROUPS:
    if funcs is None:
        funcs = [f for f in order if f.startswith("mdc_pool_")]
    links += ["%s.3:%s" % (f, name) for f in funcs if f != name]
open(os.path.join(top, "man", "links.txt"), "w").write("\n".join(links) + "\n")
