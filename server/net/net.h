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
/* --port-file: every listener's address, with the ports "auto" picked;
 * 0, or -1 logged. */
int net_write_port_file(struct server *srv, const char *metrics_addr);
struct addrinfo;
/* "host:port" of fd, bound from ai (port auto: the port the kernel chose);
 * 0, or -1 with errno. */
int net_bound_name(int fd, const struct addrinfo *ai, char *name, size_t len);
/* --io=uring (uring.c): listener i's multishot accept returned fd, or
 * -errno; a listener gone meanwhile (i out of range) closes fd. */
void net_accepted(struct server *srv, size_t i, int fd);
void net_disable_accept(struct server *srv);

/* A listener as memcached's "stats conns" names it: tcp:ADDR:PORT,
 * tcp6:[ADDR]:PORT or unix:PATH. */
void net_listener_label(const struct listener *l, char *buf, size_t len);
/* The label of the listener that accepted connection fd (of family), by
 * its local address; "?" if none matches (the listeners are gone).  Takes
 * srv->stats_mu: never call it holding that. */
void net_listen_addr_of(struct server *srv, int fd, int family, char *buf,
                        size_t len);

#endif
