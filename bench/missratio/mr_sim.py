#!/usr/bin/env python3
"""Replay a miss-ratio trace through libCacheSim's policies.

    mr_sim.py ORACLE_TRACE CACHE_BYTES WARMUP_REQUESTS [POLICY...]

ORACLE_TRACE is the trace in libCacheSim's oracleGeneral format
(`mr-gen --oracle`), object size = key + value bytes. CACHE_BYTES is the
simulated cache's capacity in those same bytes, with no per-object
overhead (run.sh passes the key + value bytes mdcached held). The first
WARMUP_REQUESTS requests warm the cache and are not counted, as in
mr-replay. Prints one `policy=miss_ratio` pair per policy on one line.
Needs the pip package libcachesim 0.3.5 (run.sh makes the venv).
"""
import sys

import libcachesim as lcs

POLICIES = {
    "LRU": lambda size: lcs.LRU(size),
    "SIEVE": lambda size: lcs.Sieve(size),
    "S3-FIFO": lambda size: lcs.S3FIFO(size),
    "W-TinyLFU": lambda size: lcs.WTinyLFU(size),
}


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    path, size, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    names = sys.argv[4:] or list(POLICIES)
    reader = lcs.TraceReader(path, lcs.TraceType.ORACLE_GENERAL_TRACE)
    out = []
    for name in names:
        cache = POLICIES[name](size)
        if warm > 0:
            cache.process_trace(reader, 0, warm)
        miss, _ = cache.process_trace(reader, warm, -1)
        out.append("%s=%.4f" % (name, miss))
    print(" ".join(out))


if __name__ == "__main__":
    main()
