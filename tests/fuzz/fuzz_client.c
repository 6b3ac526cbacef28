/*
 * fuzz_client.c - libFuzzer target for libmdcached's reply handling
 * (client-c/conn.c, ops.c over protocol/wire.c): the input, after one
 * selector byte, is what a server answers.  Each input runs one real
 * operation of the library over a Unix socket whose other end the
 * harness holds: it has written the input and closed, so the client reads
 * exactly these bytes and then EOF.  The library must return a documented
 * code (never crash, hang or leak), and what it returns must lie within
 * what it received.  Opaques start at 1 on a new handle, so seeds can
 * carry matching replies (tests/fuzz/corpus/client/).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "mdcached.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static int lfd = -1;
static char path[108];

static void listen_once(void)
{
    struct sockaddr_un sa;

    snprintf(path, sizeof(path), "/tmp/mdc-fuzz-client-%ld.sock",
             (long)getpid());
    unlink(path);
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, strlen(path) + 1);
    lfd = socket(AF_UNIX, SOCK_STREAM, 0);
    CHECK(lfd >= 0);
    CHECK(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    CHECK(listen(lfd, 16) == 0);
    CHECK(fcntl(lfd, F_SETFL, O_NONBLOCK) == 0);
}

static void check_rc(int rc)
{
    CHECK((rc >= MDC_ERR_NO_SERVERS && rc <= 0) || (rc > 0 && rc <= 0xFFFF));
}

static void check_item(const struct mdc_item *it, size_t size)
{
    if (it == NULL)
        return;
    CHECK(it->vlen <= size && it->klen <= size);
    CHECK(it->value[it->vlen] == '\0' && it->key[it->klen] == '\0');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mdc_t *m;
    int afd, rc;
    uint8_t op;

    if (size < 1 || size > 60000)
        return 0;
    if (lfd < 0)
        listen_once();
    op = data[0];
    data++;
    size--;
    m = mdc_create_unix(path);
    CHECK(m != NULL);
    mdc_set_timeouts(m, 1000, 1000);
    rc = mdc_connect(m);
    if (rc != MDC_OK) {
        fprintf(stderr, "fuzz_client: %s\n", mdc_errstr(m));
        abort();
    }
    afd = accept4(lfd, NULL, NULL, 0);
    CHECK(afd >= 0);
    if (size > 0)
        CHECK(send(afd, data, size, MSG_NOSIGNAL) == (ssize_t)size);
    shutdown(afd, SHUT_WR);
    switch (op % 8) {
    case 0: {
        struct mdc_item *it = NULL;
        rc = mdc_get(m, "key", 3, &it);
        check_rc(rc);
        CHECK(rc == MDC_OK || it == NULL);
        check_item(it, size);
        mdc_item_free(it);
        break;
    }
    case 1: {
        const void *keys[3] = {"a", "bb", "ccc"};
        size_t kl[3] = {1, 2, 3};
        struct mdc_item *out[3] = {NULL, NULL, NULL};
        rc = mdc_mget(m, 3, keys, kl, out);
        check_rc(rc);
        for (int i = 0; i < 3; i++) {
            check_item(out[i], size);
            mdc_item_free(out[i]);
        }
        break;
    }
    case 2: {
        struct mdc_itemset set;
        int32_t tv[2] = {1, 2};
        memset(&set, 0, sizeof(set));
        rc = mdc_get_by_tag(m, 7, tv, 2, &set);
        check_rc(rc);
        for (size_t i = 0; i < set.count; i++)
            check_item(set.items[i], size);
        mdc_itemset_free(&set);
        break;
    }
    case 3: {
        uint64_t v = 0;
        rc = mdc_incr(m, "ctr", 3, 1, &v);
        check_rc(rc);
        break;
    }
    case 4: {
        char *text = NULL;
        size_t len = 0;
        rc = mdc_stats(m, NULL, &text, &len);
        check_rc(rc);
        CHECK(rc != MDC_OK || (text != NULL && len <= size));
        free(text);
        break;
    }
    case 5: {
        struct mdc_tag t = {3, 4};
        rc = mdc_set(m, "k", 1, "value", 5, 1, 0, &t, 1);
        check_rc(rc);
        break;
    }
    case 6: {
        uint64_t n = 0;
        int32_t tv = 9;
        rc = mdc_del_by_tag(m, 1, &tv, 1, &n);
        check_rc(rc);
        break;
    }
    default: {
        struct mdc_item *it = NULL;
        rc = mdc_set_auth(m, "user", "pass");
        CHECK(rc == MDC_OK);
        rc = mdc_tstack_pop(m, (struct mdc_tag){1, 1}, &it);
        check_rc(rc);
        check_item(it, size);
        mdc_item_free(it);
        break;
    }
    }
    close(afd);
    mdc_destroy(m);
    /* one operation per input: nothing else may be left connecting */
    afd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
    CHECK(afd < 0);
    return 0;
}
