#!/usr/bin/env python3
"""report.py - the reporter of bench/run (docs/benchmarking.md).

  report.py table RUNS.jsonl [--doc DOC] [--png-dir DIR]
                                        the side-by-side table of a run
  report.py line ONE.json KEY=VALUE...  one mdc-load run as a JSON line
  report.py oneline < LINE              that line as one line of text
  report.py udp UDPLOAD.json UTIME0 STIME0 UTIME1 STIME1 HZ
                                        one `udpload get` window and the
                                        server's clock ticks before and
                                        after it, in mdc-load's JSON shape
  report.py stats text|resp SOCKET      a server's item count
  report.py compare RUNS.jsonl [--doc DOC] [--png-dir DIR]
                                        W1-W4, W6, W7: issue 4's ratios, the
                                        Markdown of performance-history.md, plots
  report.py w5 RUNS.jsonl               W5's tables (round trips, W5a,
                                        invalidation, leftovers, libmdcached)
  report.py w8 RESULT.json [--png P] [--md M]   W8's marginal costs
  report.py scale RUNS.jsonl            issue 13's target table

`table` is the one format: per workload (phase) and target, in the order
they ran, the median server CPU per request over the rounds with its
spread (lowest and highest round), the ratio of that median to the first
target's, throughput, and latency percentiles where the workload asks
("latency yes", rates or beside); then what the runner adds (W5's tables,
W8's marginal costs, the scale table, W5b's invalidations).

`line` flattens mdc-load's JSON of one run into one line, adds the given
fields and the neighbours' CPU during the window: CPU 0 holds only the
server and CPU 1 only the generator, so each CPU's busy time minus theirs
is other work on the machine (`foreign_cpu0`, `foreign_cpu1`, in CPUs).
"""
import json
import os
import socket
import statistics
import statistics as st
import sys

NOISY_CPUS = 0.25  # foreign CPU above which a run counts as noisy


def cmd_line(argv):
    d = json.load(open(argv[0]))
    for kv in argv[1:]:
        k, v = kv.split("=", 1)
        try:
            v = json.loads(v)
        except ValueError:
            pass
        d[k] = v
    secs = d.get("duration_s") or 1
    cpus = d.get("cpus") or []
    sc = d.get("server_cpu") or {}
    if len(cpus) >= 2:
        busy = [c["user_s"] + c["sys_s"] + c["softirq_s"] + c["steal_s"]
                for c in cpus]
        srv = sc.get("user_s", 0) + sc.get("sys_s", 0)
        cli = d["client_cpu"]["user_s"] + d["client_cpu"]["sys_s"]
        d["foreign_cpu0"] = round(max(0.0, busy[0] - srv) / secs, 3)
        d["foreign_cpu1"] = round(max(0.0, busy[1] - cli) / secs, 3)
        d["foreign_other"] = round(sum(busy[2:]) / secs, 3)
        d["cpu0_softirq_us_per_req"] = (
            round(cpus[0]["softirq_s"] * 1e6 / d["requests"], 4)
            if d["requests"] else None)
        d["noisy"] = d["foreign_cpu0"] + d["foreign_cpu1"] > NOISY_CPUS
    print(json.dumps(d, sort_keys=False))


def cmd_udp(argv):
    """The udp workload's window (bench/run udp): udpload's JSON and the
    server's utime/stime from /proc/PID/stat before and after, in the shape
    `line` and the table read: server CPU per reply (what bench/udp_ab.sh
    printed), replies per second, p50/p99."""
    o = json.load(open(argv[0]))
    u0, s0, u1, s1, hz = (int(x) for x in argv[1:6])
    rep = o.get("replies", 0)
    user, sys_ = (u1 - u0) / hz, (s1 - s0) / hz
    sc = {"user_s": user, "sys_s": sys_}
    if rep:
        sc["us_per_req"] = (user + sys_) * 1e6 / rep
        sc["sys_us_per_req"] = sys_ * 1e6 / rep
    d = {"requests": rep, "throughput": o.get("rps", 0),
         "duration_s": o.get("seconds"), "lost": o.get("lost"),
         "latency_us": {"p50": o.get("p50_us"), "p99": o.get("p99_us"),
                        "p999": None},
         "server_cpu": sc, "udpload": o}
    print(json.dumps(d))


def cmd_stats(argv):
    proto, path = argv
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(path)
    if proto == "resp":
        s.sendall(b"*1\r\n$6\r\nDBSIZE\r\n")
        buf = b""
        while not buf.endswith(b"\r\n"):
            buf += s.recv(4096)
        print("dbsize=%s" % buf[1:].strip().decode())
        return
    s.sendall(b"stats\r\n")
    buf = b""
    while not buf.endswith(b"END\r\n"):
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    st = {}
    for ln in buf.decode(errors="replace").split("\r\n"):
        p = ln.split()
        if len(p) >= 3 and p[0] == "STAT":
            st[p[1]] = p[2]
    print(" ".join("%s=%s" % (k, st[k]) for k in
                   ("curr_items", "bytes", "evictions", "hash_bytes",
                    "hash_power_level", "hash_is_expanding")
                   if k in st))


# ---- report --------------------------------------------------------------

def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec):
    return "—" if x is None else format(x, spec)


def pow10(n):
    s = str(n)
    if s[0] == "1" and set(s[1:]) <= {"0"}:
        return "10^%d" % (len(s) - 1)
    return format(n, ",")


def ratio(a, b):
    return a / b if a is not None and b else None


def cmd_report(argv):
    path = argv[0]
    opts = dict(zip(argv[1::2], argv[2::2]))
    rows = [json.loads(l) for l in open(path) if l.strip()]
    # A file may hold several runs of the script (bench/run --append of old): each
    # workload is taken from the latest run that measured it.
    metas, ends, seg = [], {}, -1
    for r in rows:
        if r.get("kind") == "meta":
            seg += 1
            metas.append(r)
        elif r.get("kind") == "end":
            ends[seg] = r
        r["_seg"] = seg
    latest = {}
    for r in rows:
        if r.get("kind") in ("run", "w6"):
            latest[r["workload"]] = r["_seg"]
    rows = [r for r in rows if r.get("kind") not in ("run", "w6") or
            r["_seg"] == latest[r["workload"]]]
    used = sorted(set(latest.values()))
    meta = metas[used[-1]] if used else (metas[-1] if metas else {})
    runs = [r for r in rows if r.get("kind") == "run" and
            not r.get("discarded") and r.get("requests")]
    w6 = [r for r in rows if r.get("kind") == "w6"]
    cells = {}
    for r in runs:
        cells.setdefault((r["workload"], r["target"]), []).append(r)

    def cell(w, t):
        rs = cells.get((w, t))
        if not rs:
            return None
        sc = [(r.get("server_cpu") or {}) for r in rs]
        return dict(
            workload=w, target=t, runs=len(rs), flags=rs[0].get("flags", ""),
            proto=rs[0]["proto"], records=rs[0].get("records"),
            throughput=med(r["throughput"] for r in rs),
            tput_min=min(r["throughput"] for r in rs),
            tput_max=max(r["throughput"] for r in rs),
            p50_us=med(r["latency_us"]["p50"] for r in rs),
            p99_us=med(r["latency_us"]["p99"] for r in rs),
            server_us=med(s.get("us_per_req") for s in sc),
            server_us_min=min((s.get("us_per_req", 0) for s in sc), default=0),
            server_us_max=max((s.get("us_per_req", 0) for s in sc), default=0),
            server_sys_us=med(s.get("sys_us_per_req") for s in sc),
            client_us=med(r["client_cpu"]["us_per_req"] for r in rs),
            hit_rate=med(r["hits"] / r["gets"] if r["gets"] else None
                         for r in rs),
            foreign=med(r.get("foreign_cpu0", 0) + r.get("foreign_cpu1", 0)
                        for r in rs),
            loadavg=med(r["loadavg"][0] for r in rs if r.get("loadavg")))

    order = ["memcached", "mdcached", "mdcached-base", "redis", "floor",
             "mdcached-native", "mdcached-ref", "mdcached-uring",
             "mdcached-ref-uring", "floor-uring"]
    labels = {
        "memcached": "memcached 1.6 `-t 1` (text)",
        "mdcached": "**mdcached `-n 1 -t 0` (text)**",
        "mdcached-base": "mdcached `-n 1 -t 0` (text), the --against build",
        "redis": "Redis 7.0 (RESP)",
        "floor": "floor (text)",
        "mdcached-native": "mdcached `-n 1 -t 0` (native), beside",
        "mdcached-ref": "mdcached `-n 4 -t 0` (text), reference model, beside",
        "mdcached-uring": "mdcached `-n 1 -t 0 --io=uring` (text), beside",
        "mdcached-ref-uring": "mdcached `-n 4 -t 0 --io=uring` (text), "
                              "reference model, beside",
        "floor-uring": "floor on io_uring (text), beside",
    }
    meds = []
    out = []
    P = out.append
    when = meta.get("date", "?")
    if len(used) > 1:
        when = "%s to %s" % (metas[used[0]].get("date", "?"), when)
    for sg in used:
        m = metas[sg]
        rr = [r for r in runs if r["_seg"] == sg]
        wl = sorted({r["workload"] for r in rows
                     if r["_seg"] == sg and r.get("kind") in ("run", "w6")})
        P("%s: run of %s on %s (%s), mdcached from source %s (binary md5 %s), "
          "`%s`; %s rounds × %s s (+%s s warmup) per cell, targets "
          "alternating within each round. Load average %s at the start, %s "
          "at the end; median neighbour CPU during the measured windows %s "
          "CPUs (attempts above %.2f repeated, up to 3: %d set aside)." % (
              ", ".join(wl), m.get("date", "?"), m.get("host", "?"),
              m.get("kernel", "?"), m.get("source", "?"),
              m.get("daemon_md5", "?"), m.get("command", "bench/run"),
              m.get("rounds"), m.get("duration"), m.get("warmup"),
              m.get("loadavg_start", "?"),
              ends.get(sg, {}).get("loadavg_end", "?"),
              fmt(med(r.get("foreign_cpu0", 0) + r.get("foreign_cpu1", 0)
                      for r in rr), ".2f"),
              NOISY_CPUS,
              sum(1 for r in rows if r.get("discarded") and r["_seg"] == sg)))
        P("")
    P("Results: `bench/results/%s` (JSON lines; medians and ratios in "
      "`%s`)." % (os.path.basename(path),
                  os.path.basename(path[:-6] if path.endswith(".jsonl")
                                   else path) + "-summary.json"))
    if meta.get("quick"):
        P("")
        P("**Quick run** (`--quick`): short windows and 10⁶ instead of 10⁷ "
          "records for W6/W7; a smoke test of the script, not figures to "
          "quote.")
    P("")
    wls = [w for w in ("W1", "W2", "W3", "W3S", "W3E", "W4")
           if any(k[0] == w for k in cells)]
    if wls:
        P("| workload | server (protocol) | req/s | p50 µs | p99 µs | "
          "server µs/req | of which sys | spread of server µs/req | "
          "client µs/req | neighbour CPUs |")
        P("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for w in wls:
        for t in order:
            c = cell(w, t)
            if c is None:
                continue
            meds.append(c)
            P("| %s | %s | %s | %s | %s | %s | %s | %s–%s | %s | %s |" % (
                w, labels.get(t, t), fmt(c["throughput"], ",.0f"),
                fmt(c["p50_us"], ".0f"), fmt(c["p99_us"], ".0f"),
                fmt(c["server_us"], ".2f"), fmt(c["server_sys_us"], ".2f"),
                fmt(c["server_us_min"], ".2f"), fmt(c["server_us_max"], ".2f"),
                fmt(c["client_us"], ".2f"), fmt(c["foreign"], ".2f")))
    P("")

    # ---- the ratios of the targets
    R = []

    def target(name, value, goal, cmp):
        ok = None if value is None else (value <= goal if cmp == "<=" else
                                         value >= goal)
        R.append(dict(name=name, value=value, goal="%s %s" % (cmp, goal),
                      met=ok))

    def c_of(w, t):
        return next((c for c in meds if c["workload"] == w and
                     c["target"] == t), None) or cell(w, t)

    for w in ("W1", "W2", "W4"):
        m = c_of(w, "mdcached")
        if m is None:
            continue
        for peer, goal in (("memcached", 0.85), ("redis", 0.85),
                           ("floor", 1.15)):
            p = c_of(w, peer)
            target("%s server CPU/req, mdcached text ÷ %s%s" % (
                w, peer, " (RESP)" if peer == "redis" else ""),
                ratio(m["server_us"], p and p["server_us"]), goal, "<=")
    m = c_of("W3", "mdcached")
    if m is not None:
        for peer, goal in (("memcached", 2.0), ("redis", 1.0)):
            p = c_of("W3", peer)
            target("W3 throughput, mdcached text ÷ %s%s" % (
                peer, " (RESP)" if peer == "redis" else ""),
                ratio(m["throughput"], p and p["throughput"]), goal, ">=")
    # pipelined, batch (W3) and sliding window (W3S, W3E): server CPU per
    # request <= 0.7 x Redis's in both modes
    for w in ("W3", "W3S", "W3E"):
        p = c_of(w, "redis")
        for t in ("mdcached", "mdcached-uring", "mdcached-ref",
                  "mdcached-ref-uring"):
            m = c_of(w, t)
            if m is None or p is None:
                continue
            target("%s server CPU/req, %s ÷ redis (RESP)" % (w, t),
                   ratio(m["server_us"], p["server_us"]), 0.7, "<=")
    w6r = {r["server"]: r for r in w6}
    if "mdcached" in w6r and "memcached" in w6r:
        target("W6 bytes/record (RSS), mdcached ÷ memcached",
               ratio(w6r["mdcached"]["rss_per_record"],
                     w6r["memcached"]["rss_per_record"]), 1.0, "<=")
    w7 = {}
    for r in runs:
        if r["workload"] == "W7":
            w7.setdefault(r["target"], {}).setdefault(r["records"], []).append(r)
    w7med = {s: {n: med(x["throughput"] for x in v) for n, v in d.items()}
             for s, d in w7.items()}
    w7cpu = {s: {n: med((x.get("server_cpu") or {}).get("us_per_req")
                        for x in v) for n, v in d.items()}
             for s, d in w7.items()}
    if "mdcached" in w7med and len(w7med["mdcached"]) >= 2:
        ns = sorted(w7med["mdcached"])
        target("W7 throughput, mdcached %s ÷ %s records" % (
            pow10(ns[-1]), pow10(ns[0])),
            ratio(w7med["mdcached"][ns[-1]], w7med["mdcached"][ns[0]]),
            0.7, ">=")
    if R:
        P("Against the targets (ratio of medians):")
        P("")
        P("| ratio | measured | target | |")
        P("|---|---:|---:|---|")
        for x in R:
            P("| %s | %s | %s | %s |" % (
                x["name"], fmt(x["value"], ".2f"), x["goal"],
                {True: "met", False: "**missed**", None: "—"}[x["met"]]))
        P("")
        # the peers' ratios beside, for the reference model and native
        extra = []
        for w in ("W1", "W2", "W4"):
            for t in ("mdcached-ref", "mdcached-native", "mdcached-uring"):
                m = c_of(w, t)
                if m is None:
                    continue
                extra.append("%s %s: ÷ memcached %s, ÷ Redis %s, ÷ floor %s" % (
                    w, t, *(fmt(ratio(m["server_us"], (c_of(w, p) or {})
                                      .get("server_us")), ".2f")
                            for p in ("memcached", "redis", "floor"))))
        for t in ("mdcached-ref", "mdcached-native", "floor"):
            m = c_of("W3", t)
            if m is not None:
                extra.append("W3 %s throughput: ÷ memcached %s, ÷ Redis %s" % (
                    t, *(fmt(ratio(m["throughput"], (c_of("W3", p) or {})
                                   .get("throughput")), ".2f")
                         for p in ("memcached", "redis"))))
        if extra:
            P("Beside (server CPU per request unless stated): " +
              "; ".join(extra) + ".")
            P("")
    if w6:
        P("W6, memory (%s records of 16-byte keys and 32-byte values, "
          "loaded over the Unix socket by `mdc-load -c 8` with 64 pipelined "
          "sets per connection; RSS from `/proc/PID/status` once it has "
          "settled after the load (steady for a second, no hash table "
          "resize under way: \"settle s\"); each server `-m 4096` or "
          "`--maxmemory 4096mb`):" %
          format(w6[0]["records"], ","))
        P("")
        P("| server | RSS before | RSS after | bytes/record (RSS) | "
          "bytes/record (delta) | load s | settle s | server's own count |")
        P("|---|---:|---:|---:|---:|---:|---:|---|")
        for r in w6:
            P("| %s | %.1f MiB | %.1f MiB | %.1f | %.1f | %.1f | %s | %s |" % (
                r["server"], r["rss_before_kib"] / 1024,
                r["rss_after_kib"] / 1024, r["rss_per_record"],
                r["rss_delta_per_record"], r["load_s"],
                r.get("settle_s", "—"), r["server_says"]))
        P("")
    if w7med:
        ns = sorted({n for d in w7med.values() for n in d})
        P("W7, W1 end to end over the Unix socket with N records loaded "
          "(req/s, median; server µs/req in brackets):")
        P("")
        P("| server | " + " | ".join(format(n, ",") for n in ns) +
          " | largest ÷ smallest |")
        P("|---|" + "---:|" * (len(ns) + 1))
        for s in ("memcached", "mdcached", "redis"):
            if s not in w7med:
                continue
            d = w7med[s]
            P("| %s | %s | %s |" % (s, " | ".join(
                "%s (%s)" % (fmt(d.get(n), ",.0f"),
                             fmt(w7cpu[s].get(n), ".2f")) for n in ns),
                fmt(ratio(d.get(ns[-1]), d.get(ns[0])), ".2f")))
        P("")
    pngs = plots(meds, w6, w7med, w7cpu, opts.get("--png-dir"), when,
                 os.path.dirname(os.path.abspath(opts["--doc"]))
                 if opts.get("--doc") else os.getcwd())
    if pngs:
        for p, alt in pngs:
            P("![%s](%s)" % (alt, p))
        P("")
    md = "\n".join(out)
    print(md)
    for r in rows:
        r.pop("_seg", None)
    summ = dict(bench="compare", meta=meta, runs_of_script=[metas[i] for i in used],
                medians=meds, targets=R, w6=w6,
                w7=w7med, w7_server_us=w7cpu)
    base = path[:-6] if path.endswith(".jsonl") else path
    json.dump(summ, open(base + "-summary.json", "w"), indent=1,
              default=str)
    if opts.get("--md"):
        open(opts["--md"], "w").write(md + "\n")
    doc = opts.get("--doc")
    if doc:
        text = open(doc).read()
        b, e = "<!-- compare:begin -->", "<!-- compare:end -->"
        if b in text and e in text:
            text = (text[:text.index(b) + len(b)] + "\n" + md + "\n" +
                    text[text.index(e):])
        else:
            text += "\n" + b + "\n" + md + "\n" + e + "\n"
        open(doc, "w").write(text)


def plots(meds, w6, w7med, w7cpu, png_dir, when, rel_base):
    if not png_dir:
        return []
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("report.py: no matplotlib, no plots", file=sys.stderr)
        return []
    os.makedirs(png_dir, exist_ok=True)
    rel = os.path.relpath(png_dir, rel_base)
    done = []
    colors = {"memcached": "#4c72b0", "mdcached": "#dd8452",
              "redis": "#c44e52", "floor": "#8c8c8c",
              "mdcached-native": "#f2b880", "mdcached-ref": "#a66a2e"}
    order = ["memcached", "mdcached", "mdcached-base", "redis", "floor",
             "mdcached-native", "mdcached-ref", "mdcached-uring",
             "mdcached-ref-uring", "floor-uring"]
    wls = [w for w in ("W1", "W2", "W3", "W3S", "W3E", "W4")
           if any(c["workload"] == w for c in meds)]
    if wls:
        fig, axes = plt.subplots(2, len(wls), figsize=(3.6 * len(wls), 7),
                                 squeeze=False)
        for j, w in enumerate(wls):
            cs = [c for t in order for c in meds
                  if c["workload"] == w and c["target"] == t]
            names = [c["target"].replace("mdcached-", "mdc-") for c in cs]
            col = [colors.get(c["target"], "#999") for c in cs]
            ax = axes[0][j]
            v = [c["server_us"] or 0 for c in cs]
            lo = [max(0, x - c["server_us_min"]) for x, c in zip(v, cs)]
            hi = [max(0, c["server_us_max"] - x) for x, c in zip(v, cs)]
            ax.bar(names, v, color=col, yerr=[lo, hi], capsize=3)
            ax.set_title("%s: server CPU per request" % w, fontsize=9)
            ax.set_ylabel("µs / request (lower is better)")
            ax.tick_params(axis="x", labelrotation=45, labelsize=8)
            ax = axes[1][j]
            v = [c["throughput"] / 1e3 for c in cs]
            lo = [x - c["tput_min"] / 1e3 for x, c in zip(v, cs)]
            hi = [c["tput_max"] / 1e3 - x for x, c in zip(v, cs)]
            ax.bar(names, v, color=col, yerr=[lo, hi], capsize=3)
            ax.set_title("%s: throughput" % w, fontsize=9)
            ax.set_ylabel("thousand requests / s")
            ax.tick_params(axis="x", labelrotation=45, labelsize=8)
        fig.suptitle("%s — median of rounds, bars min–max" % when,
                     fontsize=10)
        fig.tight_layout()
        f = os.path.join(png_dir, "compare-w1-w4.png")
        fig.savefig(f, dpi=90)
        plt.close(fig)
        done.append((os.path.join(rel, os.path.basename(f)),
                     "W1–W4: server CPU per request and throughput"))
    if w6 or w7med:
        fig, axes = plt.subplots(1, 3, figsize=(13, 4))
        ax = axes[0]
        if w6:
            ax.bar([r["server"] for r in w6],
                   [r["rss_per_record"] for r in w6],
                   color=[colors.get(r["server"], "#999") for r in w6])
            ax.set_title("W6: RSS per record, %s records" %
                         format(w6[0]["records"], ","), fontsize=9)
            ax.set_ylabel("bytes / record (lower is better)")
        for s, d in w7med.items():
            ns = sorted(d)
            axes[1].plot(ns, [d[n] / 1e3 for n in ns], "o-", label=s,
                         color=colors.get(s))
            axes[2].plot(ns, [w7cpu[s][n] for n in ns], "o-", label=s,
                         color=colors.get(s))
        for ax, t, y in ((axes[1], "W7: W1 throughput vs records",
                          "thousand requests / s"),
                         (axes[2], "W7: server CPU per request vs records",
                          "µs / request")):
            ax.set_xscale("log")
            ax.set_title(t, fontsize=9)
            ax.set_xlabel("records loaded")
            ax.set_ylabel(y)
            ax.set_ylim(bottom=0)
            if w7med:
                ax.legend(fontsize=8)
        fig.suptitle("W6 and W7 — %s" % when, fontsize=10)
        fig.tight_layout()
        f = os.path.join(png_dir, "compare-w6-w7.png")
        fig.savefig(f, dpi=90)
        plt.close(fig)
        done.append((os.path.join(rel, os.path.basename(f)),
                     "W6 memory per record and W7 scaling"))
    return done



# ---- scale (store_bench old against new; issue 13) ----------------------


def scale_load(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    return rows


def pick(rows, **kw):
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def one(rows, **kw):
    m = pick(rows, **kw)
    return m[0] if m else None


def summ(vals):
    vals = [v for v in vals if v is not None]
    if not vals:
        return None, "n/a"
    m = st.median(vals)
    return m, "%.2f [%.2f-%.2f] (%d rounds)" % (m, min(vals), max(vals), len(vals))


def scale_main(path):
    rows = scale_load(path)
    meta = next((r for r in rows if r.get("kind") == "meta" and "old" in r), {})
    end = one(rows, kind="meta_end") or {}
    sb = pick(rows, kind="sb")
    rounds = sorted({r["round"] for r in sb})
    out = []
    table = []

    def line(name, target, vals, cmp, note=""):
        m, s = summ(vals)
        ok = ("-" if m is None or not target[:1] in "<>"
              else ("met" if cmp(m) else "NOT met"))
        table.append({"figure": name, "target": target, "median": m,
                      "values": vals, "verdict": ok, "note": note})
        out.append("| %s | %s | %s | %s |%s" % (name, target, s, ok,
                                                 (" " + note) if note else ""))

    def val(v, r, op, n, t, f="ops_per_sec"):
        x = one(sb, variant=v, round=r, op=op, records=n, threads=t)
        return x[f] if x else None

    def ratio(a, b):
        return a / b if a and b else None

    print("scale run %s: old %s, new %s; load %s at the start, %s at the end; %s CPUs"
          % (meta.get("stamp"), meta.get("old"), meta.get("new"),
             meta.get("load_start"), end.get("load_end"), meta.get("nproc")))
    out.append("| figure | target | measured: median [min-max] over rounds | |")
    out.append("|---|---|---|---|")
    for n in (1000, 100000, 10000000):
        if not pick(sb, records=n, op="get"):
            continue
        line("store GET 2 thr ÷ share-nothing (get_private 2 thr), %g records, ops/s, new" % n,
             ">= 0.9", [ratio(val("new", r, "get", n, 2), val("new", r, "get_private", n, 2))
                        for r in rounds], lambda m: m >= 0.9)
        line("  the same by CPU per op (share-nothing ns ÷ shared ns), new" ,
             ">= 0.9", [ratio(val("new", r, "get_private", n, 2, "cpu_ns_per_op"),
                              val("new", r, "get", n, 2, "cpu_ns_per_op")) for r in rounds],
             lambda m: m >= 0.9)
        line("  the same, old code, ops/s", "(reference)",
             [ratio(val("old", r, "get", n, 2), val("old", r, "get_private", n, 2))
              for r in rounds], lambda m: True)
    n = 10000000
    if pick(sb, records=n, op="get"):
        line("store GET 1 thr, 10^7: new get_batch ÷ old get, ops/s", ">= 1.3",
             [ratio(val("new", r, "get_batch", n, 1), val("old", r, "get", n, 1)) for r in rounds],
             lambda m: m >= 1.3)
        line("  the same by CPU per op (old ns ÷ new ns)", ">= 1.3",
             [ratio(val("old", r, "get", n, 1, "cpu_ns_per_op"),
                    val("new", r, "get_batch", n, 1, "cpu_ns_per_op")) for r in rounds],
             lambda m: m >= 1.3)
        line("  new get_batch ÷ old get_pf (old code with store_prefetch batches), ops/s",
             "(reference)", [ratio(val("new", r, "get_batch", n, 1), val("old", r, "get_pf", n, 1))
                             for r in rounds], lambda m: True)
        line("  new get ÷ old get (one at a time), ops/s", "(reference)",
             [ratio(val("new", r, "get", n, 1), val("old", r, "get", n, 1)) for r in rounds],
             lambda m: True)
    n = 100000
    for op in ("put_3tags", "del_by_tag"):
        if not pick(sb, records=n, op=op):
            continue
        for v in ("new", "old"):
            line("%s 2 thr ÷ 1 thr, 10^5 records, 3 tkeys, ops/s, %s" % (op, v),
                 ">= 1.6" if v == "new" else "(reference)",
                 [ratio(val(v, r, op, n, 2), val(v, r, op, n, 1)) for r in rounds],
                 (lambda m: m >= 1.6) if v == "new" else (lambda m: True))
        line("  %s CPU per op, 2 thr ÷ 1 thr, new (1.25 or less allows 1.6x)" % op,
             "(diagnostic)", [ratio(val("new", r, op, n, 2, "cpu_ns_per_op"),
                                    val("new", r, op, n, 1, "cpu_ns_per_op")) for r in rounds],
             lambda m: True)
    dbt = []
    dbt_cpu = []
    dbt_old = []
    for r in rounds:
        for v, acc, f in (("new", dbt, "ops_per_sec"), ("new", dbt_cpu, "cpu_ns_per_op"),
                          ("old", dbt_old, "ops_per_sec")):
            x = one(sb, variant=v, round=r, op="del_by_tag", records=n, threads=1)
            if not x or not x["ops"] or not x["items"]:
                continue
            per = x["items"] / x["ops"]
            if f == "ops_per_sec":
                acc.append(1e6 / (x["ops_per_sec"] * per))
            else:
                acc.append(x["cpu_ns_per_op"] / per / 1000)
    if dbt:
        line("del_by_tag per deleted record, 1 thr, 10^5, µs (wall, inside the calls), new",
             "<= 0.5", dbt, lambda m: m <= 0.5)
        line("  the same, CPU µs, new", "<= 0.5", dbt_cpu, lambda m: m <= 0.5)
        line("  the same, wall µs, old", "(reference)", dbt_old, lambda m: True)
    xdp = pick(rows, kind="xdp")
    if xdp:
        xr = sorted({x["round"] for x in xdp})
        k1 = [one(xdp, round=r, hot_keys=1000) for r in xr]
        line("XDP hit ÷ bounce, run_time_ns, 1 000 hot keys", "<= 2",
             [ratio(x["hit_tail_stats_ns"], x["bounce_stats_ns"]) for x in k1 if x],
             lambda m: m <= 2)
        k2 = [(one(xdp, round=r, hot_keys=100000), one(rows, kind="chase", round=r)) for r in xr]
        # at 100 000 keys most runs miss (the keys outnumber the default
        # tier), and run_time_ns averages over every run; the test-run
        # median counts hits only (misses sort last), and its timing
        # overhead cancels in the difference with the bounce's
        line("XDP hit - bounce at 100 000 hot keys (test-run medians), in measured DRAM misses (1 GiB chase)",
             "<= 2", [(x["hit_tail_ns"] - x["bounce_ns"]) / c["ns_per_load"]
                      for x, c in k2 if x and c],
             lambda m: m <= 2,
             note="hit %s ns, bounce %s ns, DRAM miss %s ns; runs that missed: %s of 4000" % (
                 summ([x["hit_tail_ns"] for x, _ in k2 if x])[1],
                 summ([x["bounce_ns"] for x, _ in k2 if x])[1],
                 summ([c["ns_per_load"] for _, c in k2 if c])[1],
                 summ([x["hot_misses"] for x, _ in k2 if x])[1]))
    print("\n".join(out))
    print("\nCPU ns per op (median over rounds of each run's median window):")
    for n in sorted({x["records"] for x in sb}):
        for op in ("get", "get_private", "get_pf", "get_batch", "put_3tags", "del_by_tag"):
            for t in (1, 2):
                cells = []
                for v in ("old", "new"):
                    c = [val(v, r, op, n, t, "cpu_ns_per_op") for r in rounds]
                    o = [val(v, r, op, n, t) for r in rounds]
                    c = [x for x in c if x]
                    o = [x for x in o if x]
                    cells.append("%s %s cpu %s" % (v, "%.0f ops/s" % st.median(o) if o else "-",
                                                   "%.1f" % st.median(c) if c else "-"))
                if any("cpu -" not in c for c in cells):
                    print("  %8d %-11s %d thr: %s" % (n, op, t, "; ".join(cells)))
    json.dump({"meta": meta, "end": end, "table": table},
              open(path.replace(".jsonl", "-summary.json"), "w"), indent=1)



# ---- W5 ----------------------------------------------------------------------


def w5_main(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    rows = [r for r in rows if "mode" in r]
    meta = next(r for r in rows if r["mode"] == "meta")
    print(f"W5 run {meta['date']} on {meta['host']} ({meta['cpus']} CPUs); "
          f"{meta['records']} records, {meta['rounds']} rounds x "
          f"{meta['secs']} s, {meta['conns']} connections; "
          f"{meta['memcached']}, redis {meta['redis']}")
    print(f"command: `{meta['cmd']}`\n")
    targets = ["mdcached", "memcached", "redis"]
    runs = {t: [r for r in rows if r["mode"] == "run" and r["target"] == t]
            for t in targets}
    med = {}
    print("| target | ops/s (median) | p50 us | p99 us | server CPU us/op "
          "| load CPU us/op | RT/get | RT/set | RT/get_by_tag | RT/del_by_tag "
          "| errors |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for t in targets:
        rs = runs[t]
        if not rs:
            continue
        m = {k: statistics.median(r[k] for r in rs) for k in
             ["ops_per_s", "p50_us", "p99_us", "server_cpu_us_per_op",
              "client_cpu_us_per_op", "get_rt_per_op", "set_rt_per_op",
              "get_by_tag_rt_per_op", "del_by_tag_rt_per_op"]
             if all(k in r for r in rs)}
        med[t] = m
        errs = sum(r["errors"] for r in rs)
        print(f"| {t} | {m['ops_per_s']:.0f} | {m['p50_us']:.0f} | "
              f"{m['p99_us']:.0f} | {m['server_cpu_us_per_op']:.1f} | "
              f"{m.get('client_cpu_us_per_op', float('nan')):.1f} | "
              f"{m['get_rt_per_op']:.2f} | {m['set_rt_per_op']:.2f} | "
              f"{m['get_by_tag_rt_per_op']:.2f} | "
              f"{m['del_by_tag_rt_per_op']:.2f} | {errs} |")
    print("\nPer round: ops/s (server | load CPU us/op; CPUs used by other "
          "work during the round):")
    for t in targets:
        print(f"- {t}: " + "; ".join(
            f"{r['ops_per_s']:.0f} ({r['server_cpu_us_per_op']:.1f} | "
            f"{r.get('client_cpu_us_per_op', float('nan')):.1f}; "
            f"other {r.get('other_cpus', float('nan')):.2f})"
            for r in runs[t]))
    if "mdcached" in med:
        for t in ["memcached", "redis"]:
            if t in med:
                print(f"\nmdcached / {t} throughput (ratio of medians): "
                      f"{med['mdcached']['ops_per_s'] / med[t]['ops_per_s']:.2f}x")
    w5a = {t: [r for r in rows if r["mode"] == "w5a" and r["target"] == t]
           for t in targets}
    if any(w5a.values()):
        print("\nW5a, the tagged read (the 100 records of one tag; medians "
              "over the rounds):\n")
        print("| target | ops/s | records/op | RT/op | p50 us | p99 us "
              "| server CPU us/op | mdcached ops/s ratio | "
              "mdcached server CPU ratio |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        m = {}
        for t in targets:
            if w5a[t]:
                m[t] = {k: statistics.median(r[k] for r in w5a[t]) for k in
                        ["ops_per_s", "records_per_op", "rt_per_op", "p50_us",
                         "p99_us", "server_cpu_us_per_op"]}
        for t in targets:
            if t not in m:
                continue
            x = m[t]
            ro = rc = ""
            if "mdcached" in m and t != "mdcached":
                ro = f"{m['mdcached']['ops_per_s'] / x['ops_per_s']:.2f}x"
                rc = "%.2fx" % (m["mdcached"]["server_cpu_us_per_op"] /
                                x["server_cpu_us_per_op"])
            print(f"| {t} | {x['ops_per_s']:.0f} | {x['records_per_op']:.1f} "
                  f"| {x['rt_per_op']:.2f} | {x['p50_us']:.0f} | "
                  f"{x['p99_us']:.0f} | {x['server_cpu_us_per_op']:.1f} | "
                  f"{ro} | {rc} |")
        for t in targets:
            print(f"- {t} per round: " + "; ".join(
                f"{r['ops_per_s']:.0f} ({r['server_cpu_us_per_op']:.1f} us)"
                for r in w5a[t]))
    print("\nInvalidation latency by tag size (median of 5, microseconds; "
          "round trips):\n")
    print("| target | 10 | 100 | 1000 | 10000 |")
    print("|---|---:|---:|---:|---:|")
    for r in rows:
        if r["mode"] == "inval":
            cells = " | ".join(f"{r[f'us_{n}']} ({r[f'rt_{n}']:.0f} RT)"
                               for n in [10, 100, 1000, 10000])
            print(f"| {r['target']} | {cells} |")
    print("\nMemory left behind (server counters; empty -> loaded with "
          "TTL 3 s -> expired (+2 s) -> settled (+15 s more)):\n")
    for r in rows:
        if r["mode"] == "leak":
            rest = {k: v for k, v in r.items()
                    if k not in ("mode", "target", "phase")}
            print(f"- {r['target']} {r['phase']}: " +
                  ", ".join(f"{k} {v}" for k, v in rest.items()))
    print("\nlibmdcached:\n")
    for r in rows:
        if r["mode"] in ("get", "mget"):
            print(f"- {r['mode']}: {r['ops_per_s']:.0f} ops/s "
                  f"({r['keys_per_s']:.0f} keys/s)")
        elif r["mode"] == "mget_syscalls":
            print(f"- per 100-key mget: {r['sendto_per_mget']:.2f} sendto, "
                  f"{r['recvfrom_per_mget']:.2f} recvfrom, "
                  f"{r['poll_per_mget']:.2f} poll")
        elif r["mode"] == "fanout":
            print(f"- del_by_tag over {r['servers']} server(s): p50 "
                  f"{r['p50_us']} us, p99 {r['p99_us']} us")



# ---- W8 ----------------------------------------------------------------------

W8_NAMES = {
    "a": "(a) mdcached, XDP hits (native)",
    "ag": "(a') mdcached, XDP hits (generic)",
    "aA": "(aA) the -A build's mdcached, XDP hits (native)",
    "b": "(b) mdcached, userspace UDP",
    "c": "(c) memcached -U",
    "d": "(d) bare XDP bounce-back",
}
W8_ORDER = ["a", "aA", "ag", "b", "c", "d"]


def w8_split_of(r):
    mreq = max(r["load"]["replies"] / 1e6, 1e-9)
    c = r["load"]["cpu_s"]
    return {"user": (c["user"] + c["nice"]) / mreq,
            "system": c["system"] / mreq,
            "softirq": (c["softirq"] + c["irq"] + c["steal"]) / mreq}


def w8_summarise(doc):
    rows = doc["rows"]
    out = {}
    for s in W8_ORDER:
        rs = [r for r in rows if r["scenario"] == s and not r["bpf_stats"]]
        if not rs:
            continue
        med = lambda f: statistics.median(f(r) for r in rs)
        o = {
            "runs": len(rs),
            "rps": med(lambda r: r["load"]["rps"]),
            "rps_all": [round(r["load"]["rps"]) for r in rs],
            "cpu_s_per_mreq": med(lambda r: r["load"]["cpu_s_per_mreq"]),
            "cpu_all": [r["load"]["cpu_s_per_mreq"] for r in rs],
            "p50_us": med(lambda r: r["load"]["p50_us"]),
            "p99_us": med(lambda r: r["load"]["p99_us"]),
            "lost": sum(r["load"]["lost"] for r in rs),
            # this run's own threads: generator + server + ksoftirqd (with
            # tick accounting the softirq work done in their context is in
            # their time); other sessions' processes are left out
            "own_cpu_s_per_mreq": med(
                lambda r: (r["load"]["self_cpu_s"] + r["server_cpu_s"]
                           + r.get("ksoftirqd_cpu_s", 0))
                / max(r["load"]["replies"] / 1e6, 1e-9)),
            # user / system / softirq of the round whose total is the
            # median, so the parts add up to the figure beside them
            "split": w8_split_of(sorted(
                rs, key=lambda r: r["load"]["cpu_s_per_mreq"])[len(rs) // 2]),
            "softirq_share": med(
                lambda r: r["load"]["cpu_s"]["softirq"]
                / max(r["load"]["cpu_busy_s"], 1e-9)),
            "server_cpu_us_per_req": med(
                lambda r: 1e6 * r["server_cpu_s"] / max(r["load"]["replies"], 1)),
        }
        hits = [r.get("d_xdp_hits") for r in rs if r.get("d_xdp_hits") is not None]
        if hits:
            o["xdp_share"] = med(
                lambda r: r.get("d_xdp_hits", 0) / max(r["load"]["replies"], 1))
        bs = [r for r in rows if r["scenario"] == s and r["bpf_stats"]
              and r["prog_run_cnt"]]
        if bs:
            o["prog_ns_per_run"] = statistics.median(
                r["prog_run_ns"] / r["prog_run_cnt"] for r in bs)
        last = rs[-1]
        for k in ("xdp_items", "xdp_item_bytes", "xdp_slot_bytes",
                  "xdp_mem_bytes", "xdp_slot_bytes_per_cached_byte",
                  "xdp_mem_per_cached_byte", "xdp_verified_insns"):
            if k in last:
                o[k] = float(last[k])
        out[s] = o
    m = {}
    if "d" in out:
        floor = out["d"]["cpu_s_per_mreq"]
        ofloor = out["d"]["own_cpu_s_per_mreq"]
        for s in ("a", "ag", "b", "c"):
            if s in out:
                m[s] = out[s]["cpu_s_per_mreq"] - floor
                m["own_" + s] = out[s]["own_cpu_s_per_mreq"] - ofloor
        if m.get("own_a", 0) > 0:
            for s in ("b", "c"):
                if "own_" + s in m:
                    m["own_%s_over_a" % s] = m["own_" + s] / m["own_a"]

        if "a" in m and m["a"] > 0:
            if "b" in m:
                m["b_over_a"] = m["b"] / m["a"]
            if "c" in m:
                m["c_over_a"] = m["c"] / m["a"]
        if "a" in m and "b" in m:
            m["a_over_b"] = m["a"] / m["b"] if m["b"] else None
        if "a" in out and "prog_ns_per_run" in out["a"] and \
                out["d"].get("prog_ns_per_run"):
            m["prog_a_over_d"] = (out["a"]["prog_ns_per_run"]
                                  / out["d"]["prog_ns_per_run"])
    # the program's ns per run over the bounce's in the same bpf-stats
    # round (the scenarios alternate within a round), then the median
    bsr = [r for r in doc["rows"] if r["bpf_stats"] and r["prog_run_cnt"]]
    for s in ("a", "aA", "ag"):
        rat = []
        for r in bsr:
            dd = [x for x in bsr if x["scenario"] == "d"
                  and x["round"] == r["round"]]
            if r["scenario"] == s and dd:
                rat.append((r["prog_run_ns"] / r["prog_run_cnt"])
                           / (dd[0]["prog_run_ns"] / dd[0]["prog_run_cnt"]))
        if rat:
            m["prog_%s_over_d_rounds" % s] = rat
            m["prog_%s_over_d_median" % s] = statistics.median(rat)
    return out, m


def w8_markdown(doc, out, m):
    p = doc["params"]
    L = []
    L.append("W8, %s, `%s`: %d rounds of %g s alternating, %d keys "
             "(%d-byte keys, %d-byte values), %d GETs in flight over 4 "
             "sockets; server on CPU 0, generator on CPU 1; %s, %s, %d CPUs."
             % (doc["date"], doc["command"].strip(), p["rounds"], p["seconds"],
                p["keys"], p["key_bytes"], p["value_bytes"], p["in_flight"],
                doc["machine"]["kernel"], doc["machine"]["cpu"],
                doc["machine"]["cpus"]))
    L.append("")
    L.append("| scenario | req/s (median) | CPU-s per M req, all CPUs "
             "| − (d) | own threads | − (d) | all CPUs: user / system / "
             "softirq | server process µs/req | p50 / p99 µs | served by XDP |")
    L.append("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in W8_ORDER:
        if s not in out:
            continue
        o = out[s]
        mg, og = m.get(s), m.get("own_" + s)
        L.append("| %s | %s | %.2f | %s | %.2f | %s | %.2f / %.2f / %.2f "
                 "| %.2f | %.0f / %.0f | %s |" % (
                     W8_NAMES[s], format(round(o["rps"]), ","),
                     o["cpu_s_per_mreq"],
                     "%.2f" % mg if mg is not None else "—",
                     o["own_cpu_s_per_mreq"],
                     "%.2f" % og if og is not None else "—",
                     o["split"]["user"], o["split"]["system"],
                     o["split"]["softirq"], o["server_cpu_us_per_req"],
                     o["p50_us"], o["p99_us"],
                     "%.1f %%" % (100 * o["xdp_share"])
                     if "xdp_share" in o else "—"))
    L.append("")
    if "b_over_a" in m:
        L.append("- Marginal CPU per request: (b−d)/(a−d) = **%.1f×** "
                 "(target ≥ 5×: XDP hits at most 1/5 of the userspace "
                 "path)%s." % (m["b_over_a"],
                               "; (c−d)/(a−d) = **%.1f×** against memcached"
                               % m["c_over_a"] if "c_over_a" in m else ""))
    elif "a" in m:
        L.append("- Marginal CPU per request of (a) is %.3f CPU-s per M "
                 "(not above the floor's noise)." % m["a"])
    if "own_b_over_a" in m:
        L.append("- The same from the run's own threads (generator, server, "
                 "ksoftirqd; other sessions' processes left out): "
                 "(b−d)/(a−d) = **%.1f×**%s." % (
                     m["own_b_over_a"],
                     ", (c−d)/(a−d) = **%.1f×**" % m["own_c_over_a"]
                     if "own_c_over_a" in m else ""))
    if "prog_a_over_d" in m:
        L.append("- The programs' own cost (`run_time_ns / run_cnt`, "
                 "`kernel.bpf_stats_enabled=1`, separate rounds): mdc_xdp "
                 "%.0f ns per packet, mdc_bounce %.0f ns: **%.2f×** (target "
                 "≤ 2×)." % (out["a"]["prog_ns_per_run"],
                             out["d"]["prog_ns_per_run"], m["prog_a_over_d"]))
    for s in ("a", "aA", "ag"):
        if "prog_%s_over_d_rounds" % s in m:
            L.append("- %s ÷ the bounce, run_time_ns / run_cnt, per "
                     "bpf-stats round: %s (median **%.2f×**)."
                     % (W8_NAMES[s], ", ".join(
                         "%.2f" % x for x in m["prog_%s_over_d_rounds" % s]),
                        m["prog_%s_over_d_median" % s]))
    if "a" in out and "xdp_item_bytes" in out["a"]:
        a = out["a"]
        L.append("- Mirror memory: %d records holding %d bytes of key + "
                 "value occupy %d bytes of slots (**%.2f bytes per cached "
                 "byte**); the whole preallocated mirror is %.1f MiB "
                 "(%.0f bytes per cached byte at this occupancy)."
                 % (a["xdp_items"], a["xdp_item_bytes"], a["xdp_slot_bytes"],
                    a["xdp_slot_bytes_per_cached_byte"],
                    a["xdp_mem_bytes"] / 2**20, a["xdp_mem_per_cached_byte"]))
    mc = doc["machine"]
    L.append("- The machine was not idle: %.0f %% / %.0f %% of all CPU time "
             "was busy with other sessions' work just before / after the "
             "run, and that noise is in every figure above."
             % (100 * mc["busy_fraction_idle_before"],
                100 * mc["busy_fraction_idle_after"]))
    return "\n".join(L) + "\n"


def w8_plot(out, m, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ss = [s for s in W8_ORDER if s in out]
    labels = [W8_NAMES[s].split(" ", 1)[0] for s in ss]
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.8))
    ax[0].bar(labels, [out[s]["rps"] / 1e3 for s in ss], color="#4c72b0")
    ax[0].set_ylabel("thousand GETs / s (median)")
    ax[0].set_title("throughput")
    bottom = [0.0] * len(ss)
    for k, col in (("user", "#4c72b0"), ("system", "#dd8452"),
                   ("softirq", "#55a868")):
        v = [out[s]["split"][k] for s in ss]
        ax[1].bar(labels, v, bottom=bottom, color=col, label=k)
        bottom = [a + b for a, b in zip(bottom, v)]
    ax[1].plot(labels, [out[s]["own_cpu_s_per_mreq"] for s in ss], "kD",
               label="own threads only")
    if "d" in out:
        ax[1].axhline(out["d"]["cpu_s_per_mreq"], color="k", lw=1, ls="--",
                      label="bounce-back floor (d)")
    ax[1].set_ylabel("CPU-seconds per million GETs")
    ax[1].set_title("CPU per request")
    ax[1].legend(fontsize=8)
    for a in ax:
        a.tick_params(axis="x", labelsize=9)
    fig.suptitle("W8: UDP GETs of hot keys - " + ", ".join(
        "%s %s" % (W8_NAMES[s].split(" ", 1)[0], W8_NAMES[s].split(" ", 1)[1])
        for s in ss), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def w8_main(args):
    if not args:
        print(__doc__)
        sys.exit(2)
    doc = json.load(open(args[0]))
    out, m = w8_summarise(doc)
    md = w8_markdown(doc, out, m)
    sys.stdout.write(md)
    if "--md" in args:
        open(args[args.index("--md") + 1], "w").write(md)
    if "--png" in args:
        try:
            w8_plot(out, m, args[args.index("--png") + 1])
        except ImportError:
            print("(no matplotlib: apt-get install python3-matplotlib)",
                  file=sys.stderr)
    doc["summary"] = {"scenarios": out, "marginal": m}
    json.dump(doc, open(args[0], "w"), indent=1)


# ---- the one table -----------------------------------------------------------

def cmd_oneline(argv):
    d = json.load(sys.stdin)
    c = d.get("server_cpu") or {}
    # udpload (the udp workload) counts all CPUs together: no neighbours
    nb = ("neighbours %.2f CPU" % (d["foreign_cpu0"] + d["foreign_cpu1"])
          if "foreign_cpu0" in d else "neighbours not measured")
    print("%.0f req/s, p50 %.0f us, p99 %.0f us, server %.2f us/req, %s" % (
        d["throughput"], d["latency_us"]["p50"], d["latency_us"]["p99"],
        c.get("us_per_req") or 0, nb))


def rows_of(path):
    return [json.loads(l) for l in open(path) if l.strip()]


def cells_of(rows):
    """(workload, target) -> list of normalised rounds, in running order.

    A round: us (server CPU per request), sys, tput, p50, p99, p999."""
    cells = {}
    # W7 holds one workload at several sizes: a table for each
    sizes = {}
    for r in rows:
        if r.get("kind") == "run":
            sizes.setdefault(r["workload"], set()).add(r.get("records"))
    for r in rows:
        k = r.get("kind")
        if k == "run" and not r.get("discarded") and r.get("requests"):
            c = r.get("server_cpu") or {}
            lat = r.get("latency_us") or {}
            # no server CPU reading over the window (too short for a clock
            # tick): the round counts for the rest, not for CPU per request
            x = dict(us=c.get("us_per_req") or None, sys=c.get("sys_us_per_req"),
                     tput=r["throughput"], p50=lat.get("p50"),
                     p99=lat.get("p99"), p999=lat.get("p999"))
            w = r["workload"]
            if len(sizes[w]) > 1:
                w = "%s, %s records" % (w, pow10(r.get("records")))
            cells.setdefault((w, r["target"]), []).append(x)
        elif r.get("mode") in ("run", "w5a") and "server_cpu_us_per_op" in r:
            w = "W5 mixed" if r["mode"] == "run" else "W5a"
            x = dict(us=r["server_cpu_us_per_op"], sys=None,
                     tput=r["ops_per_s"], p50=r.get("p50_us"),
                     p99=r.get("p99_us"), p999=None)
            cells.setdefault((w, r["target"]), []).append(x)
    return cells


def w8_cells(doc):
    """W8's rows as rounds: CPU per request of the run's own threads."""
    cells = {}
    for r in doc["rows"]:
        if r["bpf_stats"]:
            continue
        l = r["load"]
        mreq = max(l["replies"] / 1e6, 1e-9)
        own = (l["self_cpu_s"] + r["server_cpu_s"]
               + r.get("ksoftirqd_cpu_s", 0)) / mreq
        x = dict(us=own, sys=None, tput=l["rps"], p50=l["p50_us"],
                 p99=l["p99_us"], p999=None)
        cells.setdefault(("W8", W8_NAMES.get(r["scenario"], r["scenario"])),
                         []).append(x)
    return cells


def print_table(cells, latency, what="server CPU"):
    wls = []
    for w, _ in cells:
        if w not in wls:
            wls.append(w)
    for w in wls:
        ts = [t for (ww, t) in cells if ww == w]
        print("\n%s: median of the rounds, %s µs per request with its spread "
              "(lowest-highest round); ratio to %s" % (w, what, ts[0]))
        hdr = "| target | rounds | µs/req | spread | ratio | sys µs/req | req/s |"
        sep = "|---|---:|---:|---:|---:|---:|---:|"
        if latency:
            hdr += " p50 µs | p99 µs | p99.9 µs |"
            sep += "---:|---:|---:|"
        print(hdr)
        print(sep)
        base = None
        for t in ts:
            rs = cells[(w, t)]
            u = [x["us"] for x in rs if x["us"] is not None]
            m = statistics.median(u) if u else None
            base = base or m
            line = "| %s | %d | %s | %s | %s | %s | %.0f |" % (
                t, len(rs), fmt(m, ".3f"),
                "%.3f-%.3f" % (min(u), max(u)) if u else "—",
                fmt(ratio(m, base), ".3f"),
                fmt(med(x["sys"] for x in rs), ".3f"),
                med(x["tput"] for x in rs))
            if latency:
                line += " %s | %s | %s |" % tuple(
                    fmt(med(x[k] for x in rs), ".1f")
                    for k in ("p50", "p99", "p999"))
            if len(u) < len(rs):
                line += " %d round(s) without a CPU reading" % (len(rs) - len(u))
            print(line)
        print("\nper round, µs/req: " + "; ".join(
            "%s %s" % (t, " ".join(fmt(x["us"], ".3f") for x in cells[(w, t)]))
            for t in ts))


def beside_report(rows):
    inv = [r for r in rows if r.get("kind") == "beside" and "inval_p50_us" in r]
    if not inv:
        return
    print("\nBeside the windows (W5b: a tag refilled and invalidated every "
          "100 ms): invalidation latency, what the tag index kept")
    print("| target | invalidation p50 µs | p99 µs | tag index after | "
          "late periods |")
    print("|---|---:|---:|---:|---:|")
    for t in dict.fromkeys(r["target"] for r in inv):
        v = [r for r in inv if r["target"] == t]
        print("| %s | %.0f | %.0f | %s | %s |" % (
            t.rsplit(" ", 1)[0], statistics.median(r["inval_p50_us"] for r in v),
            statistics.median(r["inval_p99_us"] for r in v),
            max(r.get("tag_left_max", 0) for r in v),
            sum(r.get("late_periods", 0) for r in v)))


def cmd_table(argv):
    path = argv[0]
    opts = dict(zip(argv[1::2], argv[2::2]))
    rows = rows_of(path)
    meta = next((r for r in rows if r.get("kind") == "meta"), {})
    end = next((r for r in rows if r.get("kind") == "end"), {})
    runner = meta.get("runner", "load")
    print("%s: %s on %s (%s, %s CPUs), mdcached %s (md5 %s); `%s`; %s rounds "
          "x %s s (+%s s warmup), targets alternating within each round; "
          "load average %s at the start, %s at the end" % (
              meta.get("workload"), meta.get("date"), meta.get("host"),
              meta.get("kernel"), meta.get("cpus"), meta.get("source"),
              meta.get("daemon_md5"), meta.get("command"), meta.get("rounds"),
              meta.get("duration"), meta.get("warmup"),
              meta.get("loadavg_start"), end.get("loadavg_end", "?")))
    runs = [r for r in rows if r.get("kind") == "run"]
    if runs and any("foreign_cpu0" in r for r in runs):
        print("neighbour CPU during the windows, median %.2f CPUs; %d "
              "attempt(s) set aside as noisy" % (
                  med(r.get("foreign_cpu0", 0) + r.get("foreign_cpu1", 0)
                      for r in runs) or 0,
                  sum(1 for r in runs if r.get("discarded"))))
    pre = [r for r in rows if r.get("kind") == "prefill"]
    if pre:
        print("prefill, every key set once (a set refused for want of memory "
              "sent again): " + "; ".join(
                  "%s %d keys in %d s, %d refused" % (
                      r["server"], r["keys"], r["seconds"], r["nomem"])
                  for r in pre))
    latency = (meta.get("latency") == "yes" or any(
        "@" in r["workload"] or r["target"].endswith((" alone", " with"))
        for r in runs))
    if runner == "w8":
        w8 = path[:-len(".jsonl")] + ".json"
        if os.path.exists(w8):
            doc = json.load(open(w8))
            print_table(w8_cells(doc), True,
                        "CPU of the run's own threads (generator, server, "
                        "ksoftirqd),")
            print()
            w8_main([w8, "--md", w8[:-5] + ".md", "--png", w8[:-5] + ".png"])
        return
    if runner == "scale":
        scale_main(path)
        return
    print_table(cells_of(rows), latency or runner == "w5")
    w6 = [r for r in rows if r.get("kind") == "w6"]
    if w6:
        print("\nW6: RSS per record after loading %s records" % w6[0]["records"])
        print("| server | bytes/record | delta bytes/record | load s |")
        print("|---|---:|---:|---:|")
        for r in w6:
            print("| %s | %s | %s | %s |" % (r["server"], r["rss_per_record"],
                                           r["rss_delta_per_record"], r["load_s"]))
    beside_report(rows)
    if runner == "w5":
        print()
        w5_main(path)
    if "--doc" in opts:
        print()
        cmd_report([path] + argv[1:])


def cmd_w5(argv):
    w5_main(argv[0])


def cmd_scale(argv):
    scale_main(argv[0])


if __name__ == "__main__":
    cmds = {"table": cmd_table, "line": cmd_line, "oneline": cmd_oneline,
            "stats": cmd_stats, "udp": cmd_udp, "compare": cmd_report, "w5": cmd_w5,
            "w8": w8_main, "scale": cmd_scale}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__)
        sys.exit(64)
    cmds[sys.argv[1]](sys.argv[2:])
