/*
 * tests/pool_sg.c - the client of tests/test_pool_bpf.sh (the kernel
 * scatter-gather of tag deletes, docs/pool-bpf.md):
 *   pool_sg fill TAG PER SERVER...
 *       stores PER records "s<i>-<TAG>-<j>" tagged (1, TAG) on each server
 *   pool_sg del DESC NEED MS TAG [stale] SERVER...
 *       one pool-wide tag delete with mdc_pool_set_bpf(DESC, NEED, MS)
 *       (DESC "-": none); prints "rc=<rc> total=<n> last=<path>
 *       paths=<p0>,<p1>,... ops_bpf=.. polls=.. tcp_retries=..
 *       fallbacks=.."
 *   pool_sg count TAG SERVER
 *       how many records of (1, TAG) SERVER serves
 *   pool_sg udp ADDR:PORT PAYLOAD
 *       one datagram (frame header + PAYLOAD + "\r\n"), nothing awaited
 */
#include "mdcached.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdbool.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static mdc_pool_t *pool_of(int n, char **spec)
{
    mdc_pool_t *p = mdc_pool_create();
    if (p == NULL)
        exit(2);
    for (int i = 0; i < n; i++)
        if (mdc_pool_add(p, spec[i], 1) < 0) {
            fprintf(stderr, "bad server %s\n", spec[i]);
            exit(2);
        }
    return p;
}

static int fill(int tag, int per, int n, char **spec)
{
    for (int i = 0; i < n; i++) {
        mdc_t *m = mdc_create(spec[i]);
        for (int j = 0; j < per; j++) {
            char key[48];
            struct mdc_tag t = {1, tag};
            struct mdc_kv kv = {0};
            snprintf(key, sizeof(key), "s%d-%d-%d", i, tag, j);
            kv.key = key;
            kv.klen = strlen(key);
            kv.value = "v";
            kv.vlen = 1;
            kv.tags = &t;
            kv.ntags = 1;
            if (mdc_store(m, MDC_SET, &kv, NULL) != MDC_OK) {
                fprintf(stderr, "fill %s: %s\n", spec[i], mdc_errstr(m));
                return 1;
            }
        }
        mdc_destroy(m);
    }
    return 0;
}

static int del(const char *desc, unsigned need, int ms, int tag, bool stale,
               int n, char **spec)
{
    mdc_pool_t *p = pool_of(n, spec);
    struct mdc_pool_stats st;
    uint64_t total = 0;
    int32_t v = tag;
    int rc;

    mdc_pool_set_timeouts(p, 1000, 2000);
    if (strcmp(desc, "-") != 0 &&
        mdc_pool_set_bpf(p, desc, need, ms) != MDC_OK)
        fprintf(stderr, "# %s\n", mdc_pool_errstr(p));
    rc = stale ? mdc_pool_del_by_tag_stale(p, 1, &v, 1, 0, &total, NULL)
               : mdc_pool_del_by_tag(p, 1, &v, 1, &total, NULL);
    mdc_pool_get_stats(p, &st);
    printf("rc=%d total=%" PRIu64 " last=%s paths=", rc, total,
           mdc_pool_last_path(p));
    for (int i = 0; i < n; i++) {
        int path = mdc_pool_server_path(p, (size_t)i);
        printf("%s%s", i ? "," : "",
               path == MDC_PATH_BPF ? "bpf" :
               path == MDC_PATH_URING ? "uring" :
               path == MDC_PATH_TCP ? "tcp" : "none");
    }
    printf(" ops_bpf=%" PRIu64 " polls=%" PRIu64 " tcp_retries=%" PRIu64
           " fallbacks=%" PRIu64 "\n", st.ops[MDC_PATH_BPF], st.bpf_polls,
           st.bpf_tcp_retries, st.bpf_fallbacks);
    if (rc != MDC_OK)
        fprintf(stderr, "# %s\n", mdc_pool_errstr(p));
    mdc_pool_destroy(p);
    return rc == MDC_OK ? 0 : 1;
}

static int count(int tag, const char *spec)
{
    mdc_t *m = mdc_create(spec);
    struct mdc_itemset set = {0};
    int32_t v = tag;
    int rc = mdc_get_by_tag(m, 1, &v, 1, &set);
    if (rc != MDC_OK) {
        fprintf(stderr, "count %s: %s\n", spec, mdc_errstr(m));
        return 1;
    }
    printf("%zu\n", set.count);
    mdc_itemset_free(&set);
    mdc_destroy(m);
    return 0;
}

static int udp(const char *to, const char *payload)
{
    char host[64], buf[1500];
    const char *colon = strrchr(to, ':');
    struct sockaddr_in sa = {.sin_family = AF_INET};
    size_t len = strlen(payload);
    int fd;

    if (colon == NULL || (size_t)(colon - to) >= sizeof(host) ||
        len + 10 > sizeof(buf))
        return 2;
    memcpy(host, to, (size_t)(colon - to));
    host[colon - to] = '\0';
    sa.sin_port = htons((uint16_t)atoi(colon + 1));
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
        return 2;
    memset(buf, 0, 8);
    buf[1] = 7;
    buf[5] = 1;
    memcpy(buf + 8, payload, len);
    memcpy(buf + 8 + len, "\r\n", 2);
    fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || sendto(fd, buf, 8 + len + 2, 0, (struct sockaddr *)&sa,
                         sizeof(sa)) < 0) {
        perror("udp");
        return 1;
    }
    close(fd);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "fill") == 0)
        return fill(atoi(argv[2]), atoi(argv[3]), argc - 4, argv + 4);
    if (argc >= 7 && strcmp(argv[1], "del") == 0) {
        bool stale = strcmp(argv[6], "stale") == 0;
        int first = stale ? 7 : 6;
        return del(argv[2], (unsigned)atoi(argv[3]), atoi(argv[4]),
                   atoi(argv[5]), stale, argc - first, argv + first);
    }
    if (argc == 4 && strcmp(argv[1], "count") == 0)
        return count(atoi(argv[2]), argv[3]);
    if (argc == 4 && strcmp(argv[1], "udp") == 0)
        return udp(argv[2], argv[3]);
    fprintf(stderr, "usage: pool_sg fill|del|count|udp ...\n");
    return 2;
}
