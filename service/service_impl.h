/* service_impl.h - what the files of service/ share; not a public header. */
#ifndef KILN_SERVICE_IMPL_H
#define KILN_SERVICE_IMPL_H

#include <jansson.h>
#include <limits.h>
#include <microhttpd.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdint.h>
#include <time.h>

#include "service.h"

#define SERVE_LEASE_S      30 /* a claimed job's lease (default); heartbeats renew it every third */
#define SERVE_MAX_ATTEMPTS 5  /* claims before a job that keeps killing kiln is failed */
#define SERVE_ID_LEN       16 /* hex characters of a submission id */
#define SERVE_TOKEN_ID_LEN 16
#define SERVE_IDEM_MAX     128

#define SERVE_META_MAX        65 /* a server_meta value: hex digits and the NUL */
#define SERVE_PUBLIC_NAME_MAX 64 /* a tenant's name on a public route */

/* One SQLite connection and the mutex that serializes its users. */
struct sdb {
    sqlite3 *db;
    pthread_mutex_t mu;
    double lease_s;    /* how long a claim holds without a heartbeat (sdb_open: SERVE_LEASE_S) */
    bool public_names; /* public views show token names (kiln serve --public-names), not handles */
    char handle_key[SERVE_META_MAX]; /* keys the handles; "" until first used */
};

double serve_now(void);
/* `ms` milliseconds from now on clock clk (a timed wait's deadline). */
void serve_time_in(clockid_t clk, long ms, struct timespec *ts);
/* CLOCK_MONOTONIC in seconds: the timeline of a job (compile and run start
 * and finish), comparable between processes of one boot, immune to clock steps. */
double serve_mono(void);
enum kiln_rc serve_random_hex(char *out, size_t nhex, struct kiln_err *err) KILN_NODISCARD;

/* db.c, db_worker.c */
enum kiln_rc sdb_open(const char *path, struct sdb *d, struct kiln_err *err) KILN_NODISCARD;
void sdb_close(struct sdb *d);
/* Takes PATH.lock exclusively (flock), or fails naming the holder's pid. */
enum kiln_rc sdb_lock(const char *db_path, int *fd, struct kiln_err *err) KILN_NODISCARD;
enum kiln_rc sdb_exec(struct sdb *d, const char *sql, struct kiln_err *err) KILN_NODISCARD;
/* A random value of nhex hex digits kept under `key` in server_meta: drawn
 * by the first caller, the same for every later one. Under the mutex. */
enum kiln_rc sdb_meta_locked(struct sdb *d, const char *key, size_t nhex, char out[SERVE_META_MAX],
                             struct kiln_err *err) KILN_NODISCARD;
/* The name public views give a tenant: its token's name with public names
 * on, else "tenant-" and 10 hex digits of SHA-256(the database's handle key,
 * the token id): stable, tells nothing of the name, and `kiln token list`
 * shows whose is whose. Under the mutex. */
enum kiln_rc sdb_public_name_locked(struct sdb *d, const char *token_id, const char *name,
                                    char out[SERVE_PUBLIC_NAME_MAX],
                                    struct kiln_err *err) KILN_NODISCARD;
/* The same for every row of an array (takes the mutex): row[out_key] = the
 * public name of row[id_key] (a token id) and row[name_key] (its name;
 * NULL: none). */
enum kiln_rc sdb_public_names(struct sdb *d, json_t *rows, const char *id_key, const char *name_key,
                              const char *out_key, struct kiln_err *err) KILN_NODISCARD;
/* db.c's helpers for db_worker.c: a prepared statement (SQLITE_OK or an
 * sqlite code), an error naming `what` and SQLite's message, an event
 * inserted by a caller that holds the mutex. */
int sdb_prep(struct sdb *d, const char *sql, sqlite3_stmt **st);
enum kiln_rc sdb_fail(struct sdb *d, struct kiln_err *err, const char *what) KILN_NODISCARD;
enum kiln_rc sdb_event_locked(struct sdb *d, const char *job, const char *stage, const char *detail,
                              struct kiln_err *err) KILN_NODISCARD;
/* Running jobs back to the queue: all of them (a starting server owns the
 * database alone, so no worker of theirs lives) or those whose lease ran out. */
enum kiln_rc sdb_requeue(struct sdb *d, bool all, int *n, struct kiln_err *err) KILN_NODISCARD;
enum kiln_rc sdb_event(struct sdb *d, const char *job, const char *stage, const char *detail,
                       struct kiln_err *err) KILN_NODISCARD;
/* The rows of a prepared statement (run by a caller holding the mutex) as
 * an array of objects keyed by column name; and a whole query with one
 * optional text parameter ?1, under the mutex. */
enum kiln_rc sdb_rows_json(struct sdb *d, sqlite3_stmt *st, json_t **out,
                           struct kiln_err *err) KILN_NODISCARD;
enum kiln_rc sdb_query_json(struct sdb *d, const char *sql, const char *a, json_t **out,
                            struct kiln_err *err) KILN_NODISCARD;

/* A token as the API sees it, after authentication. Scopes: "submit"
 * (submit, and read its own submissions) or "admin" (everything). */
struct stoken {
    char id[SERVE_TOKEN_ID_LEN + 1];
    char name[64];
    bool admin;
};

/* auth.c: checks the Authorization header's token ("Bearer kiln_<id>_<secret>",
 * or with basic_ok also Basic with it as the password:
 * serve_parse_authorization); KILN_E_REJECTED when wrong, revoked or expired. */
enum kiln_rc sauth_check(struct sdb *d, const char *authorization, bool basic_ok,
                         struct stoken *out, struct kiln_err *err) KILN_NODISCARD;

/* Whether token id is still good now (a long request checks again while it
 * runs); when not, *expired tells expiry from revocation (or removal) and
 * `why` says which and when, for the holder of the token only. */
enum kiln_rc sauth_still_valid(struct sdb *d, const char *token_id, bool *valid, bool *expired,
                               char *why, size_t cap, struct kiln_err *err) KILN_NODISCARD;

/* What POST /v1/submissions asks of the queue. */
struct ssubmit {
    const struct stoken *tok;
    const char *idem_key; /* NULL: none */
    const struct serve_submission *sub;
    const char *body_sha; /* hex digest of the body (idempotency) */
    const char *board;    /* the leaderboard: NAME@SHA256 (community); NULL: the workload's name */
    const char *wl_dir;   /* a community workload's checked directory; NULL: built-in */
};
enum ssubmit_result {
    SSUBMIT_NEW,
    SSUBMIT_REPLAY,     /* the idempotency key's earlier submission */
    SSUBMIT_IDEM_CLASH, /* the key was used with another body */
    SSUBMIT_RATE,       /* the token's bucket is empty: retry_after_s */
    SSUBMIT_QUOTA,      /* the token has quota submissions pending */
};
enum kiln_rc sdb_submit(struct sdb *d, const struct ssubmit *s, char id[SERVE_ID_LEN + 1],
                        enum ssubmit_result *res, double *retry_after_s,
                        struct kiln_err *err) KILN_NODISCARD;

struct sjob;
/* db_tenant.c: what each tenant may see and do.
 * KILN_OK when job id exists and tok may read it (its own token, or an
 * admin); KILN_E_NOTFOUND otherwise, with the same message for another
 * tenant's job as for no job, so existence does not leak. */
enum kiln_rc sdb_job_visible(struct sdb *d, const char *id, const struct stoken *tok,
                             struct kiln_err *err) KILN_NODISCARD;
/* GET /v1/submissions: tok's own (an admin's `all`: everyone's), newest
 * first, at most `limit`, those older than `cursor` (NULL: from the newest);
 * {"submissions":[...], "next_cursor": an opaque string or null}. A cursor
 * that is not one tok was given is KILN_E_USAGE. */
enum kiln_rc sdb_list_json(struct sdb *d, const struct stoken *tok, bool all, const char *cursor,
                           int limit, json_t **out, struct kiln_err *err) KILN_NODISCARD;
/* DELETE /v1/submissions/{id}: a queued or running job becomes done with
 * status "cancelled" (a running job's lease is dropped, so its worker
 * commits nothing); *was_state is the state it had ("done": nothing changed). */
enum kiln_rc sdb_cancel(struct sdb *d, const char *id, const char *by, char was_state[16],
                        struct kiln_err *err) KILN_NODISCARD;
/* GET /metrics: the Prometheus text exposition format (version 0.0.4). */
enum kiln_rc sdb_metrics_text(struct sdb *d, int workers, char **out,
                              struct kiln_err *err) KILN_NODISCARD;
/* Whether a leaderboard of that exact name has any submission. */
enum kiln_rc sdb_board_known(struct sdb *d, const char *board, bool *known,
                             struct kiln_err *err) KILN_NODISCARD;
/* A judging worker (pid) died: its running job goes back to the queue at
 * once, in its place (the oldest), instead of waiting out its lease. */
enum kiln_rc sdb_requeue_worker(struct sdb *d, long pid, const char *why, int *n,
                                struct kiln_err *err) KILN_NODISCARD;
/* Gives a claimed job back for another attempt (kiln's own failure, e.g. a
 * harness killed by a signal kiln did not send) while the lease is held;
 * the attempt counter bounds the retries (SERVE_MAX_ATTEMPTS). */
enum kiln_rc sdb_release(struct sdb *d, const struct sjob *j, const char *why, bool *released,
                         struct kiln_err *err) KILN_NODISCARD;
/* The token bucket's state after a submission, for the RateLimit headers. */
struct sbucket {
    double burst, remaining, reset_s;
};
enum kiln_rc sdb_bucket(struct sdb *d, const char *token_id, struct sbucket *b,
                        struct kiln_err *err) KILN_NODISCARD;

/* JSON views for the API (new references). NOTFOUND when no such job. */
enum kiln_rc sdb_submission_json(struct sdb *d, const char *id, json_t **out,
                                 struct kiln_err *err) KILN_NODISCARD;
enum kiln_rc sdb_queue_json(struct sdb *d, json_t **out, struct kiln_err *err) KILN_NODISCARD;
/* The board's ranked entries per GPU model; an entry names its submission
 * only to its owner and to admins (viewer; NULL: the public). cpu verdicts
 * are never ranked (SECURITY.md: the candidate runs in the process that
 * times it): "unranked" says so and counts them. */
enum kiln_rc sdb_leaderboard_json(struct sdb *d, const char *workload, const struct stoken *viewer,
                                  json_t **out, struct kiln_err *err) KILN_NODISCARD;
#define SERVE_CPU_UNRANKED                                                                         \
    "cpu submissions are judged (verdict and held-out check) but never ranked: a cpu candidate "   \
    "runs inside the process that times it, so its timings are its own to write"
enum kiln_rc sdb_workloads_json(struct sdb *d, json_t **out, struct kiln_err *err) KILN_NODISCARD;
/* Draws a new visible seed for `board` (an admin's rotation): later
 * submissions to it are timed on new inputs. */
enum kiln_rc sdb_rotate_seed(struct sdb *d, const char *board, char seed[32],
                             struct kiln_err *err) KILN_NODISCARD;
enum kiln_rc sdb_flag_hacked(struct sdb *d, const char *id, const char *by, const char *reason,
                             struct kiln_err *err) KILN_NODISCARD;
/* Events of job after its `after`th, as [{n, at, stage, detail}], n
 * numbering the job's own events from 1 (never a server-wide count);
 * *finished when the job has its verdict. */
enum kiln_rc sdb_events_json(struct sdb *d, const char *id, long long after, json_t **out,
                             bool *finished, struct kiln_err *err) KILN_NODISCARD;

/* worker side */
struct sjob {
    char id[SERVE_ID_LEN + 1];
    char workload[SERVE_WORKLOAD_NAME_MAX + 1];
    char backend[8];
    char user[64];
    char lease[33];
    char *source;
    size_t source_len;
    int attempts;
    double submitted;
    char board[SERVE_BOARD_MAX + 1];
    uint64_t visible_seed; /* the board's when it was submitted */
    char wl_dir[PATH_MAX]; /* a community workload's directory; "": the server's workloads */
    char body_sha[65];     /* SHA-256 (hex) of the body as received: a community tarball's */
    char token_id[SERVE_TOKEN_ID_LEN + 1]; /* whose it is */
};
/* Claims the next queued job of `backend`, round-robin across tenants
 * (db_worker.c, FAIR_NEXT_SEQ); *got false when none. */
enum kiln_rc sdb_claim(struct sdb *d, const char *backend, struct sjob *job, bool *got,
                       struct kiln_err *err) KILN_NODISCARD;
void sjob_free(struct sjob *j);
/* Renews the lease; *held false when it was lost. */
enum kiln_rc sdb_heartbeat(struct sdb *d, const struct sjob *j, bool *held,
                           struct kiln_err *err) KILN_NODISCARD;
struct sverdict {
    const char *status, *stage, *detail, *gpu_model, *record;
    double score_ms;
    bool verified;
    uint64_t secret_seed; /* 0: none drawn */
};
/* Stamps run_started (finished false) or run_finished on the job's timeline
 * while the lease is held. */
enum kiln_rc sdb_mark_run(struct sdb *d, const struct sjob *j, bool finished,
                          struct kiln_err *err) KILN_NODISCARD;
/* Commits the verdict while the lease is held; *committed false otherwise. */
enum kiln_rc sdb_finish(struct sdb *d, const struct sjob *j, const struct sverdict *v,
                        bool *committed, struct kiln_err *err) KILN_NODISCARD;

/* --executor slurm: the name of every Slurm job of this database's
 * servers, "kiln-serve-TAG" (TAG drawn once, kept in the database), so a
 * server that holds the lock knows every job of that name still out is an
 * orphan of a predecessor (server.c cancels them). */
enum kiln_rc sdb_slurm_job_name(struct sdb *d, char *out, size_t cap,
                                struct kiln_err *err) KILN_NODISCARD;

/* How many queued jobs of `backend` sdb_claim takes before the queued job
 * (token_id, seq), if nothing else is submitted meanwhile. */
enum kiln_rc sdb_fair_position(struct sdb *d, const char *backend, const char *token_id,
                               long long seq, long long *pos, struct kiln_err *err) KILN_NODISCARD;
/* The compile pool: claims the queued job not yet compiled ahead that
 * comes first in the same rotation as sdb_claim's. */
enum kiln_rc sdb_claim_compile(struct sdb *d, struct sjob *job, bool *got,
                               struct kiln_err *err) KILN_NODISCARD;
/* Marks it compiled (or failed); *still_queued false when a worker took it
 * meanwhile (the result is then of no use). */
enum kiln_rc sdb_compile_done(struct sdb *d, const char *id, bool ok, bool *still_queued,
                              struct kiln_err *err) KILN_NODISCARD;

/* checkcache.c: a community workload check's outcome, remembered by
 * content. The key is everything the outcome depends on. */
struct scheck_key {
    const char *tar_sha; /* SHA-256 (hex) of the tarball's bytes, computed by the server */
    const char *backend; /* the backends checked: the candidate's */
    uint64_t seed;       /* the visible seed the check's cases came from */
    const char *checker; /* serve_checker_id */
};
/* "kiln VERSION (git REV) check rules N python X numpy Y": what checks. */
enum kiln_rc serve_checker_id(char *out, size_t cap, struct kiln_err *err) KILN_NODISCARD;
/* *found and the outcome: problems "" (it passed) or the refusal's text. */
enum kiln_rc sdb_check_known(struct sdb *d, const struct scheck_key *k, bool *found, char *problems,
                             size_t cap, struct kiln_err *err) KILN_NODISCARD;
/* Remembers an outcome that is the workload's (the caller keeps out host
 * failures and load-dependent ones: wlcheck.h). */
enum kiln_rc sdb_check_remember(struct sdb *d, const struct scheck_key *k, const char *problems,
                                struct kiln_err *err) KILN_NODISCARD;

/* gpu_group.c: the leaderboard group (GPU model) of a verdict of
 * `backend`: host_model for cpu ("cpu") and for a local GPU; through Slurm
 * (slurm_fallback non-NULL, "slurm:PARTITION") the model of the GPU the
 * node reported for the visible run (out->ran_on), else slurm_fallback. */
struct eval_outcome;
void serve_verdict_gpu(const char *backend, const struct eval_outcome *out, const char *host_model,
                       const char *slurm_fallback, char *gpu, size_t cap);

/* The directory of job j's workload: its community directory, or the server's. */
void serve_job_workload_dir(const struct serve_opts *o, const struct sjob *j, char *out,
                            size_t cap);
/* precompile.c: where the pool leaves job id's compile/ directory for the judging worker. */
void serve_precompiled_dir(const struct serve_opts *o, const char *id, char *out, size_t cap);

/* Renames the committed temporary record `tmp` (a name in DATA/records)
 * of job id to DATA/records/ID and notes it in the database. */
enum kiln_rc serve_publish_record(struct sdb *d, const char *data, const char *id, const char *tmp,
                                  struct kiln_err *err) KILN_NODISCARD;
/* The record column of job id ("" when none or no such job). */
enum kiln_rc sdb_record_of(struct sdb *d, const char *id, char *out, size_t cap,
                           struct kiln_err *err) KILN_NODISCARD;

/* http.c */
struct shttp;
struct shttp_cfg {
    const struct serve_opts *opts;
    struct sdb *db;
    const char *backends; /* "cpu", "cuda" or "cuda,cpu": what the workers judge */
    const char *workloads_dir;
    int workers; /* judging workers (GET /metrics) */
};
enum kiln_rc shttp_start(const struct shttp_cfg *cfg, struct shttp **out,
                         struct kiln_err *err) KILN_NODISCARD;
void shttp_stop(struct shttp *h);

/* conn.c, conn_watch.c: who gets a connection and for how long (the
 * design: SECURITY.md, "The service"). The callbacks run on MHD's thread; a
 * ticker thread measures each connection's progress and cuts the ones past
 * their deadlines. */
#define SCONN_URI_MAX     (8u * 1024u)   /* longer: 414 uri_too_long */
#define SCONN_HEADERS_MAX (32u * 1024u)  /* header names and values: 431 headers_too_large */
#define SCONN_MEMORY      (128u * 1024u) /* MHD's pool per connection: its own HTML errors past it */
struct sconn;
struct strbuf;
struct sconn_cfg {
    unsigned
        max_connections; /* MHD's hard limit; new ones evict others above a soft cap under it */
    unsigned per_ip;     /* connections per address, or proxied requests in flight per client */
    unsigned request_timeout_s; /* receiving a request's line and headers; idle between two */
    unsigned write_timeout_s;   /* the window in which a client must take min_rate of its answer */
    unsigned min_rate;          /* bytes a second: the floor of a body's and an answer's progress */
    const char *trusted_proxy;  /* IPv4 literal whose X-Forwarded-For is believed; NULL: none */
    bool quiet;                 /* no log of cut and refused connections */
};
enum kiln_rc sconn_start(const struct sconn_cfg *cfg, struct sconn **out,
                         struct kiln_err *err) KILN_NODISCARD;
/* After MHD_stop_daemon. */
void sconn_free(struct sconn *t);
/* MHD_AcceptPolicyCallback and MHD_NotifyConnectionCallback, cls the sconn. */
enum MHD_Result sconn_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void sconn_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                  enum MHD_ConnectionNotificationCode code);
/* A request's headers are in (the first on_request call). */
enum sconn_begin {
    SCONN_GO,
    SCONN_BUSY,      /* one too many in flight for its forwarded client: answer 429 */
    SCONN_PIPELINED, /* one too many begun over unread answers: answer 429 and close */
};
enum sconn_begin sconn_request_begin(struct sconn *t, struct MHD_Connection *c, bool has_body);
/* The request carries a valid token: its connection is evicted last while it progresses. */
void sconn_request_authed(struct sconn *t, struct MHD_Connection *c);
/* Its body is in, or refused unread: the answer's turn (the write deadline). */
void sconn_request_answer(struct sconn *t, struct MHD_Connection *c);
/* The one parser of X-Forwarded-For: the last comma-separated address of
 * the value (blanks around it allowed) into addr; its family (AF_INET,
 * AF_INET6), or 0 when that is not an address. */
int sconn_parse_forwarded(const char *xff, unsigned char addr[16]);
/* Its response is sent (on_completed): the connection waits for the next request. */
void sconn_request_end(struct sconn *t, struct MHD_Connection *c);
/* The request's client (the forwarded one behind the proxy), for the log. */
void sconn_client(struct MHD_Connection *c, char *buf, size_t cap);
/* The request target's length (path and query) and the headers' (names and values). */
void sconn_request_sizes(struct MHD_Connection *c, const char *url, size_t *uri, size_t *headers);
/* 429 {"error":{code,message}} with Retry-After (and Connection: close when close). */
enum MHD_Result sconn_send_busy(struct MHD_Connection *c, const char *code, unsigned retry_after_s,
                                bool close, const char *message);
/* The connections' gauges and counters for GET /metrics (Prometheus text). */
void sconn_metrics_text(struct sconn *t, struct strbuf *sb);

/* sse.c: GET /v1/submissions/{id}/events */
struct MHD_Connection;
struct MHD_Response;
struct ssse;
/* max_streams: event streams one token may hold open at once. */
enum kiln_rc ssse_start(struct sdb *db, unsigned max_streams, struct ssse **out,
                        struct kiln_err *err) KILN_NODISCARD;
/* ssse_stop ends every stream (before MHD_stop_daemon); ssse_free after it. */
void ssse_stop(struct ssse *s);
void ssse_free(struct ssse *s);
/* The stream of job id after event `after` for token token_id; NULL when
 * that token has max_streams open or memory ran out: then ssse_refused. */
struct MHD_Response *ssse_response(struct ssse *s, struct MHD_Connection *c, const char *id,
                                   long long after, const char *token_id);
/* The answer to a NULL ssse_response: 429 too_many_streams with Retry-After
 * when the token is at its cap, else MHD_NO (the connection is closed). */
enum MHD_Result ssse_refused(struct ssse *s, struct MHD_Connection *c, const char *token_id);

/* page.c: the read-only HTML page at / */
/* backends: what the workers judge ("cpu", "cuda", "cuda,cpu"): a server
 * without cuda says on the page why nothing of it is ranked. */
enum kiln_rc spage_render(struct sdb *d, const char *backends, char **html,
                          struct kiln_err *err) KILN_NODISCARD;
/* GET /mine: tok's own newest submissions and verdicts, each saying whether
 * and why it is ranked or not. */
enum kiln_rc spage_render_mine(struct sdb *d, const struct stoken *tok, const char *backends,
                               char **html, struct kiln_err *err) KILN_NODISCARD;

#endif
