/* commands.h - one run function per subcommand (cmd_*.c). */
#ifndef KILN_COMMANDS_H
#define KILN_COMMANDS_H

#include <stddef.h>

#include "error.h"

int cmd_doctor(int argc, char **argv);
int cmd_workloads(int argc, char **argv);
int cmd_workload(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_docs(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_gc(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_summarize(int argc, char **argv);
int cmd_bench(int argc, char **argv);

int cmd_sandbox(int argc, char **argv);
/* kiln sandbox's table entry, shared by both executables (front.c). */
extern const char cmd_sandbox_summary[];
extern const char cmd_sandbox_help[];
int cmd_sandbox_exec(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_token(int argc, char **argv);
int cmd_import(int argc, char **argv);

#endif
