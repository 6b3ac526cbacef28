/*
 * tls_endpoint.h - TLS test fixtures: certificates made at test time with
 * the openssl command into a temporary directory, and a TLS endpoint on
 * 127.0.0.1 in front of a plain mdcached.
 *
 * The endpoint is socat (OPENSSL-LISTEN ... TCP:127.0.0.1:<plain port>) by
 * default.  tls_ep_start() is the one place that knows how it is made:
 * with MDC_TEST_TLS_ENDPOINT=mdcached it starts mdcached itself with
 * --tls-listen/--tls-cert/--tls-key[/--tls-ca] instead (the server's own
 * TLS; the plain backend is then not used).
 */
#ifndef MDC_TEST_TLS_ENDPOINT_H
#define MDC_TEST_TLS_ENDPOINT_H

#include <sys/types.h>

struct tls_certs {
    char dir[64];
    char ca[128];         /* the test CA (PEM) */
    char srv_cert[128];   /* signed by ca: IP 127.0.0.1, DNS localhost */
    char srv_key[128];
    char other_cert[128]; /* signed by ca: DNS other.example only */
    char other_key[128];
    char self_cert[128];  /* self-signed: IP 127.0.0.1, DNS localhost */
    char self_key[128];
    char exp_cert[128];   /* signed by ca as srv_cert, expired yesterday */
    char exp_key[128];
    char cli_ca[128];     /* the CA of client certificates */
    char cli_cert[128];   /* signed by cli_ca (clientAuth) */
    char cli_key[128];
};

/* Make every certificate; 0 ok (the openssl command's output is in
 * dir/openssl.log otherwise). */
int tls_certs_make(struct tls_certs *c);
void tls_certs_remove(struct tls_certs *c);

struct tsrv;

struct tls_ep {
    pid_t pid; /* process group leader */
    int port;
    char log[160];
    struct tsrv *own; /* the mdcached mode: the harness's daemon */
};

/* Start a TLS endpoint on 127.0.0.1 (a port the kernel picks, read back
 * from socat's log or mdcached's port file) with cert/key, relaying
 * to the plain daemon at 127.0.0.1:backend_port; client_ca non-NULL asks
 * for and verifies client certificates.  daemon_args (NULL-terminated, or
 * NULL) are the backend daemon's own arguments, given to the daemon that
 * the endpoint itself is in the mdcached mode.  Tests read the store only
 * through the endpoint, so both modes serve them alike.  0 ok. */
int tls_ep_start(struct tls_ep *e, const char *dir, int backend_port,
                 const char *cert, const char *key, const char *client_ca,
                 const char *const *daemon_args);
/* Stop it (its whole process group: socat forks one child per
 * connection); open connections are closed. */
void tls_ep_stop(struct tls_ep *e);

#endif
