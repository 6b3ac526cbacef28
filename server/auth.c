/*
 * auth.c - --auth-file: user:password lines (the password is everything
 * after the first ':'; '#' comments and empty lines are skipped), kept in
 * one array swapped whole under a read-write lock on reload, so a SIGHUP
 * never shows a half-read file to a checking thread.
 */
#include "config.h"

#include "auth.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define AUTH_LINE_MAX 4096

struct auth_cred {
    char *user, *pass;
    size_t ulen, plen;
};

struct auth_set {
    struct auth_cred *v;
    size_t n;
};

struct auth {
    char *path;
    pthread_rwlock_t lock;
    struct auth_set set;
};

static void auth_set_free(struct auth_set *s)
{
    size_t i;

    for (i = 0; i < s->n; i++) {
        free(s->v[i].user); /* pass shares the allocation */
    }
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* Parse path into s; 0, or -1 with the reason logged. */
static int auth_read(const char *path, struct auth_set *s)
{
    char line[AUTH_LINE_MAX + 2];
    unsigned lineno = 0;
    FILE *f = fopen(path, "re");
    int rc = -1;

    s->v = NULL;
    s->n = 0;
    if (f == NULL) {
        log_error("--auth-file %s: %s", path, strerror(errno));
        return -1;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        size_t len = strlen(line);
        struct auth_cred *nv;
        char *colon, *copy;

        lineno++;
        if (len > AUTH_LINE_MAX) {
            log_error("--auth-file %s:%u: line too long", path, lineno);
            goto out;
        }
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        colon = strchr(line, ':');
        if (colon == NULL || colon == line || colon[1] == '\0' ||
            memchr(line, ' ', (size_t)(colon - line)) != NULL ||
            strchr(colon + 1, ' ') != NULL) {
            log_error("--auth-file %s:%u: want user:password (no spaces, "
                      "neither empty)", path, lineno);
            goto out;
        }
        copy = malloc(len + 1);
        nv = realloc(s->v, (s->n + 1) * sizeof(*nv));
        if (copy == NULL || nv == NULL) {
            free(copy);
            if (nv != NULL)
                s->v = nv;
            log_error("--auth-file %s: out of memory", path);
            goto out;
        }
        s->v = nv;
        memcpy(copy, line, len + 1);
        copy[colon - line] = '\0';
        nv[s->n].user = copy;
        nv[s->n].ulen = (size_t)(colon - line);
        nv[s->n].pass = copy + (colon - line) + 1;
        nv[s->n].plen = len - (size_t)(colon - line) - 1;
        s->n++;
    }
    if (ferror(f)) {
        log_error("--auth-file %s: read error", path);
        goto out;
    }
    if (s->n == 0) {
        log_error("--auth-file %s: no user:password line", path);
        goto out;
    }
    rc = 0;
out:
    fclose(f);
    if (rc < 0)
        auth_set_free(s);
    return rc;
}

struct auth *auth_setup(const char *path)
{
    struct auth *a = calloc(1, sizeof(*a));

    if (a == NULL)
        return NULL;
    a->path = strdup(path);
    if (a->path == NULL || auth_read(path, &a->set) < 0) {
        free(a->path);
        free(a);
        return NULL;
    }
    pthread_rwlock_init(&a->lock, NULL);
    log_info("authentication required: %zu user(s) from %s", a->set.n, path);
    return a;
}

int auth_reload(struct auth *a)
{
    struct auth_set fresh, old;

    if (auth_read(a->path, &fresh) < 0) {
        log_error("--auth-file %s not reloaded: keeping %zu user(s)", a->path,
                  auth_count(a));
        return -1;
    }
    pthread_rwlock_wrlock(&a->lock);
    old = a->set;
    a->set = fresh;
    pthread_rwlock_unlock(&a->lock);
    auth_set_free(&old);
    log_info("--auth-file %s reloaded: %zu user(s)", a->path, fresh.n);
    return 0;
}

size_t auth_count(struct auth *a)
{
    size_t n;

    pthread_rwlock_rdlock(&a->lock);
    n = a->set.n;
    pthread_rwlock_unlock(&a->lock);
    return n;
}

bool auth_ct_equal(const void *a, size_t alen, const void *b, size_t blen)
{
    const volatile uint8_t *x = a;
    const uint8_t *y = b;
    volatile uint8_t d = (uint8_t)(alen != blen);
    size_t i;

    /* Read b whole; read a only within its length (its length is the
     * caller's own input, not a secret). */
    for (i = 0; i < blen; i++) {
        uint8_t xa = i < alen ? x[i] : (uint8_t)~y[i];
        d |= (uint8_t)(xa ^ y[i]);
    }
    return d == 0;
}

bool auth_check(struct auth *a, const void *user, size_t ulen,
                const void *pass, size_t plen)
{
    unsigned match = 0;
    size_t i;

    pthread_rwlock_rdlock(&a->lock);
    /* every line is compared, whether an earlier one matched or not */
    for (i = 0; i < a->set.n; i++) {
        const struct auth_cred *c = &a->set.v[i];
        unsigned u = auth_ct_equal(user, ulen, c->user, c->ulen);
        unsigned p = auth_ct_equal(pass, plen, c->pass, c->plen);
        match |= u & p;
    }
    pthread_rwlock_unlock(&a->lock);
    return match != 0;
}

void auth_teardown(struct auth *a)
{
    if (a == NULL)
        return;
    auth_set_free(&a->set);
    pthread_rwlock_destroy(&a->lock);
    free(a->path);
    free(a);
}
