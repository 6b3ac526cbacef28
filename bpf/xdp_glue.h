/*
 * xdp_glue.h - -x IFACE: load the XDP program, attach it to IFACE through
 * a bpf_link, and wire the mirror into the store (invalidation hook) and
 * the UDP path (fill on hits).
 */
#ifndef MDC_XDP_GLUE_H
#define MDC_XDP_GLUE_H

struct server;

/*
 * Call after the listeners are bound and before privileges are dropped.
 * Returns 0 (also without -x) or a sysexits.h status with the reason
 * logged: EX_UNAVAILABLE without root, without the interface or without XDP
 * support, EX_OSERR when the kernel refuses the program or the attachment.
 */
int xdp_glue_setup(struct server *srv);

#endif
