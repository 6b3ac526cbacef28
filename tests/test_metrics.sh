#!/bin/sh
# tests/test_metrics.sh - --metrics (docs/packaging.md, "Prometheus"):
#  - off by default; a PORT alone and `auto' bind loopback; ADDR:auto and
#    auto take a free port, named in the log and --port-file; a bad value
#    exits 64;
#  - after known traffic (native and text protocols) /metrics carries
#    memcached_exporter's memcached_commands_total{command,status} per
#    thread with the exact counts, the tag-index gauges, per-command
#    histograms whose buckets are cumulative and end at _count, HELP and
#    TYPE for every family; other paths 404, POST 501 (evhttp: GET only);
#  - `promtool check metrics' (Debian's prometheus) accepts the scrape;
#  - memcached_exporter's names (its list is data below): every one whose
#    meaning we have, with its type, no other memcached_* name, no old
#    mdcached_* duplicate; every counter named _total; get_flushed, time,
#    CPU seconds and the like with the values the traffic gives;
#  - every metric the Grafana dashboard (dist/grafana/) queries exists, its
#    queries parse (promtool check rules), its requests per thread count
#    the tag commands too.
set -u
S=${srcdir:-.}
B=${MDC_BUILDDIR:-.}
D="$B/server/mdcached"
TOOL="$B/client-c/tool/mdcached-tool"
command -v python3 >/dev/null 2>&1 || { echo "SKIP: python3"; exit 77; }
. "$(dirname "$0")/harness.sh"
T=$H_TMP
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# bad values exit 64
for bad in "x:y" "0" "127.0.0.1:70000" "[::1" "autox" "127.0.0.1:0"; do
    mdc_run out -p 0 -s "$T/s0" --metrics="$bad"
    rc=$?
    [ $rc -eq 64 ] || fail "--metrics=$bad: exit $rc, want 64"
done

# off by default
mdc_start_raw off -p 0 -s "$T/s1" -n 1 -v 2 || fail "did not start"
grep -q "metrics on" "$T/off.log" && fail "metrics served without --metrics"
"$TOOL" -s "unix:$T/s1" settings | grep -qx "metrics " || fail "settings: metrics not empty by default"
mdc_stop off

# a PORT alone binds loopback.  That needs a fixed port, so one is probed:
# if another process takes it before mdcached binds it, mdcached exits 69
# ("Address already in use") and the check is run again on a fresh port,
# so the race costs a retry and cannot fail the test.  Every other daemon
# here uses --metrics auto and reads its port from the port file.
metricsport() { awk '$1 == "metrics" { sub(/.*:/, "", $2); print $2; exit }' "$1"; }
n=0; done_=
while [ $n -lt 5 ] && [ -z "$done_" ]; do
    n=$((n + 1))
    P=$(freeport)
    if mdc_start_raw p -p 0 -s "$T/s2" -n 1 -v 2 --metrics="$P"; then
        done_=1
        grep -qx "metrics 127.0.0.1:$P" "$T/p.ports" ||
            fail "--metrics $P: port file $(cat "$T/p.ports")"
        grep -q "metrics on http://127.0.0.1:$P/metrics" "$T/p.log" ||
            fail "a PORT alone must bind 127.0.0.1: $(grep metrics "$T/p.log")"
        mdc_stop p
    elif ! grep -q "Address already in use" "$T/p.log"; then
        done_=1
        fail "--metrics $P: no port file: $(cat "$T/p.log")"
    fi
done
[ -n "$done_" ] || fail "--metrics PORT: 5 probed ports taken meanwhile"

# ADDR:auto: a free port the kernel picks, in the port file and the log
if mdc_start_raw a -p 0 -s "$T/s3" -n 1 -v 2 --metrics=127.0.0.1:auto; then
    AP=$(metricsport "$T/a.ports")
    case "$AP" in
    '' | 0 | *[!0-9]*) fail "--metrics 127.0.0.1:auto: port file $(cat "$T/a.ports")" ;;
    *) grep -q "metrics on http://127.0.0.1:$AP/metrics" "$T/a.log" ||
        fail "127.0.0.1:auto: log $(grep metrics "$T/a.log")"
       python3 -c 'import sys, urllib.request; r = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % sys.argv[1], timeout=30); assert r.status == 200' "$AP" ||
        fail "127.0.0.1:auto: no scrape on port $AP" ;;
    esac
else
    fail "--metrics 127.0.0.1:auto: no port file: $(cat "$T/a.log")"
fi
[ -n "$a_STATUS" ] || mdc_stop a

# the daemon the rest of the test scrapes: --metrics auto (loopback)
mdc_start_raw d -p 0 -s "$T/sock" -n 2 -v 2 --metrics=auto --sweep-interval 0 ||
    { fail "--metrics auto: no port file"; exit 1; }
MP=$(metricsport "$T/d.ports")
grep -q "metrics on http://127.0.0.1:$MP/metrics" "$T/d.log" ||
    fail "--metrics auto must bind 127.0.0.1: $(grep metrics "$T/d.log"), port file $(cat "$T/d.ports")"

tool() { "$TOOL" -s "unix:$T/sock" "$@" >/dev/null 2>&1; }
# first a flushed record: a set, flush_all, a get that finds it gone
# (no sweeper, whose walk could reclaim it before the get)
# (get_flushed; a get miss)
python3 - "$T/sock" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"set fl 0 0 1\r\nx\r\nflush_all\r\nget fl\r\n")
buf = b""
while not buf.endswith(b"END\r\n"):
    buf += s.recv(4096)
s.close()
EOF
tool set k1 v1 -t 3:1
tool set k2 v2 -t 3:1 -t 3:2
tool set k3 v3
tool get k1
tool get k3
tool get nope
tool tget 3 1
tool tdel 3 2
# the text protocol: one hit, one miss, one set; a delete, an incr and a
# touch that miss, a tpop of an empty stack (each in its own histogram)
python3 - "$T/sock" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
s.sendall(b"set t1 0 0 2\r\nhi\r\nget t1\r\nget none\r\n"
          b"delete none\r\nincr none 1\r\ntouch none 10\r\ntpop 9 9\r\n")
buf = b""
while buf.count(b"END\r\n") < 3:
    buf += s.recv(4096)
s.close()
EOF
python3 - "$MP" "$T/scrape" <<'EOF' || fail "scrape"
import sys, time, urllib.request, urllib.error
port, out = sys.argv[1], sys.argv[2]
t0 = time.time()
r = urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=30)
ct = r.headers.get("Content-Type", "")
assert ct.startswith("text/plain; version=0.0.4"), ct
open(out, "wb").write(r.read())
# when it was taken: memcached_time_seconds is judged against this window
open(out + ".when", "w").write("%f %f\n" % (t0, time.time()))
for path, method, want in (("/other", "GET", 404), ("/metrics", "POST", 501)):
    try:
        urllib.request.urlopen(urllib.request.Request(
            "http://127.0.0.1:%s%s" % (port, path), method=method, data=b"" if method == "POST" else None), timeout=30)
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
# native: 3 sets, 2 get hits, 1 get miss; text: 2 sets, 1 hit, 2 misses
check(total("memcached_commands_total", command="get", status="hit") == 3, "get hits")
check(total("memcached_commands_total", command="get", status="miss") == 3, "get misses")
check(total("memcached_commands_total", command="set", status="hit") == 5, "sets")
check(total("memcached_commands_total", command="flush", status="hit") == 1, "flushes")
for cmd in ("delete", "incr", "touch"):
    check(total("memcached_commands_total", command=cmd, status="miss") == 1, cmd + " misses")
threads = {l.get("thread") for n, l, v in samples if n == "memcached_commands_total"}
check(threads == {"0", "1", "2"}, "thread labels %s" % threads)
roles = {(l["thread"], l["role"]) for n, l, v in samples if n == "mdcached_thread_info"}
check(roles == {("0", "main"), ("1", "network"), ("2", "network")}, "roles %s" % roles)
check(total("mdcached_tag_index_records") == 1, "tagged records after tdel 3 2 (k1 left)")
check(total("memcached_current_items") == 3, "items: k1 k3 t1")
check(fams.get("mdcached_request_duration_seconds") == "histogram", "histogram type")
for cmd, want in (("get", 6), ("set", 5), ("get_by_tag", 1), ("del_by_tag", 1), ("flush", 1),
                  ("delete", 1), ("incr", 1), ("touch", 1), ("tstack", 1)):
    cnt = total("mdcached_request_duration_seconds_count", command=cmd)
    check(cnt == want, "%s: count %s, want %s" % (cmd, cnt, want))
    b = [(l["le"], v) for n, l, v in samples if n == "mdcached_request_duration_seconds_bucket" and l["command"] == cmd]
    check(len(b) == 20 and b[-1][0] == "+Inf" and b[-1][1] == cnt, "%s buckets end at +Inf = count" % cmd)
    check(all(b[i][1] <= b[i + 1][1] for i in range(len(b) - 1)), "%s buckets cumulative" % cmd)
    check(total("mdcached_request_duration_seconds_sum", command=cmd) > 0, "%s sum > 0" % cmd)
sys.exit(1 if check.bad else 0)
EOF

# memcached_exporter's metrics (prometheus/memcached_exporter,
# pkg/exporter/exporter.go), written here as data: name, the exporter's
# type, and ours: "same", another type with the reason, or "-" with why we
# have no such figure.  Ours must carry every name we have the meaning of,
# with its type, no other memcached_* name, and no second (mdcached_*)
# name for a figure exported under the exporter's.
cat >"$T/exporter" <<'EOF'
memcached_up gauge same
memcached_uptime_seconds counter gauge: not named _total (promtool's lint); it never goes down anyway
memcached_time_seconds gauge same
memcached_version gauge same
memcached_process_user_cpu_seconds_total counter same
memcached_process_system_cpu_seconds_total counter same
memcached_read_bytes_total counter same
memcached_written_bytes_total counter same
memcached_current_connections gauge same
memcached_max_connections gauge same
memcached_connections_total counter same
memcached_connections_rejected_total counter same
memcached_connections_yielded_total counter same
memcached_connections_listener_disabled_total counter same
memcached_current_bytes gauge same
memcached_limit_bytes gauge same
memcached_commands_total counter same
memcached_current_items gauge same
memcached_items_total counter same
memcached_items_evicted_total counter same
memcached_items_reclaimed_total counter same
memcached_item_too_large_total counter same
memcached_item_no_memory_total counter same
memcached_direct_reclaims_total counter same
memcached_malloced_bytes gauge same
memcached_accepting_connections gauge same
memcached_lru_crawler_enabled gauge - no LRU crawler (a sweeper reclaims expired records)
memcached_lru_crawler_sleep gauge - no LRU crawler
memcached_lru_crawler_to_crawl gauge - no LRU crawler
memcached_lru_crawler_maintainer_thread gauge - no segmented LRU
memcached_lru_crawler_hot_percent gauge - no segmented LRU
memcached_lru_crawler_warm_percent gauge - no segmented LRU
memcached_lru_crawler_hot_max_factor gauge - no segmented LRU
memcached_lru_crawler_warm_max_factor gauge - no segmented LRU
memcached_lru_crawler_starts_total counter - no LRU crawler
memcached_lru_crawler_reclaimed_total counter - no LRU crawler
memcached_lru_crawler_items_checked_total counter - no LRU crawler
memcached_lru_crawler_moves_to_cold_total counter - no segmented LRU
memcached_lru_crawler_moves_to_warm_total counter - no segmented LRU
memcached_lru_crawler_moves_within_lru_total counter - no segmented LRU
memcached_slab_current_items gauge - no slab classes (stats items shows one)
memcached_slab_items_age_seconds gauge - no slab classes
memcached_slab_items_crawler_reclaimed_total counter - no slab classes
memcached_slab_items_evicted_total counter - no slab classes
memcached_slab_items_evicted_nonzero_total counter - no slab classes
memcached_slab_items_evicted_time_seconds gauge - no slab classes
memcached_slab_items_evicted_unfetched_total counter - no slab classes
memcached_slab_items_expired_unfetched_total counter - no slab classes
memcached_slab_items_outofmemory_total counter - no slab classes
memcached_slab_items_reclaimed_total counter - no slab classes
memcached_slab_items_tailrepairs_total counter - no slab classes
memcached_slab_items_moves_to_cold counter - no slab classes
memcached_slab_items_moves_to_warm counter - no slab classes
memcached_slab_items_moves_within_lru counter - no slab classes
memcached_slab_hot_items gauge - no slab classes
memcached_slab_warm_items gauge - no slab classes
memcached_slab_cold_items gauge - no slab classes
memcached_slab_temporary_items gauge - no slab classes
memcached_slab_hot_age_seconds gauge - no slab classes
memcached_slab_warm_age_seconds gauge - no slab classes
memcached_slab_lru_hits_total counter - no slab classes
memcached_slab_chunk_size_bytes gauge - no slab classes
memcached_slab_chunks_per_page gauge - no slab classes
memcached_slab_current_pages gauge - no slab classes
memcached_slab_current_chunks gauge - no slab classes
memcached_slab_chunks_used gauge - no slab classes
memcached_slab_chunks_free gauge - no slab classes
memcached_slab_chunks_free_end gauge - no slab classes
memcached_slab_mem_requested_bytes gauge - no slab classes
memcached_slab_commands_total counter - no slab classes
memcached_extstore_compact_lost_total counter - no extstore
memcached_extstore_compact_rescued_total counter - no extstore
memcached_extstore_compact_skipped_total counter - no extstore
memcached_extstore_pages_allocated_total counter - no extstore
memcached_extstore_pages_evicted_total counter - no extstore
memcached_extstore_pages_reclaimed_total counter - no extstore
memcached_extstore_pages_free gauge - no extstore
memcached_extstore_pages_used gauge - no extstore
memcached_extstore_objects_evicted_total counter - no extstore
memcached_extstore_objects_read_total counter - no extstore
memcached_extstore_objects_written_total counter - no extstore
memcached_extstore_objects_used gauge - no extstore
memcached_extstore_bytes_evicted_total counter - no extstore
memcached_extstore_bytes_written_total counter - no extstore
memcached_extstore_bytes_read_total counter - no extstore
memcached_extstore_bytes_used gauge - no extstore
memcached_extstore_bytes_fragmented gauge - no extstore
memcached_extstore_bytes_limit gauge - no extstore
memcached_extstore_io_queue_depth gauge - no extstore
memcached_proxy_conn_requests_total counter - not a proxy
memcached_proxy_conn_errors_total counter - not a proxy
memcached_proxy_conn_oom_total counter - not a proxy
memcached_proxy_req_active gauge - not a proxy
memcached_proxy_config_reloads_total counter - not a proxy
memcached_proxy_config_reload_fails_total counter - not a proxy
memcached_proxy_config_cron_runs_total counter - not a proxy
memcached_proxy_config_cron_fails_total counter - not a proxy
memcached_proxy_backend_total gauge - not a proxy
memcached_proxy_backend_marked_bad_total counter - not a proxy
memcached_proxy_backend_failed gauge - not a proxy
memcached_proxy_request_failed_depth_total counter - not a proxy
memcached_round_robin_fallback_total counter - not a proxy
memcached_unexpected_napi_ids_total counter - not a proxy
EOF
python3 - "$T/exporter" "$T/scrape" <<'EOF' || fail "memcached_exporter's names"
import re, sys, time
exp = {}
for line in open(sys.argv[1]):
    name, typ, ours = line.rstrip("\n").split(" ", 2)
    exp[name] = (typ, ours)
fams, vals = {}, {}
for line in open(sys.argv[2]):
    if line.startswith("# TYPE "):
        _, _, name, typ = line.split()
        fams[name] = typ
    elif not line.startswith("#"):
        name = re.match(r"[a-zA-Z_:][a-zA-Z0-9_:]*", line).group(0)
        vals.setdefault(name, []).append(float(line.split()[-1]))
bad = 0
def check(cond, msg):
    global bad
    if not cond:
        print("FAIL:", msg)
        bad += 1
for name, (typ, ours) in exp.items():
    if ours == "-" or ours.startswith("- "):
        check(name not in fams, "%s exported, yet listed as not ours" % name)
        continue
    want = typ if ours == "same" else ours.split(":")[0]
    check(fams.get(name) == want, "%s: type %s, want %s" % (name, fams.get(name), want))
for name in fams:
    if name.startswith("memcached_"):
        check(name in exp, "%s is not memcached_exporter's name" % name)
    # a counter is named _total and a _total is a counter
    if name.endswith("_total") or fams[name] == "counter":
        check(name.endswith("_total") and fams[name] == "counter",
              "%s: %s" % (name, fams[name]))
# one name per meaning: the old names of figures now under the exporter's
for old in ("mdcached_accepting_conns", "mdcached_conn_yields_total",
            "mdcached_listen_disabled_num_total", "mdcached_reclaimed",
            "mdcached_store_too_large_total", "mdcached_store_no_memory_total",
            "mdcached_direct_reclaims", "mdcached_time", "mdcached_get_flushed",
            "mdcached_dumps", "mdcached_dump_failures"):
    check(old not in fams, "%s still exported" % old)
# counters of ours
for name in ("mdcached_dumps_total", "mdcached_dump_failures_total",
             "mdcached_get_flushed_total", "mdcached_lrutail_reflocked_total",
             "mdcached_listen_disabled_seconds_total"):
    check(fams.get(name) == "counter", "%s: %s" % (name, fams.get(name)))
def one(name):
    return vals.get(name, [None])[0]
check(one("mdcached_get_flushed_total") == 1, "get_flushed after one flushed get")
check(one("mdcached_dumps_total") == 0, "no dump")
# the server's clock in whole seconds, between the scrape's start and end
# (not "now": on a busy machine this check runs well after the scrape)
t = one("memcached_time_seconds")
w0, w1 = (float(x) for x in open(sys.argv[2] + ".when").read().split())
check(t is not None and w0 - 1 <= t <= w1 + 1,
      "memcached_time_seconds %s, the scrape taken in [%.1f, %.1f]" % (t, w0, w1))
check((one("memcached_process_user_cpu_seconds_total") or 0) +
      (one("memcached_process_system_cpu_seconds_total") or 0) > 0, "CPU seconds")
check(one("memcached_accepting_connections") == 1, "accepting")
check((one("memcached_malloced_bytes") or 0) > 0, "malloced bytes")
check(sum(vals.get("memcached_item_too_large_total", [1])) == 0, "too large")
sys.exit(1 if bad else 0)
EOF

if command -v promtool >/dev/null 2>&1; then
    promtool check metrics <"$T/scrape" >"$T/promtool" 2>&1 || fail "promtool check metrics: $(cat "$T/promtool")"
    [ -s "$T/promtool" ] && fail "promtool lint: $(cat "$T/promtool")"
elif [ "${CI:-}" = true ]; then
    fail "promtool not installed (Debian package prometheus)"
else
    echo "note: promtool not installed; exposition format not checked by it"
fi

# the dashboard queries only metrics that exist, its "requests per
# thread" counts every request family (the tag commands too), and every
# query is PromQL that promtool parses (as a recording rule, the Grafana
# variables replaced)
python3 - "$S/dist/grafana/mdcached-dashboard.json" "$T/scrape" "$T/rules.yml" <<'EOF' || fail "Grafana dashboard"
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
per = [t["expr"] for p in dash["panels"] if p["title"] == "Requests / s per thread"
       for t in p["targets"]]
for fam in ("memcached_commands_total", "mdcached_cmd_get_by_tag_total",
            "mdcached_cmd_del_by_tag_total", "mdcached_cmd_tstack_push_total",
            "mdcached_cmd_tstack_pop_total", "mdcached_cmd_atomic_total"):
    if not any(fam in e for e in per):
        print("FAIL: requests per thread leaves out %s" % fam); bad += 1
with open(sys.argv[3], "w") as f:
    f.write("groups:\n- name: dashboard\n  rules:\n")
    for i, e in enumerate(exprs):
        e = e.replace("$__rate_interval", "1m").replace("$instance", ".*")
        f.write("  - record: dashboard:q%d\n    expr: %s\n" % (i, json.dumps(e)))
sys.exit(1 if bad else 0)
EOF
if command -v promtool >/dev/null 2>&1; then
    promtool check rules "$T/rules.yml" >"$T/promtool-rules" 2>&1 ||
        fail "dashboard queries: $(cat "$T/promtool-rules")"
fi

mdc_stop d || fail "exit $? after SIGTERM with --metrics"
[ $fails -eq 0 ] || { echo "$fails failure(s)"; cat "$T/d.log"; exit 1; }
echo "PASS: metrics"
