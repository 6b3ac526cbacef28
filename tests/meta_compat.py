#!/usr/bin/env python3
"""tests/meta_compat.py - the meta commands (mg ms md ma mn me) of mdcached
and of memcached 1.6.18, byte for byte on the same inputs.

Every case runs against both daemons, one request at a time on one
connection of each (each request followed by "mn\\r\\n", so a reply is
known whole when "MN\\r\\n" closes it, quiet flags included).  A case has
a key of its own.  What may differ and is not compared:
- CAS values: memcached counts its own; a reply's " c<n>" (n > 0) reads
  " c<cas>", and "{C}" in a request is replaced by the last CAS that
  daemon sent on this case.
- a figure in seconds (t, the TTL left; l, the time since the last
  access) one apart: a second may turn between a case's requests on one
  daemon and not on the other.
- the replies listed in DIFFER, with the reason (docs/protocol-text.md,
  section 7, says each).
Every flag memcached 1.6.18 accepts is sent on every meta command, alone
and with its token, on a hit and on a miss.

memcached runs on a unix socket in a private directory (so nothing else
answers for it) when it is installed; without it the test is skipped (77),
and under CI=true as root that is a failure.  Exit 0 pass, 1 fail.
"""
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

MEMCACHED = shutil.which("memcached") or "/usr/bin/memcached"

# Every flag memcached 1.6.18's meta parser accepts (one set, shared by
# mg, ms, md and ma; each command ignores those that mean nothing to it).
FLAGS = ["b", "N30", "T30", "R30", "l", "O123", "P", "L", "k", "s", "t",
         "c", "f", "v", "h", "u", "q", "F7", "C{C}", "MS", "J5", "D2", "I"]
# Flags it refuses (only the newer protocol.txt documents E, x and S).
REFUSED = ["E5", "x", "S3", "Z", "W", "X", "a", "z", "A", "G"]


def mc_text(b):
    return b.decode("latin1")


# Flags whose figure is a count of seconds: a remaining TTL (t) and the
# time since the last access (l).
SECONDS = re.compile(rb" ([tl])([0-9]+)")


def same_reply(x, y):
    """Equal, but for a figure in seconds (t or l flag) one apart: a second
    may turn between a case's store and its read on one server and not on
    the other (a busy machine)."""
    if x == y:
        return True
    if x is None or y is None:
        return False
    if SECONDS.sub(rb" \1<s>", x) != SECONDS.sub(rb" \1<s>", y):
        return False
    return all(abs(int(a[1]) - int(b[1])) <= 1
               for a, b in zip(SECONDS.findall(x), SECONDS.findall(y)))


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(30)
        self.s.connect(path)
        self.buf = b""
        self.cas = None

    def req(self, data):
        """Send one request and mn; the reply before MN (None: closed)."""
        if self.cas is not None:
            data = data.replace(b"{C}", str(self.cas).encode())
        else:
            data = data.replace(b"{C}", b"999999")
        data += b"mn\r\n"
        self.s.sendall(data)
        # as many MN as mn sent (a case may send mn itself): a reply that
        # arrives in pieces is not cut at its first MN
        while (not self.buf.endswith(b"MN\r\n")
               or self.buf.count(b"MN\r\n") < data.count(b"mn\r\n")):
            d = self.s.recv(65536)
            if not d:
                return None
            self.buf += d
        out, self.buf = self.buf[:-4], b""
        m = re.findall(rb" c([1-9][0-9]*)", out)
        if m:
            self.cas = int(m[-1])
        return re.sub(rb" c[1-9][0-9]*", b" c<cas>", out)

    def close(self):
        self.s.close()


def cases():
    """(name, [request, ...]): each runs on a key of its own."""
    out = []
    n = 0

    def key():
        nonlocal n
        n += 1
        return "mc%d" % n

    def add(name, reqs):
        k = key()
        out.append((name, [r.replace("K", k).encode() for r in reqs]))

    for f in FLAGS + REFUSED:
        b64 = f == "b"
        k = "bWMx" if b64 else "K"  # "mc1" in base64
        add("mg %s miss" % f, ["mg %s %s\r\n" % (k, f)])
        add("mg %s hit" % f, ["ms K 2 T0 F3 c\r\nhi\r\n",
                              "mg %s %s\r\n" % (k, f),
                              "mg K v f c s t\r\n"])
        add("ms %s miss" % f, ["ms %s 2 %s\r\nhi\r\n" % (k, f),
                               "mg K v f c t\r\n"])
        add("ms %s hit" % f, ["ms K 2 c\r\nab\r\n",
                              "ms %s 2 %s\r\nhi\r\n" % (k, f),
                              "mg K v f c t\r\n"])
        add("md %s miss" % f, ["md %s %s\r\n" % (k, f)])
        add("md %s hit" % f, ["ms K 2 c\r\nab\r\n", "md %s %s\r\n" % (k, f),
                              "mg K v f t\r\n"])
        add("ma %s miss" % f, ["ma %s %s\r\n" % (k, f), "mg K v f t\r\n"])
        add("ma %s hit" % f, ["ms K 1 c\r\n5\r\n", "ma %s %s\r\n" % (k, f),
                              "mg K v f t\r\n"])
        add("me %s" % f, ["me K %s\r\n" % f])
    # The two of the issue: a Rust client's append and its compare-CAS
    # read.
    add("ms MA N60 miss", ["ms K 4 MA N60\r\nabcd\r\n", "mg K v\r\n"])
    add("ms MA N60 hit", ["ms K 2\r\nxy\r\n", "ms K 4 MA N60\r\nabcd\r\n",
                          "mg K v\r\n"])
    add("ms MP", ["ms K 2\r\nxy\r\n", "ms K 2 MP\r\nab\r\n", "mg K v\r\n"])
    add("mg v f c C2 miss", ["mg K v f c C2\r\n"])
    add("mg v f c C hit", ["ms K 2 c\r\nab\r\n", "mg K v f c C{C}\r\n",
                           "mg K v f c C1\r\n"])
    # modes, flags that combine
    for mode in "SEAPR":
        add("ms M%s miss" % mode, ["ms K 2 M%s\r\nab\r\n" % mode,
                                   "mg K v\r\n"])
        add("ms M%s hit" % mode, ["ms K 2\r\nxy\r\n",
                                  "ms K 2 M%s k O9 c\r\nab\r\n" % mode,
                                  "mg K v\r\n"])
        add("ms M%s C hit" % mode, ["ms K 2 c\r\nxy\r\n",
                                    "ms K 2 M%s C{C} q\r\nab\r\n" % mode,
                                    "ms K 2 M%s C1\r\nab\r\n" % mode,
                                    "mg K v\r\n"])
    for mode in ["I", "D", "+", "-"]:
        add("ma M%s" % mode, ["ms K 2\r\n10\r\n",
                              "ma K M%s D3 v\r\n" % mode,
                              "ma K M%s N0 J7 v t\r\n" % mode])
    add("ma N J miss", ["ma K N0 J7 v\r\n", "ma K v\r\n"])
    add("ma C", ["ms K 1 c\r\n1\r\n", "ma K C{C} v c\r\n", "ma K C1 v\r\n"])
    add("ma non-numeric", ["ms K 1\r\nx\r\n", "ma K\r\n"])
    add("md I T", ["ms K 2\r\nab\r\n", "md K I T30\r\n", "mg K v t c\r\n",
                   "mg K v\r\n"])
    add("md C", ["ms K 2 c\r\nab\r\n", "md K C1\r\n", "md K C{C} q\r\n",
                 "mg K v\r\n"])
    add("mg N vivify", ["mg K N30 v t\r\n", "mg K v t\r\n"])
    add("mg q hit", ["ms K 2\r\nab\r\n", "mg K q v\r\n", "mg K q k\r\n"])
    add("mg q miss", ["mg K q v\r\n", "mg K q k O1\r\n"])
    add("ms q", ["ms K 2 q\r\nab\r\n", "ms K 2 q ME\r\nab\r\n"])
    add("ma q", ["ma K q\r\n", "ms K 1\r\n1\r\n", "ma K q\r\n",
                 "mg K v\r\n"])
    # errors: duplicates, bad tokens, one per command
    for cmd, rest in (("mg", ""), ("ms", " 2"), ("md", ""), ("ma", "")):
        data = "\r\nab\r\n" if cmd == "ms" else "\r\n"
        for fl in ["v v", "T30 T1", "q q", "Tx", "Nx", "Rx", "Cx", "Fx",
                   "Jx", "Dx", "M", "MSS", "MX", "O" + "o" * 40,
                   "P P", "L L"]:
            add("%s %s" % (cmd, fl), ["%s K%s %s%s" % (cmd, rest, fl, data),
                                      "mg K v\r\n"])
        add("%s b bad" % cmd, ["%s !!!!%s b%s" % (cmd, rest, data)])
    # the order of flag errors: an unknown or repeated flag at once, else
    # the last bad token
    for cmd in ("mg", "md", "ma"):
        for fl in ["Tx Z", "Tx Jx", "Jx Tx", "Fx Tx", "Tx Fx", "Tx b",
                   "Dx Cx", "Cx Dx", "MX O" + "o" * 40, "O" + "o" * 40 + " MX",
                   "Tx Tx", "v Z v", "M1 k"]:
            add("%s %s" % (cmd, fl), ["%s K %s\r\n" % (cmd, fl)])
        add("%s b Tx" % cmd, ["%s !!!! b Tx\r\n" % cmd])
        add("%s b k" % cmd, ["ms bWMyMDAw 1 b\r\n1\r\n",
                             "%s bWMyMDAw b k O1 v c\r\n" % cmd])
    for fl in ["Tx Z", "Jx Tx", "Fx Tx", "MX", "MX Tx", "MX O" + "o" * 40,
               "O" + "o" * 40, "Tx b"]:
        add("ms %s" % fl, ["ms K 2 %s\r\nab\r\n" % fl, "mg K v\r\n"])
    add("ms b bad", ["ms !!!! 2 b\r\nab\r\n"])
    add("me miss", ["me K\r\n"])
    add("me b", ["me bWMx b\r\n", "me a b\r\n", "me a x b\r\n",
                 "me !!!! b\r\n", "me\r\n"])
    add("me hit", ["ms K 2\r\nab\r\n", "me K\r\n"])
    add("mg T t", ["ms K 2 T100\r\nab\r\n", "mg K t T30\r\n"])
    add("long key", ["mg %s v\r\n" % ("k" * 251),
                     "ms %s 2\r\nab\r\n" % ("k" * 251),
                     "md %s\r\n" % ("k" * 251), "ma %s\r\n" % ("k" * 251)])
    add("mn", ["mn\r\n"])
    return out


# Replies that differ on purpose: case name -> reason.  A case listed here
# must still differ (so the list stays true).
DIFFER = {
    "me hit": "me reports mdcached's fields (exp cas flags size tags)",
    "mg T t": "t before T reports the new TTL (memcached 1.6.18: the old)",
    "long key": "a refused ms discards its data block (memcached runs it as "
                "a command)",
}


def start_memcached(tmp):
    path = os.path.join(tmp, "mc.sock")
    argv = [MEMCACHED, "-s", path, "-a", "0777", "-m", "64"]
    if os.geteuid() == 0:
        argv += ["-u", "nobody"]
    log = open(os.path.join(tmp, "mc.log"), "wb")
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log,
                            stderr=subprocess.STDOUT)
    # memcached sends no readiness signal: wait for its socket to accept
    # (bounded; only a broken start reaches the bound)
    deadline = time.monotonic() + 30
    while True:
        if proc.poll() is not None:
            raise RuntimeError("memcached exited %d" % proc.returncode)
        try:
            c = Conn(path)
            c.close()
            return proc, path
        except OSError:
            if time.monotonic() > deadline:
                proc.kill()
                raise
            time.sleep(0.02)


def main():
    if not os.access(MEMCACHED, os.X_OK):
        if os.environ.get("CI") == "true" and os.geteuid() == 0:
            print("FAIL: memcached is not installed (tools/deps.sh)")
            return 1
        print("SKIP: memcached is not installed")
        return 77
    tmp = tempfile.mkdtemp(prefix="mdc-metacompat-")
    os.chmod(tmp, 0o777)
    mc, mc_path = start_memcached(tmp)
    d = harness.start(["-n", "1", "-m", "64"])
    bad = 0
    try:
        ver = subprocess.run([MEMCACHED, "-V"], capture_output=True,
                             text=True).stdout.strip()
        print("against %s" % ver)
        if "1.6.18" not in ver:
            print("note: the reference is memcached 1.6.18")
        for name, reqs in cases():
            a, b = Conn(d.unix_path), Conn(mc_path)
            ra, rb = [], []
            for r in reqs:
                ra.append(a.req(r))
                rb.append(b.req(r))
            a.close()
            b.close()
            same = len(ra) == len(rb) and all(
                same_reply(x, y) for x, y in zip(ra, rb))
            if name in DIFFER:
                if same:
                    print("FAIL %s: listed as differing (%s), but equal" %
                          (name, DIFFER[name]))
                    bad += 1
                continue
            if not same:
                bad += 1
                print("FAIL %s" % name)
                for r, x, y in zip(reqs, ra, rb):
                    mark = "  " if same_reply(x, y) else "!="
                    print("  %s %r\n     mdcached  %r\n     memcached %r" %
                          (mark, r, x, y))
        n = len(cases())
        print("%d cases, %d differ" % (n, bad))
    finally:
        mc.terminate()
        mc.wait()
        if d.stop() != 0:
            bad += 1
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
