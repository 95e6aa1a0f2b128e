/*
 * sandbox.h - run one untrusted program in a fresh sandbox and get back its
 * verdict, its capped stdout/stderr and a tar stream of its /out.
 *
 * Lifecycle: fill a `struct sandbox_spec` (everything it points to stays
 * owned by the caller and need only live for the call), call sandbox_run()
 * with a zeroed `struct sandbox_result`, read the result, then
 * sandbox_result_free() it (also after a failure). Nothing is global: calls
 * may run one after another in the same process; each forks its own tree.
 *
 * What sandbox_run() builds, in this order, failing closed at every step
 * (the child never runs when a step fails, and the error names the step):
 * user, mount, PID, net, IPC, UTS and cgroup namespaces; an unprivileged
 * uid/gid (when kiln runs as root, a host uid of the sandbox's own that no
 * other process holds: uidslot.h); a tmpfs root entered by pivot_root
 * holding only the image's read-only binds, a fresh /proc, a minimal /dev
 * (plus the device nodes the caller grants), size-capped tmpfs /tmp and /out, and
 * the read-only /in; loopback-only network; rlimits and a cgroup; all
 * capabilities dropped; no_new_privs; the policy's seccomp filter last.
 *
 * Return value: KILN_OK whenever the program was started (whatever it then
 * did: the verdict says it); an error when the sandbox could not be built or
 * the spec is invalid (then the program did not run).
 *
 * The tar stream is copied, size-bounded but otherwise unparsed, to
 * spec.tar_fd: it is hostile data that only a strict ingester may read.
 */
#ifndef KILN_SANDBOX_H
#define KILN_SANDBOX_H

#include <stddef.h>

#include "error.h"

/* A host file or directory placed read-only at /in/<name>. */
struct sandbox_input {
    const char *host_path;
    const char *name; /* one path component, no '/', not "." or ".." */
};

/* Limits; 0 in any field means "the policy's default". */
struct sandbox_limits {
    long long timeout_ms;   /* wall clock; the whole PID namespace is killed */
    long long cpu_s;        /* RLIMIT_CPU */
    long long memory_bytes; /* cgroup memory cap (never RLIMIT_AS: breaks CUDA) */
    long long pids;         /* cgroup pids.max, else RLIMIT_NPROC */
    long long fsize_bytes;  /* RLIMIT_FSIZE */
    long long nofile;       /* RLIMIT_NOFILE */
    long long tmp_bytes;    /* size of the /tmp tmpfs */
    long long out_bytes;    /* size of the /out tmpfs */
    long long tar_bytes;    /* cap on the returned tar stream */
    long long output_bytes; /* kept per stream of stdout/stderr (first + last half) */
};

struct sandbox_spec {
    const char *policy; /* name in policies/ ("compile", "script", "gpu-run") */
    const char *image;  /* name in images/; NULL: same name as the policy */
    const struct sandbox_input *inputs;
    size_t n_inputs;
    /* Host device nodes to grant, by name under /dev ("nvidia0"); NULL ok.
     * Only a policy with "gpu": true may be granted any. */
    char *const *devices;
    /* Values of the image's placeholders, "name=value" ("cuda=/usr/local/
     * cuda-13.0"); NULL ok. The sandbox knows none by name: see image.h. */
    char *const *vars;
    struct sandbox_limits limits;
    char *const *argv;    /* argv[0]: absolute, or looked up in the image's PATH */
    char *const *env;     /* extra "NAME=VALUE" over the image's env; NULL ok; never a
                             secret (*_API_KEY, *TOKEN*...: refused) */
    const char *cwd;      /* NULL: the image's working directory */
    int stdin_fd;         /* -1: /dev/null */
    int tar_fd;           /* where /out's tar stream goes; -1 discards it */
    const char *data_dir; /* holds policies/ and images/; NULL: sandbox_data_dir() */
};

enum sandbox_verdict {
    SANDBOX_EXITED = 0,   /* exit_code is valid */
    SANDBOX_SIGNALED = 1, /* killed by `signal` (not by kiln) */
    SANDBOX_REFUSED = 2,  /* made a syscall the policy refuses: syscall_* */
    SANDBOX_TIMEOUT = 3,  /* wall clock ran out; everything was killed */
    SANDBOX_LIMIT = 4,    /* a limit was hit: `limit` names it */
};

struct sandbox_stream {
    char *data;                 /* first part + marker + last part; NUL-terminated */
    size_t len;                 /* bytes in data, marker included */
    unsigned long long total;   /* bytes the program wrote */
    unsigned long long dropped; /* bytes left out of data */
};

struct sandbox_result {
    enum sandbox_verdict verdict;
    int exit_code;         /* SANDBOX_EXITED */
    int signal;            /* SANDBOX_SIGNALED (and LIMIT/TIMEOUT when known) */
    int syscall_nr;        /* SANDBOX_REFUSED */
    char syscall_name[32]; /* SANDBOX_REFUSED: "ptrace" */
    char syscall_args[80]; /* SANDBOX_REFUSED: its first three arguments, "0x4, 0x0, 0x0" */
    char policy[32];       /* the policy it ran under */
    char limit[32];        /* SANDBOX_LIMIT: "memory", "pids", "cpu", "fsize" */
    double wall_s;         /* start to the end of the program */
    double cpu_s;          /* user+system of everything in the sandbox */
    struct sandbox_stream out, err;
    unsigned long long tar_bytes; /* bytes written to tar_fd */
    double tar_s;      /* first to last byte of the tar stream (packing /out, after the program) */
    int tar_truncated; /* the stream hit limits.tar_bytes */
    char *skipped;     /* "path: reason\n" per /out entry left out of the tar; or NULL */
    char memory_cap[96]; /* how memory was capped: "cgroup v2 memory.max", ... */
};

/* Builds the sandbox, runs spec->argv in it and waits for the verdict. */
enum kiln_rc sandbox_run(const struct sandbox_spec *spec, struct sandbox_result *res,
                         struct kiln_err *err) KILN_NODISCARD;

/* Frees what sandbox_run() allocated in `res`; leaves it zeroed. */
void sandbox_result_free(struct sandbox_result *res);

/* One line: "exit 0 in 0.004 s", "refused syscall ptrace (101) under policy
 * script (arguments 0x10, 0x2a, 0x0)", "timeout after 2.000 s", "limit pids
 * hit (...)". */
void sandbox_verdict_line(const struct sandbox_result *res, char *buf, size_t cap);

/* Where policies/ and images/ live: $KILN_DATA_DIR, else the source tree. */
const char *sandbox_data_dir(void);

/* Describes what image `name` resolves to on this host with placeholder
 * values `vars` ("/usr, /lib, ...; skipped: /lib32 (absent)") into buf;
 * for `kiln doctor`. */
enum kiln_rc sandbox_image_describe(const char *data_dir, const char *name, char *const *vars,
                                    char *buf, size_t cap, struct kiln_err *err) KILN_NODISCARD;

/* The placeholder names image `name` uses, space-separated ("cuda
 * nvidia_libs"): what its caller should give values for in spec.vars. */
enum kiln_rc sandbox_image_placeholders(const char *data_dir, const char *name, char *names,
                                        size_t cap, struct kiln_err *err) KILN_NODISCARD;

#endif
