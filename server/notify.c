/*
 * notify.c - sd_notify(3)'s datagram protocol, written out (notify.h says
 * why).  What systemd documents and what this does:
 *  - $NOTIFY_SOCKET names an AF_UNIX datagram socket: a filesystem path
 *    (absolute), or, when it starts with '@', a name in Linux's abstract
 *    namespace (the '@' becomes the leading NUL of sun_path, and the
 *    address length counts the name only, no trailing NUL).
 *  - One datagram holds the whole state, newline-separated assignments.
 *  - The sender needs no credentials of its own in the message: systemd
 *    reads SCM_CREDENTIALS from the socket (SO_PASSCRED on its side).
 * A socket is made for each call and closed after it; the daemon sends two
 * messages in its life (READY=1, STOPPING=1), so nothing is kept open.
 */
#include "config.h"

#include "notify.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/socket.h>
#include <sys/un.h>

#ifdef MDC_SD_NOTIFY
/* Fill sa from name; the address length, or -errno. */
static int notify_addr(const char *name, struct sockaddr_un *sa)
{
    size_t len = strlen(name);

    memset(sa, 0, sizeof(*sa));
    sa->sun_family = AF_UNIX;
    if (name[0] != '/' && name[0] != '@')
        return -EAFNOSUPPORT;
    if (len > sizeof(sa->sun_path) || (name[0] == '/' &&
                                       len == sizeof(sa->sun_path)))
        return -ENAMETOOLONG; /* a path needs its NUL, a name does not */
    memcpy(sa->sun_path, name, len);
    if (name[0] == '@') {
        sa->sun_path[0] = '\0';
        return (int)(offsetof(struct sockaddr_un, sun_path) + len);
    }
    return (int)(offsetof(struct sockaddr_un, sun_path) + len + 1);
}

int notify_send(const char *state)
{
    const char *name = getenv("NOTIFY_SOCKET");
    struct sockaddr_un sa;
    int alen, fd, rc = 1;

    if (name == NULL || name[0] == '\0')
        return 0;
    alen = notify_addr(name, &sa);
    if (alen < 0)
        return alen;
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
               (struct sockaddr *)&sa, (socklen_t)alen) < 0)
        rc = -errno;
    close(fd);
    return rc;
}
#else
int notify_send(const char *state)
{
    (void)state;
    return 0;
}
#endif
