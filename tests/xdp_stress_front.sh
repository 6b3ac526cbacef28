#!/bin/sh
# xdp_stress_front.sh - tests/test_xdp_stress with tier 0's dense front
# (docs/xdp.md, "The mirror"): a front of 2 slots that A and B share as
# well as their hashed slots, so fills race for the front (the first keeps
# it, the other goes to its hashed slot) while the writer invalidates and
# readers check that no reply is torn, foreign or stale.  Root, as
# test_xdp_stress (which prints SKIP and exits 77 without it).
B=${MDC_BUILD_DIR:-.}
MDC_XDP_STRESS_FRONT=2 exec "$B/tests/test_xdp_stress"
