#!/usr/bin/env python3
"""w8_report.py - summarise a bench/w8.sh result (bench/results/w8-*.json).

    w8_report.py RESULT.json [--png PLOT.png] [--md SUMMARY.md]

Prints (and with --md writes) a Markdown table: median requests/s, latency
and CPU-seconds per million requests of every scenario, the marginal costs
over the bounce-back floor (a-d, b-d, c-d) and their ratios, the programs'
own nanoseconds per run, and the mirror's memory per cached byte.  With
--png draws the figures (python3-matplotlib).
"""
import json
import statistics
import sys

NAMES = {
    "a": "(a) mdcached, XDP hits (native)",
    "ag": "(a') mdcached, XDP hits (generic)",
    "b": "(b) mdcached, userspace UDP",
    "c": "(c) memcached -U",
    "d": "(d) bare XDP bounce-back",
}
ORDER = ["a", "ag", "b", "c", "d"]


def split_of(r):
    mreq = max(r["load"]["replies"] / 1e6, 1e-9)
    c = r["load"]["cpu_s"]
    return {"user": (c["user"] + c["nice"]) / mreq,
            "system": c["system"] / mreq,
            "softirq": (c["softirq"] + c["irq"] + c["steal"]) / mreq}


def summarise(doc):
    rows = doc["rows"]
    out = {}
    for s in ORDER:
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
            "split": split_of(sorted(
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
    return out, m


def markdown(doc, out, m):
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
    for s in ORDER:
        if s not in out:
            continue
        o = out[s]
        mg, og = m.get(s), m.get("own_" + s)
        L.append("| %s | %s | %.2f | %s | %.2f | %s | %.2f / %.2f / %.2f "
                 "| %.2f | %.0f / %.0f | %s |" % (
                     NAMES[s], format(round(o["rps"]), ","),
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


def plot(out, m, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    ss = [s for s in ORDER if s in out]
    labels = [NAMES[s].split(" ", 1)[0] for s in ss]
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
        "%s %s" % (NAMES[s].split(" ", 1)[0], NAMES[s].split(" ", 1)[1])
        for s in ss), fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main():
    args = sys.argv[1:]
    if not args:
        print(__doc__)
        sys.exit(2)
    doc = json.load(open(args[0]))
    out, m = summarise(doc)
    md = markdown(doc, out, m)
    sys.stdout.write(md)
    if "--md" in args:
        open(args[args.index("--md") + 1], "w").write(md)
    if "--png" in args:
        try:
            plot(out, m, args[args.index("--png") + 1])
        except ImportError:
            print("(no matplotlib: apt-get install python3-matplotlib)",
                  file=sys.stderr)
    doc["summary"] = {"scenarios": out, "marginal": m}
    json.dump(doc, open(args[0], "w"), indent=1)


if __name__ == "__main__":
    main()
