/*
 * sg_load.h - mdcached-tool pool-bpf: load, pin and attach the kernel
 * scatter-gather programs of a pool (docs/pool-bpf.md), or take them away.
 */
#ifndef MDC_TOOL_SG_LOAD_H
#define MDC_TOOL_SG_LOAD_H

/* argv[0] is "pool-bpf"; returns the tool's exit status */
int sg_tool_main(int argc, char **argv);

#endif
