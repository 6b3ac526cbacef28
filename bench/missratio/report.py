#!/usr/bin/env python3
"""Print run.sh's results side by side (markdown) and plot them.

    report.py RESULTS.tsv [PLOT.png]
"""
import csv
import os
import sys

TOL = float(os.environ.get("MR_RSS_TOL", "0.02"))

COLS = ["mdcached", "memcached", "redis-lru", "redis-lfu",
        "sim-LRU", "sim-SIEVE", "sim-S3-FIFO", "sim-W-TinyLFU"]
HEAD = ["mdcached", "memcached", "Redis LRU", "Redis LFU",
        "LRU sim", "SIEVE sim", "S3-FIFO sim", "W-TinyLFU sim"]
SERVERS = ["mdcached", "memcached", "redis-lru", "redis-lfu"]
# run.sh's extra row: mdcached given as -m the memory memcached used
EQUAL = "mdcached@mc-mem"
# run.sh's equal-RSS rows: mdcached where its RSS is that server's
RSS_ROWS = [("memcached", "mdcached@mc-rss"),
            ("redis-lru", "mdcached@redis-lru-rss"),
            ("redis-lfu", "mdcached@redis-lfu-rss")]


def mib_of_kib(v):
    return "%.1f" % (int(v) / 1024) if v and v.isdigit() else "–"


def main():
    rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
    cells = {}
    order = []
    for r in rows:
        k = (r["trace"], int(r["pct"]))
        if k not in cells:
            order.append(k)
            cells[k] = {"mib": r["mib"]}
        cells[k][r["server"]] = r
    print("| trace | size | -m MiB | " + " | ".join(HEAD) + " |")
    print("|---" * (3 + len(HEAD)) + "|")
    for k in order:
        c = cells[k]
        mr = [c[s]["miss_ratio"] if s in c and c[s]["miss_ratio"] else "–" for s in COLS]
        print("| %s | %d %% | %s | %s |" % (k[0], k[1], c["mib"], " | ".join(mr)))
    print()
    print("Records held / key + value bytes held (MB) after the replay:")
    print()
    print("| trace | size | " + " | ".join(SERVERS) + " | mdcached `stats bytes` (MB) |")
    print("|---" * (3 + len(SERVERS)) + "|")
    for k in order:
        c = cells[k]
        held = []
        for s in SERVERS:
            if s in c and c[s]["records"] not in ("", "-"):
                held.append("%s / %.1f" % (c[s]["records"], int(c[s]["object_bytes"]) / 1e6))
            else:
                held.append("–")
        sb = c.get("mdcached", {}).get("stats_bytes", "")
        sb = "%.1f" % (int(sb) / 1e6) if sb.isdigit() else "–"
        print("| %s | %d %% | %s | %s |" % (k[0], k[1], " | ".join(held), sb))

    if any(EQUAL in c for c in cells.values()):
        print()
        print("Equal memory: mdcached given as -m the memory memcached used "
              "in the same row (run.sh's MR_EQUAL), RSS after the replay:")
        print()
        print("| trace | size | -m MiB | memcached | mdcached | "
              "mdcached at memcached's memory: -m MiB | its miss ratio | "
              "records held: memcached / mdcached at its memory | "
              "RSS MiB: memcached / mdcached at its memory |")
        print("|---" * 9 + "|")
        for k in order:
            c = cells[k]
            e = c.get(EQUAL)
            if e is None:
                continue
            mc = c.get("memcached", {})
            print("| %s | %d %% | %s | %s | %s | %s | %s | %s / %s | %s / %s |" % (
                k[0], k[1], c["mib"], mc.get("miss_ratio", "–"),
                c.get("mdcached", {}).get("miss_ratio", "–"), e["mib"],
                e["miss_ratio"] or "–", mc.get("records", "–"), e["records"],
                mib_of_kib(mc.get("rss_kib")), mib_of_kib(e.get("rss_kib"))))

    if any(e in c for c in cells.values() for _, e in RSS_ROWS):
        print()
        print("Equal RSS: mdcached at the limit where its RSS after the replay "
              "and the probe is the other server's (run.sh's MR_RSS); each "
              "cell: the server's miss ratio / mdcached's there (its limit "
              "MiB; RSS MiB: the server / mdcached); * = RSS not matched "
              "within the tolerance, ! = mdcached misses more:")
        print()
        print("| trace | size | memcached | Redis LRU | Redis LFU |")
        print("|---" * 5 + "|")
        for k in order:
            c = cells[k]
            out = []
            for srv, e in RSS_ROWS:
                a, b = c.get(srv), c.get(e)
                if not a or not b or not b["miss_ratio"]:
                    out.append("–")
                    continue
                try:
                    rel = abs(int(b["rss_kib"]) - int(b["target_rss_kib"])) \
                        / int(b["target_rss_kib"])
                except (KeyError, ValueError, ZeroDivisionError):
                    rel = 1
                flag = "*" if rel > TOL else ""
                worse = "!" if a["miss_ratio"] and \
                    float(b["miss_ratio"]) > float(a["miss_ratio"]) else ""
                out.append("%s / %s%s (%s; %s / %s)%s" % (
                    a["miss_ratio"], b["miss_ratio"], worse, b["mib"],
                    mib_of_kib(a.get("rss_kib")), mib_of_kib(b.get("rss_kib")),
                    flag))
            print("| %s | %d %% | %s |" % (k[0], k[1], " | ".join(out)))

    if len(sys.argv) < 3:
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: no plot)", file=sys.stderr)
        return
    traces = []
    for t, _ in order:
        if t not in traces:
            traces.append(t)
    fig, axes = plt.subplots(1, len(traces), figsize=(4 * len(traces), 3.6), squeeze=False)
    for ax, t in zip(axes[0], traces):
        pcts = sorted(p for tt, p in order if tt == t)
        for s, label in zip(COLS + [EQUAL], HEAD + ["mdcached at memcached's memory"]):
            xs, ys = [], []
            for p in pcts:
                r = cells[(t, p)].get(s)
                if r and r["miss_ratio"] not in ("", "-"):
                    xs.append(p)
                    ys.append(float(r["miss_ratio"]))
            if xs:
                style = "-o" if s in SERVERS else ":s" if s == EQUAL else "--x"
                ax.plot(xs, ys, style, label=label, markersize=4)
        ax.set_xscale("log")
        ax.set_xticks(pcts)
        ax.set_xticklabels(["%d %%" % p for p in pcts])
        ax.set_title(t)
        ax.set_xlabel("cache size, share of the working set")
        ax.grid(True, alpha=0.3)
    axes[0][0].set_ylabel("miss ratio (after warm-up)")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=100)


if __name__ == "__main__":
    main()
