#!/bin/sh
# tests/test_metrics.sh - --metrics (docs/packaging.md, "Prometheus"):
#  - off by default; a PORT alone binds loopback; a bad value exits 64;
#  - after known traffic (native and text protocols) /metrics carries
#    memcached_exporter's memcached_commands_total{command,status} per
#    thread with the exact counts, the tag-index gauges, per-command
#    histograms whose buckets are cumulative and end at _count, HELP and
#    TYPE for every family; other paths 404, POST 501 (evhttp: GET only);
#  - `promtool check metrics' (Debian's prometheus) accepts the scrape;
#  - every metric the Grafana dashboard (dist/grafana/) queries exists.
set -u
S=${srcdir:-.}
B=${MDC_BUILDDIR:-.}
D="$B/server/mdcached"
TOOL="$B/client-c/tool/mdcached-tool"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3"; exit 77; }
T=$(mktemp -d /tmp/mdc-metrics-XXXXXX)
chmod 755 "$T"
DPID=
cleanup() {
    [ -n "$DPID" ] && kill "$DPID" 2>/dev/null && wait "$DPID" 2>/dev/null
    rm -rf "$T"
}
trap cleanup EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
waitlog() { i=0; while ! grep -q "$1" "$2" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done; }

# bad values exit 64
for bad in "x:y" "0" "127.0.0.1:70000" "[::1"; do
    "$D" -p 0 -s "$T/s0" --metrics="$bad" >"$T/out" 2>&1
    rc=$?
    [ $rc -eq 64 ] || fail "--metrics=$bad: exit $rc, want 64"
done

# off by default
: >"$T/off.log"
"$D" -p 0 -s "$T/s1" -n 1 -v 2 >"$T/off.log" 2>&1 &
DPID=$!
waitlog " ready" "$T/off.log"
grep -q "metrics on" "$T/off.log" && fail "metrics served without --metrics"
"$TOOL" -s "unix:$T/s1" settings | grep -qx "metrics " || fail "settings: metrics not empty by default"
kill $DPID; wait $DPID; DPID=

MP=$(freeport)
: >"$T/d.log"
"$D" -p 0 -s "$T/sock" -n 2 -v 2 --metrics="$MP" >"$T/d.log" 2>&1 &
DPID=$!
waitlog " ready" "$T/d.log"
grep -q "metrics on http://127.0.0.1:$MP/metrics" "$T/d.log" ||
    fail "a PORT alone must bind 127.0.0.1: $(grep metrics "$T/d.log")"

tool() { "$TOOL" -s "unix:$T/sock" "$@" >/dev/null 2>&1; }
tool set k1 v1 -t 3:1
tool set k2 v2 -t 3:1 -t 3:2
tool set k3 v3
tool get k1
tool get k3
tool get nope
tool tget 3 1
tool tdel 3 2
# the text protocol: one hit, one miss, one set
python3 - "$T/sock" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"set t1 0 0 2\r\nhi\r\nget t1\r\nget none\r\n")
buf = b""
while buf.count(b"END\r\n") < 2:
    buf += s.recv(4096)
s.close()
EOF
python3 - "$MP" "$T/scrape" <<'EOF' || fail "scrape"
import sys, urllib.request, urllib.error
port, out = sys.argv[1], sys.argv[2]
r = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5)
ct = r.headers.get("Content-Type", "")
assert ct.startswith("text/plain; version=0.0.4"), ct
open(out, "wb").write(r.read())
for path, method, want in (("/other", "GET", 404), ("/metrics", "POST", 501)):
    try:
        urllib.request.urlopen(urllib.request.Request(
            "http://127.0.0.1:%s%s" % (port, path), method=method, data=b"" if method == "POST" else None), timeout=5)
        sys.exit("%s %s answered 200" % (method, path))
    except urllib.error.HTTPError as e:
        assert e.code == want, (path, e.code)
EOF

python3 - "$T/scrape" <<'EOF' || fail "content of /metrics"
import re, sys
fams, samples, helps = {}, [], set()
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line.startswith("# HELP "):
        helps.add(line.split()[2]); continue
    if line.startswith("# TYPE "):
        _, _, name, typ = line.split(); fams[name] = typ; continue
    m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? (\S+)$', line)
    assert m, "bad line: " + line
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3) or ""))
    samples.append((m.group(1), labels, float(m.group(4))))
def total(name, **want):
    return sum(v for n, l, v in samples if n == name and all(l.get(k) == x for k, x in want.items()))
def check(cond, msg):
    if not cond:
        print("FAIL:", msg); check.bad += 1
check.bad = 0
for n, l, v in samples:
    base = re.sub(r'_(bucket|sum|count)$', '', n) if n not in fams else n
    check(base in fams and base in helps, "no HELP/TYPE for " + n)
check(total("memcached_up") == 1, "memcached_up")
# native: 3 sets, 2 get hits, 1 get miss; text: 1 set, 1 hit, 1 miss
check(total("memcached_commands_total", command="get", status="hit") == 3, "get hits")
check(total("memcached_commands_total", command="get", status="miss") == 2, "get misses")
check(total("memcached_commands_total", command="set", status="hit") == 4, "sets")
threads = {l.get("thread") for n, l, v in samples if n == "memcached_commands_total"}
check(threads == {"0", "1", "2"}, "thread labels %s" % threads)
roles = {(l["thread"], l["role"]) for n, l, v in samples if n == "mdcached_thread_info"}
check(roles == {("0", "main"), ("1", "network"), ("2", "network")}, "roles %s" % roles)
check(total("mdcached_tag_index_records") == 1, "tagged records after tdel 3 2 (k1 left)")
check(total("memcached_current_items") == 3, "items: k1 k3 t1")
check(fams.get("mdcached_request_duration_seconds") == "histogram", "histogram type")
for cmd, want in (("get", 5), ("set", 4), ("get_by_tag", 1), ("del_by_tag", 1)):
    cnt = total("mdcached_request_duration_seconds_count", command=cmd)
    check(cnt == want, "%s: count %s, want %s" % (cmd, cnt, want))
    b = [(l["le"], v) for n, l, v in samples if n == "mdcached_request_duration_seconds_bucket" and l["command"] == cmd]
    check(len(b) == 20 and b[-1][0] == "+Inf" and b[-1][1] == cnt, "%s buckets end at +Inf = count" % cmd)
    check(all(b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)), "%s buckets cumulative" % cmd)
    check(total("mdcached_request_duration_seconds_sum", command=cmd) > 0, "%s sum > 0" % cmd)
sys.exit(1 if check.bad else 0)
EOF

if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$T/scrape" >"$T/promtool" 2>&1 || fail "promtool check metrics: $(cat "$T/promtool")"
    [ -s "$T/promtool" ] && fail "promtool lint: $(cat "$T/promtool")"
elif [ "${CI:-}" = true ]; then
    fail "promtool not installed (Debian package prometheus)"
else
    echo "note: promtool not installed; exposition format not checked by it"
fi

# the dashboard queries only metrics that exist
python3 - "$S/dist/grafana/mdcached-dashboard.json" "$T/scrape" <<'EOF' || fail "Grafana dashboard"
import json, re, sys
dash = json.load(open(sys.argv[1]))
have = set(re.findall(r'^([a-z_]+)', open(sys.argv[2]).read(), re.M))
bad = 0
exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
assert len(exprs) >= 10, "too few queries"
for e in exprs:
    for name in re.findall(r'\b((?:memcached|mdcached)_[a-z_]+)', e):
        if name not in have:
            print("FAIL: dashboard queries %s, not exported" % name); bad += 1
sys.exit(1 if bad else 0)
EOF

kill $DPID
wait $DPID || fail "exit $? after SIGTERM with --metrics"
DPID=
[ $fails -eq 0 ] || { echo "$fails failure(s)"; cat "$T/d.log"; exit 1; }
echo "PASS: metrics"
