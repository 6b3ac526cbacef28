/*
 * auth.h - the credentials of --auth-file (docs/security.md): user:password
 * lines, checked in constant time, re-read on SIGHUP.  Shared by both
 * protocols' authentication requests (server/proto/).
 */
#ifndef MDC_AUTH_H
#define MDC_AUTH_H

#include <stdbool.h>
#include <stddef.h>

struct auth;

/* Read path; NULL (reason logged) when it cannot be read, has a malformed
 * line or no credentials at all. */
struct auth *auth_setup(const char *path);
/* Read the file again (SIGHUP); on any error keep the credentials in force
 * and return -1 (reason logged).  Safe while other threads check. */
int auth_reload(struct auth *a);
/* True when user/password match a line.  The time taken does not depend on
 * where the two differ, nor on which line (if any) matches. */
bool auth_check(struct auth *a, const void *user, size_t ulen,
                const void *pass, size_t plen);
/* Number of credentials in force. */
size_t auth_count(struct auth *a);
void auth_teardown(struct auth *a);

/* Constant-time equality of a (alen bytes, attacker-supplied) with the
 * secret b (blen bytes): the time depends on blen only. */
bool auth_ct_equal(const void *a, size_t alen, const void *b, size_t blen);

#endif
