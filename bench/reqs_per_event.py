#!/usr/bin/env python3
"""
reqs_per_event.py - server CPU per request of a deep text pipeline under
different -R (requests per connection per event-loop turn), side by side in
alternating rounds (bench/, not run by make check).

Each round starts mdcached -n 1 -R N, stores 200 small values, then sends
BATCHES batches of 200 pipelined "get" and reads the replies; the daemon's
utime+stime over the batches (/proc/PID/stat) divided by the requests is
reported.  Usage: python3 bench/reqs_per_event.py [BIN] [BATCHES] [R...]
"""
import os
import socket
import subprocess
import sys
import time

BIN = sys.argv[1] if len(sys.argv) > 1 else "server/mdcached"
BATCHES = int(sys.argv[2]) if len(sys.argv) > 2 else 4000
RS = [int(x) for x in sys.argv[3:]] or [20, 100, 1000000]
DEPTH = 200


def cpu(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def run(r, port):
    p = subprocess.Popen([BIN, "-p", str(port), "-n", "1", "-R", str(r),
                          "-v", "0"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    s = None
    for _ in range(100):
        try:
            s = socket.create_connection(("127.0.0.1", port))
            break
        except OSError:
            time.sleep(0.05)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(b"".join(b"set k%d 0 0 10 noreply\r\n0123456789\r\n" % i
                       for i in range(DEPTH)))
    batch = b"".join(b"get k%d\r\n" % i for i in range(DEPTH))
    want = len(b"".join(b"VALUE k%d 0 10\r\n0123456789\r\nEND\r\n" % i
                        for i in range(DEPTH)))
    c0 = cpu(p.pid)
    for _ in range(BATCHES):
        s.sendall(batch)
        got = 0
        while got < want:
            got += len(s.recv(1 << 20))
    c1 = cpu(p.pid)
    s.close()
    p.terminate()
    p.wait()
    return (c1 - c0) / (BATCHES * DEPTH) * 1e6


def main():
    res = {r: [] for r in RS}
    port = 21000 + os.getpid() % 1000
    for _ in range(3):
        for r in RS:
            res[r].append(run(r, port))
            port += 1
    for r in RS:
        print("-R %-8d %s us server CPU/request" %
              (r, " ".join("%.2f" % x for x in res[r])))


main()
