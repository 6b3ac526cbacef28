/*
 * server_client.c - daemon control and a blocking native client for the
 * black-box tests (see server_client.h).
 */
#include "config.h"

#include "server_client.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

const char *tsrv_binary(void)
{
    static char path[4096];
    const char *b = getenv("MDC_BUILDDIR");

    if (b != NULL && b[0] != '\0')
        snprintf(path, sizeof(path), "%s/server/mdcached", b);
    else
        snprintf(path, sizeof(path), "./server/mdcached");
    return path;
}

bool tsrv_external(void)
{
    const char *e = getenv("MDC_TEST_SERVER");
    return e != NULL && e[0] != '\0';
}

int tsrv_port_file_port(const char *path, const char *kind,
                        const char *host)
{
    char line[256], want[160];
    FILE *f = fopen(path, "r");
    int port = -1;

    if (f == NULL)
        return -1;
    snprintf(want, sizeof(want), "%s %s:", kind, host);
    while (port < 0 && fgets(line, sizeof(line), f) != NULL)
        if (strncmp(line, want, strlen(want)) == 0)
            port = atoi(line + strlen(want));
    fclose(f);
    return port > 0 ? port : -1;
}

/* The port of kind on host; a daemon listening on the wildcard address
 * (-l 0.0.0.0) serves 127.0.0.1 there too. */
int tsrv_port_of(const struct tsrv *s, const char *kind, const char *host)
{
    int port = tsrv_port_file_port(s->port_file, kind, host);

    if (port < 0 && strcmp(host, "127.0.0.1") == 0)
        port = tsrv_port_file_port(s->port_file, kind, "0.0.0.0");
    return port;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int try_connect(const struct tsrv *s)
{
    int fd = tc_connect(s);
    if (fd >= 0)
        close(fd);
    return fd >= 0 ? 0 : -1;
}

static int tsrv_spawn(struct tsrv *s, const char *const *args)
{
    const char *argv[64];
    size_t n = 0;
    int i, status;

    /* "-p auto": a port the kernel picks at bind time, read back from the
     * port file; no free port is probed (another test could take it) */
    argv[n++] = tsrv_binary();
    argv[n++] = "-p";
    argv[n++] = "auto";
    argv[n++] = "--port-file";
    argv[n++] = s->port_file;
    argv[n++] = "-s";
    argv[n++] = s->unix_path;
    argv[n++] = "-v";
    argv[n++] = getenv("MDC_TEST_VERBOSE") ? getenv("MDC_TEST_VERBOSE") : "1";
    for (i = 0; args != NULL && args[i] != NULL && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;

    s->pid = fork();
    if (s->pid < 0)
        return -1;
    if (s->pid == 0) {
        execv(argv[0], (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    /* Ready once the port file is there (written after every listener is
     * bound); then it accepts on the TCP port, if it has one. */
    for (i = 0; i < 500; i++) {
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            return -1;
        }
        if (access(s->port_file, F_OK) == 0) {
            s->port = tsrv_port_of(s, "tcp", s->host);
            s->udp_port = tsrv_port_of(s, "udp", s->host);
            if (s->port < 0) {
                s->port = 0;
                return 0; /* no TCP on 127.0.0.1 (-p 0, other -l) */
            }
            if (try_connect(s) == 0)
                return 0;
        }
        sleep_ms(10);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &status, 0);
    s->pid = 0;
    return -1;
}

int tsrv_start(struct tsrv *s, const char *const *args)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->host, sizeof(s->host), "127.0.0.1");
    snprintf(s->dir, sizeof(s->dir), "/tmp/mdc-test-XXXXXX");
    if (mkdtemp(s->dir) == NULL)
        return -1;
    /* The daemon may drop to nobody after binding: let it reach the dir. */
    chmod(s->dir, 0755);
    snprintf(s->unix_path, sizeof(s->unix_path), "%s/sock", s->dir);
    snprintf(s->port_file, sizeof(s->port_file), "%s/ports", s->dir);
    if (tsrv_spawn(s, args) == 0)
        return 0;
    unlink(s->port_file);
    rmdir(s->dir);
    return -1;
}

int tsrv_start_or_external(struct tsrv *s, const char *const *args)
{
    const char *e = getenv("MDC_TEST_SERVER");
    const char *colon;

    if (e == NULL || e[0] == '\0')
        return tsrv_start(s, args);
    memset(s, 0, sizeof(*s));
    s->external = true;
    colon = strrchr(e, ':');
    if (colon == NULL || (size_t)(colon - e) >= sizeof(s->host))
        return -1;
    memcpy(s->host, e, (size_t)(colon - e));
    s->host[colon - e] = '\0';
    s->port = atoi(colon + 1);
    return try_connect(s);
}

int tsrv_stop(struct tsrv *s)
{
    int status = 0, i, rc = -1;

    if (s->external || s->pid <= 0)
        return 0;
    kill(s->pid, SIGTERM);
    for (i = 0; i < 1500; i++) {
        pid_t p = waitpid(s->pid, &status, WNOHANG);
        if (p == s->pid) {
            if (WIFEXITED(status))
                rc = WEXITSTATUS(status);
            else
                fprintf(stderr, "mdcached killed by signal %d\n",
                        WTERMSIG(status));
            goto out;
        }
        sleep_ms(10);
    }
    fprintf(stderr, "mdcached did not stop in 15 s\n");
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &status, 0);
out:
    s->pid = 0;
    unlink(s->unix_path);
    unlink(s->port_file);
    rmdir(s->dir);
    return rc;
}

long tsrv_rss_kb(const struct tsrv *s)
{
    char path[64], line[256];
    long kb = 0;
    FILE *f;

    if (s->pid <= 0)
        return 0;
    snprintf(path, sizeof(path), "/proc/%ld/status", (long)s->pid);
    f = fopen(path, "r");
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    fclose(f);
    return kb;
}

void tc_set_timeout_ms(int fd, int ms)
{
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};

    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

int tc_connect(const struct tsrv *s)
{
    return tc_connect_rcvbuf(s, 0);
}

int tc_connect_rcvbuf(const struct tsrv *s, int rcvbuf)
{
    struct sockaddr_in sa;
    int fd, one = 1;

    memset(&sa, 0, sizeof(sa));
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)s->port);
    if (inet_pton(AF_INET, s->host, &sa.sin_addr) != 1)
        return -1;
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    tc_set_timeout_ms(fd, 5000);
    return fd;
}

int tc_connect_unix(const struct tsrv *s)
{
    struct sockaddr_un sa;
    int fd;

    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", s->unix_path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        close(fd);
        return -1;
    }
    tc_set_timeout_ms(fd, 5000);
    return fd;
}

uint8_t *tc_compose(const struct treq *r, size_t *len)
{
    struct wire_hdr h;
    size_t n = WIRE_HDR_LEN + r->ntags * WIRE_TAG_LEN + r->klen + r->vlen;
    uint8_t *buf = malloc(n);

    if (buf == NULL)
        return NULL;
    wire_hdr_request(&h, r->op);
    h.flags = r->flags;
    h.klen = (uint16_t)r->klen;
    h.ntags = (uint16_t)r->ntags;
    h.vlen = (uint32_t)r->vlen;
    h.opaque = r->opaque;
    h.iflags = r->iflags;
    h.cas = r->cas;
    h.expiry = r->exp;
    if (wire_compose(buf, n, &h, r->tags, r->key, r->val) != (ssize_t)n) {
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

int tc_send_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tc_send(int fd, const struct treq *r)
{
    size_t len;
    uint8_t *buf = tc_compose(r, &len);
    int rc;

    if (buf == NULL)
        return -1;
    rc = tc_send_all(fd, buf, len);
    free(buf);
    return rc;
}

int tc_read_full(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;

    while (len > 0) {
        ssize_t n = recv(fd, p, len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int tc_recv(int fd, struct tresp *r)
{
    uint8_t hdr[WIRE_HDR_LEN];
    uint64_t body;
    size_t i, nt;

    memset(r, 0, sizeof(*r));
    if (tc_read_full(fd, hdr, sizeof(hdr)) < 0)
        return -1;
    {
        /* An unknown opcode is echoed in its error reply: still a reply. */
        int rc = wire_parse_header(hdr, sizeof(hdr), &r->h, SIZE_MAX);
        if (rc != WIRE_OK && !wire_err_in_sync(rc))
            return -1;
    }
    body = wire_body_len(&r->h);
    r->body = malloc(body + 1);
    if (r->body == NULL)
        return -1;
    if (body > 0 && tc_read_full(fd, r->body, body) < 0) {
        free(r->body);
        r->body = NULL;
        return -1;
    }
    r->body[body] = '\0';
    nt = r->h.ntags < 64 ? r->h.ntags : 64;
    for (i = 0; i < nt; i++) {
        r->tags[i].tkey = (int32_t)wire_get_u32(r->body + i * WIRE_TAG_LEN);
        r->tags[i].tval = (int32_t)wire_get_u32(r->body + i * WIRE_TAG_LEN + 4);
    }
    r->key = r->body + (size_t)r->h.ntags * WIRE_TAG_LEN;
    r->val = r->key + r->h.klen;
    return 0;
}

void tc_resp_free(struct tresp *r)
{
    free(r->body);
    r->body = NULL;
}

bool tc_wait_eof(int fd, int ms)
{
    struct pollfd p = {fd, POLLIN, 0};
    uint8_t buf[4096];

    for (;;) {
        int n = poll(&p, 1, ms);
        ssize_t k;

        if (n <= 0)
            return false;
        k = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR))
            return true;
    }
}

int tc_call(int fd, const struct treq *r, struct tresp *out)
{
    struct tresp tmp;
    struct tresp *p = out != NULL ? out : &tmp;
    int st;

    if (tc_send(fd, r) < 0 || tc_recv(fd, p) < 0)
        return -1;
    st = p->h.status;
    if (out == NULL)
        tc_resp_free(&tmp);
    return st;
}

int tc_set(int fd, const char *key, const void *val, size_t vlen,
           const struct wire_tag *tags, size_t ntags)
{
    struct treq r = {.op = WIRE_OP_SET, .key = key, .klen = strlen(key),
                     .val = val, .vlen = vlen, .tags = tags, .ntags = ntags};
    return tc_call(fd, &r, NULL);
}

int tc_get(int fd, const char *key, char **val, size_t *vlen)
{
    struct treq r = {.op = WIRE_OP_GET, .key = key, .klen = strlen(key)};
    struct tresp p;
    int st = tc_call(fd, &r, &p);

    if (st == 0 && val != NULL) {
        *val = malloc(p.h.vlen + 1);
        memcpy(*val, p.val, p.h.vlen);
        (*val)[p.h.vlen] = '\0';
        if (vlen != NULL)
            *vlen = p.h.vlen;
    }
    if (st >= 0)
        tc_resp_free(&p);
    return st;
}

int tc_stat_str(int fd, const char *name, char *buf, size_t len)
{
    struct treq r = {.op = WIRE_OP_STATS};
    struct tresp p = {0};
    size_t nl = strlen(name);
    const char *line;
    int rc = -1;

    if (tc_call(fd, &r, &p) != 0)
        goto out;
    for (line = (const char *)p.val; line != NULL && *line != '\0';) {
        const char *eol = strchr(line, '\n');
        if (strncmp(line, name, nl) == 0 && line[nl] == ' ') {
            size_t vl = (size_t)((eol ? eol : line + strlen(line)) - line) - nl - 1;
            if (vl >= len)
                vl = len - 1;
            memcpy(buf, line + nl + 1, vl);
            buf[vl] = '\0';
            rc = 0;
            break;
        }
        line = eol ? eol + 1 : NULL;
    }
out:
    tc_resp_free(&p);
    return rc;
}

long long tc_stat(int fd, const char *name)
{
    char buf[64];

    if (tc_stat_str(fd, name, buf, sizeof(buf)) < 0)
        return -1;
    return atoll(buf);
}
