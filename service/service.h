/*
 * service.h - `kiln serve`: the sandboxed evaluation service, and `kiln
 * token`, which creates its API tokens. The whole contract of service/.
 *
 * The server answers HTTP (libmicrohttpd) on loopback or a unix socket,
 * keeps a durable queue in SQLite, and runs one worker process per GPU (one
 * cpu-backend worker when there is none). Each worker claims a submission
 * with a lease it keeps alive by heartbeats, judges it with the same
 * pipeline functions as `kiln eval` (pipeline/session.h), re-verifies a
 * pass on a secret seed, writes the record under the data directory and
 * commits the verdict only while it still holds the lease: a verdict is
 * committed exactly once, whatever is killed when. API: service/openapi.yaml.
 */
#ifndef KILN_SERVICE_H
#define KILN_SERVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

struct slurm_config; /* slurm.h */

#define SERVE_MAX_GPUS            16
#define SERVE_MAX_COMPILE_WORKERS 16
#define SERVE_WORKLOAD_NAME_MAX   64
#define SERVE_SOURCE_MAX          (128u * 1024u) /* a candidate's source, bytes */
#define SERVE_BODY_MAX            (256u * 1024u) /* a request body, bytes (JSON escapes included) */
#define SERVE_TAR_MAX             (1024u * 1024u) /* a community submission's tarball, bytes */
#define SERVE_BOARD_MAX           (SERVE_WORKLOAD_NAME_MAX + 65) /* NAME@ and the SHA-256 in hex */

struct serve_opts {
    const char *listen;    /* "127.0.0.1:8470" (NULL: that) */
    const char *socket;    /* a unix socket path instead of `listen` */
    const char *db;        /* SQLite file (NULL: DATA/kiln.db) */
    const char *data;      /* records and scratch (NULL: ./kiln-serve) */
    const char *workloads; /* directory of the workloads one may submit to (NULL: built-in) */
    int gpus[SERVE_MAX_GPUS];
    size_t ngpus;                /* 0: one cpu-backend worker */
    unsigned max_connections;    /* 0: 256 */
    unsigned per_ip_connections; /* 0: 64 */
    unsigned timeout_s;          /* idle connection timeout (0: 30) */
    bool quiet;                  /* no request log on stderr */
    int warmups, iterations;     /* per timed case (0: the harness defaults) */
    int compile_workers;         /* compile-ahead processes (-1: none; 0: 1) */
    int lease_s;                 /* a claim's lease without heartbeats (0: 30 s) */
    /* --executor slurm: the workers' harness runs are Slurm jobs (slurm.h)
     * instead of runs on local GPUs; slurm_workers of them judge at once,
     * each claiming cuda and cpu submissions (there is no local GPU to
     * serialise on). Each worker sets its own cancel flag and job name. */
    const struct slurm_config *slurm; /* NULL: local GPUs */
    int slurm_workers;                /* 0: 4 */
    /* How candidates are timed: by default until the relative standard
     * error of each case's mean is under target_rse (or budget_ms a case
     * is spent), so a board's entries are timed to the same noise, not the
     * same count; timing_fixed: exactly `iterations` runs. */
    bool timing_fixed;
    double target_rse, budget_ms; /* 0: EVAL_DEFAULT_* */
    /* --arch: what cuda submissions are compiled for (NULL: each worker's
     * GPU's own; with Slurm, sm_90 unless given: pipeline/session.h). */
    const char *arch;
    /* Connections (service/conn.c; SECURITY.md, "The service"). */
    unsigned request_timeout_s; /* receiving a request's line and headers (0: 10) */
    unsigned write_timeout_s;   /* a client must take min_rate of its answer over this (0: 10) */
    unsigned min_rate;         /* bytes a second: the floor of a body's and an answer's (0: 4096) */
    unsigned max_streams;      /* event streams one token may hold open (0: 8) */
    const char *trusted_proxy; /* the reverse proxy's IPv4: X-Forwarded-For believed (NULL: none) */
    /* Token names on the public routes (/, /v1/queue, leaderboards,
     * /metrics); off: each tenant appears as a handle (service.h's
     * serve_token_list shows whose is whose). */
    bool public_names;
};

/* Runs the server until SIGINT or SIGTERM. Refuses (KILN_E_USAGE) when
 * another server holds the same database. */
enum kiln_rc serve_run(const struct serve_opts *opts, struct kiln_err *err) KILN_NODISCARD;

/* The body of one worker process (the server starts it; not for users):
 * `gpu` < 0 is the cpu backend (with --executor slurm: both backends, through
 * Slurm); `lock_fd` is the server's lock, held open so no second server
 * starts while this worker lives. */
enum kiln_rc serve_worker_main(const struct serve_opts *opts, int slot, int gpu, int lock_fd,
                               struct kiln_err *err) KILN_NODISCARD;

/* One process of the compile pool (the server starts --compile-workers of
 * them): compiles queued submissions ahead of the worker that will judge
 * them, in the compile sandbox, through the pipeline's split evaluation. */
enum kiln_rc serve_compile_main(const struct serve_opts *opts, int slot, int lock_fd,
                                struct kiln_err *err) KILN_NODISCARD;

/* Creates token NAME in the database and writes it (the only copy: the
 * database keeps its SHA-256) into out. rate: submissions per second
 * refilled into a bucket of `burst`; quota: submissions queued or running
 * at once. */
struct serve_token_opts {
    const char *db, *name;
    bool admin;         /* scope "admin" (everything) rather than "submit" (submit, read own) */
    double expires;     /* seconds since the epoch after which it is refused; 0: never */
    double rate, burst; /* 0: SERVE_TOKEN_RATE per second, SERVE_TOKEN_BURST */
    long quota;         /* 0: SERVE_TOKEN_QUOTA */
};
#define SERVE_TOKEN_RATE  1.0
#define SERVE_TOKEN_BURST 20.0
#define SERVE_TOKEN_QUOTA 100
#define SERVE_TOKEN_MAX   96
enum kiln_rc serve_token_add(const struct serve_token_opts *o, char out[SERVE_TOKEN_MAX],
                             struct kiln_err *err) KILN_NODISCARD;

/* `kiln token list`: every token of the database (never a secret: the
 * database has none), as a table or as JSON {version, tokens: [...]}. */
enum kiln_rc serve_token_list(const char *db, bool json, struct kiln_err *err) KILN_NODISCARD;
/* `kiln token revoke NAME`: refused from then on; its submissions stay. */
enum kiln_rc serve_token_revoke(const char *db, const char *name,
                                struct kiln_err *err) KILN_NODISCARD;

/* The one parser of a request's Authorization header: "Bearer TOKEN", or,
 * where basic_ok, "Basic BASE64(USER:TOKEN)" (any user name, the token as
 * the password: what a browser sends for a read-only page); the token's
 * own format is checked by whoever looks it up. KILN_E_REJECTED naming what
 * is wrong; a NULL value is a missing header. */
enum kiln_rc serve_parse_authorization(const char *value, bool basic_ok,
                                       char token[SERVE_TOKEN_MAX],
                                       struct kiln_err *err) KILN_NODISCARD;

/* Prints the routes the server implements, "METHOD PATH" one per line
 * (the OpenAPI test compares them with service/openapi.yaml). */
void serve_print_routes(void);

/* A submission's JSON body, parsed strictly (the one parser of it). */
struct serve_submission {
    char workload[SERVE_WORKLOAD_NAME_MAX + 1];
    char backend[8]; /* "cuda" or "cpu" */
    char *source;    /* NUL-free, <= SERVE_SOURCE_MAX bytes; free() */
    size_t source_len;
};
enum kiln_rc serve_parse_submission(const char *body, size_t len, struct serve_submission *out,
                                    struct kiln_err *err) KILN_NODISCARD;
void serve_submission_free(struct serve_submission *s);

/* A community submission (Content-Type: application/x-tar): a ustar
 * tarball of workload/workload.json, workload/inputs.py,
 * workload/reference.py, optionally workload/kernel.cu and/or kernel.c
 * (starting kernels, never needed to judge) and exactly one candidate, candidate.cu (cuda) or
 * candidate.c (cpu). Read in memory by the strict tar reader of sandbox output (tar_ingest.h: ustar
 * only, canonical names, no links or devices, no duplicates, size caps) and workload.json by the
 * strict workload parser; every refusal names the entry, file or field. The one parser of it. */
#define SERVE_COMMUNITY_FILES 5
struct serve_community {
    char name[SERVE_WORKLOAD_NAME_MAX + 1]; /* workload.json's name */
    char backend[8];                        /* the candidate's: "cuda" or "cpu" */
    char *source;                           /* the candidate, NUL-free, <= SERVE_SOURCE_MAX */
    size_t source_len;
    struct {
        const char *name; /* "workload.json", "inputs.py", ... */
        char *data;       /* NULL: not in the tarball (an optional kernel) */
        size_t len;
    } files[SERVE_COMMUNITY_FILES];
};
enum kiln_rc serve_parse_community(const void *tar, size_t len, struct serve_community *out,
                                   struct kiln_err *err) KILN_NODISCARD;
void serve_community_free(struct serve_community *c);

/* Writes c's workload to DATA/community/HASH (HASH: its content hash, as
 * workload_load computes it, which also checks every file; the same
 * content is stored once) and names its leaderboard NAME@HASH (all 64 hex
 * digits: a short form is for display only), so it never mixes with a
 * built-in workload, or another community workload, of the same name. Runs none of its scripts. */
enum kiln_rc serve_store_community(const char *data, const struct serve_community *c, char *dir,
                                   size_t dir_cap, char board[SERVE_BOARD_MAX + 1],
                                   struct kiln_err *err) KILN_NODISCARD;

/* How community board `board` (NAME@SHA256) is shown: NAME@ and the first
 * SERVE_BOARD_SHOWN hex digits of its hash, or as many more as it takes
 * for no board of `others` (the server's boards; the same one and other
 * names are skipped) to show the same (a display, never a lookup key). A
 * built-in board's name is shown as it is. */
#define SERVE_BOARD_SHOWN 16
void serve_board_display(const char *board, const char *const *others, size_t n, char *out,
                         size_t cap);

#endif
