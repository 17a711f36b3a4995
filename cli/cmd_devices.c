/*
 * cmd_devices.c - `tracegraph devices`: every backend's devices, by the
 * name --backend takes ("cpu", "opencl:0"), as the library lists them
 * (replay_backend_devices): the tool knows no backend by name.
 */
#include <string.h>

#include "cli.h"

int cli_devices(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            printf("usage: %s\n\nLists the devices of every replay backend built in, one a line:\n"
                   "the name --backend takes (\"cpu\", \"opencl:0\"; a backend's name alone\n"
                   "is its first device, and NAME:TEXT the first whose description\n"
                   "contains TEXT), the device, and what the backend says of it (OpenCL:\n"
                   "version, compute units, memory, and the GEMM/conv path replay takes\n"
                   "on it: clblast on GPUs, own kernels on CPU devices; TG_OPENCL_GEMM=\n"
                   "clblast|own overrides it).  A backend with no device here says why.\n",
                   cli_synopsis("devices"));
            return CLI_OK;
        }
        return cli_usage_error(argv[0], "unexpected argument '%s'", argv[i]);
    }
    replay_device_info d[32];
    char err[512];
    int total = 0;
    for (int b = 0; replay_backend_name(b); b++) {
        const char *name = replay_backend_name(b);
        int n = replay_backend_devices(name, d, 32, err, sizeof err);
        if (n < 0) {
            printf("%s: no device (%s)\n", name, err);
            continue;
        }
        for (int i = 0; i < n && i < 32; i++)
            printf("%s  %s  (%s)\n", d[i].name, d[i].device, d[i].details);
        total += n;
    }
    replay_backend_shutdown();
    return total ? CLI_OK : CLI_ERROR;
}
