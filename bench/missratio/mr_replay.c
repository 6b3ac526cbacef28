/*
 * mr-replay: replay a miss-ratio trace (mr-gen) read-through against a
 * cache server: memcached's text protocol (mdcached, memcached) or RESP
 * (Redis). bench/missratio/README.md describes the method.
 *
 *   mr-replay -t TRACE -p PORT [-h HOST] [-P text|resp] [-b BATCH]
 *             [-w WARMUP_SHARE] [-x]
 *
 * Per batch of B requests: all B gets at once (text: one `get k1 ... kB`;
 * RESP: B pipelined GETs), then a set for each distinct key of the batch
 * that missed (pipelined, one reply each), then the next batch. Requests
 * before the warm-up share are replayed but not counted. With -x, after
 * the replay every distinct object of the trace is read once more to find
 * what the server holds: records and key + value bytes (held_records,
 * held_bytes).
 *
 * Prints one line of key=value pairs.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mr_trace.h"

#define MAX_BATCH 1024

static int fd;
static int resp;
static char filler[MR_VALUE_MAX];

/* output: one growing buffer, written out whole */
static char *obuf;
static size_t olen, ocap;

/* input: a buffered reader */
static char ibuf[1 << 20];
static size_t ipos, iend;

static void die(const char *what)
{
	fprintf(stderr, "mr-replay: %s: %s\n", what, errno ? strerror(errno) : "protocol error");
	exit(1);
}

static void out(const void *p, size_t n)
{
	if (olen + n > ocap) {
		ocap = (olen + n) * 2;
		obuf = realloc(obuf, ocap);
		if (!obuf)
			die("out of memory");
	}
	memcpy(obuf + olen, p, n);
	olen += n;
}

static void outs(const char *s)
{
	out(s, strlen(s));
}

static void flush_out(void)
{
	size_t off = 0;

	while (off < olen) {
		ssize_t n = write(fd, obuf + off, olen - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("write");
		}
		off += (size_t)n;
	}
	olen = 0;
}

static void fill(void)
{
	ssize_t n;

	if (ipos > 0 && ipos == iend)
		ipos = iend = 0;
	if (iend == sizeof(ibuf)) {
		memmove(ibuf, ibuf + ipos, iend - ipos);
		iend -= ipos;
		ipos = 0;
	}
	do
		n = read(fd, ibuf + iend, sizeof(ibuf) - iend);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		die("read");
	if (n == 0) {
		errno = 0;
		die("server closed the connection");
	}
	iend += (size_t)n;
}

/* the next line without its \r\n (NUL-terminated in place) */
static char *line(void)
{
	for (;;) {
		char *nl = memchr(ibuf + ipos, '\n', iend - ipos);
		if (nl) {
			char *l = ibuf + ipos;
			ipos = (size_t)(nl - ibuf) + 1;
			*nl = 0;
			if (nl > l && nl[-1] == '\r')
				nl[-1] = 0;
			return l;
		}
		if (ipos > 0) {
			memmove(ibuf, ibuf + ipos, iend - ipos);
			iend -= ipos;
			ipos = 0;
		}
		fill();
	}
}

static void skip(size_t n)
{
	while (n > 0) {
		size_t have = iend - ipos;
		if (have == 0) {
			fill();
			continue;
		}
		if (have > n)
			have = n;
		ipos += have;
		n -= have;
	}
}

static void key_of(char *k, uint32_t id)
{
	snprintf(k, MR_KEY_LEN + 1, "k%010u", id);
}

/* Send the gets of ids[0..n), mark hit[i]; return the value bytes seen. */
static uint64_t get_batch(const struct mr_rec *r, size_t n, uint8_t *hit)
{
	char k[MR_KEY_LEN + 1], *l;
	uint64_t bytes = 0;
	size_t i, next = 0;

	if (resp) {
		for (i = 0; i < n; i++) {
			key_of(k, r[i].id);
			outs("*2\r\n$3\r\nGET\r\n$11\r\n");
			out(k, MR_KEY_LEN);
			outs("\r\n");
		}
		flush_out();
		for (i = 0; i < n; i++) {
			long len;
			l = line();
			if (l[0] != '$')
				die(l);
			len = strtol(l + 1, NULL, 10);
			hit[i] = len >= 0;
			if (len >= 0) {
				skip((size_t)len + 2);
				bytes += (uint64_t)len;
			}
		}
		return bytes;
	}
	outs("get");
	for (i = 0; i < n; i++) {
		key_of(k, r[i].id);
		outs(" ");
		out(k, MR_KEY_LEN);
	}
	outs("\r\n");
	flush_out();
	memset(hit, 0, n);
	/* hits come back in request order: a VALUE for key K belongs to the
	 * first request at or after the cursor that asked for K */
	for (;;) {
		char vk[251];
		unsigned flags;
		unsigned long len;

		l = line();
		if (strcmp(l, "END") == 0)
			break;
		if (sscanf(l, "VALUE %250s %u %lu", vk, &flags, &len) != 3) {
			errno = 0;
			die(l);
		}
		skip(len + 2);
		bytes += len;
		for (; next < n; next++) {
			key_of(k, r[next].id);
			if (strcmp(k, vk) == 0)
				break;
		}
		if (next == n) {
			errno = 0;
			die("a VALUE for a key not asked for");
		}
		hit[next++] = 1;
	}
	return bytes;
}

/* Store the distinct missed objects of the batch; return refused stores. */
static uint64_t set_batch(const struct mr_rec *r, size_t n, const uint8_t *hit)
{
	char k[MR_KEY_LEN + 1], hdr[64], *l;
	size_t i, j, sets = 0;
	uint64_t refused = 0;

	for (i = 0; i < n; i++) {
		if (hit[i])
			continue;
		for (j = 0; j < i; j++)
			if (!hit[j] && r[j].id == r[i].id)
				break;
		if (j < i)
			continue;	/* already stored in this batch */
		key_of(k, r[i].id);
		if (resp) {
			outs("*3\r\n$3\r\nSET\r\n$11\r\n");
			out(k, MR_KEY_LEN);
			snprintf(hdr, sizeof(hdr), "\r\n$%u\r\n", r[i].size);
		} else {
			outs("set ");
			out(k, MR_KEY_LEN);
			snprintf(hdr, sizeof(hdr), " 0 0 %u\r\n", r[i].size);
		}
		outs(hdr);
		out(filler, r[i].size);
		outs("\r\n");
		sets++;
	}
	if (sets == 0)
		return 0;
	flush_out();
	for (i = 0; i < sets; i++) {
		l = line();
		if (strcmp(l, resp ? "+OK" : "STORED") != 0)
			refused++;
	}
	return refused;
}

static int connect_to(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int s, one = 1, rc;

	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc != 0) {
		fprintf(stderr, "mr-replay: %s:%s: %s\n", host, port, gai_strerror(rc));
		exit(1);
	}
	s = socket(ai->ai_family, SOCK_STREAM, 0);
	if (s < 0 || connect(s, ai->ai_addr, ai->ai_addrlen) < 0)
		die("connect");
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	freeaddrinfo(ai);
	return s;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void usage(void)
{
	fprintf(stderr, "usage: mr-replay -t TRACE -p PORT [-h HOST] [-P text|resp] [-b BATCH]\n"
			"                 [-w WARMUP_SHARE] [-x]\n");
	exit(64);
}

int main(int argc, char **argv)
{
	const char *trace = NULL, *host = "127.0.0.1", *port = NULL;
	size_t batch = 64;
	double warm_share = 0.2, t0;
	int probe = 0, opt, tfd;
	struct stat st;
	const struct mr_header *h;
	const struct mr_rec *rec;
	uint8_t hit[MAX_BATCH];
	size_t hlen;
	uint64_t i, warm, reqs = 0, misses = 0, refused = 0;

	while ((opt = getopt(argc, argv, "t:p:h:P:b:w:x")) != -1) {
		switch (opt) {
		case 't': trace = optarg; break;
		case 'p': port = optarg; break;
		case 'h': host = optarg; break;
		case 'P':
			if (strcmp(optarg, "resp") == 0)
				resp = 1;
			else if (strcmp(optarg, "text") != 0)
				usage();
			break;
		case 'b':
			batch = strtoul(optarg, NULL, 10);
			if (batch < 1 || batch > MAX_BATCH)
				usage();
			break;
		case 'w':
			warm_share = strtod(optarg, NULL);
			if (!(warm_share >= 0 && warm_share < 1))
				usage();
			break;
		case 'x': probe = 1; break;
		default: usage();
		}
	}
	if (!trace || !port)
		usage();
	memset(filler, 'x', sizeof(filler));

	tfd = open(trace, O_RDONLY);
	if (tfd < 0 || fstat(tfd, &st) < 0)
		die(trace);
	h = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, tfd, 0);
	if (h == MAP_FAILED)
		die("mmap");
	if ((size_t)st.st_size < sizeof(*h) || (hlen = mr_header_len(h->magic)) == 0 ||
	    (size_t)st.st_size < hlen + h->requests * sizeof(struct mr_rec)) {
		fprintf(stderr, "mr-replay: %s: not a whole miss-ratio trace\n", trace);
		return 65;
	}
	rec = (const struct mr_rec *)((const char *)h + hlen);
	for (i = 0; i < h->requests; i++)
		if (rec[i].size > MR_VALUE_MAX) {
			fprintf(stderr, "mr-replay: %s: a value of %u bytes (at most %u)\n",
				trace, rec[i].size, MR_VALUE_MAX);
			return 65;
		}
	madvise((void *)h, (size_t)st.st_size, MADV_SEQUENTIAL);
	warm = (uint64_t)(warm_share * (double)h->requests);

	fd = connect_to(host, port);
	t0 = now();
	for (i = 0; i < h->requests; i += batch) {
		size_t n = h->requests - i < batch ? (size_t)(h->requests - i) : batch;

		get_batch(rec + i, n, hit);
		for (size_t j = 0; j < n; j++) {
			if (i + j < warm)
				continue;
			reqs++;
			misses += !hit[j];
		}
		refused += set_batch(rec + i, n, hit);
	}
	printf("requests=%llu misses=%llu miss_ratio=%.4f refused_sets=%llu seconds=%.1f",
	       (unsigned long long)reqs, (unsigned long long)misses,
	       reqs ? (double)misses / (double)reqs : 0.0, (unsigned long long)refused,
	       now() - t0);

	if (probe) {
		/* what does the server hold? every distinct object once */
		uint64_t idmax = h->objects + h->requests, held = 0, held_bytes = 0;
		uint8_t *seen = calloc((idmax + 7) / 8, 1);
		struct mr_rec b[MAX_BATCH];
		size_t nb = 0;

		if (!seen)
			die("out of memory");
		for (i = 0; i <= h->requests; i++) {
			if (i < h->requests) {
				uint32_t id = rec[i].id;
				if (seen[id >> 3] & (1u << (id & 7)))
					continue;
				seen[id >> 3] |= (uint8_t)(1u << (id & 7));
				b[nb++] = rec[i];
			}
			if (nb == batch || (i == h->requests && nb > 0)) {
				held_bytes += get_batch(b, nb, hit);
				for (size_t j = 0; j < nb; j++)
					if (hit[j]) {
						held++;
						held_bytes += MR_KEY_LEN;
					}
				nb = 0;
			}
		}
		printf(" held_records=%llu held_bytes=%llu", (unsigned long long)held,
		       (unsigned long long)held_bytes);
		free(seen);
	}
	printf("\n");
	close(fd);
	return 0;
}
