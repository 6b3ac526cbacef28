#!/usr/bin/env python3
"""scale_report.py - issue 13's target table from bench/scale.sh's JSON lines.

Each ratio is computed per round (old and new ran in the same round, one
after the other), then the median over rounds is printed with [min-max].
"""
import json
import statistics as st
import sys


def load(path):
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


def main():
    rows = load(sys.argv[1])
    meta = one(rows, kind="meta") or {}
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

    print("scale.sh run %s: old %s, new %s; load %s at the start, %s at the end; %s CPUs"
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
              open(sys.argv[1].replace(".jsonl", "-summary.json"), "w"), indent=1)


if __name__ == "__main__":
    main()
