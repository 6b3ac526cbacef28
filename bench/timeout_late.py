#!/usr/bin/env python3
"""timeout_late.py - how late --idle-timeout closes a silent connection.

    python3 bench/timeout_late.py [NAME=PATH ...] [--conns 40]
        [--spread 1.0] [--rounds 3] [--io epoll,uring] [--threads 1]

Each binary (default: server/mdcached of the current directory) runs with
`-n THREADS --idle-timeout 1` on every backend of --io in turn.  A round opens
CONNS connections, evenly spread over SPREAD seconds, sends nothing, and
times the EOF of each from just before its connect(): the lateness is that
time less the one-second timeout (never negative unless a connection was
closed early).  Printed per binary and backend over all rounds: the
minimum, median, 90th percentile and maximum lateness in ms, and the number
of distinct moments (20 ms apart or more) the connections were closed at.
Wall-clock figures: on a busy machine they include its scheduling delays.
"""
import argparse
import os
import select
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


NET_THREADS = 1


def start(path, io, tmp):
    pf = os.path.join(tmp, "ports")
    if os.path.exists(pf):
        os.unlink(pf)
    p = subprocess.Popen([path, "-p", "auto", "-l", "127.0.0.1",
                          "--port-file", pf, "-n", str(NET_THREADS), "-m", "16",
                          "--io=" + io, "--idle-timeout", "1"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         env=dict(os.environ, NOTIFY_SOCKET=""))
    end = time.monotonic() + 30
    while time.monotonic() < end:
        if p.poll() is not None:
            raise RuntimeError("%s --io=%s exited %d" % (path, io, p.returncode))
        try:
            with open(pf) as f:
                for line in f:
                    if line.startswith("tcp 127.0.0.1:"):
                        return p, int(line.rsplit(":", 1)[1])
        except OSError:
            pass
        time.sleep(0.02)
    p.kill()
    raise RuntimeError("%s --io=%s not ready" % (path, io))


def one_round(port, conns, spread):
    socks, t0, late, done = [], [], [], set()
    gap = spread / conns if conns > 1 else 0
    for i in range(conns):
        t = time.monotonic()
        s = socket.create_connection(("127.0.0.1", port))
        s.setblocking(False)
        socks.append(s)
        t0.append(t)
        nxt = t + gap
        # time the EOFs of the earlier ones while spreading the connects
        while True:
            left = nxt - time.monotonic()
            if left <= 0:
                break
            poll(socks, t0, late, done, left)
    end = time.monotonic() + 10
    while len(late) < conns and time.monotonic() < end:
        poll(socks, t0, late, done, 0.5)
    for s in socks:
        s.close()
    return late


def poll(socks, t0, late, done, secs):
    live = [s for i, s in enumerate(socks) if i not in done]
    if not live:
        time.sleep(secs)
        return
    r, _, _ = select.select(live, [], [], secs)
    now = time.monotonic()
    for s in r:
        try:
            d = s.recv(256)
        except BlockingIOError:
            continue
        except OSError:
            d = b""
        if not d:
            i = socks.index(s)
            done.add(i)
            late.append((now - t0[i] - 1.0, now))


def moments(late):
    ts = sorted(t for _, t in late)
    n, last = 0, None
    for t in ts:
        if last is None or t - last >= 0.02:
            n += 1
        last = t
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("servers", nargs="*", help="NAME=PATH of an mdcached")
    ap.add_argument("--conns", type=int, default=40)
    ap.add_argument("--spread", type=float, default=1.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--io", default="epoll,uring")
    ap.add_argument("--threads", type=int, default=1,
                    help="-n: network threads (0: the main thread's loop)")
    a = ap.parse_args()
    global NET_THREADS
    NET_THREADS = a.threads
    servers = [s.split("=", 1) for s in a.servers] or \
        [["this", "server/mdcached"]]
    tmp = tempfile.mkdtemp(prefix="timeout_late.")
    print("%-8s %-6s %5s %8s %8s %8s %8s %8s" %
          ("binary", "io", "conns", "min_ms", "med_ms", "p90_ms", "max_ms",
           "closes"))
    for name, path in servers:
        for io in a.io.split(","):
            lates, nmom = [], 0
            for _ in range(a.rounds):
                p, port = start(path, io, tmp)
                try:
                    r = one_round(port, a.conns, a.spread)
                finally:
                    p.terminate()
                    p.wait()
                lates += [x for x, _ in r]
                nmom += moments(r)
            if not lates:
                print("%-8s %-6s none closed" % (name, io))
                continue
            lates.sort()
            ms = [x * 1000 for x in lates]
            print("%-8s %-6s %5d %8.0f %8.0f %8.0f %8.0f %8.1f" %
                  (name, io, len(ms), ms[0], statistics.median(ms),
                   ms[int(0.9 * (len(ms) - 1))], ms[-1], nmom / a.rounds))
    shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
