/*
 * cmd_devices.c - `tracegraph devices`: the OpenCL platforms and devices
 * replay can use, with the index --device takes.
 */
#include <string.h>

#include "cli.h"

int cli_devices(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: %s\n\nLists every OpenCL device of every platform: its index (what\n"
                   "--device takes, as does a substring of \"platform device\"), platform,\n"
                   "name, OpenCL version, compute units, global memory, and the GEMM/conv\n"
                   "path replay takes on it (clblast on GPUs, own kernels on CPU devices;\n"
                   "TG_OPENCL_GEMM=clblast|own overrides it).\n",
                   cli_synopsis("devices"));
            return CLI_OK;
        }
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[i]);
    }
    replay_device d[32];
    char err[512];
    int n = replay_opencl_devices(d, 32, err, sizeof err);
    if (n < 0) {
        cli_error(argv[0], "%s", err);
        return CLI_ERROR;
    }
    for (int i = 0; i < n && i < 32; i++)
        printf("%d  %s / %s  (%s, %d compute units, %.1f GiB, GEMM: %s)\n", d[i].index,
               d[i].platform, d[i].name, d[i].version, d[i].compute_units,
               (double)d[i].global_mem / (1024.0 * 1024.0 * 1024.0), d[i].gemm);
    replay_opencl_shutdown();
    return CLI_OK;
}
