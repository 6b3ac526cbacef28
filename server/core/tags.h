/*
 * tags.h - the tag forest's interface lives in store_int.h (it shares the
 * record layout with store.c); this header exists so the module is easy to
 * find and to document its shape:
 *
 *   T buckets (rwlock + RB tree of tag keys, chosen by hash of tkey)
 *     tag key node: RB tree of tag values
 *       tag value node: list of struct tag_entry (embedded in records),
 *                       newest first; each entry points back to its record.
 */
#ifndef MDC_TAGS_H
#define MDC_TAGS_H
#include "store_int.h"
#endif
