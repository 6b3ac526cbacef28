"""tests/harness.py - the test harness of the black-box tests in Python and
shell (docs/testing.md); tests/server_client.c is the C one, and both work
alike.

As a module (tests/tls_e2e.py):

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import harness
    d = harness.start(["-n", "2", "--tls-listen=127.0.0.1:auto", ...])
    port = d.port("tls")          # from its --port-file
    ...
    rc = d.stop()                 # SIGTERM; the exit status (0 wanted)

start() runs mdcached on ports it picks itself (-p auto, --port-file: no
free port is probed), its stdout and stderr into a log file, and waits for
the daemon's own signal that it is ready: READY=1 on a NOTIFY_SOCKET the
harness binds (sd_notify; not in a build --without-systemd), else its port file
renamed into place (inotify).  An exit before that ends the wait at once (a
pidfd).  No sleep, no connect probe.  A daemon that does not get ready, or
does not exit 0 on stop(), has its log printed; so has every daemon still
running when the test exits.

As a command (tests/harness.sh calls it):

    harness.py exec MARKER -- DAEMON ARGS...    become the daemon; MARKER
                                                appears on its READY=1
    harness.py wait-ready FILE PID [SECS]       0 ready (FILE: the marker, or
                                                the port file), 1 PID exited,
                                                2 timeout
    harness.py wait-exit PID [SECS]             0 exited, 2 timeout
    harness.py port PORTFILE KIND [HOST]        prints the port, or exit 1
"""
import atexit
import ctypes
import errno
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time

B = os.environ.get("MDC_BUILDDIR", ".")
TIMEOUT = float(os.environ.get("MDC_TEST_START_TIMEOUT", "60"))

_IN_CLOSE_WRITE = 0x8
_IN_MOVED_TO = 0x80
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000


def binary():
    """The daemon of this build: $MDC_BUILDDIR/server/mdcached."""
    return os.path.join(B, "server", "mdcached")


def _notifies():
    """True when the daemon was built with sd_notify (it sends READY=1);
    the build's config.h says.  MDC_TEST_NOTIFY=0: the port file only."""
    if os.environ.get("MDC_TEST_NOTIFY") == "0":
        return False
    try:
        with open(os.path.join(B, "config.h")) as f:
            return "#define MDC_SD_NOTIFY 1" in f.read()
    except OSError:
        return False


def _pidfd(pid):
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _inotify(dirname):
    """An inotify descriptor watching dirname for a file renamed or closed
    there, or None."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fd = libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if fd < 0:
            return None
        if libc.inotify_add_watch(fd, dirname.encode(),
                                  _IN_MOVED_TO | _IN_CLOSE_WRITE) < 0:
            os.close(fd)
            return None
        return fd
    except (OSError, AttributeError):
        return None


def _exited(pid, child):
    """True once pid has exited (reaped when it is our child)."""
    if child is not None:
        return child.poll() is not None
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (OSError, IndexError):
        return True


def wait_ready(port_file, pid, secs=TIMEOUT, notify=None, child=None):
    """Wait for the daemon's signal: READY=1 on the notify socket if there
    is one, else its port file; 0 ready, 1 it exited first, 2 timeout."""
    end = time.monotonic() + secs
    pfd = _pidfd(pid)
    ifd = None
    if notify is None:
        ifd = _inotify(os.path.dirname(os.path.abspath(port_file)))
    fds = [f for f in (pfd, ifd, notify.fileno() if notify else None)
           if f is not None]
    try:
        while True:
            if notify is not None:
                try:
                    while True:
                        if b"READY=1" in notify.recv(4096):
                            return 0
                except (BlockingIOError, InterruptedError):
                    pass
            else:
                if ifd is not None:
                    try:
                        while os.read(ifd, 4096):
                            pass
                    except (BlockingIOError, InterruptedError):
                        pass
                if os.path.exists(port_file):
                    return 0
            if _exited(pid, child):
                return 1
            left = end - time.monotonic()
            if left <= 0:
                return 2
            # without a pidfd or inotify (an old kernel): look every 10 ms
            if pfd is None or (notify is None and ifd is None):
                left = min(left, 0.01)
            select.select(fds, [], [], left)
    finally:
        for f in (pfd, ifd):
            if f is not None:
                os.close(f)


def wait_exit(pid, secs, child=None):
    """Wait until pid exits: True, or False after secs."""
    end = time.monotonic() + secs
    pfd = _pidfd(pid)
    try:
        while not _exited(pid, child):
            left = end - time.monotonic()
            if left <= 0:
                return False
            if pfd is None:
                left = min(left, 0.01)
            select.select([pfd] if pfd is not None else [], [], [], left)
        return True
    finally:
        if pfd is not None:
            os.close(pfd)


def port_of(port_file, kind="tcp", host="127.0.0.1"):
    """The port of the "KIND HOST:PORT" line of a port file, or None; a
    daemon on the wildcard address serves 127.0.0.1 too."""
    try:
        with open(port_file) as f:
            lines = [l.split() for l in f if l.strip()]
    except OSError:
        return None
    for want in (host, "0.0.0.0" if host == "127.0.0.1" else None):
        for k, addr in lines:
            if k == kind and addr.rsplit(":", 1)[0] == want:
                return int(addr.rsplit(":", 1)[1])
    return None


_live = []


def _at_exit():
    for d in list(_live):
        if d.proc.poll() is None:
            d.print_log("still running at exit (a test failed before it "
                        "stopped it): killed")
            d.proc.kill()
            d.proc.wait()
        d._cleanup()


atexit.register(_at_exit)


class NotReady(Exception):
    pass


class Daemon:
    """One mdcached of a test; see start()."""

    def __init__(self, args, raw=False, log=None, port_file=None,
                 timeout=TIMEOUT, env=None, wrap=()):
        self.dir = tempfile.mkdtemp(prefix="mdc-test-")
        os.chmod(self.dir, 0o755)  # the daemon may run as nobody
        self.out = log or os.path.join(self.dir, "log")
        self.port_file = port_file or os.path.join(self.dir, "ports")
        self.unix_path = os.path.join(self.dir, "sock")
        argv = list(wrap) + [binary()]
        if not raw:
            argv += ["-p", "auto", "-s", self.unix_path, "-v",
                     os.environ.get("MDC_TEST_VERBOSE", "1")]
        if port_file is None:
            argv += ["--port-file", self.port_file]
        argv += list(args)
        self.argv = argv
        env = dict(os.environ if env is None else env)
        notify = None
        env.pop("NOTIFY_SOCKET", None)
        if _notifies():
            notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            npath = os.path.join(self.dir, "notify")
            notify.bind(npath)
            notify.setblocking(False)
            os.chmod(npath, 0o777)  # a daemon that drops to nobody
            env["NOTIFY_SOCKET"] = npath
        try:
            os.unlink(self.port_file)
        except OSError:
            pass
        with open(self.out, "ab") as out:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL,
                                         stdout=out, stderr=subprocess.STDOUT,
                                         env=env)
        _live.append(self)
        self.pid = self.proc.pid
        try:
            self.ready = wait_ready(self.port_file, self.pid, timeout,
                                    notify, self.proc)
        finally:
            if notify is not None:
                notify.close()
        if self.ready == 2:
            self.print_log("not ready in %g s: killed" % timeout)
            self.proc.kill()
            self.proc.wait()

    # the subprocess.Popen calls a test may make on it
    def poll(self):
        return self.proc.poll()

    def wait(self, timeout=None):
        return self.proc.wait(timeout)

    def terminate(self):
        self.proc.terminate()

    def kill(self):
        self.proc.kill()

    def send_signal(self, sig):
        self.proc.send_signal(sig)

    @property
    def returncode(self):
        return self.proc.returncode

    def port(self, kind="tcp", host="127.0.0.1"):
        return port_of(self.port_file, kind, host)

    def log(self):
        try:
            with open(self.out, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def print_log(self, why):
        text = self.log()
        print("mdcached (pid %d, %s): %s" % (self.pid, self.dir, why))
        print("---- its output %s (%d bytes)%s ----" %
              (self.out, len(text), ", the last 64 KiB"
               if len(text) > 65536 else ""))
        sys.stdout.write(text[-65536:])
        print("---- end of its output ----", flush=True)

    def stop(self, sig=signal.SIGTERM, timeout=TIMEOUT):
        """Send sig and wait: the exit status (negative: a signal), its log
        printed unless 0; the directory removed (MDC_TEST_KEEP=1 keeps
        it)."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.print_log("did not stop in %g s: killed" % timeout)
                self.proc.kill()
                self.proc.wait()
        rc = self.proc.returncode
        if rc != 0 and sig == signal.SIGTERM:
            self.print_log("exit status %s after SIGTERM" % rc)
        self._cleanup()
        return rc

    def _cleanup(self):
        if self in _live:
            _live.remove(self)
        if os.environ.get("MDC_TEST_KEEP") == "1":
            return
        for n in ("sock", "ports", "ports.tmp", "notify", "log"):
            try:
                os.unlink(os.path.join(self.dir, n))
            except OSError:
                pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def start(args, **kw):
    """Start a daemon (see Daemon: raw=True adds no -p auto, -s, -v; log=
    and port_file= name the files); it is ready when this returns.  Raises
    NotReady (its log printed) if it exited or timed out first; run() is
    for a daemon that must not start."""
    d = Daemon(args, **kw)
    if d.ready != 0:
        if d.ready == 1:
            d.print_log("exited with status %s before it was ready" %
                        d.proc.returncode)
        d._cleanup()
        raise NotReady("mdcached did not start: %s" % " ".join(d.argv))
    return d


def run(args, **kw):
    """Run a daemon that must not start (a refused option): (exit status,
    its output); a daemon that gets ready is stopped, status None."""
    d = Daemon(args, **kw)
    text = d.log()
    if d.ready == 0:
        d.print_log("started, but should not have")
        d.stop()
        d._cleanup()
        return None, text
    rc = d.proc.returncode
    d._cleanup()
    return rc, text


def exec_notified(marker, argv):
    """Become argv (the daemon: the caller's pid and exit status stay
    its own) with NOTIFY_SOCKET bound here first; a detached process keeps
    the socket and, on READY=1, renames marker into place (what
    wait-ready then waits for), or exits when the daemon does first.  In
    a build --without-systemd the daemon is run as it is: the port file
    says ready then."""
    if not _notifies():
        os.environ.pop("NOTIFY_SOCKET", None)
        os.execv(argv[0], argv)
    npath = marker + ".sock"
    try:
        os.unlink(npath)
    except OSError:
        pass
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(npath)
    os.chmod(npath, 0o777)  # a daemon that drops to nobody
    daemon = os.getpid()
    child = os.fork()
    if child == 0:
        if os.fork() != 0:
            os._exit(0)  # the listener is reparented: no zombie for mdcached
        os.setsid()
        pfd = _pidfd(daemon)
        end = time.monotonic() + TIMEOUT
        try:
            while time.monotonic() < end:
                r, _, _ = select.select([sock] + ([pfd] if pfd else []), [],
                                        [], end - time.monotonic())
                if sock in r and b"READY=1" in sock.recv(4096):
                    with open(marker + ".tmp", "w") as f:
                        f.write("READY=1\n")
                    os.rename(marker + ".tmp", marker)
                    break
                if pfd in r or (pfd is None and _exited(daemon, None)):
                    break
        finally:
            try:
                os.unlink(npath)
            except OSError:
                pass
            os._exit(0)
    os.waitpid(child, 0)
    sock.close()
    os.environ["NOTIFY_SOCKET"] = npath
    os.execv(argv[0], argv)


def _main(a):
    if len(a) >= 3 and a[0] == "exec" and a[2] == "--":
        exec_notified(a[1], a[3:])
    if len(a) >= 3 and a[0] == "wait-ready":
        secs = float(a[3]) if len(a) > 3 else TIMEOUT
        return wait_ready(a[1], int(a[2]), secs)
    if len(a) >= 2 and a[0] == "wait-exit":
        secs = float(a[2]) if len(a) > 2 else TIMEOUT
        return 0 if wait_exit(int(a[1]), secs) else 2
    if len(a) >= 3 and a[0] == "port":
        p = port_of(a[1], a[2], a[3] if len(a) > 3 else "127.0.0.1")
        if p is None:
            return 1
        print(p)
        return 0
    sys.stderr.write(__doc__)
    return 64


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
