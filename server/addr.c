/*
 * addr.c - -l addresses resolved once, the same way for TCP, UDP and XDP.
 */
#include "config.h"

#include "addr.h"

#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "log.h"
#include "options.h"

int addr_resolve_listen(const char *spec, unsigned long dport, const char *port,
                        int family, int socktype, const char *what,
                        char *portbuf, size_t portlen, struct addrinfo **res)
{
    struct addrinfo hints;
    char host[256];
    int e;

    *res = NULL;
    if (options_split_listen(spec, dport, host, sizeof(host), portbuf,
                             portlen) < 0) {
        log_error("bad %s '%s'", what, spec);
        return -1;
    }
    if (port != NULL)
        snprintf(portbuf, portlen, "%s", port);
    memset(&hints, 0, sizeof(hints));
    hints.ai_family = family;
    hints.ai_socktype = socktype;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    /* "auto": port 0, the kernel picks one when the socket is bound */
    e = getaddrinfo(host, strcmp(portbuf, "auto") == 0 ? "0" : portbuf,
                    &hints, res);
    if (e != 0) {
        log_error("%s '%s': %s", what, spec, gai_strerror(e));
        *res = NULL;
        return -1;
    }
    return 0;
}

bool addr_is_loopback(const struct sockaddr *sa)
{
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
        return (ntohl(in->sin_addr.s_addr) >> 24) == 127;
    }
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_LOOPBACK(a))
            return true;
        return IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127;
    }
    return sa->sa_family == AF_UNIX;
}

void addr_name(const struct addrinfo *ai, const char *port, char *out,
               size_t outlen)
{
    char nhost[96];

    if (getnameinfo(ai->ai_addr, ai->ai_addrlen, nhost, sizeof(nhost), NULL,
                    0, NI_NUMERICHOST) != 0)
        snprintf(nhost, sizeof(nhost), "?");
    snprintf(out, outlen, ai->ai_family == AF_INET6 ? "[%s]:%s" : "%s:%s",
             nhost, port);
}
