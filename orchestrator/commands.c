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
    {"workloads", "list the built-in workloads",
     "usage: kiln workloads\n"
     "\n"
     "Lists the built-in workloads (in workloads/ of kiln's data directory), one\n"
     "line each: name, backends, cases, and the first sentence of the description.\n"
     "A workload that does not load is listed as BROKEN with the reason (exit 1).\n"
     "\n"
     "example:\n"
     "  kiln workloads\n",
     cmd_workloads},
    {"workload", "validate a workload end to end (kiln workload check DIR)",
     "usage: kiln workload check DIR|NAME [--backend cuda|cpu|all] [--seed N] [--cache DIR]\n"
     "\n"
     "Parses workload.json strictly, then runs inputs.py and reference.py in the\n"
     "`script` sandbox for every visible and held-out case of each backend, checks\n"
     "every tensor against the signature, and flags weak cases (reference outputs\n"
     "that are constant, zero, or so small that zeros pass). Prints a table; exits 1\n"
     "on any problem, naming the file and field or the failing script.\n"
     "\n"
     "options:\n"
     "  --backend B   check only the cases of backend B (default: all)\n"
     "  --seed N      base seed for the inputs (default 1)\n"
     "  --cache DIR   keep generated inputs and references in DIR (default: a\n"
     "                temporary directory, removed afterwards)\n"
     "\n"
     "example:\n"
     "  kiln workload check saxpy --backend cpu\n",
     cmd_workload},
    {"report", "regenerate a run's heatmap.svg and report.html",
     "usage: kiln report RUN_DIR\n"
     "\n"
     "Rebuilds heatmap.svg (candidates x performance cases, coloured by latency\n"
     "relative to the reference kernel, failures marked) and report.html (one\n"
     "self-contained page: summary, heatmap, latency per iteration, the best\n"
     "kernel, why each failure failed) from the run's summary.json, history.json\n"
     "and best.cu. Works on archived runs.\n"
     "\n"
     "example:\n"
     "  kiln report results/run-001\n",
     cmd_report},
    {"sandbox", "run a command in a kiln sandbox (namespaces, seccomp policy, limits)",
     "usage: kiln sandbox --policy P [options] -- CMD ARGS...\n"
     "\n"
     "Runs CMD the way kiln runs untrusted code: new user, mount, PID, net, IPC,\n"
     "UTS and cgroup namespaces, a read-only image of host paths (images/), a\n"
     "seccomp policy (policies/), no capabilities, limits. Prints the program's\n"
     "captured stdout/stderr, then one verdict line on stderr: exit status,\n"
     "signal, refused syscall, limit hit, time.\n"
     "\n"
     "Exit status: the program's; 124 timeout; 159 refused syscall; 128+N killed\n"
     "by signal N; 2 the sandbox could not be built (the message says which step).\n"
     "\n"
     "options:\n"
     "  -p, --policy P       compile, script or gpu-run (policies/P.json)\n"
     "  --image I            images/I.json (default: same name as the policy)\n"
     "  --gpu N              grant GPU N (gpu-run only): /dev/nvidiaN's node only\n"
     "  --in HOST[:NAME]     place a file or directory read-only at /in/NAME\n"
     "  --out FILE.tar       write /out as a tar stream (regular files only)\n"
     "  --timeout S          wall clock in seconds (kills everything)\n"
     "  --memory MB, --pids N, --cpu S, --fsize MB, --nofile N,\n"
     "  --tmp-size MB, --out-size MB, --tar-size MB, --output-cap KB\n"
     "                       override the policy's limits\n"
     "  --env NAME=VALUE     add to the image's environment (nothing is inherited)\n"
     "  --cwd DIR            working directory inside\n"
     "\n"
     "example:\n"
     "  kiln sandbox --policy script --out o.tar -- python3 -c \"import numpy\"\n",
     cmd_sandbox},
    {NULL, NULL, NULL, NULL},
};
