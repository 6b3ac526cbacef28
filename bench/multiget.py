#!/usr/bin/env python3
"""multiget.py - server CPU per key of text multi-key GETs, builds side by side.

    python3 bench/multiget.py old=/path/to/old/mdcached new=server/mdcached
        [--keys 1000000] [--batch 100] [--secs 3] [--rounds 3]

Each server runs with `-n 1 -t 0 -m 2048` on a Unix socket, pinned to CPU 0
(the client on CPU 1), and is prefilled with the same keys (16 bytes,
32-byte values).  Then ROUNDS rounds, every server in turn: for SECS seconds
"get k1 .. kBATCH" of random keys, one request at a time.  The figure is the
server's CPU time (utime + stime from /proc/PID/stat) over the window
divided by the keys answered; the median over rounds is printed with the
range, and each server's ratio to the first.  Every key must hit.
"""
import argparse
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time

TICK = os.sysconf("SC_CLK_TCK")


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def key(i):
    return b"%016x" % ((i * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF)


def recv_until(s, buf, marker):
    while True:
        i = buf.find(marker)
        if i >= 0:
            return buf[: i + len(marker)], buf[i + len(marker):]
        d = s.recv(1 << 20)
        if not d:
            raise RuntimeError("server closed the connection")
        buf += d


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("servers", nargs="+", help="NAME=PATH of an mdcached binary")
    ap.add_argument("--keys", type=float, default=1e6)
    ap.add_argument("--batch", type=int, default=100)
    ap.add_argument("--secs", type=float, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    nkeys = int(a.keys)
    os.sched_setaffinity(0, {1 % os.cpu_count()})
    tmp = tempfile.mkdtemp(prefix="multiget.")
    procs, socks = [], []
    val = b"v" * 32
    try:
        for i, sv in enumerate(a.servers):
            name, path = sv.split("=", 1)
            sp = os.path.join(tmp, "s%d.sock" % i)
            p = subprocess.Popen(["taskset", "-c", "0", path, "-n", "1", "-t", "0", "-m", "2048",
                                  "-s", sp, "-p", "0"], stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            for _ in range(100):
                if os.path.exists(sp):
                    break
                time.sleep(0.1)
            s = socket.socket(socket.AF_UNIX)
            s.connect(sp)
            procs.append((name, p))
            socks.append(s)
            buf = b""
            for lo in range(0, nkeys, 1000):
                hi = min(nkeys, lo + 1000)
                s.sendall(b"".join(b"set %s 0 0 32 noreply\r\n%s\r\n" % (key(k), val)
                                   for k in range(lo, hi)))
            s.sendall(b"get %s\r\n" % key(nkeys - 1))
            _, buf = recv_until(s, buf, b"END\r\n")
        res = {n: [] for n, _ in procs}
        rng = random.Random(1)
        for r in range(a.rounds):
            for (name, p), s in zip(procs, socks):
                buf = b""
                n = 0
                t_end = time.monotonic() + a.secs
                c0 = cpu_s(p.pid)
                while time.monotonic() < t_end:
                    ks = [key(rng.randrange(nkeys)) for _ in range(a.batch)]
                    s.sendall(b"get " + b" ".join(ks) + b"\r\n")
                    rep, buf = recv_until(s, buf, b"END\r\n")
                    hits = rep.count(b"VALUE ")
                    if hits != a.batch:
                        raise RuntimeError("%s: %d of %d keys hit" % (name, hits, a.batch))
                    n += hits
                c1 = cpu_s(p.pid)
                res[name].append(1e9 * (c1 - c0) / n)
                print("round %d %-8s %8.1f ns server CPU per key (%d keys)" %
                      (r + 1, name, res[name][-1], n), flush=True)
        base = None
        print("load %s" % " ".join(open("/proc/loadavg").read().split()[:3]))
        for name, _ in procs:
            v = res[name]
            m = statistics.median(v)
            base = base or m
            print("%-8s %8.1f ns/key [%.1f-%.1f]  x%.3f of the first" % (name, m, min(v), max(v),
                                                                         m / base))
    finally:
        for _, p in procs:
            p.terminate()
            p.wait()
        for f in os.listdir(tmp):
            os.unlink(os.path.join(tmp, f))
        os.rmdir(tmp)


if __name__ == "__main__":
    sys.exit(main())
