/*
 * compat.h - what the network layer needs that not every system has,
 * behind configure checks (docs/packaging.md, "Portability"):
 *  - recvmmsg()/sendmmsg() (Linux, FreeBSD 11+): without them, loops of
 *    recvmsg()/sendmsg() with the same contract for the callers here;
 *  - MDC_UDP_REUSEPORT_LB: the socket option that spreads one UDP port over
 *    one socket per thread (SO_REUSEPORT on Linux, SO_REUSEPORT_LB on
 *    FreeBSD 12+); undefined elsewhere, where one socket serves a port.
 * configure --disable-linux-features builds the fallbacks on Linux too.
 */
#ifndef MDC_NET_COMPAT_H
#define MDC_NET_COMPAT_H

#include "config.h"

#include <errno.h>
#include <sys/socket.h>
#include <time.h>

#ifndef HAVE_RECVMMSG
/* Up to vlen datagrams; flags as recvmsg's (MSG_DONTWAIT); stops at the
 * first error after at least one datagram.  timeout is not supported. */
static inline int mdc_recvmmsg(int fd, struct mmsghdr *v, unsigned vlen,
                               int flags, struct timespec *timeout)
{
    unsigned i;

    (void)timeout;
    for (i = 0; i < vlen; i++) {
        ssize_t n = recvmsg(fd, &v[i].msg_hdr, flags);
        if (n < 0)
            return i > 0 ? (int)i : -1;
        v[i].msg_len = (unsigned)n;
    }
    return (int)i;
}
#define recvmmsg mdc_recvmmsg
#endif

#ifndef HAVE_SENDMMSG
static inline int mdc_sendmmsg(int fd, struct mmsghdr *v, unsigned vlen,
                               int flags)
{
    unsigned i;

    for (i = 0; i < vlen; i++) {
        ssize_t n = sendmsg(fd, &v[i].msg_hdr, flags);
        if (n < 0)
            return i > 0 ? (int)i : -1;
        v[i].msg_len = (unsigned)n;
    }
    return (int)i;
}
#define sendmmsg mdc_sendmmsg
#endif

#endif
