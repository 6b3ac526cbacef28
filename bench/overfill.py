#!/usr/bin/env python3
"""overfill.py - write more than -m holds, then read every key back.

The load of issue 34 items 1, 2 and 4: RECORDS writes (or BYTES of values)
over CONNS connections (memcached text protocol, pipelined, no reads while
writing), values log-uniform between --min and --max bytes (or all of one
--size), 16-byte keys, each key once unless --overwrite F rewrites an
earlier key (chosen uniformly) with probability F; --tag-frac F stores that
share with one tag (`tset ... 1:<n>`, mdcached only).  Then every key
written is read back (multi-get): what the server holds, by count and by
key + value bytes, every value checked byte for byte.

Reported (one JSON object with -j, a table otherwise):
  refused       stores answered SERVER_ERROR (out of memory) or otherwise
                not STORED
  rss_kib       the server's VmRSS right after the writes (--pid)
  peak_kib      its VmHWM at the end (the kernel's peak), and the highest
                VmRSS sampled every 10 ms while writing
  held, held_bytes   records read back and their key + value bytes
  fifo, fifo_bytes   what FIFO over the same writes keeps in --limit-mib:
                the newest version of the most recently written keys
                whose key + value + 48 bytes (a record header, no size
                class) fit; held / fifo is item 4's ratio

The writes are cut into per-connection batches up to 256 KiB, each batch
answered before the next (a window of one batch per connection).  The same
--seed gives the same writes (sizes, keys, order within a connection).

usage: bench/overfill.py -s HOST:PORT [--pid PID] [-n RECORDS | -b MIB]
          [--min 16 --max 65536 | --size BYTES] [-c 4] [--tag-frac 0]
          [--overwrite 0] [--limit-mib 64] [--seed 1] [-j]
Importable: tests/test_mem_bound.py calls run().
"""
import argparse
import json
import math
import random
import socket
import sys
import threading
import time

KEY_LEN = 16
HEADER = 48          # mdcached's record header, for the FIFO model
BATCH_BYTES = 256 * 1024
GET_KEYS = 64
BLOCK = None         # the random bytes values are cut from


def _block():
    global BLOCK
    if BLOCK is None:
        BLOCK = random.Random(12345).randbytes(1 << 18)
    return BLOCK


def key_of(i):
    return b"ovf-%012d" % i


def value_of(i, size):
    """The value written at write i: a slice of the random block."""
    b = _block()
    off = (i * 7919) % ((1 << 18) - size) if size < (1 << 18) else 0
    if size <= (1 << 18):
        return b[off:off + size]
    return (b * (size // (1 << 18) + 1))[:size]


def plan(n, seed, size=None, lo=16, hi=65536, tag_frac=0.0, overwrite=0.0,
         total_bytes=None):
    """The writes: a list of (key index, value size, tagged, write index).
    n writes, or as many as reach total_bytes of values."""
    rng = random.Random(seed)
    out = []
    nkeys = 0
    written = 0
    llo, lhi = math.log(lo), math.log(hi + 1)
    i = 0
    while True:
        if total_bytes is None and i >= n:
            break
        if total_bytes is not None and written >= total_bytes:
            break
        s = size if size else min(hi, int(math.exp(rng.uniform(llo, lhi))))
        if nkeys > 0 and overwrite > 0 and rng.random() < overwrite:
            k = rng.randrange(nkeys)
        else:
            k = nkeys
            nkeys += 1
        tagged = tag_frac > 0 and rng.random() < tag_frac
        out.append((k, s, tagged, i))
        written += s
        i += 1
    return out


def fifo_model(writes, limit_bytes):
    """What FIFO keeps: newest first, each key's newest version, until the
    next would not fit (key + value + HEADER bytes)."""
    seen = set()
    used = 0
    n = 0
    kv = 0
    for k, s, _t, _i in reversed(writes):
        if k in seen:
            continue
        seen.add(k)
        c = KEY_LEN + s + HEADER
        if used + c > limit_bytes:
            break
        used += c
        n += 1
        kv += KEY_LEN + s
    return n, kv


def status_kib(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Conn:
    def __init__(self, host, port):
        self.s = socket.create_connection((host, port))
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.f = self.s.makefile("rb", buffering=1 << 20)

    def close(self):
        self.f.close()
        self.s.close()


def _writer(host, port, writes, tag_mod, res, idx):
    c = Conn(host, port)
    stored = refused = other = 0
    errors = {}
    j = 0
    while j < len(writes):
        parts = []
        nb = 0
        m = 0
        while j < len(writes) and (nb < BATCH_BYTES or m == 0):
            k, s, tagged, i = writes[j]
            v = value_of(i, s)
            if tagged:
                parts.append(b"tset %s 0 0 %d 1:%d\r\n" %
                             (key_of(k), s, i % tag_mod))
            else:
                parts.append(b"set %s 0 0 %d\r\n" % (key_of(k), s))
            parts.append(v)
            parts.append(b"\r\n")
            nb += s + 40
            m += 1
            j += 1
        c.s.sendall(b"".join(parts))
        for _ in range(m):
            line = c.f.readline()
            if line == b"STORED\r\n":
                stored += 1
            elif line.startswith(b"SERVER_ERROR"):
                refused += 1
                errors[line.strip()] = errors.get(line.strip(), 0) + 1
            elif not line:
                raise RuntimeError("connection closed while writing")
            else:
                other += 1
                errors[line.strip()] = errors.get(line.strip(), 0) + 1
    c.close()
    res[idx] = (stored, refused, other, errors)


def _reader(host, port, keys, expect, res, idx):
    """Read keys back; count and check them (expect: key -> (size, i))."""
    c = Conn(host, port)
    held = kvb = bad = 0
    sizes = []
    for a in range(0, len(keys), GET_KEYS):
        ks = keys[a:a + GET_KEYS]
        c.s.sendall(b"get " + b" ".join(key_of(k) for k in ks) + b"\r\n")
        while True:
            line = c.f.readline()
            if line == b"END\r\n":
                break
            if not line.startswith(b"VALUE "):
                raise RuntimeError("read back: %r" % line[:80])
            _, key, _fl, n = line.split()[:4]
            n = int(n)
            data = c.f.read(n + 2)
            k = int(key[4:])
            s, i = expect[k]
            if n != s or data[:n] != value_of(i, s):
                bad += 1
                continue
            held += 1
            kvb += len(key) + n
            sizes.append(n)
    c.close()
    res[idx] = (held, kvb, bad, sizes)


def run(host, port, writes, conns=4, pid=0, tag_mod=64, limit_bytes=64 << 20,
        sample_ms=10):
    """Write, then read back.  Returns a dict of the figures."""
    per = [[] for _ in range(conns)]
    for w in writes:
        per[w[0] % conns].append(w)  # a key always on one connection
    res = [None] * conns
    peak_sampled = [0]
    done = threading.Event()

    def sampler():
        while not done.is_set():
            r = status_kib(pid, "VmRSS")
            if r > peak_sampled[0]:
                peak_sampled[0] = r
            done.wait(sample_ms / 1000.0)

    st = None
    if pid:
        st = threading.Thread(target=sampler, daemon=True)
        st.start()
    t0 = time.monotonic()
    ths = [threading.Thread(target=_writer,
                            args=(host, port, per[i], tag_mod, res, i))
           for i in range(conns)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    t1 = time.monotonic()
    done.set()
    if st is not None:
        st.join()
    if any(r is None for r in res):
        raise RuntimeError("a writer failed")
    out = {
        "writes": len(writes),
        "value_bytes_written": sum(w[1] for w in writes),
        "stored": sum(r[0] for r in res),
        "refused": sum(r[1] for r in res),
        "not_stored": sum(r[2] for r in res),
        "write_s": round(t1 - t0, 3),
    }
    errs = {}
    for r in res:
        for e, n in r[3].items():
            errs[e.decode(errors="replace")] = errs.get(
                e.decode(errors="replace"), 0) + n
    out["errors"] = errs
    if pid:
        out["rss_kib"] = status_kib(pid, "VmRSS")
        out["peak_kib"] = status_kib(pid, "VmHWM")
        out["peak_sampled_kib"] = max(peak_sampled[0], out["rss_kib"])
    # read back the newest version of every key
    expect = {}
    for k, s, _t, i in writes:
        expect[k] = (s, i)
    keys = sorted(expect)
    rres = [None] * conns
    ths = [threading.Thread(target=_reader,
                            args=(host, port, keys[i::conns], expect, rres, i))
           for i in range(conns)]
    for t in ths:
        t.start()
    for t in ths:
        t.join()
    if any(r is None for r in rres):
        raise RuntimeError("a reader failed")
    out["held"] = sum(r[0] for r in rres)
    out["held_bytes"] = sum(r[1] for r in rres)
    out["bad"] = sum(r[2] for r in rres)
    sizes = [s for r in rres for s in r[3]]
    out["held_mean_value"] = round(sum(sizes) / len(sizes), 1) if sizes else 0
    fn, fb = fifo_model(writes, limit_bytes)
    out["fifo"] = fn
    out["fifo_bytes"] = fb
    out["held_vs_fifo"] = round(out["held"] / fn, 4) if fn else 0
    out["bytes_vs_fifo"] = round(out["held_bytes"] / fb, 4) if fb else 0
    if pid:
        out["rss_after_read_kib"] = status_kib(pid, "VmRSS")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-s", "--server", required=True)
    ap.add_argument("-p", "--pid", type=int, default=0)
    ap.add_argument("-n", "--records", type=int, default=0)
    ap.add_argument("-b", "--mib", type=float, default=640,
                    help="MiB of values to write (when -n is not given)")
    ap.add_argument("--min", type=int, default=16)
    ap.add_argument("--max", type=int, default=65536)
    ap.add_argument("--size", type=int, default=0)
    ap.add_argument("-c", "--conns", type=int, default=4)
    ap.add_argument("--tag-frac", type=float, default=0.0)
    ap.add_argument("--overwrite", type=float, default=0.0)
    ap.add_argument("--limit-mib", type=float, default=64)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("-L", "--label", default="")
    ap.add_argument("-j", "--json", action="store_true")
    a = ap.parse_args()
    host, _, port = a.server.rpartition(":")
    writes = plan(a.records, a.seed, a.size or None, a.min, a.max,
                  a.tag_frac, a.overwrite,
                  None if a.records else int(a.mib * (1 << 20)))
    r = run(host or "127.0.0.1", int(port), writes, a.conns, a.pid,
            limit_bytes=int(a.limit_mib * (1 << 20)))
    r["label"] = a.label
    if a.json:
        print(json.dumps(r))
        return
    for k, v in r.items():
        print("%-20s %s" % (k, v))


if __name__ == "__main__":
    sys.exit(main())
