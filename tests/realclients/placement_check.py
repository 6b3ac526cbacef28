#!/usr/bin/env python3
"""twemproxy and libmdcached place keys alike (tests/rc_twemproxy.sh):

  placement_check.py PROXY_PORT KETAMA_PLACE BACKEND_PORT...

With nutcracker's `hash: md5`, `distribution: ketama` and servers listed
without names, in the order of libmdcached's pool (docs/client-c.md,
"twemproxy"):
  - 300 keys set through the proxy; each asked of every backend directly:
    the backend holding it is the one libmdcached's ketama picks
    (KETAMA_PLACE place), and a get through the pool finds it;
  - records with tags stored through libmdcached (KETAMA_PLACE tags), the
    tag query through libmdcached finds them all, and plain gets through
    the proxy read each of them: the tag commands go through libmdcached,
    the plain ones through the proxy, with the same servers.
Prints ok/FAIL lines; exit 1 on any failure."""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mc import Conn  # noqa: E402

NKEYS = 300
NTAGGED = 30
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
    return b"rc:place:%03d" % i


def main(argv):
    proxy, tool, backends = argv[1], argv[2], argv[3:]
    specs = ["127.0.0.1:%s" % b for b in backends]
    p = Conn(proxy)

    bad = [i for i in range(NKEYS)
           if p.cmd(b"set %s 0 0 %d\r\n%s\r\n" % (key(i), len(key(i)), key(i)))
           != b"STORED"]
    check("%d sets through the proxy" % NKEYS, not bad, repr(bad[:5]))

    # where each key is, asked of every backend directly
    conns = [Conn(b) for b in backends]
    where = []
    for i in range(NKEYS):
        w = [n for n, c in enumerate(conns) if c.get(key(i)) is not None]
        where.append(w[0] if len(w) == 1 else None)
    check("each key on exactly one backend", None not in where,
          "%d not" % where.count(None))

    # libmdcached's pick for each, and a get through its pool
    out = subprocess.run([tool, "place"] + specs, check=False,
                         input=b"".join(key(i) + b"\n" for i in range(NKEYS)),
                         stdout=subprocess.PIPE, timeout=60).stdout.split(b"\n")
    picks = [l.split() for l in out if l]
    check("libmdcached placed %d keys" % NKEYS, len(picks) == NKEYS,
          "%d lines" % len(picks))
    same = sum(1 for i, f in enumerate(picks)
               if i < NKEYS and int(f[0]) == where[i])
    found = sum(1 for i, f in enumerate(picks)
                if f[1] == b"hit" and int(f[2]) == len(key(i)))
    print("same server for %d of %d keys; %d found through libmdcached"
          % (same, NKEYS, found))
    check("twemproxy and libmdcached pick the same server for every key",
          same == NKEYS, "%d of %d" % (same, NKEYS))
    check("libmdcached's pool finds every key the proxy stored",
          found == NKEYS, "%d of %d" % (found, NKEYS))
    per = [where.count(n) for n in range(len(backends))]
    check("every backend holds some keys", all(per), repr(per))

    # tags through libmdcached, plain gets through the proxy
    r = subprocess.run([tool, "tags", str(NTAGGED)] + specs, check=False,
                       stdout=subprocess.PIPE, timeout=60).stdout.split()
    check("libmdcached stores %d tagged records and finds them by tag"
          % NTAGGED,
          r[:6] == [b"stored", b"%d" % NTAGGED, b"tagged", b"%d" % NTAGGED,
                    b"rc", b"0"], repr(r))
    got = 0
    for i in range(NTAGGED):
        k = b"rc:tag:%03d" % i
        if p.get_multi([k]) == {k: (0, b"tagged-%03d" % i)}:
            got += 1
    check("the proxy reads every record libmdcached stored with tags",
          got == NTAGGED, "%d of %d" % (got, NTAGGED))

    print("placement: %d passed, %d failed" % (oks, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
