/* cmd_sandbox_exec.c - `kiln sandbox-exec`: the node's side of --executor
 * slurm (in kiln-full only: it needs the pipeline, kiln sandbox does not). */
#include "cli.h"
#include "commands.h"
#include "slurm.h"

/* `kiln sandbox-exec JOBDIR`: the node's side of --executor slurm. */
int cmd_sandbox_exec(int argc, char **argv)
{
    static const struct option opts[] = {CLI_HELP_OPTION, {0, 0, 0, 0}};
    const struct kiln_cmd *self = cli_find("sandbox-exec");
    int done = 0;
    optind = 1;
    while (cli_getopt(self, argc, argv, "", opts, &done) != -1)
        ;
    if (done)
        return done == 1 ? KILN_EXIT_OK : KILN_EXIT_USAGE;
    if (argc - optind != 1)
        return cli_usage_error("sandbox-exec", "needs exactly one JOBDIR");
    struct kiln_err err;
    kiln_err_clear(&err);
    if (slurm_node_exec(argv[optind], &err) != KILN_OK) {
        cli_report("sandbox-exec", &err);
        return KILN_EXIT_USAGE;
    }
    return KILN_EXIT_OK;
}
