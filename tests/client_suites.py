#!/usr/bin/env python3
"""tests/client_suites.py - memcached's clients' own test suites, run
against mdcached and, with the same test code in the same run, against
Debian's memcached 1.6.18 (docs/testing.md, "memcached's client suites").

Suites, pinned to exact versions and fetched at test time (never
committed): the integration tests of pymemcache, python-memcached's and
pylibmc's test suites (from their sdists, `pip download --no-binary`; the
libraries themselves are built from the same sdists, pylibmc against
Debian's libmemcached-dev), pylibmc again over SASL
(tests/realclients/suites/test_pylibmc_sasl.py: its suite has none), and
gomemcache's tests (`go mod download` of a pinned version, its checksum
checked here).

Each server runs in a private network namespace on 127.0.0.1:11211, so a
memcached service on the machine cannot answer for it; its `version` is
checked (mdcached's names mdcached, memcached's is 1.6.18).  mdcached is
started through the memcached entry point of the package's examples
(dist/memcached/memcached: `mdcached --memcached-compat`) with memcached's
own command line, which is also the `memcached` on the PATH of the suites
(gomemcache starts `memcached -s` and `memcached --enable-ssl ...`).

Every test failing against mdcached is listed.  One that also fails (or is
also skipped) against memcached is reported, not counted; any other fails
the run, as does a test skipped against mdcached but passed against
memcached.  The counts per suite and server end the output.

Needs root (ip netns), python3-venv, golang-go, memcached, sasl2-bin,
libmemcached-dev and network access to PyPI and the Go module proxy.
Elsewhere it prints SKIP and exits 77; under CI=true that is a failure.
Downloads are kept in $MDC_SUITES_CACHE (default
~/.cache/mdcached-client-suites) between runs.
"""

import hashlib
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import xml.etree.ElementTree as ET

PIP_PINS = ["pymemcache==4.0.0", "python-memcached==1.62", "pylibmc==1.6.3"]
PYTEST_PIN = "pytest==7.4.4"
GO_MODULE = "github.com/bradfitz/gomemcache"
# gomemcache has no tagged release: a pseudo-version is its exact pin
GO_VERSION = "v0.0.0-20230905024940-24af94b03874"
GO_SUM = "h1:N7oVaKyGp8bttX0bfZGmcGkjz7DLQXhAn3DNd3T0ous="
PORT = 11211
SASL_PORT = 11213
SASL_USER = "suiteuser"
SASL_PASSWORD = "suitepass"
HANG = 600  # seconds: only a hang reaches it

HERE = os.path.dirname(os.path.abspath(__file__))
SRCDIR = os.path.abspath(os.environ.get("srcdir", os.path.dirname(HERE)))
BUILDDIR = os.path.abspath(os.environ.get("MDC_BUILDDIR", "."))
CI = os.environ.get("CI") == "true"


def skip(why):
    if CI:
        print("FAIL: %s (CI=true: nothing may skip)" % why)
        sys.exit(1)
    print("SKIP: %s" % why)
    sys.exit(77)


def log(msg):
    print(msg, flush=True)


def run(cmd, **kw):
    """Run cmd, its output to ours; raise on failure."""
    kw.setdefault("timeout", HANG)
    subprocess.run(cmd, check=True, **kw)


# --- fetching and building (outside the namespace: it needs the network) ---

def cache_dir():
    d = os.environ.get("MDC_SUITES_CACHE") or os.path.join(
        os.path.expanduser("~"), ".cache", "mdcached-client-suites")
    os.makedirs(d, exist_ok=True)
    return d


def find_go():
    for g in ("/usr/lib/go/bin/go", "/usr/bin/go", shutil.which("go")):
        if g and os.access(g, os.X_OK):
            return g
    return None


def prepare(cache, work):
    """The venv (reused while the pins are the same), the suites' sources
    extracted into work, gomemcache's test binary.  Returns paths."""
    # pip's own cache lives in ours: two runs with caches of their own share
    # nothing (in ~/.cache/pip one pip read the wheel cache's origin file
    # while another pip was writing it, three test runs side by side)
    os.environ["PIP_CACHE_DIR"] = os.path.join(cache, "pip")
    key = hashlib.sha256(" ".join(PIP_PINS + [PYTEST_PIN]).encode())
    venv = os.path.join(cache, "venv-" + key.hexdigest()[:12])
    py = os.path.join(venv, "bin", "python")
    done = os.path.join(venv, ".complete")
    if not os.path.exists(done):
        shutil.rmtree(venv, ignore_errors=True)
        log("== creating %s" % venv)
        run(["/usr/bin/python3", "-m", "venv", venv])
        run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
             "--no-binary", "pylibmc,pymemcache,python-memcached",
             PYTEST_PIN] + PIP_PINS)
        open(done, "w").close()
    sdists = os.path.join(cache, "sdist")
    os.makedirs(sdists, exist_ok=True)
    names = {"pymemcache==4.0.0": "pymemcache-4.0.0.tar.gz",
             "python-memcached==1.62": "python-memcached-1.62.tar.gz",
             "pylibmc==1.6.3": "pylibmc-1.6.3.tar.gz"}
    if not all(os.path.exists(os.path.join(sdists, n))
               for n in names.values()):
        run([py, "-m", "pip", "download", "-q", "--disable-pip-version-check",
             "--no-binary", ":all:", "--no-deps", "-d", sdists] + PIP_PINS)
    for n in names.values():
        with tarfile.open(os.path.join(sdists, n)) as t:
            t.extractall(work)
    # python-memcached's sdist leaves out tests/utils.py, which its tests
    # import (captured_stderr): an equivalent, and the package marker
    pm = os.path.join(work, "python-memcached-1.62", "tests")
    open(os.path.join(pm, "__init__.py"), "a").close()
    with open(os.path.join(pm, "utils.py"), "w") as f:
        f.write('''import contextlib, io, sys


@contextlib.contextmanager
def captured_stderr():
    old = sys.stderr
    sys.stderr = io.StringIO()
    try:
        yield sys.stderr
    finally:
        sys.stderr = old
''')
    go = find_go()
    env = dict(os.environ, GOPATH=os.path.join(cache, "gopath"),
               GOMODCACHE=os.path.join(cache, "gomod"),
               GOFLAGS="-modcacherw", GOTOOLCHAIN="local",
               GOSUMDB="off",  # the checksum is pinned here instead
               GOCACHE=os.path.join(cache, "gobuild"))
    out = subprocess.run([go, "mod", "download", "-json",
                          "%s@%s" % (GO_MODULE, GO_VERSION)],
                         env=env, check=True, capture_output=True,
                         text=True, timeout=HANG, cwd=work).stdout
    m = re.search(r'"Dir": "([^"]+)"', out)
    s = re.search(r'"Sum": "([^"]+)"', out)
    if not m or not s or s.group(1) != GO_SUM:
        raise RuntimeError("go mod download %s@%s: checksum %s, expected %s"
                           % (GO_MODULE, GO_VERSION,
                              s.group(1) if s else "?", GO_SUM))
    gm = os.path.join(work, "gomemcache")
    shutil.copytree(m.group(1), gm)
    for root, dirs, files in os.walk(gm):
        os.chmod(root, 0o755)
    run([go, "test", "-c", "-o", os.path.join(gm, "memcache.test"),
         "./memcache"], cwd=gm, env=env)
    return py, os.path.join(gm, "memcache")


# --- servers (inside the namespace) -----------------------------------------

def ask_version(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(b"version\r\n")
    buf = b""
    while not buf.endswith(b"\r\n"):
        d = s.recv(200)
        if not d:
            break
        buf += d
    s.close()
    return buf.decode(errors="replace").strip()


def binary_noop(port):
    """memcached's binary NOOP: for a -S server, which serves no text."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(bytes([0x80, 0x0a]) + bytes(22))
    d = s.recv(24)
    s.close()
    return d


class Server:
    def __init__(self, name, argv, port, env, logpath, binary=False):
        self.name, self.port = name, port
        self.log = logpath
        self.proc = subprocess.Popen(argv, env=env,
                                     stdout=open(logpath, "w"),
                                     stderr=subprocess.STDOUT)
        t0 = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError("%s exited %d: %s" % (
                    name, self.proc.returncode, open(logpath).read()))
            try:
                self.version = (repr(binary_noop(port)) if binary
                                else ask_version(port))
                break
            except OSError:
                if time.monotonic() - t0 > 60:
                    raise RuntimeError("%s: not ready in 60 s" % name)
                time.sleep(0.05)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --- suites -------------------------------------------------------------------

def junit(path):
    """{test id: pass|fail|skip} from a pytest junit file."""
    res = {}
    if not os.path.exists(path):
        return res
    for tc in ET.parse(path).getroot().iter("testcase"):
        tid = "%s::%s" % (tc.get("classname"), tc.get("name"))
        if tc.find("failure") is not None or tc.find("error") is not None:
            res[tid] = "fail"
        elif tc.find("skipped") is not None:
            res[tid] = "skip"
        else:
            res[tid] = "pass"
    return res


def run_pytest(py, cwd, args, xml, env, out):
    cmd = [py, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=",
           "-q", "-rfEs", "--junitxml=" + xml] + args
    try:
        r = subprocess.run(cmd, cwd=cwd, env=env, stdout=out,
                           stderr=subprocess.STDOUT, timeout=HANG)
        rc = r.returncode
    except subprocess.TimeoutExpired:
        rc = "timeout"
    res = junit(xml)
    if not res:
        res["(the suite did not run: exit %s)" % rc] = "fail"
    return res


# Tests of the clients' own suites that race by their construction, on
# memcached as on mdcached, with the reason; one that fails is run again
# alone, up to RACE_RETRIES times, and counts as passed if a rerun passes
# (the output names it).  gomemcache's TestLocalhost writes flush_all on a
# connection it closes without reading the reply, then opens another and
# sets and reads keys at once: a server thread that reads the flush a
# moment after the other has stored a key hides it (a reproduction, one
# flush_all so sent then a set and a get, 3 000 times: 34-585 stale gets
# on memcached 1.6.18 -t 4, 34-297 on mdcached); its Touch part sleeps
# whole seconds against an expiry of 2 s.
KNOWN_RACES = {
    ("gomemcache", "TestLocalhost"):
        "flush_all sent on a connection closed unread, then keys set at once",
}
RACE_RETRIES = 2


def run_go(testbin, cwd, env, out, tmp):
    """gomemcache's tests, as nobody: they start `memcached` themselves,
    which memcached refuses to do as root without -u."""
    res = {}
    gotmp = os.path.join(tmp, "gotmp")
    os.makedirs(gotmp, exist_ok=True)
    shutil.chown(gotmp, "nobody")
    env = dict(env, TMPDIR=gotmp, HOME=gotmp)

    def go(*args):
        """The test binary with args; its output (also written to out)
        and exit status ("timeout" for a hang)."""
        try:
            r = subprocess.run(["setpriv", "--reuid=nobody",
                                "--regid=nogroup", "--clear-groups", testbin,
                                "-test.v", "-test.timeout", "300s"] +
                               list(args), cwd=cwd, env=env,
                               capture_output=True, text=True, timeout=HANG)
            text, rc = r.stdout + r.stderr, r.returncode
        except subprocess.TimeoutExpired as e:
            text, rc = (e.stdout or b"").decode(errors="replace"), "timeout"
        out.write(text)
        return text, rc

    text, rc = go()
    for m in re.finditer(r"^\s*--- (PASS|FAIL|SKIP): (\S+)", text, re.M):
        res[m.group(2)] = m.group(1).lower()
    if rc != 0 and "fail" not in res.values():
        res["(the test binary: exit %s)" % rc] = "fail"
    for (suite, name), why in KNOWN_RACES.items():
        if suite != "gomemcache" or res.get(name) != "fail":
            continue
        for k in range(1, RACE_RETRIES + 1):
            if go("-test.run", "^%s$" % name)[1] == 0:
                res[name] = "pass"
                log("known race: gomemcache %s failed, passed when run "
                    "again alone (rerun %d): %s" % (name, k, why))
                break
    return res


def suites_for(target, py, gotest, work, bindir, tmp):
    """Run every suite against the servers now up; {suite: {test: r}}."""
    env = dict(os.environ, PATH=bindir + ":" + os.environ["PATH"],
               MEMCACHED_HOST="127.0.0.1", MEMCACHED_PORT=str(PORT),
               MEMCACHED_SASL_PORT=str(SASL_PORT),
               MEMCACHED_SASL_USER=SASL_USER,
               MEMCACHED_SASL_PASSWORD=SASL_PASSWORD, TMPDIR=tmp)
    env.pop("PYTHONPATH", None)
    res = {}
    logs = os.path.join(tmp, "logs")
    os.makedirs(logs, exist_ok=True)

    def out(suite):
        return open(os.path.join(logs, "%s-%s.log" % (suite, target)), "w")

    res["pymemcache"] = run_pytest(
        py, os.path.join(work, "pymemcache-4.0.0"),
        ["pymemcache/test/test_integration.py", "-m", "integration",
         "--server=127.0.0.1", "--port=%d" % PORT],
        os.path.join(tmp, "pymemcache.xml"), env, out("pymemcache"))
    res["python-memcached"] = run_pytest(
        py, os.path.join(work, "python-memcached-1.62"), ["tests"],
        os.path.join(tmp, "pm.xml"), env, out("python-memcached"))
    res["pylibmc"] = run_pytest(
        py, os.path.join(work, "pylibmc-1.6.3"), ["tests"],
        os.path.join(tmp, "pylibmc.xml"), env, out("pylibmc"))
    res["pylibmc-sasl"] = run_pytest(
        py, tmp, [os.path.join(SRCDIR, "tests", "realclients", "suites",
                               "test_pylibmc_sasl.py")],
        os.path.join(tmp, "sasl.xml"), env, out("pylibmc-sasl"))
    res["gomemcache"] = run_go(os.path.join(gotest, "..", "memcache.test"),
                               gotest, env, out("gomemcache"), tmp)
    return res


def start_servers(target, mdc_wrapper, tmp):
    """memcached's command line for both; -S on SASL_PORT."""
    binp = mdc_wrapper if target == "mdcached" else "/usr/bin/memcached"
    common = ["-u", "nobody", "-l", "127.0.0.1"]
    env = dict(os.environ)
    sasl_env = dict(os.environ)
    sdir = os.path.join(tmp, "sasl")
    if target == "memcached":
        # Cyrus SASL: PLAIN against a sasldb that only this server reads
        with open(os.path.join(sdir, "memcached.conf"), "w") as f:
            f.write("mech_list: plain\nsasldb_path: %s/sasldb2\n" % sdir)
        sasl_env["SASL_CONF_PATH"] = sdir
    else:
        sasl_env["MEMCACHED_SASL_PWDB"] = os.path.join(sdir, "pwdb")
    plain = Server(target, [binp] + common + ["-p", str(PORT)], PORT, env,
                   os.path.join(tmp, target + ".log"))
    try:
        sasl = Server(target + " -S", [binp] + common +
                      ["-p", str(SASL_PORT), "-S"], SASL_PORT, sasl_env,
                      os.path.join(tmp, target + "-sasl.log"), binary=True)
    except Exception:
        plain.stop()
        raise
    return plain, sasl


def inside(argv):
    """The part run in the private network namespace: argv holds the
    paths prepare() made."""
    py, gotest, work, tmp = argv
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    mdc = os.path.join(BUILDDIR, "server", "mdcached")
    bins = {}
    for target in ("mdcached", "memcached"):
        d = os.path.join(tmp, "bin-" + target)
        os.makedirs(d, exist_ok=True)
        if target == "mdcached":
            with open(os.path.join(SRCDIR, "dist", "memcached",
                                   "memcached")) as f:
                text = f.read().replace("/usr/sbin/mdcached", mdc)
            with open(os.path.join(d, "memcached"), "w") as f:
                f.write(text)
            os.chmod(os.path.join(d, "memcached"), 0o755)
        else:
            os.symlink("/usr/bin/memcached", os.path.join(d, "memcached"))
        bins[target] = d
    sdir = os.path.join(tmp, "sasl")
    os.makedirs(sdir, exist_ok=True)
    os.chmod(tmp, 0o755)
    os.chmod(sdir, 0o755)
    with open(os.path.join(sdir, "pwdb"), "w") as f:
        f.write("%s:%s\n" % (SASL_USER, SASL_PASSWORD))
    subprocess.run(["saslpasswd2", "-p", "-c", "-a", "memcached", "-f",
                    os.path.join(sdir, "sasldb2"), SASL_USER],
                   input=SASL_PASSWORD.encode(), check=True)
    os.chmod(os.path.join(sdir, "sasldb2"), 0o644)
    results, versions = {}, {}
    for target in ("mdcached", "memcached"):
        plain, sasl = start_servers(
            target, os.path.join(bins["mdcached"], "memcached"), tmp)
        try:
            versions[target] = plain.version
            ok = ("mdcached" in plain.version if target == "mdcached" else
                  plain.version == "VERSION 1.6.18")
            if not ok:
                log("FAIL: the server on 127.0.0.1:%d is not %s: %r"
                    % (PORT, target, plain.version))
                return 1
            log("== %s: %s" % (target, plain.version))
            t0 = time.monotonic()
            results[target] = suites_for(target, py, gotest, work,
                                         bins[target], tmp)
            log("== %s: the suites took %.0f s" % (target,
                                                   time.monotonic() - t0))
        finally:
            plain.stop()
            sasl.stop()
    return report(results, tmp)


def counts(r):
    return tuple(sum(1 for v in r.values() if v == k)
                 for k in ("pass", "fail", "skip"))


def report(results, tmp):
    counted = 0
    bad = set()
    md, mc = results["mdcached"], results["memcached"]
    log("")
    log("%-18s %-26s %-26s" % ("suite", "mdcached pass/fail/skip",
                               "memcached pass/fail/skip"))
    for suite in md:
        a, b = md[suite], mc.get(suite, {})
        log("%-18s %-26s %-26s" % (suite, "%d/%d/%d" % counts(a),
                                   "%d/%d/%d" % counts(b)))
    log("")
    for suite in md:
        a, b = md[suite], mc.get(suite, {})
        for t in sorted(a):
            if a[t] == "pass":
                continue
            other = b.get(t, "absent")
            if t.startswith("(the "):
                other = "absent"  # a suite that did not run always counts
            if a[t] == "skip" and other != "pass":
                continue  # skipped on both (or not run there)
            if other in ("fail", "skip"):
                log("reported (also %s against memcached): %s %s"
                    % (other, suite, t))
                continue
            counted += 1
            bad.add(suite)
            log("FAIL (%s against mdcached, %s against memcached): %s %s"
                % (a[t], other, suite, t))
        for t in sorted(b):
            if b[t] == "pass" and t not in a:
                counted += 1
                bad.add(suite)
                log("FAIL (run against memcached only): %s %s" % (suite, t))
    log("")
    log("logs: %s (kept with MDC_TEST_KEEP=1)" % os.path.join(tmp, "logs"))
    if counted:
        for suite in sorted(bad):
            p = os.path.join(tmp, "logs", "%s-mdcached.log" % suite)
            with open(p, errors="replace") as f:
                lines = f.readlines()
            log("---- %s against mdcached (last 80 lines) ----" % suite)
            sys.stdout.write("".join(lines[-80:]))
        log("%d failure(s) against mdcached that memcached passes" % counted)
        return 1
    log("ok: every failure against mdcached also fails against memcached")
    return 0


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--inside":
        sys.exit(inside(sys.argv[2:]))
    if os.geteuid() != 0:
        skip("needs root (a private network namespace on port %d)" % PORT)
    for c in ("ip", "saslpasswd2", "setpriv"):
        if shutil.which(c) is None:
            skip("%s not installed (tools/deps.sh)" % c)
    if not os.path.exists("/usr/bin/memcached"):
        skip("memcached not installed (tools/deps.sh)")
    if find_go() is None:
        skip("go not installed (golang-go, tools/deps.sh)")
    if subprocess.run(["/usr/bin/python3", "-c", "import ensurepip"],
                      capture_output=True).returncode != 0:
        skip("python3-venv not installed (tools/deps.sh)")
    if not os.path.exists("/usr/include/libmemcached/memcached.h"):
        skip("libmemcached-dev not installed (tools/deps.sh)")
    mdc = os.path.join(BUILDDIR, "server", "mdcached")
    if not os.access(mdc, os.X_OK):
        print("FAIL: %s not built" % mdc)
        sys.exit(1)
    t0 = time.monotonic()
    tmp = tempfile.mkdtemp(prefix="mdc-suites.")
    ns = "mdcsuites%d" % os.getpid()
    rc = 1
    try:
        work = os.path.join(tmp, "src")
        os.makedirs(work)
        try:
            py, gotest = prepare(cache_dir(), work)
        except (subprocess.SubprocessError, OSError, RuntimeError) as e:
            # PyPI or the module proxy unreachable, a build that fails
            print("FAIL: fetching or building the suites: %s" % e)
            return 1
        log("== fetched and built in %.0f s" % (time.monotonic() - t0))
        subprocess.run(["ip", "netns", "add", ns], check=True)
        rc = subprocess.run(["ip", "netns", "exec", ns, sys.executable,
                             os.path.abspath(__file__), "--inside", py,
                             gotest, work, tmp]).returncode
    finally:
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
        if os.environ.get("MDC_TEST_KEEP") != "1":
            shutil.rmtree(tmp, ignore_errors=True)
    log("== client suites: %.0f s in all" % (time.monotonic() - t0))
    return rc


if __name__ == "__main__":
    sys.exit(main())
