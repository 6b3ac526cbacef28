/*
 * fuzz_options.c - libFuzzer target for the command-line parser
 * (server/options.c): the input is split at NUL bytes into argv[1..] and
 * parsed as mdcached's command line.  Checks: the parser never crashes or
 * leaks, returns one of its three codes, and a successful parse leaves
 * every value inside its documented range (the settings listing renders
 * every option).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/options.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c))                                                              \
            abort();                                                           \
    } while (0)

static FILE *devnull;

static void visit(void *ctx, const char *name, const char *value)
{
    (void)ctx;
    CHECK(name != NULL && name[0] != '\0');
    CHECK(value != NULL && strlen(value) < 512);
}

/* Something to listen on: an address of l whose port (its own, else
 * dport) is not 0; every address must split. */
static int some_port(const struct opt_list *l, unsigned long dport)
{
    char host[256], port[16];
    int any = 0;

    for (size_t i = 0; i < l->n; i++) {
        CHECK(options_split_listen(l->v[i], dport, host, sizeof(host), port,
                                   sizeof(port)) == 0);
        any |= strcmp(port, "0") != 0;
    }
    return any;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *buf, *argv[66];
    int argc = 1, rc;
    size_t i, start = 0;
    struct options o;

    if (size > 4096)
        return 0;
    if (devnull == NULL) {
        devnull = fopen("/dev/null", "w");
        /* -h and --version print to stdout */
        if (freopen("/dev/null", "w", stdout) == NULL)
            abort();
    }
    buf = malloc(size + 1);
    CHECK(buf != NULL);
    memcpy(buf, data, size);
    buf[size] = '\0';
    argv[0] = "mdcached";
    for (i = 0; i <= size && argc < 65; i++)
        if (buf[i] == '\0') {
            argv[argc++] = buf + start;
            start = i + 1;
        }
    argv[argc] = NULL;
    rc = options_parse(&o, argc, argv, devnull);
    CHECK(rc == OPTIONS_RUN || rc == OPTIONS_EXIT || rc == OPTIONS_USAGE);
    if (rc == OPTIONS_RUN) {
        CHECK(o.net_threads <= 256 && o.payload_threads <= 256);
        CHECK(o.memory_mb >= 1);
        CHECK(o.port <= 65535 || o.port == OPT_PORT_AUTO);
        CHECK(o.udp_port <= 65535 || o.udp_port == OPT_PORT_AUTO);
        CHECK(o.max_conns >= 1 && o.max_item_size >= 1024);
        CHECK(o.buckets == 0 || (o.buckets & (o.buckets - 1)) == 0);
        CHECK(o.verbose <= 4);
        CHECK(strcmp(o.protected_mode, "yes") == 0 ||
              strcmp(o.protected_mode, "no") == 0);
        CHECK(o.unix_socket != NULL || o.udp_port != 0 ||
              some_port(&o.listen, o.port) || some_port(&o.tls_listen, 11312));
        options_visit(&o, visit, NULL);
    }
    options_teardown(&o);
    free(buf);
    return 0;
}
