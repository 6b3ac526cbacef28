#!/usr/bin/env python3
"""bench/bpf_path.py - count the BPF instructions an XDP program of bpf/
executes on one packet, load-free (docs/xdp.md, "Cost per packet").

    bench/bpf_path.py BUILD_DIR [--key KEY] [--vlen V] [--profile] [--json]

Interprets the compiled objects (bpf/mdc_xdp.bpf.o, bpf/mdc_bounce.bpf.o)
instruction by instruction on a crafted request - a W8 hit (12-byte key,
V-byte value, tier 0), a miss, and the bare bounce - with a mirror filled
the way bpf/mirror.c fills it, and prints the instructions executed, the
helper calls and the verdict of each.  What it counts is clang's output:
the kernel's verifier may drop branches it proves dead (the address list's
unused entries) and inlines array lookups (a lookup counts as one call
here, 4-8 instructions in the kernel's translation); both programs are
counted the same way, so their ratio is what this is for.  It checks the
reply it produced like tests/test_xdp does (sizes, checksums), so a count
is never the count of a wrong path.  Helpers: 1 map_lookup_elem, 44
xdp_adjust_head.  --profile: the hit's instructions per source line.
"""
import glob, json, os, re, shutil, struct, subprocess, sys

MASK = (1 << 64) - 1


class Ptr:
    __slots__ = ("reg", "off")

    def __init__(self, reg, off):
        self.reg, self.off = reg, off

    def __repr__(self):
        return "Ptr(%s,%d)" % (self.reg, self.off)


class MapRef:
    def __init__(self, name):
        self.name = name


def sx(v, bits):
    v &= (1 << bits) - 1
    return v - (1 << bits) if v >> (bits - 1) else v


def llvm(tool):
    """llvm-objcopy / llvm-objdump, or a versioned one (llvm-objdump-14)."""
    for c in [os.environ.get(tool.upper().replace("-", "_"), ""), tool] + \
            sorted(glob.glob("/usr/bin/%s-[0-9]*" % tool)) + \
            sorted(glob.glob("/usr/lib/llvm-*/bin/%s" % tool)):
        if c and shutil.which(c):
            return shutil.which(c)
    raise SystemExit("bpf_path.py: %s not found" % tool)


def section(obj, name):
    out = "/tmp/bpf_path.%d.bin" % os.getpid()
    subprocess.run([llvm("llvm-objcopy"), "-O", "binary", "--only-section=" + name,
                    obj, out], check=True)
    b = open(out, "rb").read()
    os.unlink(out)
    return b


def relocs(obj, sec):
    r = {}
    txt = subprocess.run([llvm("llvm-objdump"), "-r", obj], capture_output=True,
                         text=True, check=True).stdout
    cur = None
    for ln in txt.splitlines():
        if ln.startswith("RELOCATION RECORDS FOR"):
            cur = ln.split("[")[1].split("]")[0]
        elif cur == sec and ln[:1].isdigit():
            off, typ, val = ln.split()[:3]
            r[int(off, 16)] = val
    return r


def symbols(obj, sec):
    s = {}
    txt = subprocess.run([llvm("llvm-objdump"), "-t", obj], capture_output=True,
                         text=True, check=True).stdout
    for ln in txt.splitlines():
        f = ln.split()
        if len(f) >= 6 and f[-3] == sec and "F" in f[2:-3]:
            s[f[-1]] = int(f[0], 16)
    return s


class Machine:
    def __init__(self, obj, sec, regions, rodata_sym_base):
        self.code = section(obj, sec)
        self.rel = relocs(obj, sec)
        self.mem = regions  # name -> bytearray
        self.shadow = {}    # (reg, off) -> Ptr spilled there
        self.ro = rodata_sym_base  # symbol -> (region, off)
        self.count = 0
        self.calls = {}
        self.hist = {}

    def load(self, p, size):
        if not isinstance(p, Ptr):
            raise RuntimeError("load through a scalar %r" % (p,))
        if size == 8 and (p.reg, p.off) in self.shadow:
            return self.shadow[(p.reg, p.off)]
        buf = self.mem[p.reg]
        if p.off < 0 or p.off + size > len(buf):
            raise RuntimeError("out of bounds load %r+%d" % (p, size))
        return int.from_bytes(buf[p.off:p.off + size], "little")

    def store(self, p, size, v):
        if not isinstance(p, Ptr):
            raise RuntimeError("store through a scalar")
        for o in range(p.off - 7, p.off + size):
            self.shadow.pop((p.reg, o), None)
        if isinstance(v, Ptr):
            assert size == 8
            self.shadow[(p.reg, p.off)] = v
            return
        buf = self.mem[p.reg]
        if p.off < 0 or p.off + size > len(buf):
            raise RuntimeError("out of bounds store %r+%d" % (p, size))
        buf[p.off:p.off + size] = (v & ((1 << (8 * size)) - 1)).to_bytes(size, "little")

    def run(self, start, regs, helper):
        code, pc = self.code, start // 8
        r = regs
        while True:
            op, rg, off, imm = struct.unpack_from("<BBhi", code, pc * 8)
            dst, src = rg & 15, rg >> 4
            self.count += 1
            self.hist[pc] = self.hist.get(pc, 0) + 1
            cls = op & 7
            if op == 0x18:  # ld_imm64
                hi = struct.unpack_from("<i", code, pc * 8 + 12)[0]
                name = self.rel.get(pc * 8)
                if name is None:
                    r[dst] = ((hi & 0xffffffff) << 32) | (imm & 0xffffffff)
                elif name in self.ro:
                    reg, base = self.ro[name]
                    r[dst] = Ptr(reg, base + imm)
                else:
                    r[dst] = MapRef(name)
                pc += 2
                continue
            if cls in (4, 7):  # ALU, ALU64
                a = r[dst]
                b = r[src] if op & 8 else (imm & MASK if cls == 7 else imm & 0xffffffff)
                o = op & 0xf0
                if o == 0xb0:
                    v = b
                    if cls == 4 and not isinstance(v, Ptr):
                        v &= 0xffffffff
                    elif cls == 4 and isinstance(v, Ptr):
                        raise RuntimeError("32-bit mov of a pointer")
                    r[dst] = v
                    pc += 1
                    continue
                if isinstance(a, Ptr) or isinstance(b, Ptr):
                    if cls != 7:
                        raise RuntimeError("32-bit pointer arithmetic at %d" % pc)
                    if o == 0x00 and isinstance(a, Ptr) and not isinstance(b, Ptr):
                        r[dst] = Ptr(a.reg, a.off + sx(b, 64))
                    elif o == 0x00 and isinstance(b, Ptr):
                        r[dst] = Ptr(b.reg, b.off + sx(a, 64))
                    elif o == 0x10 and isinstance(a, Ptr) and isinstance(b, Ptr):
                        r[dst] = (a.off - b.off) & MASK
                    elif o == 0x10 and isinstance(a, Ptr):
                        r[dst] = Ptr(a.reg, a.off - sx(b, 64))
                    else:
                        raise RuntimeError("pointer op %x at %d" % (op, pc))
                    pc += 1
                    continue
                bits = 64 if cls == 7 else 32
                m = (1 << bits) - 1
                a &= m
                b &= m
                if o == 0x00: v = a + b
                elif o == 0x10: v = a - b
                elif o == 0x20: v = a * b
                elif o == 0x30: v = a // b if b else 0
                elif o == 0x40: v = a | b
                elif o == 0x50: v = a & b
                elif o == 0x60: v = a << (b & (bits - 1))
                elif o == 0x70: v = a >> (b & (bits - 1))
                elif o == 0x80: v = -a
                elif o == 0x90: v = a % b if b else a
                elif o == 0xa0: v = a ^ b
                elif o == 0xc0: v = sx(a, bits) >> (b & (bits - 1))
                elif o == 0xd0:  # endianness
                    n = imm // 8
                    x = a & ((1 << imm) - 1)
                    if op & 8:  # to big endian: swap on a little-endian host
                        x = int.from_bytes(x.to_bytes(n, "little"), "big")
                    v = x
                    r[dst] = v
                    pc += 1
                    continue
                else:
                    raise RuntimeError("alu op %x" % op)
                r[dst] = v & m
                pc += 1
                continue
            if cls == 1:  # LDX
                size = [4, 2, 1, 8][(op >> 3) & 3]
                p = r[src]
                r[dst] = self.load(Ptr(p.reg, p.off + off), size)
                pc += 1
                continue
            if cls in (2, 3):  # ST, STX
                size = [4, 2, 1, 8][(op >> 3) & 3]
                p = r[dst]
                if op & 0xe0 == 0xc0:  # atomic add (counters)
                    v = self.load(Ptr(p.reg, p.off + off), size)
                    self.store(Ptr(p.reg, p.off + off), size, v + r[src])
                else:
                    self.store(Ptr(p.reg, p.off + off), size,
                               r[src] if cls == 3 else imm & MASK)
                pc += 1
                continue
            if cls in (5, 6):
                o = op & 0xf0
                if o == 0x90:  # exit
                    return r[0]
                if o == 0x80:  # call
                    if src == 1:  # bpf-to-bpf
                        raise RuntimeError("subprogram call")
                    self.calls[imm] = self.calls.get(imm, 0) + 1
                    r[0] = helper(self, imm, r)
                    pc += 1
                    continue
                if o == 0x00:
                    pc += 1 + (off if cls == 5 else imm)
                    continue
                a = r[dst]
                b = r[src] if op & 8 else (imm & MASK if cls == 5 else imm & 0xffffffff)
                if isinstance(a, Ptr) or isinstance(b, Ptr):
                    if isinstance(a, Ptr) and isinstance(b, Ptr):
                        a, b = a.off, b.off
                    elif isinstance(a, Ptr):  # a map value pointer vs 0
                        a, b = 1, b
                    else:
                        a, b = a, 1
                    bits = 64
                else:
                    bits = 64 if cls == 5 else 32
                    a &= (1 << bits) - 1
                    b &= (1 << bits) - 1
                sa, sb = sx(a, bits), sx(b, bits)
                t = {0x10: a == b, 0x20: a > b, 0x30: a >= b, 0x40: bool(a & b),
                     0x50: a != b, 0x60: sa > sb, 0x70: sa >= sb, 0xa0: a < b,
                     0xb0: a <= b, 0xc0: sa < sb, 0xd0: sa <= sb}[o]
                pc += 1 + (off if t else 0)
                continue
            raise RuntimeError("opcode %x at %d" % (op, pc))


# ---- the mirror, as bpf/mirror.c writes it ---------------------------------
def mhash(seed, key):
    h = seed ^ ((len(key) * 0x9E3779B97F4A7C15) & MASK)
    for i in range(0, len(key), 8):
        w = int.from_bytes(key[i:i + 8].ljust(8, b"\0"), "little")
        h ^= (w * 0xC2B2AE3D27D4EB4F) & MASK
        h = ((h << 31) | (h >> 33)) & MASK
        h = (h * 0x9E3779B97F4A7C15) & MASK
    h ^= h >> 33
    h = (h * 0xFF51AFD7ED558CCD) & MASK
    h ^= h >> 33
    h = (h * 0xC4CEB9FE1A85EC53) & MASK
    h ^= h >> 33
    return h


def csum16(b):
    if len(b) & 1:
        b = b + b"\0"
    s = sum(struct.unpack("<%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


def sum_be(b):
    if len(b) & 1:
        b = b + b"\0"
    return sum(struct.unpack(">%dH" % (len(b) // 2), b))


def fold(s):
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return s


SRV, CLI = bytes([10, 11, 0, 1]), bytes([10, 11, 0, 2])
SMAC, CMAC = bytes([2, 0, 0, 0, 0, 1]), bytes([2, 0, 0, 0, 0, 2])


def request(key, reqid=0x1234):
    pl = struct.pack(">HHHH", reqid, 0, 1, 0) + b"get " + key + b"\r\n"
    ulen = 8 + len(pl)
    ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0x1234,
                               0x4000, 64, 17, 0, CLI, SRV))
    struct.pack_into(">H", ip, 10, (~fold(sum_be(bytes(ip)))) & 0xffff)
    udp = bytearray(struct.pack(">HHHH", 40000, 11211, ulen, 0)) + pl
    s = sum_be(CLI + SRV) + 17 + ulen + sum_be(bytes(udp))
    struct.pack_into(">H", udp, 6, (~fold(s)) & 0xffff or 0xffff)
    return SMAC + CMAC + b"\x08\x00" + bytes(ip) + bytes(udp)


def check_reply(req, rep):
    ip, udp = rep[14:34], rep[34:]
    assert rep[:6] == req[6:12] and rep[6:12] == req[:6], "MACs"
    assert fold(sum_be(ip)) == 0xffff, "IP checksum"
    assert struct.unpack(">H", ip[2:4])[0] == len(rep) - 14, "IP length"
    ulen = struct.unpack(">H", udp[4:6])[0]
    assert ulen == len(udp), "UDP length"
    s = sum_be(ip[12:20]) + 17 + ulen + sum_be(udp)
    assert fold(s) == 0xffff, "UDP checksum"
    return udp[8:]


def profile(obj, hist):
    txt = subprocess.run([llvm("llvm-objdump"), "-d", "-l", "--section=xdp", obj],
                         capture_output=True, text=True).stdout
    where, per = "?", {}
    for ln in txt.splitlines():
        t = ln.strip()
        if t.startswith("; ") and ":" in t and ".c:" in t or ".h:" in t:
            where = t[2:].split("/")[-1]
            continue
        mm = re.match(r"\s*(\d+):", ln)
        if mm:
            pc = int(mm.group(1))
            per[where] = per.get(where, 0) + hist.get(pc, 0)
    for w, n in sorted(per.items(), key=lambda x: -x[1]):
        if n:
            print("   %5d  %s" % (n, w))


def main():
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--vlen", type=int, default=32)
    ap.add_argument("--key", default="key:00000001")
    ap.add_argument("--json", action="store_true", help="one JSON line")
    ap.add_argument("--profile", action="store_true",
                    help="instructions of the hit per source line")
    a = ap.parse_args()
    obj = os.path.join(a.build, "bpf/mdc_xdp.bpf.o")
    bobj = os.path.join(a.build, "bpf/mdc_bounce.bpf.o")
    seed = 0x5eed5eed12345678
    slots = [32768, 8192, 2048]
    sizes = [128, 512, 1536]
    hot = 2048  # tier 0's dense front, the library's default
    # the layout's header size and field offsets come from mirror_layout.h
    hdr = int(os.environ.get("MIRROR_HDR_SIZE", "32"))

    def fresh():
        regs = {"pkt": bytearray(256 + 2048), "stack": bytearray(512),
                ".rodata": bytearray(72)}
        for t in range(3):
            regs["mirror_t%d" % t] = bytearray(
                (slots[t] + (hot if t == 0 else 0)) * sizes[t])
            regs["mirror_i%d" % t] = bytearray(slots[t] * 8)
        regs["mirror_scratch"] = bytearray(4096)
        regs["mirror_counters"] = bytearray(8 * 32)
        # counters and scratch in one per-CPU value (since 2026-11-29b)
        regs["mirror_percpu"] = bytearray(8192)
        ro = regs[".rodata"]
        struct.pack_into("<I", ro, 0, int.from_bytes(SRV, "little"))
        struct.pack_into("<I", ro, 32, 1)            # naddrs
        struct.pack_into("<H", ro, 36, 0xcb2b)       # port 11211, network order
        struct.pack_into("<H", ro, 38, 0)
        struct.pack_into("<I", ro, 40, 1514)         # max_pkt
        for t in range(3):
            struct.pack_into("<I", ro, 44 + 4 * t, slots[t] - 1)
        struct.pack_into("<Q", ro, 56, seed)
        struct.pack_into("<II", ro, 64, hot, hot - 1)  # hot_slots, hot_mask
        return regs

    def fill(regs, key, val, where="front"):
        blob = b"VALUE " + key + b" 0 %d\r\n" % len(val) + val + b"\r\nEND\r\n"
        h = mhash(seed, key)
        t = 0 if len(blob) <= sizes[0] - hdr else 1
        e = regs["mirror_t%d" % t]
        # the slot the hash selects (bpf/mirror_layout.h): tier 0's first
        # front slot; its second (front2) or its hashed one behind the front
        # (cold), the front slots before it holding another key; objects of
        # earlier layouts find it at (h & mask) (before 2026-11-30) or
        # through the index word naming slot 7 (2026-11-24 to 11-29)
        p1 = (h >> 32) & (hot - 1)
        p2 = (p1 ^ (((h >> 48) & (4096 // sizes[0] - 1)) | 1)) & (hot - 1)
        if t == 0 and where == "front":
            layout_fill(e, p1 * sizes[t], blob, key, val, h)
        elif t == 0 and where == "front2":
            layout_fill(e, p2 * sizes[t], blob, key, val, h)
            layout_fill(e, p1 * sizes[t], blob, key, val, h ^ 1)
        elif t == 0:
            layout_fill(e, (hot + (h & (slots[t] - 1))) * sizes[t], blob, key,
                        val, h)
            layout_fill(e, p1 * sizes[t], blob, key, val, h ^ 1)
            layout_fill(e, p2 * sizes[t], blob, key, val, h ^ 3)
        layout_fill(e, (h & (slots[t] - 1)) * sizes[t], blob, key, val, h)
        layout_fill(e, 7 * sizes[t], blob, key, val, h)
        struct.pack_into("<Q", regs["mirror_i%d" % t], (h & (slots[t] - 1)) * 8,
                         ((h >> 32) << 32) | (7 + 1))

    def layout_fill(e, base, blob, key, val, h):
        # struct mirror_entry (bpf/mirror_layout.h)
        struct.pack_into("<IHBBIIQQ", e, base, 2, len(blob), len(key), 0,
                         csum16(blob), len(val), h, 0)
        e[base + hdr:base + hdr + len(blob)] = blob

    def helper(m, fn, r):
        if fn == 1:  # map_lookup_elem
            name = r[1].name
            k = m.load(r[2], 4)
            vs = {"mirror_scratch": 4096, "mirror_counters": 256,
                  "mirror_percpu": 8192}.get(name)
            if vs is None:
                t = int(name[-1])
                vs = sizes[t] if name.startswith("mirror_t") else 8
            if (k + 1) * vs > len(m.mem[name]):
                return 0
            return Ptr(name, k * vs)
        if fn == 44:  # xdp_adjust_head
            d = sx(r[2], 32)
            m.data += d
            return 0 if m.data >= 32 else -1
        if fn == 65:  # xdp_adjust_tail
            m.end += sx(r[2], 32)
            return 0
        if fn == 5:  # ktime_get_ns
            return 1
        raise RuntimeError("helper %d not modelled" % fn)

    def run(objf, entry, pkt, regs, rodata_name):
        m = Machine(objf, "xdp", regs, {rodata_name: (".rodata", 0)})
        m.data, m.end = 256, 256 + len(pkt)
        regs["pkt"][256:256 + len(pkt)] = pkt
        regs["ctx"] = bytearray(24)
        # ctx->data, ctx->data_end are read as u32 loads: model them
        orig = m.load

        def load(p, size):
            if isinstance(p, Ptr) and p.reg == "ctx":
                return Ptr("pkt", m.data if p.off == 0 else m.end)
            return orig(p, size)
        m.load = load
        r = [0] * 11
        r[1] = Ptr("ctx", 0)
        r[10] = Ptr("stack", 512)
        sym = symbols(objf, "xdp")
        v = m.run(sym[entry], r, helper)
        return m, v, bytes(regs["pkt"][m.data:m.end])

    key = a.key.encode()
    val = b"v" * a.vlen
    names = {0: "ABORTED", 1: "DROP", 2: "PASS", 3: "TX"}
    out = {}
    for case in ("hit", "hit_front2", "hit_cold", "miss", "bounce"):
        regs = fresh()
        fill(regs, key, val, {"hit_front2": "front2",
                              "hit_cold": "cold"}.get(case, "front"))
        pkt = request(key if case != "miss" else b"key:00000002")
        if case == "bounce":
            regs[".rodata"][0:2] = b"\x2b\xcb"  # bounce_port 11211
            m, v, rep = run(bobj, "mdc_bounce", pkt, regs, "bounce_port")
        else:
            m, v, rep = run(obj, "mdc_xdp", pkt, regs, "mdc_cfg")
        if case.startswith("hit"):
            assert v == 3, "hit verdict %d" % v
            pl = check_reply(pkt, rep)
            want = pkt[42:44] + b"\0\0\0\1\0\0" + b"VALUE " + key + \
                b" 0 %d\r\n" % len(val) + val + b"\r\nEND\r\n"
            assert pl == want, "reply bytes"
        out[case] = {"instructions": m.count, "verdict": names.get(v, v),
                     "helper_calls": {str(k): n for k, n in m.calls.items()}}
        if a.json:
            continue
        print("%-6s %4d instructions  helper calls %s  verdict %s" %
              (case, m.count, m.calls, names.get(v, v)))
        if case == "hit" and a.profile:
            profile(obj, m.hist)
    if a.json:
        print(json.dumps(out))
    else:
        print("hit / bounce: %.2f" % (out["hit"]["instructions"] /
                                      out["bounce"]["instructions"]))


if __name__ == "__main__":
    main()
