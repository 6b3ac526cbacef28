/*
 * The miss-ratio bench's trace format (bench/missratio/README.md):
 * a 96-byte header, then one 8-byte record per request, little-endian.
 */
#ifndef MR_TRACE_H
#define MR_TRACE_H

#include <stdint.h>

#define MR_MAGIC "MRTRACE1"

/* keys are "k%010u": 11 bytes, the same for every object */
#define MR_KEY_LEN 11

/* value sizes: lognormal, median 300 B, sigma 0.8, clamped to 16..16384 */
#define MR_SIZE_MEDIAN 300.0
#define MR_SIZE_SIGMA 0.8
#define MR_SIZE_MIN 16
#define MR_SIZE_MAX 16384

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

struct mr_rec {
	uint32_t id;		/* object id; the key is "k%010u" of it */
	uint32_t size;		/* value bytes, fixed per object */
};

#endif
