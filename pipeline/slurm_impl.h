/*
 * slurm_impl.h - what slurm.c (one job per step, the node's side) and
 * slurm_array.c (batches as job arrays) share. Internal to pipeline/.
 */
#ifndef KILN_SLURM_IMPL_H
#define KILN_SLURM_IMPL_H

#include <stdbool.h>

#include "slurm.h"

/* Runs a Slurm command; KILN_OK with its output when it exited 0. */
enum kiln_rc slurm_cmd(char *const argv[], char *out, size_t cap, struct kiln_err *err);

/* Makes a fresh JOBDIR in the spool with in/<name> for every input and
 * spec.json naming them. */
enum kiln_rc slurm_make_jobdir(struct slurm_runner *s, const struct sandbox_spec *spec, int gpu,
                               char *jobdir, size_t cap, struct kiln_err *err);

/* sbatch --parsable with the runner's name, partition, account and gres
 * (`gpu`: the step wants one), a time limit from timeout_ms, `array`
 * ("0-3%8") when not NULL, and the shell line `wrap`. */
enum kiln_rc slurm_sbatch(struct slurm_runner *s, long long timeout_ms, bool gpu,
                          const char *output_path, const char *wrap, const char *array, long *id,
                          struct kiln_err *err);

/* One plain job running `kiln sandbox-exec JOBDIR`. */
enum kiln_rc slurm_submit_one(struct slurm_runner *s, long long timeout_ms, bool gpu,
                              const char *jobdir, long *id, struct kiln_err *err);

/* scancel IDS ("42", "42_3"); errors ignored (the job may be gone). */
void slurm_cancel(const char *ids);

/* The printable tail of JOBDIR/slurm.out, for messages. */
void slurm_output_tail(const char *jobdir, char *buf, size_t cap);

/* Reads JOBDIR/result.json (hostile, bounded) into res and where, and
 * copies JOBDIR/stream.tar (at most tar_bytes) into tar_fd. */
enum kiln_rc slurm_fetch(long long tar_bytes, const char *jobdir, int tar_fd,
                         struct sandbox_result *res, char *where, size_t where_cap,
                         struct sbnode_device *dev, struct kiln_err *err);

/* The runner's batch entry points (sbexec.h), in slurm_array.c. */
enum kiln_rc slurm_batch_submit(void *ctx, const char *what, const struct sandbox_spec *spec,
                                int gpu, long *ticket, struct kiln_err *err);
enum kiln_rc slurm_batch_collect(void *ctx, long ticket, int tar_fd, struct sandbox_result *res,
                                 char *where, size_t where_cap, struct sbnode_device *dev,
                                 struct kiln_err *err);
void slurm_batch_drop(void *ctx, long ticket);

#endif
