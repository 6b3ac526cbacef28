/*
 * testhook.h - test-only hooks, compiled in with --enable-debug-commands
 * (MDC_DEBUG_COMMANDS) and empty otherwise.
 *
 * A stop asked before a thread's loop runs must still end that loop
 * (docs/threads.md, "Stopping a thread").  To test it deterministically,
 * MDC_TEST_HOLD_LOOP=NAME[,NAME...] in the daemon's environment makes each
 * named thread hold just before its loop starts until its stop has been
 * asked (at most a minute), so the loop always starts after the stop:
 *
 *   metrics   the --metrics HTTP thread (metrics.c)
 *   net       every network thread, either backend (net/threads.c)
 *   payload   every payload thread (net/threads.c)
 *   dumper    the dump thread (dumper.c): a dump request counts as asked
 *   sweeper   the store's expiry sweeper (core/store_expiry.c)
 *
 * tests/test_stop_early.c uses it; docs/testing.md documents it.
 *
 * A network thread that comes late to its timeouts (a busy machine) must
 * still serve the input that arrived in time: "stats stall_tick" (text
 * protocol) arms the thread that runs it, and that thread's next tick,
 * before it reads the clock, holds until a writer has opened and closed
 * the FIFO named by MDC_TEST_TICK_GATE in the daemon's environment (at
 * most a minute).  tests/test_auth.c, test_auth_timeout_late_thread.
 *
 * A dump, once running, holds the same way on MDC_TEST_DUMP_GATE before it
 * writes anything (dumper.c; tests/test_dump_server.c, the parked dump).
 */
#ifndef MDC_TESTHOOK_H
#define MDC_TESTHOOK_H

#include "config.h"

#ifdef MDC_DEBUG_COMMANDS
/* Called by thread kind `name` just before its loop: holds while named in
 * MDC_TEST_HOLD_LOOP and its stop was not asked yet. */
void testhook_hold_loop(const char *name);
/* Called by whoever asked thread kind `name` to stop, after asking. */
void testhook_stop_asked(const char *name);
/* Arm the calling thread's next tick gate: 0, or -1 without
 * MDC_TEST_TICK_GATE. */
int testhook_tick_gate_arm(void);
/* Called by a thread's tick first: holds there if the thread armed it. */
void testhook_tick_gate(void);
/* Holds the caller until a writer has opened and closed the FIFO named by
 * the environment variable `env` (at once without it; at most a minute);
 * `what` names the hold in the daemon's log. */
void testhook_fifo_hold(const char *env, const char *what);
#else
static inline void testhook_hold_loop(const char *name) { (void)name; }
static inline void testhook_stop_asked(const char *name) { (void)name; }
static inline void testhook_tick_gate(void) {}
static inline void testhook_fifo_hold(const char *env, const char *what)
{
    (void)env;
    (void)what;
}
#endif

#endif
