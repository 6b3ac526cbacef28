/*
 * dumper.h - dumps in the running daemon (-f): loading at start, and one
 * dump thread that writes a dump on request (SIGUSR1, the dump commands, a
 * graceful stop) and every -i seconds.  A request made while a dump runs
 * is answered by that dump.  Part of the lifecycle (daemon layer).
 */
#ifndef MDC_DUMPER_H
#define MDC_DUMPER_H

#include <stdbool.h>
#include <stddef.h>

#include "server.h"

/* Load -f (per --dump-load) into the store before listening.  Returns 0,
 * or EX_DATAERR (strict found damage), or another sysexits.h status, with
 * the reason logged.  Without -f: 0. */
int dumper_load(struct server *srv);
/* Start the dump thread (with -f); sets srv->dump_request.  0 or -1. */
int dumper_setup(struct server *srv);
/* Stop the thread (waits for a running dump; starts none). */
void dumper_teardown(struct server *srv);
/* The parking behind srv->dump_park (conn_park). */
struct conn;
void dumper_park(struct conn *c);
/* The request behind srv->dump_request. */
int dumper_request(struct server *srv, bool wait, char *msg, size_t len);

#endif
