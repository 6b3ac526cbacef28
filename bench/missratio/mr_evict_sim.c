/*
 * mr-evict-sim: mdcached's eviction simulated on a miss-ratio trace, to
 * compare sampling policies without a server (docs/threads.md, "Eviction";
 * bench/missratio/README.md).  The store's bucket table (its size from -m
 * as store_setup picks it, grown by linear hashing), its sample (random
 * start, up to 64 buckets probed for a non-empty one, whole buckets), its
 * record sizes (48-byte header + key + value in jemalloc's classes; the
 * replay's flags are 0, so none are stored) and mr-replay's batches (the
 * batch's gets, then the sets of its misses) are modelled; time advances
 * at RATE requests a second, and a read counts for eviction only when the
 * record's 16-bit atime (ticks of 2^30 ns, ~1.07 s) is ATIME_GRAIN ticks
 * old, as in the server (store_record.h's atime_due).
 *
 *   mr-evict-sim TRACE MIB [POLICY] [RATE] [SAMPLE] [PROBATION] [GHOSTS]
 *
 * POLICY: "lru" (the sampled LRU of mdcached before issue 27: 5 buckets,
 * the oldest access stamp, never-read records first) or "prob" (today's:
 * probation, reads, ghosts; the default).  RATE: requests a second
 * (220000, what mr-replay reached against mdcached).  SAMPLE: records a
 * sample ranks (12).  PROBATION: the share of the records on probation
 * (0.1).  GHOSTS: ghost slots per 448 bytes of the limit (1; 0 = none).
 * Prints the miss ratio after a 20 % warm-up and what was held.
 * MR_SIM_SIZE in the environment weighs the age within a class by the
 * record's size (policy "prob" only): 1 by its allocation in 16-byte
 * units (the default: the server's rank_age in store_evict.c), 0 not (the
 * server before that ranking), 2 by its log2, 3 by its square root.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mr_trace.h"

struct obj {
	uint32_t size, kv;	/* allocation; key + value bytes */
	int32_t next;		/* in its bucket, -1 = last */
	uint64_t ins;		/* store clock at its store */
	uint64_t last;		/* store clock at its last counted read */
	uint16_t atime;		/* tick of its last counted read, 0 = none */
	uint8_t reads, res;
};

static struct obj *o;
static int32_t *bk;
static uint32_t n, split, maxb;
static uint64_t items, mem, lim, clk, rng = 0x9E3779B97F4A7C15ull;
static uint16_t tick;	/* store_record.h, tick_of(): 2^ATIME_SHIFT ns, never 0 */
#define HDR 48		/* sizeof(struct record) */
#define ATIME_SHIFT 30
#define ATIME_GRAIN 2
static int lru, sample = 12;
static double prob = 0.1;
static uint16_t *ghost;
static uint32_t gmask;

static uint64_t mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}
static uint64_t rnd(void) { return mix(rng += 0x9E3779B97F4A7C15ull); }
static uint64_t hid(uint32_t id) { return mix((uint64_t)id * 0x9E3779B97F4A7C15ull + 1); }
static uint32_t bidx(uint64_t h)
{
	uint32_t b = (uint32_t)h & (n - 1);
	return b < split ? (uint32_t)h & (2 * n - 1) : b;
}
static uint64_t pow2(uint64_t v)
{
	uint64_t p = 1;
	while (p < v)
		p <<= 1;
	return p;
}
/* jemalloc's size classes: 16 apart to 128, then four per doubling */
static size_t good(size_t s)
{
	if (s <= 128)
		return (s + 15) & ~(size_t)15;
	int p = 63 - __builtin_clzll(s - 1);
	size_t step = (size_t)1 << (p - 2);
	return (s + step - 1) & ~(step - 1);
}
/* the server's log scale of a read's age (store_record.h, evb_age_code) */
static uint64_t quant(uint64_t a)
{
	if (a < 2)
		return a;
	int p = 63 - __builtin_clzll(a);
	int c = p * 2 + (int)((a >> (p - 1)) & 1);
	if (c > 63)
		c = 63;
	return (uint64_t)(2 | (c & 1)) << (c / 2 - 1);
}

static void grow(void)
{
	for (int i = 0; i < 8 && n + split < maxb; i++) {
		int32_t x = bk[split], keep = -1, mv = -1;
		while (x >= 0) {
			int32_t nx = o[x].next;
			if ((uint32_t)hid((uint32_t)x) & n) {
				o[x].next = mv;
				mv = x;
			} else {
				o[x].next = keep;
				keep = x;
			}
			x = nx;
		}
		bk[split] = keep;
		bk[split + n] = mv;
		if (++split == n) {
			n *= 2;
			split = 0;
		}
	}
}

static int szmode = 1;	/* MR_SIM_SIZE (above) */
static uint64_t sized(uint64_t a, const struct obj *x)
{
	uint64_t w;
	switch (szmode) {
	case 1: w = x->size / 16; break;
	case 2: w = 64 - (uint64_t)__builtin_clzll(x->size); break;
	case 3: { uint64_t q = 1; while (q * q < x->size) q++; w = q; } break;
	default: return a;
	}
	if (a > ((1ull << 62) - 1) / (w ? w : 1))
		return (1ull << 62) - 1;
	return a * w;
}

/* higher goes first (store_evict.c's evict_rank) */
static uint64_t rank(const struct obj *x)
{
	if (lru)
		return x->atime == 0 ? UINT64_MAX : (uint16_t)(tick - x->atime);
	uint64_t age = clk - x->ins, window = (uint64_t)(prob * items);
	if (x->reads == 0)
		return age > window ? (2ull << 62) | sized(age, x) : sized(age, x);
	return (1ull << 62) | sized((clk - x->last) / x->reads, x);
}

static void evict_one(void)
{
	uint32_t nb = n + split, best = 0;
	uint64_t br = 0;
	int seen = 0, buckets = lru ? 5 : sample;
	for (int s = 0; s < buckets && (lru || seen < sample); s++) {
		uint32_t st = (uint32_t)(rnd() % nb);
		for (int p = 0; p < 64; p++) {
			int32_t x = bk[(st + (uint32_t)p) % nb];
			if (x < 0)
				continue;
			for (; x >= 0; x = o[x].next, seen++) {
				uint64_t r = rank(&o[x]);
				if (seen == 0 || r > br) {
					br = r;
					best = (uint32_t)x;
				}
			}
			break;
		}
	}
	if (seen == 0)
		for (uint32_t b = 0; b < nb && seen == 0; b++)
			if (bk[b] >= 0) {
				best = (uint32_t)bk[b];
				seen = 1;
			}
	uint64_t h = hid(best);
	int32_t *p = &bk[bidx(h)];
	while (*p != (int32_t)best)
		p = &o[*p].next;
	*p = o[best].next;
	o[best].res = 0;
	items--;
	mem -= o[best].size;
	if (ghost)
		ghost[(uint32_t)(h >> 16) & gmask] = (uint16_t)((h >> 48) | 1);
}

static void read_(struct obj *x)
{
	if (x->atime != 0 && (uint16_t)(tick - x->atime) < ATIME_GRAIN)
		return;
	x->atime = tick;
	if (x->reads < 3)
		x->reads++;
	x->last = x->ins + quant(clk - x->ins);
}

static void store(uint32_t id, uint32_t vlen)
{
	struct obj *x = &o[id];
	x->kv = MR_KEY_LEN + vlen;
	x->size = (uint32_t)good(HDR + MR_KEY_LEN + vlen);
	mem += x->size;
	while (mem > lim && items)
		evict_one();
	uint64_t h = hid(id);
	uint32_t b = bidx(h);
	x->next = bk[b];
	bk[b] = (int32_t)id;
	x->res = 1;
	x->atime = 0;
	x->reads = 0;
	x->ins = x->last = ++clk;
	if (ghost) {
		uint16_t *g = &ghost[(uint32_t)(h >> 16) & gmask];
		if (*g == (uint16_t)((h >> 48) | 1)) {
			*g = 0;
			x->reads = 1;
		}
	}
	if (++items > n + split)
		grow();
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: mr-evict-sim TRACE MIB [lru|prob] [RATE] [SAMPLE] [PROBATION] [GHOSTS]\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	struct stat sb;
	if (fd < 0 || fstat(fd, &sb) != 0 || (size_t)sb.st_size < sizeof(struct mr_header)) {
		perror(argv[1]);
		return 1;
	}
	const struct mr_header *hd = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_SHARED, fd, 0);
	size_t hlen = hd == MAP_FAILED ? 0 : mr_header_len(hd->magic);
	if (hlen == 0 ||
	    (size_t)sb.st_size < hlen + hd->requests * sizeof(struct mr_rec)) {
		fprintf(stderr, "mr-evict-sim: %s: not a trace\n", argv[1]);
		return 1;
	}
	const struct mr_rec *r = (const void *)((const char *)hd + hlen);
	lim = (uint64_t)(atof(argv[2]) * 1048576);
	lru = argc > 3 && strcmp(argv[3], "lru") == 0;
	if (getenv("MR_SIM_SIZE") != NULL)
		szmode = atoi(getenv("MR_SIM_SIZE"));
	double rate = argc > 4 ? atof(argv[4]) : 220000;
	if (argc > 5)
		sample = atoi(argv[5]);
	if (argc > 6)
		prob = atof(argv[6]);
	double gpr = argc > 7 ? atof(argv[7]) : 1;
	if (lim == 0 || rate <= 0 || sample < 1) {
		fprintf(stderr, "mr-evict-sim: bad arguments\n");
		return 2;
	}
	uint32_t maxid = 0;
	for (uint64_t i = 0; i < hd->requests; i++)
		if (r[i].id > maxid)
			maxid = r[i].id;
	o = calloc((size_t)maxid + 1, sizeof(*o));
	/* store_setup: a bucket per 8 records of 96 bytes, from 65 536 */
	uint64_t want = lim / (96 * 8);
	maxb = (uint32_t)pow2(want < 1024 ? 1024 : want);
	n = maxb < 65536 ? maxb : 65536;
	bk = malloc(sizeof(*bk) * maxb);
	if (!lru && gpr > 0) {
		uint64_t gw = (uint64_t)(lim / 448 * gpr);
		gmask = (uint32_t)pow2(gw < 1024 ? 1024 : gw) - 1;
		ghost = calloc((size_t)gmask + 1, sizeof(*ghost));
	}
	if (o == NULL || bk == NULL || (!lru && gpr > 0 && ghost == NULL)) {
		perror("mr-evict-sim");
		return 1;
	}
	memset(bk, 0xff, sizeof(*bk) * maxb);
	uint64_t warm = hd->requests / 5, counted = 0, miss = 0;
	uint8_t hit[64];
	for (uint64_t i = 0; i < hd->requests; i += 64) {
		size_t m = hd->requests - i < 64 ? (size_t)(hd->requests - i) : 64;
		/* a start well past 0: a never-read record's atime is 0 */
		tick = (uint16_t)((uint64_t)((1000.0 + (double)i / rate) * 1e9) >> ATIME_SHIFT);
		if (tick == 0)
			tick = 1;
		for (size_t j = 0; j < m; j++) {
			struct obj *x = &o[r[i + j].id];
			hit[j] = x->res;
			if (hit[j])
				read_(x);
			if (i + j >= warm) {
				counted++;
				miss += !hit[j];
			}
		}
		for (size_t j = 0; j < m; j++)
			if (!hit[j] && !o[r[i + j].id].res)
				store(r[i + j].id, r[i + j].size);
	}
	uint64_t held = 0, bytes = 0;
	for (uint32_t id = 0; id <= maxid; id++)
		if (o[id].res) {
			held++;
			bytes += o[id].kv;
		}
	printf("policy=%s miss_ratio=%.4f held_records=%llu held_bytes=%llu\n",
	       lru ? "lru" : "prob", counted ? (double)miss / (double)counted : 0.0,
	       (unsigned long long)held, (unsigned long long)bytes);
	return 0;
}
