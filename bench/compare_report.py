#!/usr/bin/env python3
"""compare_report.py - helper of bench/compare.sh.

  compare_report.py line ONE.json KEY=VALUE...   one run as a JSON line
  compare_report.py stats text|resp SOCKET       a server's item count
  compare_report.py report RUNS.jsonl [--doc DOC] [--png-dir DIR] [--md OUT]

`line` flattens mdc-load's JSON of one run into one line, adds the given
fields and the neighbours' CPU during the window: CPU 0 holds only the
server and CPU 1 only the generator, so each CPU's busy time minus theirs
is other work on the machine (`foreign_cpu0`, `foreign_cpu1`, in CPUs).

`report` takes the medians of each (workload, target), the ratios the
targets of issue 4 name, prints a Markdown summary (and replaces the text
between the "compare" markers of DOC), writes RUNS-summary.json and PNG plots
when matplotlib is importable.
"""
import json
import os
import socket
import statistics
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
    # A file may hold several runs of the script (compare.sh --append): each
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
              m.get("daemon_md5", "?"), m.get("command", "bench/compare.sh"),
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
    # pipelined, batch (W3) and sliding window (W3S, W3E): issue 24 asks
    # server CPU per request <= 0.7 x Redis's in both modes
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
        print("compare_report: no matplotlib, no plots", file=sys.stderr)
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


if __name__ == "__main__":
    cmds = {"line": cmd_line, "stats": cmd_stats, "report": cmd_report}
    if len(sys.argv) < 2 or sys.argv[1] not in cmds:
        print(__doc__, file=sys.stderr)
        sys.exit(64)
    cmds[sys.argv[1]](sys.argv[2:])
