/*
 * md5.h - MD5 digest for ketama placement (md5.c).  Internal.
 */
#ifndef MDC_MD5_H
#define MDC_MD5_H

#include <stddef.h>
#include <stdint.h>

/* out = MD5(data[0 .. len)). */
void mdci_md5(const void *data, size_t len, uint8_t out[16]);

#endif
