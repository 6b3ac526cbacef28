/*
 * store_hash.h - the key hash (XXH3, 64 bits), inline.  store_hash()
 * (store_record.c) is this for every caller outside the lookup; the GET's
 * lookup (get_hashed(), store_policy.h) hashes inline: the function is one
 * call of a header-only hash, and a call around it on every GET adds a
 * call and nothing else.  One definition, so both always agree.
 */
#ifndef MDC_STORE_HASH_H
#define MDC_STORE_HASH_H

#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static inline uint64_t store_hash_inline(const void *key, uint32_t klen)
{
    return XXH3_64bits(key, klen);
}

#endif
