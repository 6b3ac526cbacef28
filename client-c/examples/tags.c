/*
 * tags.c - libmdcached example: cache the parts of a page under one tag,
 * read them all in one request, and invalidate the page in one request.
 *
 *   cc -o tags tags.c $(pkg-config --cflags --libs libmdcached)
 *   ./tags [server]          (default 127.0.0.1:11311)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mdcached.h>

#define TAG_PAGE 1 /* tag key: "page"; the tag value identifies the page */

/* A stable 31-bit hash of a page path (FNV-1a) as the tag value. */
static int32_t page_id(const char *path)
{
    uint32_t h = 2166136261u;
    for (; *path; path++)
        h = (h ^ (uint8_t)*path) * 16777619u;
    return (int32_t)(h & 0x7fffffff);
}

int main(int argc, char **argv)
{
    const char *server = argc > 1 ? argv[1] : "127.0.0.1:11311";
    const char *parts[] = {"header", "contact-list", "footer"};
    struct mdc_itemset set = {0};
    uint64_t deleted = 0;
    int rc = 1;

    mdc_t *m = mdc_create(server);
    if (m == NULL) {
        fprintf(stderr, "bad server \"%s\"\n", server);
        return 1;
    }
    mdc_set_timeouts(m, 500, 2000);

    /* 1. cache each part of /contacts, tagged with the page */
    struct mdc_tag tag = {TAG_PAGE, page_id("/contacts")};
    for (size_t i = 0; i < 3; i++) {
        char key[64], html[64];
        snprintf(key, sizeof(key), "/contacts#%s", parts[i]);
        snprintf(html, sizeof(html), "<div>%s</div>", parts[i]);
        if (mdc_set(m, key, strlen(key), html, strlen(html), 0, 3600, &tag,
                    1) != MDC_OK) {
            fprintf(stderr, "set: %s\n", mdc_errstr(m));
            goto out;
        }
    }

    /* 2. every part of the page, in one round trip */
    if (mdc_get_by_tag(m, tag.tkey, &tag.tval, 1, &set) != MDC_OK) {
        fprintf(stderr, "get_by_tag: %s\n", mdc_errstr(m));
        goto out;
    }
    for (size_t i = 0; i < set.count; i++)
        printf("%s = %s\n", set.items[i]->key, set.items[i]->value);

    /* 3. the page changed: drop all of it, nothing left behind */
    if (mdc_del_by_tag(m, tag.tkey, &tag.tval, 1, &deleted) != MDC_OK) {
        fprintf(stderr, "del_by_tag: %s\n", mdc_errstr(m));
        goto out;
    }
    printf("invalidated %" PRIu64 " records\n", deleted);
    rc = 0;
out:
    mdc_itemset_free(&set);
    mdc_destroy(m);
    return rc;
}
