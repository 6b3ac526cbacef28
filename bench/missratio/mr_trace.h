/*
 * The miss-ratio bench's trace format (bench/missratio/README.md):
 * a header (96 bytes, magic MRTRACE1; 128 bytes, MRTRACE2, when the value
 * sizes are not the default model), then one 8-byte record per request,
 * little-endian.  mr_header_len() tells a reader where the records start.
 */
#ifndef MR_TRACE_H
#define MR_TRACE_H

#include <stdint.h>

#define MR_MAGIC "MRTRACE1"
#define MR_MAGIC2 "MRTRACE2"

/* keys are "k%010u": 11 bytes, the same for every object */
#define MR_KEY_LEN 11

/* value sizes: lognormal, median 300 B, sigma 0.8, clamped to 16..16384 */
#define MR_SIZE_MEDIAN 300.0
#define MR_SIZE_SIGMA 0.8
#define MR_SIZE_MIN 16
#define MR_SIZE_MAX 16384

/* big objects (format 2): a value is at most this long (memcached at the
 * bench's smallest -m runs with -I 512k) */
#define MR_VALUE_MAX 512000

struct mr_header {
	char magic[8];		/* MR_MAGIC */
	uint64_t requests;	/* records that follow */
	uint64_t objects;	/* N, the Zipf population */
	double alpha;		/* Zipf exponent */
	double one_hit;		/* share of requests for one-hit wonders */
	double drift;		/* ranking shift per tenth, share of N */
	double scan;		/* share of requests in scans */
	uint64_t scan_len;	/* requests per scan */
	uint64_t seed;
	uint64_t distinct;	/* distinct objects requested */
	uint64_t ws_bytes;	/* their key + value bytes: the working set */
	uint64_t reserved;
};

/* MRTRACE2: the v1 header, then the value size model that v1 fixes at
 * sigma MR_SIZE_SIGMA and no big objects */
struct mr_header2 {
	struct mr_header v1;	/* magic MR_MAGIC2 */
	double sigma;		/* lognormal sigma of the value sizes */
	double big_share;	/* share of objects that are big */
	uint64_t big_min;	/* their value bytes: log-uniform in */
	uint64_t big_max;	/* [big_min, big_max] */
};

/* the header's length (where the records start) by its magic; 0: not a
 * trace */
static inline size_t mr_header_len(const void *magic)
{
	const char *m = magic;
	size_t i;

	for (i = 0; i < 8 && m[i] == MR_MAGIC[i]; i++)
		;
	if (i == 8)
		return sizeof(struct mr_header);
	for (i = 0; i < 8 && m[i] == MR_MAGIC2[i]; i++)
		;
	return i == 8 ? sizeof(struct mr_header2) : 0;
}

struct mr_rec {
	uint32_t id;		/* object id; the key is "k%010u" of it */
	uint32_t size;		/* value bytes, fixed per object */
};

#endif
