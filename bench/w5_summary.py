#!/usr/bin/env python3
"""w5_summary.py - turn a bench/w5.sh result file (JSON lines) into the
Markdown tables of docs/performance.md (section W5): medians per target over the
rounds, ratios of medians, round trips, invalidation latency, leftovers."""
import json
import statistics
import sys


def main(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
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


if __name__ == "__main__":
    main(sys.argv[1])
