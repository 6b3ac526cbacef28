/*
 * main.c - mdcached's entry point: parse the options (exit 64 on bad
 * usage), set up logging, bind, attach XDP (-x), run until SIGTERM/SIGINT,
 * exit 0.
 * mdcached stays in the foreground (systemd's Type=notify through
 * sd_notify, daemon.c); see docs/options.md.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sysexits.h>

#include "auth.h"
#include "daemon.h"
#include "log.h"
#include "options.h"
#include "options_mc.h"

int main(int argc, char **argv)
{
    struct options opt;
    struct server *srv = NULL;
    struct auth *auth = NULL;
    int rc;

    rc = options_parse(&opt, argc, argv, stderr);
    if (rc == OPTIONS_EXIT) {
        options_teardown(&opt);
        return 0;
    }
    if (rc != OPTIONS_RUN) {
        options_teardown(&opt);
        return EX_USAGE;
    }
    if (log_setup(opt.log_file, (int)opt.verbose) < 0) {
        fprintf(stderr, "mdcached: cannot open log file %s: %s\n",
                opt.log_file, log_open_strerror(errno));
        options_teardown(&opt);
        return EX_CANTCREAT;
    }
    if (opt.mc != NULL) {
        /* --memcached-compat: each memcached option ignored or changed */
        size_t i;

        for (i = 0; i < opt.mc->nnotes; i++)
            log_warn("%s", opt.mc->notes[i]);
    }
    if (opt.auth_file != NULL && (auth = auth_setup(opt.auth_file)) == NULL) {
        options_teardown(&opt);
        rc = EX_CONFIG;
        goto out;
    }
    srv = server_setup(&opt); /* takes over opt */
    if (srv == NULL) {
        options_teardown(&opt);
        auth_teardown(auth);
        rc = EX_SOFTWARE;
        goto out;
    }
    srv->auth = auth; /* the server's from now on */
    if (server_tls_setup(srv) < 0) { /* certificates unreadable or mismatched */
        rc = EX_CONFIG;
        goto out;
    }
    if ((rc = server_load(srv)) != 0)
        goto out;
    if (server_listen(srv) < 0) {
        rc = EX_UNAVAILABLE;
        goto out;
    }
    /* as root, before server_run() drops privileges */
    if ((rc = server_xdp_open(srv)) != 0)
        goto out;
    rc = server_run(srv) == 0 ? 0 : EX_SOFTWARE;
out:
    if (srv != NULL) {
        options_teardown(&srv->opt);
        server_teardown(srv);
    }
    log_teardown();
    return rc;
}
