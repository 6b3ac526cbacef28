/*
 * mr-gen: a seeded synthetic cache trace for the miss-ratio bench
 * (bench/missratio/README.md describes the model and the file format).
 *
 *   mr-gen -o FILE [-n REQUESTS] [-N OBJECTS] [-a ALPHA] [-w ONE_HIT_SHARE]
 *          [-d DRIFT] [-s SCAN_SHARE] [-L SCAN_LEN] [-S SEED]
 *          [-g SIZE_SIGMA] [-b BIG_SHARE] [-B BIG_MIN,BIG_MAX]
 *   mr-gen --oracle IN OUT   (libCacheSim's oracleGeneral format, for mr_sim.py)
 *   mr-gen --info IN         (the header, one key=value a line)
 *
 * Everything is drawn from one splitmix64 stream seeded by -S, and an
 * object's size is a hash of its id and the seed, so the same arguments
 * write the same bytes on every machine.  With the default size model
 * (-g 0.8, -b 0) the file is format 1, byte for byte what it was before
 * -g and -b existed; otherwise format 2 records the model in its header.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mr_trace.h"

static uint64_t rng_state;

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* uniform in (0, 1): never 0, so log() is safe */
static double unit(uint64_t x)
{
	return ((x >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double rnd(void)
{
	return unit(splitmix64(&rng_state));
}

/* An object's value size: a big one (share big_share, log-uniform in
 * [big_min, big_max]) or lognormal, median MR_SIZE_MEDIAN, sigma sigma,
 * clamped; a function of (seed, id) only, so fixed.  The big draw has its
 * own hash stream, so -b 0 leaves every other size as format 1 had it. */
static uint32_t object_size(const struct mr_header2 *m, uint64_t id)
{
	uint64_t seed = m->v1.seed;
	uint64_t s = seed ^ (id * 0xd1342543de82ef95ULL);
	double u1, u2, z, v;

	if (m->big_share > 0) {
		uint64_t b = seed ^ (id * 0x9e6c63d0676a9a99ULL) ^ 0xb16b00b5ULL;
		if (unit(splitmix64(&b)) < m->big_share) {
			double lo = log((double)m->big_min);
			double hi = log((double)m->big_max);
			v = exp(lo + unit(splitmix64(&b)) * (hi - lo));
			if (v < (double)m->big_min)
				v = (double)m->big_min;
			if (v > (double)m->big_max)
				v = (double)m->big_max;
			return (uint32_t)v;
		}
	}
	u1 = unit(splitmix64(&s));
	u2 = unit(splitmix64(&s));
	z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
	v = exp(log(MR_SIZE_MEDIAN) + m->sigma * z);

	if (v < MR_SIZE_MIN)
		v = MR_SIZE_MIN;
	if (v > MR_SIZE_MAX)
		v = MR_SIZE_MAX;
	return (uint32_t)v;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: mr-gen -o FILE [-n REQUESTS] [-N OBJECTS] [-a ALPHA] [-w ONE_HIT_SHARE]\n"
		"              [-d DRIFT] [-s SCAN_SHARE] [-L SCAN_LEN] [-S SEED]\n"
		"              [-g SIZE_SIGMA] [-b BIG_SHARE] [-B BIG_MIN,BIG_MAX]\n"
		"       mr-gen --oracle IN OUT\n"
		"       mr-gen --info IN\n");
	exit(64);
}

static double num(const char *s, double lo, double hi, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "mr-gen: bad %s '%s' (allowed %g..%g)\n", what, s, lo, hi);
		exit(64);
	}
	return v;
}

static FILE *open_or_die(const char *path, const char *mode)
{
	FILE *f = fopen(path, mode);

	if (!f) {
		fprintf(stderr, "mr-gen: %s: %s\n", path, strerror(errno));
		exit(66);
	}
	return f;
}

/* either format; a format 1 header gets format 1's fixed size model */
static void read_header(FILE *f, const char *path, struct mr_header2 *m)
{
	size_t len;

	memset(m, 0, sizeof(*m));
	if (fread(&m->v1, sizeof(m->v1), 1, f) != 1 ||
	    (len = mr_header_len(m->v1.magic)) == 0 ||
	    (len > sizeof(m->v1) &&
	     fread((char *)m + sizeof(m->v1), len - sizeof(m->v1), 1, f) != 1)) {
		fprintf(stderr, "mr-gen: %s: not a miss-ratio trace\n", path);
		exit(65);
	}
	if (len == sizeof(m->v1))
		m->sigma = MR_SIZE_SIGMA;
}

/* libCacheSim's oracleGeneral record: u32 time, u64 id, u32 size,
 * i64 next access (-1: none; the policies run here do not read it). */
struct __attribute__((packed)) oracle_rec {
	uint32_t ts;
	uint64_t id;
	uint32_t size;
	int64_t next;
};

static int to_oracle(const char *in, const char *out)
{
	FILE *fi = open_or_die(in, "rb"), *fo = open_or_die(out, "wb");
	struct mr_header2 m;
	struct mr_rec r;
	struct oracle_rec o;
	uint64_t i;

	read_header(fi, in, &m);
	for (i = 0; i < m.v1.requests; i++) {
		if (fread(&r, sizeof(r), 1, fi) != 1) {
			fprintf(stderr, "mr-gen: %s: short trace\n", in);
			return 65;
		}
		o.ts = (uint32_t)(i / 1000);
		o.id = r.id + 1;	/* libCacheSim treats id 0 as special */
		o.size = r.size + MR_KEY_LEN;
		o.next = -1;
		fwrite(&o, sizeof(o), 1, fo);
	}
	if (fclose(fo) != 0) {
		fprintf(stderr, "mr-gen: %s: %s\n", out, strerror(errno));
		return 74;
	}
	fclose(fi);
	return 0;
}

static int info(const char *in)
{
	FILE *f = open_or_die(in, "rb");
	struct mr_header2 m;
	const struct mr_header *h = &m.v1;

	read_header(f, in, &m);
	printf("requests=%llu\nobjects=%llu\nalpha=%g\none_hit_share=%g\ndrift=%g\n"
	       "scan_share=%g\nscan_len=%llu\nseed=%llu\ndistinct=%llu\nworking_set_bytes=%llu\n"
	       "format=%d\nsize_sigma=%g\nbig_share=%g\nbig_min=%llu\nbig_max=%llu\n",
	       (unsigned long long)h->requests, (unsigned long long)h->objects, h->alpha,
	       h->one_hit, h->drift, h->scan, (unsigned long long)h->scan_len,
	       (unsigned long long)h->seed, (unsigned long long)h->distinct,
	       (unsigned long long)h->ws_bytes,
	       mr_header_len(h->magic) == sizeof(*h) ? 1 : 2, m.sigma, m.big_share,
	       (unsigned long long)m.big_min, (unsigned long long)m.big_max);
	fclose(f);
	return 0;
}

/* the smallest rank whose cumulative probability reaches u */
static uint64_t zipf_rank(const double *cdf, uint64_t n, double u)
{
	uint64_t lo = 0, hi = n - 1;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (cdf[mid] < u)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* -B MIN,MAX: big objects' value bytes */
static void big_range(const char *v, struct mr_header2 *m)
{
	const char *comma = strchr(v, ',');
	char lo[32];

	if (!comma || (size_t)(comma - v) >= sizeof(lo)) {
		fprintf(stderr, "mr-gen: bad big-object range '%s' (MIN,MAX)\n", v);
		exit(64);
	}
	memcpy(lo, v, (size_t)(comma - v));
	lo[comma - v] = 0;
	m->big_min = (uint64_t)num(lo, 1, MR_VALUE_MAX, "big-object minimum");
	m->big_max = (uint64_t)num(comma + 1, 1, MR_VALUE_MAX, "big-object maximum");
	if (m->big_min > m->big_max) {
		fprintf(stderr, "mr-gen: bad big-object range '%s' (MIN > MAX)\n", v);
		exit(64);
	}
}

int main(int argc, char **argv)
{
	struct mr_header2 m;
	struct mr_header h;
	const char *out = NULL;
	double *cdf, sum = 0;
	uint64_t *perm, i, n, shift = 0, drift_step, tenth, scan_left = 0, scan_pos = 0;
	uint64_t next_fresh;
	uint8_t *seen;
	struct mr_rec *buf;
	size_t nbuf = 0;
	FILE *f;

	memset(&h, 0, sizeof(h));
	memset(&m, 0, sizeof(m));
	m.sigma = MR_SIZE_SIGMA;
	m.big_min = 10240;
	m.big_max = 102400;
	memcpy(h.magic, MR_MAGIC, 8);
	h.requests = 1000000;
	h.objects = 100000;
	h.alpha = 1.0;
	h.one_hit = 0.1;
	h.drift = 0.01;
	h.scan = 0;
	h.scan_len = 10000;
	h.seed = 1;

	if (argc == 4 && strcmp(argv[1], "--oracle") == 0)
		return to_oracle(argv[2], argv[3]);
	if (argc == 3 && strcmp(argv[1], "--info") == 0)
		return info(argv[2]);
	for (int a = 1; a < argc; a++) {
		if (a + 1 >= argc || argv[a][0] != '-' || argv[a][2])
			usage();
		const char *v = argv[++a];
		switch (argv[a - 1][1]) {
		case 'o': out = v; break;
		case 'n': h.requests = (uint64_t)num(v, 1, 4e9, "request count"); break;
		case 'N': h.objects = (uint64_t)num(v, 1, 1e9, "object count"); break;
		case 'a': h.alpha = num(v, 0, 10, "alpha"); break;
		case 'w': h.one_hit = num(v, 0, 1, "one-hit share"); break;
		case 'd': h.drift = num(v, 0, 1, "drift"); break;
		case 's': h.scan = num(v, 0, 1, "scan share"); break;
		case 'L': h.scan_len = (uint64_t)num(v, 1, 1e9, "scan length"); break;
		case 'S': h.seed = (uint64_t)num(v, 0, 1e18, "seed"); break;
		case 'g': m.sigma = num(v, 0, 4, "size sigma"); break;
		case 'b': m.big_share = num(v, 0, 1, "big-object share"); break;
		case 'B': big_range(v, &m); break;
		default: usage();
		}
	}
	if (!out)
		usage();
	if (h.objects + h.requests > UINT32_MAX) {
		fprintf(stderr, "mr-gen: objects + requests must stay below 2^32 (ids are 32-bit)\n");
		return 64;
	}
	n = h.objects;
	rng_state = h.seed;
	/* format 2 only when the size model is not format 1's */
	if (m.sigma != MR_SIZE_SIGMA || m.big_share > 0)
		memcpy(h.magic, MR_MAGIC2, 8);
	else
		m.big_min = m.big_max = 0;
	m.v1.seed = h.seed;

	/* Popularity: Zipf over ranks; rank r is object perm[(r + shift) % n],
	 * perm a seeded shuffle so popular ids are not clustered. Every tenth
	 * of the trace the shift grows by drift * n: the hottest objects of
	 * the last tenth fall to the coldest ranks, the rest move up. */
	cdf = malloc(n * sizeof(*cdf));
	perm = malloc(n * sizeof(*perm));
	if (!cdf || !perm) {
		fprintf(stderr, "mr-gen: out of memory\n");
		return 71;
	}
	for (i = 0; i < n; i++) {
		sum += pow((double)(i + 1), -h.alpha);
		cdf[i] = sum;
	}
	for (i = 0; i < n; i++) {
		cdf[i] /= sum;
		perm[i] = i;
	}
	for (i = n - 1; i > 0; i--) {
		uint64_t j = splitmix64(&rng_state) % (i + 1), t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	drift_step = (uint64_t)(h.drift * (double)n);
	tenth = h.requests / 10 ? h.requests / 10 : 1;

	/* one-hit wonders take fresh ids above the popular ones */
	next_fresh = n;
	seen = calloc((n + h.requests + 7) / 8, 1);
	buf = malloc(65536 * sizeof(*buf));
	if (!seen || !buf) {
		fprintf(stderr, "mr-gen: out of memory\n");
		return 71;
	}
	f = open_or_die(out, "wb");
	m.v1 = h;	/* rewritten with the totals at the end */
	fwrite(&m, mr_header_len(h.magic), 1, f);
	for (i = 0; i < h.requests; i++) {
		uint64_t id;

		if (i && i % tenth == 0)
			shift = (shift + drift_step) % n;
		if (scan_left == 0 && h.scan > 0 && rnd() < h.scan / (double)h.scan_len) {
			scan_left = h.scan_len;
			scan_pos = splitmix64(&rng_state) % n;
		}
		if (scan_left) {
			/* a scan walks consecutive ids, popular or not */
			id = scan_pos++ % n;
			scan_left--;
		} else if (h.one_hit > 0 && rnd() < h.one_hit) {
			id = next_fresh++;
		} else {
			id = perm[(zipf_rank(cdf, n, rnd()) + shift) % n];
		}
		buf[nbuf].id = (uint32_t)id;
		buf[nbuf].size = object_size(&m, id);
		if (!(seen[id >> 3] & (1u << (id & 7)))) {
			seen[id >> 3] |= (uint8_t)(1u << (id & 7));
			h.distinct++;
			h.ws_bytes += buf[nbuf].size + MR_KEY_LEN;
		}
		if (++nbuf == 65536) {
			fwrite(buf, sizeof(*buf), nbuf, f);
			nbuf = 0;
		}
	}
	fwrite(buf, sizeof(*buf), nbuf, f);
	rewind(f);
	m.v1 = h;
	fwrite(&m, mr_header_len(h.magic), 1, f);
	if (fclose(f) != 0) {
		fprintf(stderr, "mr-gen: %s: %s\n", out, strerror(errno));
		return 74;
	}
	free(cdf);
	free(perm);
	free(seen);
	free(buf);
	return 0;
}
