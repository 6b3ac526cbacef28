/*
 * daemon.h - the server's lifecycle: create it from parsed options, bind,
 * attach XDP, run the thread model until a graceful stop, destroy.  Only
 * main.c and the tests that run a server in-process include it.
 */
#ifndef MDC_DAEMON_H
#define MDC_DAEMON_H

#include "server.h"

/* Create the server from parsed options: store, workers, event bases.  No
 * socket is bound and no thread started.  Returns NULL with a message logged. */
struct server *server_setup(const struct options *opt);
void server_teardown(struct server *srv);
/* Load the dump file (-f, --dump-load) into the store, before listening.
 * 0, or a sysexits.h status (EX_DATAERR: strict found damage), logged. */
int server_load(struct server *srv);
/* Bind every listener (-l/-p, -s, -U); 0 ok, -1 logged. */
/* --tls-listen: load the certificates (net/tls.h); 0, or -1 logged. */
int server_tls_setup(struct server *srv);
int server_listen(struct server *srv);
/*
 * -x IFACE: load the XDP program, attach it to IFACE through a bpf_link and
 * wire the mirror into the store (invalidation hook) and the UDP path (fill
 * on hits); bpf/xdp_glue.c does the work.  Call after server_listen() and
 * before server_run() - it needs root, which server_run() drops.  Returns 0
 * (also without -x) or a sysexits.h status with the reason logged.
 */
int server_xdp_open(struct server *srv);
/* Signals, privilege drop, pid file, threads; runs until stopped.  Returns 0
 * after a graceful stop. */
int server_run(struct server *srv);
/* Ask a running server to stop (any thread, signal-safe enough for tests). */
void server_stop(struct server *srv);

#endif
