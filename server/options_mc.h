/*
 * options_mc.h - memcached 1.6's command line, for `mdcached
 * --memcached-compat`: memcached's options are read from one table
 * (MC_OPTIONS in options_mc.c) and rewritten into mdcached's, which the
 * ordinary parser (options.c) then checks.  What has no equivalent is
 * ignored with one note each, logged once the log is set up.
 */
#ifndef MDC_OPTIONS_MC_H
#define MDC_OPTIONS_MC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* memcached's default TCP port: --memcached-compat listens there */
#define OPTIONS_MC_PORT "11211"

struct options_mc {
    int argc;       /* the rewritten command line, argv[0] kept */
    char **argv;    /* NULL-terminated; every string malloc'd but argv[0] */
    char **notes;   /* one line for each option ignored or changed */
    size_t nnotes;
    bool help;      /* -h: print options_mc_usage() and exit */
};

/*
 * Is takes_value(name) 1 for an mdcached long option that takes a value,
 * 0 for a flag, -1 for no such option (options.c's table)?  Used to pass
 * mdcached's own long options through (--port-file PATH).
 */
typedef int (*options_mc_takes_value_fn)(const char *name);

/* True when argv asks for memcached's command line (--memcached-compat). */
bool options_mc_wanted(int argc, char **argv);

/*
 * Rewrite memcached's argv into mdcached's in mc: 0, or -1 with the
 * reason written to err (a usage error: exit 64).  mc is always left so
 * that options_mc_teardown() frees it.
 */
int options_mc_translate(struct options_mc *mc, int argc, char **argv,
                         options_mc_takes_value_fn takes_value, FILE *err);
void options_mc_teardown(struct options_mc *mc);

/* memcached's options and what each becomes (`--memcached-compat -h`). */
void options_mc_usage(FILE *f, const char *argv0);

#endif
