/*
 * net.h - the TCP and Unix-socket listeners (-l, -p, -s): bind, accept on
 * the main thread, hand each connection to a network worker, and pause
 * accepting at the connection limit.
 */
#ifndef MDC_NET_H
#define MDC_NET_H

#include "server/server.h"

int net_listen_all(struct server *srv);
void net_close_all(struct server *srv);
int net_enable_accept(struct server *srv);
/* --io=uring (uring.c): listener i's multishot accept returned fd, or
 * -errno; a listener gone meanwhile (i out of range) closes fd. */
void net_accepted(struct server *srv, size_t i, int fd);
void net_disable_accept(struct server *srv);

#endif
