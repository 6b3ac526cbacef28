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
void net_disable_accept(struct server *srv);

#endif
