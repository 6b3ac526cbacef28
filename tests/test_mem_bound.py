#!/usr/bin/env python3
"""tests/test_mem_bound.py - -m bounds the process (issue 34 item 1).

mdcached -m 128 -n 4 -t 0 runs inside a memory cgroup whose limit is
1.15 x -m + 8 MiB (155.2 MiB), swap off, while bench/overfill.py writes
three times -m of values (log-uniform 16 B-64 KiB, 4 connections, no
reads), once untagged and once with a quarter of the records tagged and a
fifth of the writes overwriting an earlier key.  Then:
  - the server was not killed (the cgroup's OOM killer would have);
  - no store was refused (nothing holds memory in this load);
  - every key read back: the key + value bytes held are at least what
    memcached (-m 128 -t 4, outside the cgroup) holds on the same writes,
    and at least 90 % of what FIFO over the writes keeps (item 4), by
    count and by bytes.
Needs root and a memory cgroup (v2, or v1's memory controller): otherwise
SKIP (exit 77), or a failure under CI=true.  Runs on the backend
MDC_TEST_IO names (io_uring by default).  Exit 0 pass, 1 fail.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "bench"))
import harness  # noqa: E402
import overfill  # noqa: E402

MIB = 128
BOUND = int((1.15 * MIB + 8) * (1 << 20))
SEED = 34
failures = []


def skip(why):
    if os.environ.get("CI") == "true" and os.geteuid() == 0:
        print("FAIL: %s (CI as root: nothing may skip)" % why)
        sys.exit(1)
    print("SKIP: %s" % why)
    sys.exit(77)


def check(cond, what):
    print("%s: %s" % ("ok" if cond else "FAIL", what), flush=True)
    if not cond:
        failures.append(what)


def mounts():
    with open("/proc/mounts") as f:
        return [l.split() for l in f]


class Cgroup:
    """A memory cgroup of its own: v2 where the memory controller is
    there, else v1's memory hierarchy."""

    def __init__(self, limit):
        self.path = None
        name = "mdc-test-mem-%d" % os.getpid()
        for m in mounts():
            if m[2] == "cgroup2":
                root = m[1]
                try:
                    with open(os.path.join(root, "cgroup.controllers")) as f:
                        if "memory" not in f.read().split():
                            continue
                    with open(os.path.join(root, "cgroup.subtree_control"),
                              "w") as f:
                        f.write("+memory")
                    p = os.path.join(root, name)
                    os.mkdir(p)
                except OSError:
                    continue
                self.path, self.v = p, 2
                self._w("memory.max", limit)
                self._w("memory.swap.max", 0, optional=True)
                return
        for m in mounts():
            if m[2] == "cgroup" and "memory" in m[3].split(","):
                p = os.path.join(m[1], name)
                try:
                    os.mkdir(p)
                except OSError:
                    continue
                self.path, self.v = p, 1
                self._w("memory.limit_in_bytes", limit)
                self._w("memory.memsw.limit_in_bytes", limit, optional=True)
                return

    def _w(self, f, v, optional=False):
        try:
            with open(os.path.join(self.path, f), "w") as fh:
                fh.write(str(v))
        except OSError:
            if not optional:
                raise

    def _r(self, f):
        try:
            with open(os.path.join(self.path, f)) as fh:
                return fh.read()
        except OSError:
            return ""

    def procs(self):
        return os.path.join(self.path, "cgroup.procs")

    def oom_kills(self):
        if self.v == 2:
            for line in self._r("memory.events").splitlines():
                k, _, n = line.partition(" ")
                if k == "oom_kill":
                    return int(n)
            return 0
        for line in self._r("memory.oom_control").splitlines():
            k, _, n = line.partition(" ")
            if k == "oom_kill":
                return int(n)
        return 0

    def peak(self):
        s = self._r("memory.peak" if self.v == 2 else
                    "memory.max_usage_in_bytes").strip()
        return int(s) if s else 0

    def remove(self):
        for _ in range(50):
            try:
                os.rmdir(self.path)
                return
            except OSError:
                time.sleep(0.1)


def memcached_run(writes):
    mc = shutil.which("memcached")
    if mc is None:
        return None
    for _ in range(5):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        args = [mc, "-m", str(MIB), "-t", "4", "-U", "0", "-l", "127.0.0.1",
                "-p", str(port)]
        if os.geteuid() == 0:
            args += ["-u", "nobody"]
        p = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        for _ in range(600):  # 30 s: a hang
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                if p.poll() is not None:
                    break
                time.sleep(0.05)
        if p.poll() is not None:
            continue  # lost the port: another one
        try:
            return overfill.run("127.0.0.1", port, writes, 4, p.pid,
                                limit_bytes=MIB << 20)
        finally:
            p.terminate()
            p.wait()
    return None


def mdcached_run(cg, writes, tag_mod):
    wrap = ["sh", "-c", 'echo $$ > "$0" && exec "$@"', cg.procs()]
    d = harness.start(["-m", str(MIB), "-n", "4", "-t", "0"], wrap=wrap)
    try:
        r = overfill.run("127.0.0.1", d.port(), writes, 4, d.pid,
                         tag_mod=tag_mod, limit_bytes=MIB << 20)
    except (OSError, RuntimeError) as e:
        r = {"error": str(e)}
    alive = d.poll() is None
    rc = d.stop() if alive else d.returncode
    r["alive"] = alive
    r["rc"] = rc
    return r


def release_allocator():
    """Why the bound is not judged in this build, or None: it is the
    jemalloc configuration's (server/core/alloc.c), so a build with libc
    malloc (the portable build, --without-jemalloc) or a sanitizer's is
    not held to it, as tests/test_idle_rss.sh does."""
    conf = os.path.join(os.environ.get("MDC_BUILDDIR", "."), "config.h")
    try:
        with open(conf) as f:
            text = f.read()
    except OSError:
        return None
    if "#define MDC_ASAN 1" in text or "#define MDC_TSAN 1" in text:
        return "a sanitizer build"
    if "#define HAVE_JEMALLOC 1" not in text:
        return "a build without jemalloc"
    return None


def main():
    why = release_allocator()
    if why is not None:
        print("note: %s: the RSS bound is jemalloc's configuration; not "
              "judged here" % why)
        sys.exit(0)
    if os.geteuid() != 0:
        skip("not root: no memory cgroup of its own")
    cg = Cgroup(BOUND)
    if cg.path is None:
        skip("no memory cgroup (v2 with the memory controller, or v1's)")
    try:
        print("cgroup v%d %s, limit %.1f MiB, -m %d, io %s" %
              (cg.v, cg.path, BOUND / 1048576, MIB,
               os.environ.get("MDC_TEST_IO", "default")), flush=True)
        loads = [
            ("untagged", overfill.plan(0, SEED, total_bytes=3 * MIB << 20), 64),
            ("a quarter tagged, a fifth overwrites",
             overfill.plan(0, SEED + 1, tag_frac=0.25, overwrite=0.2,
                           total_bytes=3 * MIB << 20), 64),
        ]
        for name, writes, tag_mod in loads:
            r = mdcached_run(cg, writes, tag_mod)
            print("mdcached %s: %s" % (name, r), flush=True)
            check(r["alive"] and r["rc"] == 0 and "error" not in r,
                  "%s: the server lived through the load (exit %s)" %
                  (name, r["rc"]))
            check(cg.oom_kills() == 0, "%s: no OOM kill in the cgroup" % name)
            if "error" in r:
                continue
            check(r["refused"] == 0 and r["not_stored"] == 0,
                  "%s: no store refused (%d refused, %d not stored: %s)" %
                  (name, r["refused"], r["not_stored"], r["errors"]))
            check(r["bad"] == 0, "%s: every value read back intact" % name)
            check(r["held"] >= 0.9 * r["fifo"],
                  "%s: records held %d >= 90 %% of FIFO's %d" %
                  (name, r["held"], r["fifo"]))
            check(r["held_bytes"] >= 0.9 * r["fifo_bytes"],
                  "%s: bytes held %d >= 90 %% of FIFO's %d" %
                  (name, r["held_bytes"], r["fifo_bytes"]))
            print("%s: peak RSS %.1f MiB, cgroup peak %.1f MiB (limit %.1f)"
                  % (name, r.get("peak_kib", 0) / 1024, cg.peak() / 1048576,
                     BOUND / 1048576), flush=True)
            if name == "untagged":
                m = memcached_run(writes)
                if m is None:
                    check(False, "memcached ran (Debian's memcached)")
                    continue
                print("memcached untagged: %s" % m, flush=True)
                check(r["held_bytes"] >= m["held_bytes"],
                      "untagged: key + value bytes held %d >= memcached's %d"
                      % (r["held_bytes"], m["held_bytes"]))
    finally:
        cg.remove()
    if failures:
        print("%d failed" % len(failures))
        return 1
    print("all passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
