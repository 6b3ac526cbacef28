/*
 * addr.h - one place that turns a -l address into socket addresses: the
 * TCP listeners (net/net.c), the UDP sockets (net/udp.c) and the XDP
 * front's list of addresses to answer on (bpf/xdp_glue.c) all resolve
 * through it, so they agree on what "-l" means.
 */
#ifndef MDC_ADDR_H
#define MDC_ADDR_H

#include <stdbool.h>
#include <stddef.h>

struct addrinfo;
struct sockaddr;

/*
 * Resolve the -l value spec for passive sockets of socktype (SOCK_STREAM or
 * SOCK_DGRAM) and family (AF_UNSPEC, or AF_INET for IPv4 only).  The port is
 * port when not NULL, else spec's own port, else dport; its text goes to
 * portbuf ("auto" for OPT_PORT_AUTO: the addresses then carry port 0, and
 * the caller learns the port with getsockname() once bound).  On success *res holds the addresses (freeaddrinfo()) and 0 is
 * returned; on failure -1, with the reason logged under the name what
 * (e.g. "listen address").
 */
int addr_resolve_listen(const char *spec, unsigned long dport, const char *port,
                        int family, int socktype, const char *what,
                        char *portbuf, size_t portlen, struct addrinfo **res);

/* A loopback address: 127.0.0.0/8, ::1, ::ffff:127.x.y.z, or AF_UNIX
 * (protected mode, net/net.c and net/udp.c). */
bool addr_is_loopback(const struct sockaddr *sa);

/* The numeric "host:port" or "[v6]:port" of ai, for logs and stats. */
void addr_name(const struct addrinfo *ai, const char *port, char *out,
               size_t outlen);

#endif
