/*
 * entry.c - main() of the `tracegraph` tool: cli_main (main.c) does the
 * work and never exits, so tests/fuzz_cli.c links everything but this file.
 */
#include "cli.h"

int main(int argc, char **argv)
{
    return cli_main(argc, argv);
}
