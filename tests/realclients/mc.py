#!/usr/bin/env python3
"""Small helpers for the real-clients tests (memcached text protocol).

  mc.py freeport                    print a free loopback TCP port (for
                                    other programs than mdcached, which
                                    takes -p auto)
  mc.py owns PID SECS PORT...       wait until process PID holds a TCP socket
                                    listening on 127.0.0.1:PORT for every
                                    PORT (read from /proc: not some other
                                    process that took a probed port); 1 when
                                    PID dies or SECS pass first
  mc.py locate KEYFILE PORT...      for each key of KEYFILE (one a line) ask
                                    every backend directly with "get"; print
                                    "KEY VALUE PORT" per hit
  mc.py send PORT SECS              send stdin raw, print the reply bytes
                                    (repr) until the peer closes or SECS pass
"""
import os
import socket
import sys
import time


def freeport():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    print(port)


def alive(pid):
    # the daemon is the shell's child: once dead it is a zombie
    try:
        with open("/proc/%d/stat" % int(pid)) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def listen_inodes(port):
    """Inodes of the TCP sockets listening on 127.0.0.1:port."""
    want = "0100007F:%04X" % int(port)
    out = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            col = line.split()
            if col[1] == want and col[3] == "0A":  # 0A: LISTEN
                out.add(col[9])
    return out


def owns(pid, secs, *ports):
    end = time.monotonic() + float(secs)
    while time.monotonic() < end:
        if not alive(pid):
            return 1
        held = set()
        try:
            for fd in os.listdir("/proc/%d/fd" % int(pid)):
                try:
                    t = os.readlink("/proc/%d/fd/%s" % (int(pid), fd))
                except OSError:
                    continue
                if t.startswith("socket:["):
                    held.add(t[8:-1])
        except OSError:
            return 1
        if all(listen_inodes(p) & held for p in ports):
            return 0
        time.sleep(0.05)
    return 1


class Conn:
    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", int(port)), timeout=30)
        self.buf = b""

    def line(self):
        while b"\r\n" not in self.buf:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l

    def exact(self, n):
        while len(self.buf) < n:
            d = self.s.recv(65536)
            if not d:
                raise EOFError("connection closed")
            self.buf += d
        b, self.buf = self.buf[:n], self.buf[n:]
        return b

    def cmd(self, req, multi=False):
        """send REQ; the reply line, or with MULTI the lines up to END"""
        self.s.sendall(req)
        if not multi:
            return self.line()
        out = []
        while True:
            l = self.line()
            out.append(l)
            if l in (b"END", b"ERROR") or l.startswith(b"CLIENT_ERROR") or \
                    l.startswith(b"SERVER_ERROR"):
                return out
            if l.startswith(b"VALUE "):
                out.append(self.exact(int(l.split()[3]) + 2)[:-2])

    def get_multi(self, keys):
        """get KEYS...: {key: (flags, value)}"""
        self.s.sendall(b"get " + b" ".join(keys) + b"\r\n")
        got = {}
        while True:
            l = self.line()
            if l == b"END":
                return got
            f = l.split()
            if f[0] != b"VALUE" or f[1] not in keys or f[1] in got:
                raise ValueError("unexpected reply %r" % l)
            got[f[1]] = (int(f[2]), self.exact(int(f[3]) + 2)[:-2])

    def get(self, key):
        """the value of KEY, or None"""
        v = self.get_multi([key]).get(key)
        return v[1] if v else None


def locate(keyfile, ports):
    conns = [(p, Conn(p)) for p in ports]
    with open(keyfile, "rb") as f:
        keys = [k.strip() for k in f if k.strip()]
    out = sys.stdout.buffer
    for k in keys:
        for p, c in conns:
            v = c.get(k)
            if v is not None:
                out.write(k + b" " + v + b" " + p.encode() + b"\n")
    return 0


def send(port, secs):
    s = socket.create_connection(("127.0.0.1", int(port)), timeout=float(secs))
    s.sendall(sys.stdin.buffer.read())
    got = b""
    try:
        while True:
            d = s.recv(65536)
            if not d:
                break
            got += d
    except socket.timeout:
        pass
    print(repr(got))
    return 0


def main(a):
    if a[0] == "freeport":
        return freeport()
    if a[0] == "owns":
        return owns(*a[1:])
    if a[0] == "locate":
        return locate(a[1], a[2:])
    if a[0] == "send":
        return send(a[1], a[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]) or 0)
