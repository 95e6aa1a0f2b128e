/* commands.c - the subcommand table: the one place a command is added. */
#include "cli.h"
#include "commands.h"

const struct kiln_cmd kiln_commands[] = {
    {"doctor", "check what this machine can run, and how to fix what it cannot",
     "usage: kiln doctor [--json]\n"
     "\n"
     "Checks the kernel, user namespaces, seccomp, cgroups, GPUs and their device\n"
     "nodes, nvcc and NVRTC, python3 and numpy, and the sandbox images. Prints one\n"
     "line per check: OK, DEGRADED or MISSING, with the fix.\n"
     "\n"
     "Exit status: 0 kiln can run its full job; 1 only part of it (the lines say\n"
     "which); 2 the checks themselves failed.\n"
     "\n"
     "options:\n"
     "  --json     print the report as one JSON object\n"
     "\n"
     "example:\n"
     "  kiln doctor\n",
     cmd_doctor},
    {NULL, NULL, NULL, NULL},
};
