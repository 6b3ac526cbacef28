#!/usr/bin/env python3
"""The twemproxy checks of tests/rc_twemproxy.sh:

  proxy_check.py PROXY_PORT BACKEND_PORT...

Through the proxy: 300 keys set (each STORED), each read back, multi-gets
that span the backends, gets+cas (and a stale cas), incr/decr, delete.
On the backends, asked directly: every key on exactly one backend with the
value set, every backend holding some.  Prints ok/FAIL lines; exit 1 on any
failure."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mc import Conn  # noqa: E402

NKEYS = 300
oks = 0
fails = 0


def check(what, cond, detail=""):
    global oks, fails
    if cond:
        oks += 1
        print("ok: " + what)
    else:
        fails += 1
        print("FAIL: " + what + (": " + detail if detail else ""))


def key(i):
    return b"rc:tw:%03d" % i


def val(i):
    return b"value-%d-" % i + b"x" * (i % 37)


def main(argv):
    proxy = argv[1]
    backends = argv[2:]
    p = Conn(proxy)

    # 300 sets through the proxy
    bad = []
    for i in range(NKEYS):
        v = val(i)
        r = p.cmd(b"set %s %d 0 %d\r\n%s\r\n" % (key(i), i, len(v), v))
        if r != b"STORED":
            bad.append((i, r))
    check("%d sets through the proxy all STORED" % NKEYS, not bad,
          repr(bad[:5]))

    # each read back through the proxy, one get per key
    bad = []
    for i in range(NKEYS):
        got = p.get_multi([key(i)])
        if got != {key(i): (i, val(i))}:
            bad.append((i, got))
    check("%d gets through the proxy return what was set" % NKEYS, not bad,
          repr(bad[:5]))

    # multi-get through the proxy: twemproxy splits it over the backends
    keys = [key(i) for i in range(0, NKEYS, 3)] + [b"rc:tw:missing"]
    got = p.get_multi(keys)
    want = {key(i): (i, val(i)) for i in range(0, NKEYS, 3)}
    check("multi-get of %d keys (one missing) through the proxy" % len(keys),
          got == want, "%d of %d returned" % (len(got), len(want)))

    # on the backends, asked directly
    conns = [(b, Conn(b)) for b in backends]
    per = {b: 0 for b in backends}
    bad = []
    for i in range(NKEYS):
        where = [b for b, c in conns if c.get(key(i)) is not None]
        vals = [c.get(key(i)) for b, c in conns if b in where]
        if len(where) != 1 or vals != [val(i)]:
            bad.append((key(i), where))
        for b in where:
            per[b] += 1
    check("each key on exactly one backend, with its value", not bad,
          repr(bad[:5]))
    print("keys per backend: " +
          ", ".join("%s: %d" % (b, n) for b, n in per.items()))
    check("every backend holds some keys", all(n > 0 for n in per.values()),
          repr(per))
    check("backends hold %d keys in all" % NKEYS, sum(per.values()) == NKEYS,
          repr(per))

    # gets + cas through the proxy
    k = key(7)
    r = p.cmd(b"gets " + k + b"\r\n", multi=True)
    f = r[0].split() if r else []
    cas = int(f[4]) if len(f) == 5 and f[0] == b"VALUE" else None
    check("gets through the proxy returns a cas unique", cas is not None,
          repr(r))
    if cas is not None:
        r = p.cmd(b"cas %s 0 0 3 %d\r\nnew\r\n" % (k, cas))
        check("cas with the unique through the proxy", r == b"STORED", repr(r))
        r = p.cmd(b"cas %s 0 0 3 %d\r\nold\r\n" % (k, cas))
        check("stale cas through the proxy", r == b"EXISTS", repr(r))
        check("value after cas", p.get_multi([k]) == {k: (0, b"new")},
              repr(p.get_multi([k])))

    # incr / decr
    k = b"rc:tw:counter"
    check("set counter", p.cmd(b"set %s 0 0 2\r\n41\r\n" % k) == b"STORED")
    r = p.cmd(b"incr %s 1\r\n" % k)
    check("incr through the proxy", r == b"42", repr(r))
    r = p.cmd(b"decr %s 2\r\n" % k)
    check("decr through the proxy", r == b"40", repr(r))
    r = p.cmd(b"incr rc:tw:nocounter 1\r\n")
    check("incr missing through the proxy", r == b"NOT_FOUND", repr(r))

    # delete through the proxy, gone from every backend
    k = key(11)
    r = p.cmd(b"delete " + k + b"\r\n")
    check("delete through the proxy", r == b"DELETED", repr(r))
    r = p.cmd(b"delete " + k + b"\r\n")
    check("delete again through the proxy", r == b"NOT_FOUND", repr(r))
    check("deleted key on no backend",
          all(c.get(k) is None for _, c in conns))
    check("deleted key missing through the proxy", p.get_multi([k]) == {})

    print("twemproxy: %d passed, %d failed" % (oks, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
