#!/usr/bin/env python3
"""bench/dump_compare.py - mdcached dumps against Redis 7 RDB (issue 11).

The data set: N records (default 10^7), 16-byte keys and 32-byte values
(hex digits of a hash of the record number: incompressible by Redis's LZF,
as hashed keys and serialized values mostly are), 10 %
of them carrying 2 tags.  mdcached holds them with their tags; Redis holds
the same strings plus, for the tagged 10 %, Symfony-style reverse-index sets
(SADD tag:<tkey>:<tval> <key>).  Both write to the directory given (-d; it
must be on a real disk, not tmpfs, where fsync is free).

Measured, in alternating rounds (mdcached, Redis, mdcached, ...):
  dump    mdcached: the `dump` command until it answers (file on disk,
          fsync'd, renamed).  Redis: BGSAVE until rdb_bgsave_in_progress
          is 0 (Redis fsyncs and renames the RDB too).
  size    the dump file / the RDB.
  load    from exec to the first answer (mdcached loads before listening;
          Redis answers -LOADING until loaded: PING until PONG).
  rss     mdcached: the server's VmRSS peak during a dump minus before.
          Redis: rdb_last_cow_size (the forked child's copied pages) and
          the parent's growth.
  W1      bench/mdc-load's W1 (90:10 get:set, 100 000 keys, 32-byte values,
          50 connections, text protocol over TCP here) on mdcached: with
          back-to-back dumps running vs without, alternating; throughput
          and server CPU per request.

Usage: bench/dump_compare.py -b BUILD_DIR -d DIR [-n N] [-r ROUNDS]
Prints a Markdown table and writes DIR/dump_compare.json.
"""
import argparse
import json
import os
import re
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def wait_port(port, proc, timeout=600):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError("server exited with %d" % proc.returncode)
        try:
            s = socket.create_connection(("127.0.0.1", port), timeout=1)
            return s
        except OSError:
            time.sleep(0.002)
    raise RuntimeError("server did not come up")


def key_of(i):
    # 16 bytes, as hashed cache keys look (and no run of zeros for Redis's
    # LZF string compression to take, which real keys would not offer)
    return b"%016x" % ((i * 0x9E3779B97F4A7C15 + 0x632BE59BD9B4E019) &
                       0xFFFFFFFFFFFFFFFF)


def val_of(i):
    # 32 bytes of hex digits, different for every record
    x = (i * 0xD6E8FEB86659FD93 + 0x1F83D9ABFB41BD6B) & 0xFFFFFFFFFFFFFFFF
    return b"%016x%016x" % (x, x ^ 0xA5A5A5A55A5A5A5A)


def tags_of(i):
    return (1, i % 1000), (2, i % 100003)


def fill_mdc(port, n):
    s = socket.create_connection(("127.0.0.1", port))
    buf = []
    size = 0
    for i in range(n):
        k = key_of(i)
        if i % 10 == 0:
            (a, b), (c, d) = tags_of(i)
            buf.append(b"tset %s 0 0 32 %d:%d,%d:%d noreply\r\n%s\r\n" %
                       (k, a, b, c, d, val_of(i)))
        else:
            buf.append(b"set %s 0 0 32 noreply\r\n%s\r\n" % (k, val_of(i)))
        if len(buf) == 20000:
            s.sendall(b"".join(buf))
            buf = []
    buf.append(b"version\r\n")
    s.sendall(b"".join(buf))
    s.settimeout(600)
    r = b""
    while b"\r\n" not in r:
        r += s.recv(4096)
    s.close()


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def fill_redis(port, n):
    p = subprocess.Popen(["redis-cli", "-p", str(port), "--pipe"],
                         stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    buf = []
    for i in range(n):
        k = key_of(i)
        buf.append(resp(b"SET", k, val_of(i)))
        if i % 10 == 0:
            for a, b in tags_of(i):
                buf.append(resp(b"SADD", b"tag:%d:%d" % (a, b), k))
        if len(buf) >= 20000:
            p.stdin.write(b"".join(buf))
            buf = []
    p.stdin.write(b"".join(buf))
    p.stdin.close()
    if p.wait() != 0:
        raise RuntimeError("redis-cli --pipe failed")


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")


class Sampler(threading.Thread):
    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, 0, False

    def run(self):
        while not self.stop:
            self.peak = max(self.peak, rss_kb(self.pid))
            time.sleep(0.005)


def text_cmd(port, cmd, end=b"\r\n", timeout=600):
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(timeout)
    s.sendall(cmd)
    r = b""
    while not r.endswith(end):
        d = s.recv(65536)
        if not d:
            break
        r += d
    s.close()
    return r


def mdc_stat(port, name):
    r = text_cmd(port, b"stats\r\n", b"END\r\n").decode()
    m = re.search(r"STAT %s (\d+)" % name, r)
    return int(m.group(1))


def redis_info(port, key):
    r = subprocess.run(["redis-cli", "-p", str(port), "info", "persistence"],
                       capture_output=True, text=True).stdout
    m = re.search(r"^%s:(\S+)" % key, r, re.M)
    return m.group(1) if m else None


class Mdc:
    def __init__(self, a, path):
        self.a, self.path, self.port, self.proc = a, path, free_port(), None

    def start(self):
        t0 = time.time()
        # as root mdcached runs as nobody: the directory is mode 0777
        self.proc = subprocess.Popen(
            [os.path.join(self.a.build, "server/mdcached"), "-l",
             "127.0.0.1", "-p", str(self.port), "-n", "2", "-m",
             str(self.a.mem), "-f", self.path, "--no-dump-on-exit"],
            stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc).close()
        return time.time() - t0

    def dump(self):
        smp = Sampler(self.proc.pid)
        before = rss_kb(self.proc.pid)
        smp.start()
        t0 = time.time()
        r = text_cmd(self.port, b"dump\r\n")
        dt = time.time() - t0
        smp.stop = True
        smp.join()
        if r != b"OK\r\n":
            raise RuntimeError("dump: %r" % r)
        return dt, (smp.peak - before) / 1024.0

    def stop(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


class Redis:
    def __init__(self, a, d):
        self.a, self.d, self.port, self.proc = a, d, free_port(), None

    def start(self):
        t0 = time.time()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", self.d, "--dbfilename", "dump.rdb", "--save", "",
             "--appendonly", "no", "--daemonize", "no", "--loglevel",
             "warning"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("redis-server exited")
            r = subprocess.run(["redis-cli", "-p", str(self.port), "ping"],
                               capture_output=True, text=True).stdout
            if r.strip() == "PONG":
                return time.time() - t0
            time.sleep(0.005)

    def dump(self):
        before = rss_kb(self.proc.pid)
        smp = Sampler(self.proc.pid)
        smp.start()
        t0 = time.time()
        subprocess.run(["redis-cli", "-p", str(self.port), "bgsave"],
                       capture_output=True)
        time.sleep(0.01)
        while redis_info(self.port, "rdb_bgsave_in_progress") != "0":
            time.sleep(0.005)
        dt = time.time() - t0
        smp.stop = True
        smp.join()
        if redis_info(self.port, "rdb_last_bgsave_status") != "ok":
            raise RuntimeError("BGSAVE failed")
        cow = int(redis_info(self.port, "rdb_last_cow_size") or 0)
        return dt, (smp.peak - before) / 1024.0, cow / 1048576.0

    def stop(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def w1(a, port, pid, secs):
    out = subprocess.run(
        [os.path.join(a.build, "bench/mdc-load"), "-s", "127.0.0.1:%d" % port,
         "-P", "text", "-c", "50", "-k", "100000", "-v", "32", "-D",
         str(secs), "-w", "1", "-p", str(pid), "-j", "-", "-q"],
        capture_output=True, text=True)
    j = json.loads(out.stdout)
    return j


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def spread(xs):
    return "%.3g–%.3g" % (min(xs), max(xs)) if xs else "-"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", required=True)
    ap.add_argument("-d", "--dir", required=True)
    ap.add_argument("-n", type=int, default=10000000)
    ap.add_argument("-r", "--rounds", type=int, default=3)
    ap.add_argument("-m", "--mem", type=int, default=8192)
    ap.add_argument("--w1-seconds", type=float, default=5)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    os.chmod(a.dir, 0o777)
    fs = subprocess.run(["df", "-T", a.dir], capture_output=True,
                        text=True).stdout.splitlines()[-1].split()[1]
    res = {"n": a.n, "fs": fs, "mdc": {"dump": [], "load": [], "rss": []},
           "redis": {"dump": [], "load": [], "rss": [], "cow": []},
           "w1": {"base": [], "dump": [], "base_cpu": [], "dump_cpu": []}}
    mdc_path = os.path.join(a.dir, "mdc.dump")
    for f in (mdc_path, os.path.join(a.dir, "dump.rdb")):
        if os.path.exists(f):
            os.unlink(f)
    m, r = Mdc(a, mdc_path), Redis(a, a.dir)
    m.start()
    t = time.time()
    fill_mdc(m.port, a.n)
    print("mdcached filled: %d records in %.1f s" %
          (mdc_stat(m.port, "curr_items"), time.time() - t), flush=True)
    r.start()
    t = time.time()
    fill_redis(r.port, a.n)
    print("redis filled in %.1f s" % (time.time() - t), flush=True)
    for i in range(a.rounds):
        dt, rss = m.dump()
        res["mdc"]["dump"].append(dt)
        res["mdc"]["rss"].append(rss)
        dt, rss, cow = r.dump()
        res["redis"]["dump"].append(dt)
        res["redis"]["rss"].append(rss)
        res["redis"]["cow"].append(cow)
        print("round %d dump: mdcached %.2f s, redis %.2f s" %
              (i, res["mdc"]["dump"][-1], dt), flush=True)
    res["mdc"]["size"] = os.path.getsize(mdc_path)
    res["redis"]["size"] = os.path.getsize(os.path.join(a.dir, "dump.rdb"))
    # W1 with and without dumps running, alternating
    stop = threading.Event()

    def dumper():
        while not stop.is_set():
            text_cmd(m.port, b"dump\r\n")

    for i in range(a.rounds):
        j = w1(a, m.port, m.proc.pid, a.w1_seconds)
        res["w1"]["base"].append(j.get("throughput"))
        res["w1"]["base_cpu"].append((j.get("server_cpu") or {}).get("us_per_req"))
        stop.clear()
        th = threading.Thread(target=dumper, daemon=True)
        th.start()
        time.sleep(0.2)
        j = w1(a, m.port, m.proc.pid, a.w1_seconds)
        stop.set()
        th.join()
        res["w1"]["dump"].append(j.get("throughput"))
        res["w1"]["dump_cpu"].append((j.get("server_cpu") or {}).get("us_per_req"))
        print("round %d W1: %s / %s" % (i, res["w1"]["base"][-1],
                                        res["w1"]["dump"][-1]), flush=True)
    # loads: restart each from its file, alternating
    m.stop()
    r.stop()
    for i in range(a.rounds):
        res["mdc"]["load"].append(m.start())
        n = mdc_stat(m.port, "curr_items")
        m.stop()
        res["redis"]["load"].append(r.start())
        r.stop()
        print("round %d load: mdcached %.2f s (%d records), redis %.2f s" %
              (i, res["mdc"]["load"][-1], n, res["redis"]["load"][-1]),
              flush=True)
    with open(os.path.join(a.dir, "dump_compare.json"), "w") as f:
        json.dump(res, f, indent=1)
    M, R, W = res["mdc"], res["redis"], res["w1"]
    print()
    print("N = %d records; file system %s; %d rounds, medians (min–max)" %
          (a.n, fs, a.rounds))
    print()
    print("| what | mdcached | Redis 7 | ratio | target |")
    print("|---|---|---|---|---|")
    print("| dump time (s) | %.2f (%s) | %.2f (%s) | %.2f | ≤ 0.5 |" %
          (med(M["dump"]), spread(M["dump"]), med(R["dump"]),
           spread(R["dump"]), med(M["dump"]) / med(R["dump"])))
    print("| load time at start (s) | %.2f (%s) | %.2f (%s) | %.2f | ≤ 0.5 |" %
          (med(M["load"]), spread(M["load"]), med(R["load"]),
           spread(R["load"]), med(M["load"]) / med(R["load"])))
    print("| file size (MiB) | %.1f | %.1f | %.2f | ≤ 1 |" %
          (M["size"] / 1048576, R["size"] / 1048576, M["size"] / R["size"]))
    print("| RSS growth during a dump (MiB) | %.1f (%s) | parent %.1f, "
          "child copy-on-write %.1f | | ≤ 64 MiB |" %
          (med(M["rss"]), spread(M["rss"]), med(R["rss"]), med(R["cow"])))
    b, d = [x for x in W["base"] if x], [x for x in W["dump"] if x]
    if b and d:
        print("| W1 throughput during dumps / without (req/s) | %.0f / %.0f "
              "| | %.2f | ≥ 0.8 |" % (med(d), med(b), med(d) / med(b)))
    bc = [x for x in W["base_cpu"] if x]
    dc = [x for x in W["dump_cpu"] if x]
    if bc and dc:
        print("| server CPU per W1 request, during dumps / without (µs) | "
              "%.2f / %.2f | | %.2f | |" % (med(dc), med(bc),
                                           med(dc) / med(bc)))


if __name__ == "__main__":
    main()
