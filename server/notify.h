/*
 * notify.h - systemd's readiness notification (Type=notify), without
 * libsystemd: sd_notify(3) documents the protocol as a stable interface, a
 * datagram of "NAME=value" lines sent to the AF_UNIX socket named by
 * $NOTIFY_SOCKET.  Linking libsystemd for it cost an idle daemon 1 MiB of
 * mapped libraries (libgcrypt, liblzma, libzstd, ... that libsystemd loads;
 * docs/performance.md, "Idle footprint").
 */
#ifndef MDC_NOTIFY_H
#define MDC_NOTIFY_H

/*
 * Send state (e.g. "READY=1", lines separated by '\n') to $NOTIFY_SOCKET:
 * an absolute path, or an abstract socket name written with a leading '@'.
 * Returns 1 when sent, 0 when there is nothing to send it to (no
 * $NOTIFY_SOCKET, or a build configured --without-systemd), -errno on
 * failure: -EAFNOSUPPORT for an address that is neither (systemd's
 * "vsock:" ones included), -ENAMETOOLONG for a path sun_path cannot hold.
 * The send blocks while systemd's queue is full, as libsystemd's does: a
 * READY=1 dropped on EAGAIN would leave the unit starting until it times out.
 */
int notify_send(const char *state);

#endif
