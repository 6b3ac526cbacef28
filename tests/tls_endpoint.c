/*
 * tls_endpoint.c - certificates and a TLS endpoint for the TLS tests (see
 * tls_endpoint.h).
 */
#include "config.h"

#include "tls_endpoint.h"
#include "server_client.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int run(const char *dir, const char *cmd)
{
    char line[2048];

    snprintf(line, sizeof(line), "cd '%s' && { %s; } >>openssl.log 2>&1",
             dir, cmd);
    return system(line) == 0 ? 0 : -1;
}

#define EC "-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "

int tls_certs_make(struct tls_certs *c)
{
    static const char *const cmds[] = {
        /* CAs */
        "openssl req -x509 " EC "-keyout ca.key -out ca.pem -days 2 "
        "-subj /CN=mdc-test-ca -addext basicConstraints=critical,CA:TRUE "
        "-addext keyUsage=critical,keyCertSign,cRLSign",
        "openssl req -x509 " EC "-keyout clica.key -out clica.pem -days 2 "
        "-subj /CN=mdc-test-client-ca "
        "-addext basicConstraints=critical,CA:TRUE "
        "-addext keyUsage=critical,keyCertSign,cRLSign",
        /* server certificates */
        "printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n"
        "extendedKeyUsage=serverAuth\\n' >srv.ext",
        "openssl req " EC "-keyout srv.key -out srv.csr -subj /CN=localhost",
        "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key "
        "-CAcreateserial -days 2 -extfile srv.ext -out srv.pem",
        "printf 'subjectAltName=DNS:other.example\\n"
        "extendedKeyUsage=serverAuth\\n' >other.ext",
        "openssl req " EC "-keyout other.key -out other.csr "
        "-subj /CN=other.example",
        "openssl x509 -req -in other.csr -CA ca.pem -CAkey ca.key "
        "-CAcreateserial -days 2 -extfile other.ext -out other.pem",
        "openssl req " EC "-keyout exp.key -out exp.csr -subj /CN=localhost",
        "openssl x509 -req -in exp.csr -CA ca.pem -CAkey ca.key "
        "-CAcreateserial -days -1 -extfile srv.ext -out exp.pem",
        "openssl req -x509 " EC "-keyout self.key -out self.pem -days 2 "
        "-subj /CN=localhost "
        "-addext subjectAltName=IP:127.0.0.1,DNS:localhost",
        /* a client certificate */
        "printf 'extendedKeyUsage=clientAuth\\n' >cli.ext",
        "openssl req " EC "-keyout cli.key -out cli.csr -subj /CN=mdc-client",
        "openssl x509 -req -in cli.csr -CA clica.pem -CAkey clica.key "
        "-CAcreateserial -days 2 -extfile cli.ext -out cli.pem",
    };

    memset(c, 0, sizeof(*c));
    snprintf(c->dir, sizeof(c->dir), "/tmp/mdc-tls-XXXXXX");
    if (mkdtemp(c->dir) == NULL)
        return -1;
#define P(field, name) snprintf(c->field, sizeof(c->field), "%s/" name, c->dir)
    P(ca, "ca.pem");
    P(srv_cert, "srv.pem");
    P(srv_key, "srv.key");
    P(other_cert, "other.pem");
    P(other_key, "other.key");
    P(self_cert, "self.pem");
    P(self_key, "self.key");
    P(exp_cert, "exp.pem");
    P(exp_key, "exp.key");
    P(cli_ca, "clica.pem");
    P(cli_cert, "cli.pem");
    P(cli_key, "cli.key");
#undef P
    for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
        if (run(c->dir, cmds[i]) < 0) {
            fprintf(stderr, "tls_certs_make: failed: %s (see %s/openssl.log)\n",
                    cmds[i], c->dir);
            return -1;
        }
    /* a daemon that drops to nobody reads them too */
    run(c->dir, "chmod 0755 . && chmod 0644 *");
    return 0;
}

void tls_certs_remove(struct tls_certs *c)
{
    char cmd[128];

    if (c->dir[0] == '\0' || strncmp(c->dir, "/tmp/mdc-tls-", 13) != 0)
        return;
    if (getenv("MDC_TEST_KEEP_CERTS") != NULL) { /* for debugging */
        fprintf(stderr, "certificates kept in %s\n", c->dir);
        return;
    }
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "tls_certs_remove: %s failed\n", cmd);
    c->dir[0] = '\0';
}

/* socat -d -d logs "socat[PID] N listening on AF=2 127.0.0.1:PORT" with
 * the port the kernel picked for OPENSSL-LISTEN:0: that port of socat pid
 * (the endpoints of a test share one log), or -1 while there is none. */
static int socat_port(const char *log, pid_t pid)
{
    static const char pat[] = " listening on AF=2 127.0.0.1:";
    char line[512], me[32];
    int port = -1;
    FILE *f = fopen(log, "r");

    if (f == NULL)
        return -1;
    snprintf(me, sizeof(me), "socat[%ld] ", (long)pid);
    while (port < 0 && fgets(line, sizeof(line), f) != NULL) {
        const char *p = strstr(line, pat);
        if (p != NULL && strstr(line, me) != NULL)
            port = atoi(p + sizeof(pat) - 1);
    }
    fclose(f);
    return port > 0 ? port : -1;
}

/* Accepting TCP connections on 127.0.0.1:port? */
static int accepts(int port)
{
    struct tsrv s;

    memset(&s, 0, sizeof(s));
    snprintf(s.host, sizeof(s.host), "127.0.0.1");
    s.port = port;
    int fd = tc_connect(&s);
    if (fd < 0)
        return 0;
    close(fd);
    return 1;
}

static void spawn(struct tls_ep *e, char *const *argv)
{
    e->pid = fork();
    if (e->pid > 0)
        setpgid(e->pid, e->pid); /* also here: no race with tls_ep_stop */
    if (e->pid != 0)
        return;
    setpgid(0, 0);
    int fd = open(e->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    if (fd >= 0) {
        dup2(fd, 1);
        dup2(fd, 2);
        close(fd);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

int tls_ep_start(struct tls_ep *e, const char *dir, int backend_port,
                 const char *cert, const char *key, const char *client_ca,
                 const char *const *daemon_args)
{
    const char *mode = getenv("MDC_TEST_TLS_ENDPOINT");
    bool own = mode != NULL && strcmp(mode, "mdcached") == 0;

    memset(e, 0, sizeof(*e));
    snprintf(e->log, sizeof(e->log), "%s/endpoint.log", dir);
    for (int attempt = 0; attempt < 5; attempt++) {
        char a1[1024], a2[64], a3[160], a4[160], a5[160];
        int status;

        if (own) {
            /* the server's own TLS listener (mdcached --tls-listen), on
             * ports it picks itself, through the harness (ready by its own
             * signal; the tls line of its port file says the port) */
            static const struct tsrv_opts raw = {.flags = TSRV_RAW};
            const char *argv[32] = {"-l", "127.0.0.1", "-p", "auto", a2, a3,
                                    a4};
            size_t n = 7;

            (void)status;
            snprintf(a2, sizeof(a2), "--tls-listen=127.0.0.1:auto");
            snprintf(a3, sizeof(a3), "--tls-cert=%s", cert);
            snprintf(a4, sizeof(a4), "--tls-key=%s", key);
            snprintf(a5, sizeof(a5), "--tls-ca=%s",
                     client_ca ? client_ca : "");
            if (client_ca != NULL)
                argv[n++] = a5;
            for (size_t i = 0; daemon_args != NULL && daemon_args[i] != NULL &&
                               n < 31;
                 i++)
                argv[n++] = daemon_args[i];
            argv[n] = NULL;
            e->own = calloc(1, sizeof(*e->own));
            if (e->own == NULL)
                return -1;
            if (tsrv_start_opts(e->own, &raw, argv) == 0) {
                e->pid = e->own->pid;
                e->port = tsrv_port_of(e->own, "tls", "127.0.0.1");
                snprintf(e->log, sizeof(e->log), "%s", e->own->out);
                if (e->port > 0)
                    return 0;
            }
            tls_ep_stop(e);
            fprintf(stderr, "tls_ep_start: mdcached --tls-listen did not "
                    "start\n");
            return -1;
        } else {
            /* port 0: the kernel picks one when socat binds, and socat's
             * log names it (socat_port); no probed port another process
             * could take meanwhile */
            e->port = 0;
            snprintf(a1, sizeof(a1),
                     "OPENSSL-LISTEN:0,bind=127.0.0.1,reuseaddr,fork,"
                     "cert=%s,key=%s,%s%s%s",
                     cert, key, client_ca ? "cafile=" : "",
                     client_ca ? client_ca : "",
                     client_ca ? ",verify=1" : "verify=0");
            snprintf(a2, sizeof(a2), "TCP:127.0.0.1:%d", backend_port);
            char *argv[] = {"socat", "-d", "-d", a1, a2, NULL};
            spawn(e, argv);
        }
        if (e->pid < 0)
            return -1;
        for (int i = 0; i < 6000; i++) { /* 60 s: a ceiling */
            if (waitpid(e->pid, &status, WNOHANG) == e->pid) {
                e->pid = 0;
                break;
            }
            if (e->port <= 0)
                e->port = socat_port(e->log, e->pid);
            if (e->port > 0 && accepts(e->port))
                return 0;
            struct timespec ts = {0, 10 * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (e->pid > 0)
            tls_ep_stop(e);
    }
    fprintf(stderr, "tls_ep_start: no endpoint (see %s)\n", e->log);
    return -1;
}

/* Whether a process of group pgid is still running (a zombie is not: the
 * children socat forked for connections are re-parented when it exits, and
 * whoever inherits them may not reap them at once). */
static int group_running(pid_t pgid)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    int found = 0;

    if (d == NULL)
        return 0;
    while (!found && (de = readdir(d)) != NULL) {
        char path[300], buf[512], *rp, st;
        long pgrp;
        FILE *f;

        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        f = fopen(path, "r");
        if (f == NULL)
            continue;
        /* "pid (comm) state ppid pgrp ...": comm may hold spaces */
        if (fgets(buf, sizeof(buf), f) != NULL &&
            (rp = strrchr(buf, ')')) != NULL &&
            sscanf(rp + 1, " %c %*d %ld", &st, &pgrp) == 2 &&
            pgrp == (long)pgid && st != 'Z')
            found = 1;
        fclose(f);
    }
    closedir(d);
    return found;
}

void tls_ep_stop(struct tls_ep *e)
{
    int status;
    pid_t pgid;

    if (e->own != NULL) { /* the harness's daemon */
        tsrv_stop(e->own);
        free(e->own);
        e->own = NULL;
        e->pid = 0;
        return;
    }

    if (e->pid <= 0)
        return;
    pgid = e->pid;
    kill(-pgid, SIGTERM); /* the group this helper made */
    for (int i = 0; i < 500; i++) {
        if (waitpid(e->pid, &status, WNOHANG) == e->pid) {
            e->pid = 0;
            break;
        }
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (e->pid > 0) {
        kill(-e->pid, SIGKILL);
        waitpid(e->pid, &status, 0);
    }
    /* and the connections' children: a test that then expects its
     * connections closed must not find one still served (30 s: a hang) */
    for (int i = 0; i < 3000 && group_running(pgid); i++) {
        struct timespec ts = {0, 10 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (group_running(pgid))
        kill(-pgid, SIGKILL);
    e->pid = 0;
}
