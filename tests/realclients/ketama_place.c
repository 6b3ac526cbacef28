/*
 * ketama_place.c - libmdcached's view of a pool, for tests/rc_twemproxy.sh
 * (placement_check.py): the same server list as twemproxy's, in the same
 * order, each server with weight 1.
 *
 *   ketama_place place SERVER...   for each key on stdin (one a line) print
 *                                  "INDEX STATUS VLEN": the server index
 *                                  libmdcached's ketama picks, and what a
 *                                  get through the pool (on that server)
 *                                  found: "hit" or the return code
 *   ketama_place tags N SERVER...  store N records rc:tag:NNN (value
 *                                  "tagged-NNN", tag 7:NNN%3) through the
 *                                  pool, then get_by_tag 7 0 1 2 on every
 *                                  server: print "stored S tagged T"
 *
 * Exit 0, or 2 on bad usage or a pool that cannot be set up.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client-c/mdcached.h"

static mdc_pool_t *pool_of(int n, char **specs)
{
    mdc_pool_t *p = mdc_pool_create();
    int i;

    if (p == NULL)
        return NULL;
    for (i = 0; i < n; i++)
        if (mdc_pool_add(p, specs[i], 1) < 0) {
            fprintf(stderr, "ketama_place: bad server %s\n", specs[i]);
            mdc_pool_destroy(p);
            return NULL;
        }
    return p;
}

static int place(mdc_pool_t *p)
{
    char key[512];

    while (fgets(key, sizeof(key), stdin) != NULL) {
        size_t klen = strcspn(key, "\r\n");
        struct mdc_item *it = NULL;
        int idx, rc;

        key[klen] = '\0';
        if (klen == 0)
            continue;
        idx = mdc_pool_index(p, key, klen);
        rc = mdc_pool_get(p, key, klen, &it);
        if (rc == MDC_OK)
            printf("%d hit %zu\n", idx, it->vlen);
        else
            printf("%d %d 0\n", idx, rc);
        mdc_item_free(it);
    }
    return 0;
}

static int tags(mdc_pool_t *p, int n)
{
    static const int32_t tvals[] = {0, 1, 2};
    struct mdc_itemset set = {NULL, 0, 0};
    int i, stored = 0, rc;

    for (i = 0; i < n; i++) {
        char key[32], val[32];
        struct mdc_tag t = {7, i % 3};
        struct mdc_kv kv;

        snprintf(key, sizeof(key), "rc:tag:%03d", i);
        snprintf(val, sizeof(val), "tagged-%03d", i);
        memset(&kv, 0, sizeof(kv));
        kv.key = key;
        kv.klen = strlen(key);
        kv.value = val;
        kv.vlen = strlen(val);
        kv.tags = &t;
        kv.ntags = 1;
        if (mdc_pool_store(p, MDC_SET, &kv, NULL) == MDC_OK)
            stored++;
    }
    rc = mdc_pool_get_by_tag(p, 7, tvals, 3, &set, NULL);
    printf("stored %d tagged %zu rc %d\n", stored, set.count, rc);
    mdc_itemset_free(&set);
    return 0;
}

int main(int argc, char **argv)
{
    mdc_pool_t *p;
    int rc;

    if (argc >= 3 && strcmp(argv[1], "place") == 0)
        p = pool_of(argc - 2, argv + 2);
    else if (argc >= 4 && strcmp(argv[1], "tags") == 0)
        p = pool_of(argc - 3, argv + 3);
    else {
        fprintf(stderr, "usage: ketama_place place SERVER...\n"
                        "       ketama_place tags N SERVER...\n");
        return 2;
    }
    if (p == NULL)
        return 2;
    mdc_pool_set_timeouts(p, 2000, 5000);
    rc = argv[1][0] == 'p' ? place(p) : tags(p, atoi(argv[2]));
    mdc_pool_destroy(p);
    return rc;
}
