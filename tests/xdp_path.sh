#!/bin/sh
# xdp_path.sh - the cost of an XDP hit in BPF instructions, load-free
# (docs/xdp.md, "Cost per packet").  bench/bpf_path.py runs the compiled
# bpf/mdc_xdp.bpf.o and bpf/mdc_bounce.bpf.o instruction by instruction on
# W8's request (12-byte key, 32-byte value, tier 0) and checks the reply it
# builds (sizes, both checksums, bytes).  Fails if the hit executes more
# than 7.6 times the bare bounce's instructions (555 against 74 now, 7.50x,
# with the key in its first front slot, -mcpu=v2; 559 before the front
# and -mcpu=v2, 623 with a
# lookup each for counters and scratch, 1 259 before clang's byte-wise
# splitting of misaligned copies was avoided), or makes a helper call
# beyond its two array lookups (the per-CPU value holding counters and
# scratch, the key's first front slot: no index in front of it) and one
# bpf_xdp_adjust_head.  Needs python3 and llvm-objdump /
# llvm-objcopy (they come with the clang that builds the programs).
set -u

S=${srcdir:-.}
B=${MDC_BUILD_DIR:-.}
skip() { echo "SKIP: $*"; exit 77; }
command -v python3 >/dev/null 2>&1 || skip "python3 not installed"
[ -f "$B/bpf/mdc_xdp.bpf.o" ] || { echo "FAIL: $B/bpf/mdc_xdp.bpf.o not built"; exit 1; }

out=$(python3 "$S/bench/bpf_path.py" "$B" --json) || {
    echo "FAIL: bench/bpf_path.py: $out"; exit 1; }
echo "$out"
echo "$out" | python3 -c '
import json, sys
d = json.load(sys.stdin)
hit, bounce = d["hit"], d["bounce"]
bad = []
if hit["verdict"] != "TX" or bounce["verdict"] != "TX":
    bad.append("verdicts %s / %s" % (hit["verdict"], bounce["verdict"]))
if d["miss"]["verdict"] != "PASS":
    bad.append("miss verdict %s" % d["miss"]["verdict"])
ratio = hit["instructions"] / bounce["instructions"]
print("# hit %d instructions, bounce %d: %.2fx" % (
    hit["instructions"], bounce["instructions"], ratio))
if ratio > 7.6:
    bad.append("the hit executes %.2fx the bounce (at most 7.6x)" % ratio)
calls = dict(hit["helper_calls"])
if calls.pop("1", 0) > 2 or calls.pop("44", 0) != 1 or calls:
    bad.append("helper calls %s" % hit["helper_calls"])
for b in bad:
    print("FAIL: " + b)
sys.exit(1 if bad else 0)
' || exit 1
echo PASS
