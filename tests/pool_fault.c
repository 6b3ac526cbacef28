/*
 * pool_fault.c - the client side of tests/test_pool_fault.sh (a pool of
 * servers, one cut off while tag deletes run, then the spool replayed):
 *
 *   pool_fault populate NTAGS PER SERVER...
 *       stores PER records "k<t>-<j>" tagged (1, t) for each tag t
 *   pool_fault delete SPOOLDIR NPROC NTAGS SERVER...
 *       NPROC processes (as nobody when run as root) delete the tags
 *       0..NTAGS-1 between them through pools with SPOOLDIR as the spool;
 *       prints the summed pool counters
 *   pool_fault check NTAGS SERVER
 *       prints how many records of the tags 0..NTAGS-1 SERVER still serves
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mdcached.h"

static mdc_pool_t *pool_of(int n, char **spec)
{
    mdc_pool_t *p = mdc_pool_create();
    for (int i = 0; i < n; i++)
        if (mdc_pool_add(p, spec[i], 1) < 0) {
            fprintf(stderr, "bad server %s\n", spec[i]);
            exit(2);
        }
    return p;
}

static int populate(int ntags, int per, int n, char **spec)
{
    mdc_pool_t *p = pool_of(n, spec);
    mdc_pool_set_timeouts(p, 30000, 30000); /* a hang's ceiling */
    for (int t = 0; t < ntags; t++)
        for (int j = 0; j < per; j++) {
            char key[32];
            struct mdc_tag tag = {1, t};
            struct mdc_kv kv = {0};
            snprintf(key, sizeof(key), "k%d-%d", t, j);
            kv.key = key;
            kv.klen = strlen(key);
            kv.value = "v";
            kv.vlen = 1;
            kv.tags = &tag;
            kv.ntags = 1;
            int rc = mdc_pool_store(p, MDC_SET, &kv, NULL);
            if (rc != MDC_OK) {
                mdc_t *m = mdc_pool_pick(p, key, strlen(key));
                fprintf(stderr, "populate %s: %d %s\n", key, rc,
                        mdc_errstr(m));
                return 1;
            }
        }
    mdc_pool_destroy(p);
    return 0;
}

static int deleter(const char *dir, int me, int nproc, int ntags, int n,
                   char **spec)
{
    mdc_pool_t *p = pool_of(n, spec);
    struct mdc_pool_stats st;
    struct timespec pause = {0, 2000000};

    /* The cut server answers nothing: its first delete waits out the
     * timeout, and the retry delay keeps it down for the rest of the run,
     * so what follows goes to the spool at once.  5 s, not a fraction of
     * one: a healthy server whose reply came after the timeout on a busy
     * machine would have been marked down too and its deletes spooled,
     * leaving it records of deleted tags before the replay. */
    mdc_pool_set_timeouts(p, 5000, 5000);
    mdc_pool_set_retry_delay(p, 600000);
    if (mdc_pool_set_spool_dir(p, dir) != MDC_OK) {
        fprintf(stderr, "spool: %s\n", mdc_pool_errstr(p));
        return 1;
    }
    for (int t = me; t < ntags; t += nproc) {
        int32_t v = t;
        mdc_pool_del_by_tag(p, 1, &v, 1, NULL, NULL);
        nanosleep(&pause, NULL);
    }
    mdc_pool_get_stats(p, &st);
    printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
           st.ops[MDC_PATH_TCP] + st.ops[MDC_PATH_URING], st.spooled,
           st.spool_errors, st.retries, st.replayed);
    fflush(stdout); /* the caller leaves with _exit() */
    mdc_pool_destroy(p);
    return 0;
}

static int deletes(const char *dir, int nproc, int ntags, int n, char **spec)
{
    int fds[2], bad = 0;
    uint64_t sum[5] = {0};

    if (pipe(fds) < 0)
        return 2;
    for (int k = 0; k < nproc; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(fds[0]);
            dup2(fds[1], 1);
            if (geteuid() == 0 && (setgid(65534) < 0 || setuid(65534) < 0))
                _exit(3); /* the web user, not root */
            _exit(deleter(dir, k, nproc, ntags, n, spec));
        }
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    uint64_t a[5];
    while (fscanf(f, "%" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                     " %" SCNu64,
                  &a[0], &a[1], &a[2], &a[3], &a[4]) == 5)
        for (int i = 0; i < 5; i++)
            sum[i] += a[i];
    fclose(f);
    for (int k = 0; k < nproc; k++) {
        int status;
        wait(&status);
        bad += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    printf("ops %" PRIu64 " spooled %" PRIu64 " spool_errors %" PRIu64
           " retries %" PRIu64 " replayed %" PRIu64 "\n",
           sum[0], sum[1], sum[2], sum[3], sum[4]);
    return bad ? 1 : 0;
}

static int check(int ntags, const char *spec)
{
    mdc_t *m = mdc_create(spec);
    uint64_t found = 0;
    mdc_set_timeouts(m, 30000, 30000); /* a hang's ceiling */
    for (int t = 0; t < ntags; t++) {
        struct mdc_itemset set = {0};
        int32_t v = t;
        int rc = mdc_get_by_tag(m, 1, &v, 1, &set);
        if (rc != MDC_OK && rc != MDC_NOT_FOUND) {
            fprintf(stderr, "check: %s\n", mdc_errstr(m));
            return 1;
        }
        found += set.count;
        mdc_itemset_free(&set);
    }
    printf("%" PRIu64 "\n", found);
    mdc_destroy(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 5 && strcmp(argv[1], "populate") == 0)
        return populate(atoi(argv[2]), atoi(argv[3]), argc - 4, argv + 4);
    if (argc >= 6 && strcmp(argv[1], "delete") == 0)
        return deletes(argv[2], atoi(argv[3]), atoi(argv[4]), argc - 5,
                       argv + 5);
    if (argc == 4 && strcmp(argv[1], "check") == 0)
        return check(atoi(argv[2]), argv[3]);
    fprintf(stderr, "usage: pool_fault populate|delete|check ...\n");
    return 2;
}
