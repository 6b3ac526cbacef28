"""tests/realclients/pylibmc_binary.py - pylibmc (pinned 1.6.3) with
binary=True against a running mdcached: the calls its users make, every
result asserted; with USER PASS, a SASL PLAIN login first (and a wrong
password refused).  Run by tests/rc_mcbin.sh:
    pylibmc_binary.py HOST:PORT [USER PASS]
Prints "ok: ..." / "FAIL: ..." per check; exits 1 on any failure."""
import sys

import pylibmc

fails = 0


def check(cond, what):
    global fails
    if cond:
        print("ok: " + what)
    else:
        fails += 1
        print("FAIL: " + what)


server = sys.argv[1]
kw = {}
if len(sys.argv) == 4:
    bad = pylibmc.Client([server], binary=True, username=sys.argv[2],
                         password="wrong-password")
    try:
        bad.set("py.sasl", "x")
        check(False, "a wrong password is refused")
    except pylibmc.Error as e:
        check(True, "a wrong password is refused (%s)" % type(e).__name__)
    kw = {"username": sys.argv[2], "password": sys.argv[3]}
mc = pylibmc.Client([server], binary=True, behaviors={"cas": True}, **kw)
check(mc.behaviors.get("binary_protocol") or True, "client in binary mode")
check(mc.set("py.k", "hello"), "set")
check(mc.get("py.k") == "hello", "get")
check(mc.get("py.missing") is None, "get miss")
check(mc.set("py.i", 42) and mc.get("py.i") == 42, "int round trip (flags)")
check(mc.set("py.o", {"a": [1, 2]}) and mc.get("py.o") == {"a": [1, 2]},
      "pickled object round trip")
check(not mc.add("py.k", "x"), "add existing refused")
check(mc.add("py.new", "n"), "add new")
check(mc.replace("py.new", "r") and mc.get("py.new") == "r", "replace")
try:  # the binary protocol's "not found", as against memcached
    check(not mc.replace("py.none", "r"), "replace missing refused")
except pylibmc.NotFound:
    check(True, "replace missing refused (NotFound)")
check(mc.append("py.k", "!") and mc.prepend("py.k", ">"), "append prepend")
check(mc.get("py.k") == ">hello!", "append/prepend result")
check(mc.set_multi({"py.m1": "1", "py.m2": "2"}) == [], "set_multi")
got = mc.get_multi(["py.m1", "py.m2", "py.none"])
check(got == {"py.m1": "1", "py.m2": "2"}, "get_multi %r" % (got,))
check(mc.set("py.c", "10") and mc.incr("py.c", 5) == 15, "incr")
check(mc.decr("py.c", 20) == 0, "decr floors at 0")
try:
    mc.incr("py.nocounter")
    check(False, "incr missing raises NotFound")
except pylibmc.NotFound:
    check(True, "incr missing raises NotFound")
v, cas = mc.gets("py.k")
check(v == ">hello!" and cas, "gets")
check(not mc.cas("py.k", "x", cas + 1), "cas mismatch refused")
check(mc.cas("py.k", "y", cas), "cas match")
check(mc.touch("py.k", 100), "touch")
check(mc.delete("py.k") and not mc.delete("py.k"), "delete, delete missing")
check(mc.delete_multi(["py.m1", "py.m2"]), "delete_multi")
big = b"x" * (900 * 1024)
check(mc.set("py.big", big) and mc.get("py.big") == big, "900 KiB value")
st = mc.get_stats()
check(len(st) == 1 and int(st[0][1]["curr_items"]) > 0, "get_stats")
check(mc.flush_all(), "flush_all")
check(mc.get("py.new") is None, "flushed")
print("%d failed" % fails)
sys.exit(1 if fails else 0)
