#!/usr/bin/env python3
"""conn_mem.py - resident memory per idle TCP connection (issue 24).

Opens N TCP connections to a fresh server from several loopback source
addresses (127.0.0.1, 127.0.0.2, ...: one address has too few ephemeral
ports for big N), each sends one text `get` and reads the reply, then
measures the server's VmRSS growth per connection: VmRSS once every reply
was read, minus VmRSS before the first connect, divided by N.  Side by side
in one run: mdcached -n 4 -t 0 on io_uring, the same on --io=epoll, and
memcached 1.6 -t 4.  "marginal" is the growth over the second half of the
connections alone, divided by their count: the cost of one more connection
once the fixed costs a fresh process pays on its first requests (allocator
arenas and their huge pages, buffer pools, io_uring buffer rings) are paid.

--warm M (default 500; the issue-34 figure): before the first
measurement, M connections run W1 (as --active's, --warm-secs seconds,
after its 100 000 records are stored) and close: the server has then
served that many active connections, so the fixed costs a fresh process
pays on its first requests (io_uring's provided buffers, allocator arenas
and their pages, pools) are paid before "before" is taken and are
neither hidden nor shown by the figure.  --warm 0 measures a fresh
process, as the runs before issue 34 did.

--active M (the second figure): M of the N connections are bench/mdc-load
running W1 (text protocol, 90:10 get:set, 100 000 keys, 32-byte values,
no pipelining) while the N - M others idle; the growth is the highest VmRSS
sampled during the load, less the VmRSS before, over N.

Descriptors: N sockets in this process and N in the server; as root the
limit is raised (RLIMIT_NOFILE) for both.  Not a test: figures go to
docs/performance.md.

usage: bench/conn_mem.py [-n 18000] [--sources 4] [--warm 500]
                         [--warm-secs 3] [--active 0]
                         [-B BUILD_DIR] [--servers uring,epoll,memcached]
                         [-j JSON]
"""
import argparse
import json
import os
import resource
import selectors
import shutil
import socket
import subprocess
import sys
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc):
    for _ in range(200):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited ({proc.returncode})")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on {port}")


def xchg(port, req, end):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(req)
    buf = b""
    while not buf.endswith(end):
        d = s.recv(65536)
        if not d:
            break
        buf += d
    s.close()
    return buf


def stat(port, name):
    for line in xchg(port, b"stats\r\n", b"END\r\n").decode().split("\r\n"):
        f = line.split()
        if len(f) == 3 and f[1] == name:
            return f[2]
    return None


def open_idle(port, n, sources, key, at_half=None):
    """n connections, each with one get answered; returns the sockets.
    at_half() is called once half of them are answered."""
    sel = selectors.DefaultSelector()
    socks = []
    req = b"get " + key + b"\r\n"
    pending = 0
    batch = 500
    i = 0
    done = 0
    while i < n or pending:
        if at_half is not None and done >= n // 2:
            at_half()
            at_half = None
        while i < n and pending < batch:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind((f"127.0.0.{1 + i % sources}", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(req)
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, [b""])
            socks.append(s)
            pending += 1
            i += 1
        for k, _ in sel.select(timeout=10):
            d = k.fileobj.recv(4096)
            if not d:
                raise RuntimeError("server closed a connection")
            k.data[0] += d
            if k.data[0].endswith(b"END\r\n"):
                sel.unregister(k.fileobj)
                pending -= 1
                done += 1
    sel.close()
    return socks


def w1(build, port, conns, extra):
    load = os.path.join(build, "bench", "mdc-load")
    return [load, "-P", "text", "-s", f"127.0.0.1:{port}", "-c", str(conns),
            "-r", "90:10", "-k", "100000", "-K", "16", "-v", "32", "-d", "1",
            "-q"] + extra


def prefill(build, port):
    """W1's 100 000 records, stored before the first measurement: they are
    the cache's memory, not the connections'."""
    subprocess.run(w1(build, port, 1, ["-f", "-D", "1", "-w", "0"]),
                   check=True, stdout=subprocess.DEVNULL)


def run_load(build, port, conns, secs, pid):
    cmd = w1(build, port, conns, ["-D", str(secs), "-w", "1"])
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    peak = 0
    while p.poll() is None:
        peak = max(peak, rss_kib(pid))
        time.sleep(0.2)
    if p.returncode != 0:
        raise RuntimeError(f"mdc-load failed ({p.returncode})")
    return peak


def measure(name, argv, port, args):
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL)
    try:
        wait_port(port, proc)
        key = b"conn-mem-key"
        xchg(port, b"set " + key + b" 0 0 32\r\n" + b"v" * 32 + b"\r\n",
             b"\r\n")
        if args.active > 0 or args.warm > 0:
            prefill(args.build, port)
        if args.warm > 0:
            subprocess.run(w1(args.build, port, args.warm,
                              ["-D", str(args.warm_secs), "-w", "0"]),
                           check=True, stdout=subprocess.DEVNULL)
            for _ in range(100):  # its connections closed on the server
                if int(stat(port, "curr_connections")) <= 2:
                    break
                time.sleep(0.1)
        time.sleep(0.5)
        before = rss_kib(proc.pid)
        t0 = time.time()
        idle = args.conns - args.active
        half = []
        socks = open_idle(port, idle, args.sources, key,
                          lambda: half.append(rss_kib(proc.pid)))
        secs = time.time() - t0
        time.sleep(1.0)
        after = rss_kib(proc.pid)
        row = {"server": name, "cmd": " ".join(argv), "conns": args.conns,
               "warm": args.warm,
               "sources": args.sources, "rss_before_kib": before,
               "rss_after_kib": after,
               "bytes_per_conn": round((after - before) * 1024 / idle),
               # the second half's growth over its count: what one more
               # connection costs once the per-thread fixed costs (arenas,
               # pools, the io_uring buffer rings) are paid
               "marginal_bytes_per_conn": round(
                   (after - half[0]) * 1024 / (idle - idle // 2)),
               "open_s": round(secs, 1)}
        if name.startswith("mdcached"):
            row["conn_buffers_lent"] = stat(port, "conn_buffers_lent")
            row["conn_buffer_pool_misses"] = stat(port,
                                                  "conn_buffer_pool_misses")
        if args.active > 0:
            peak = run_load(args.build, port, args.active, args.duration,
                            proc.pid)
            row["active"] = args.active
            row["rss_peak_active_kib"] = peak
            row["bytes_per_conn_active"] = round(
                (peak - before) * 1024 / args.conns)
        curr = stat(port, "curr_connections")
        row["curr_connections"] = curr
        for s in socks:
            s.close()
        return row
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", "--conns", type=int, default=18000)
    ap.add_argument("--sources", type=int, default=4)
    ap.add_argument("--warm", type=int, default=500)
    ap.add_argument("--warm-secs", type=int, default=3)
    ap.add_argument("--active", type=int, default=0)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("-B", "--build", default=os.getcwd())
    ap.add_argument("--servers", default="uring,epoll,memcached")
    ap.add_argument("-j", "--json")
    args = ap.parse_args()

    want = args.conns * 2 + 1000
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, want),
                                                    max(hard, want)))
    except (ValueError, OSError):
        pass
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < args.conns + 100:
        sys.exit(f"conn_mem: descriptor limit {soft} < {args.conns} "
                 "(run as root, or lower -n)")

    mdc = os.path.join(args.build, "server", "mdcached")
    maxc = str(args.conns + 100)
    rows = []
    for srv in args.servers.split(","):
        port = free_port()
        if srv in ("uring", "epoll"):
            argv = [mdc, "-l", "127.0.0.1", "-p", str(port), "-n", "4",
                    "-t", "0", "-m", "64", "-c", maxc, f"--io={srv}"]
            name = f"mdcached --io={srv}"
        elif srv == "memcached":
            mc = shutil.which("memcached")
            if mc is None:
                print("conn_mem: no memcached: skipped", file=sys.stderr)
                continue
            argv = [mc, "-l", "127.0.0.1", "-p", str(port), "-U", "0",
                    "-t", "4", "-m", "64", "-c", maxc]
            if os.geteuid() == 0:
                argv += ["-u", "root"]
            name = "memcached"
        else:
            sys.exit(f"conn_mem: unknown server {srv}")
        row = measure(name, argv, port, args)
        rows.append(row)
        line = (f"{row['server']:24} {row['bytes_per_conn']:7d} B/conn idle"
                f" (marginal {row['marginal_bytes_per_conn']})"
                f" ({row['conns'] - args.active} conns, RSS "
                f"{row['rss_before_kib']} -> {row['rss_after_kib']} KiB)")
        if args.active:
            line += (f"; with {args.active} running W1: "
                     f"{row['bytes_per_conn_active']} B/conn")
        if "conn_buffers_lent" in row:
            line += (f"; lent {row['conn_buffers_lent']}, pool misses "
                     f"{row['conn_buffer_pool_misses']}")
        print(line, flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
