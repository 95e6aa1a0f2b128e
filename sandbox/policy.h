/*
 * policy.h - seccomp policies and limit defaults, read from JSON files in
 * <data_dir>/policies/ (format: policies/README.md).
 *
 * policy_load() parses and validates a policy (and the fragments it
 * includes), policy_compile() turns it into a BPF program with libseccomp in
 * the trusted parent, so the sandboxed child only hands the finished program
 * to the kernel. The caller owns both and frees them with policy_free().
 */
#ifndef KILN_SANDBOX_POLICY_H
#define KILN_SANDBOX_POLICY_H

#include <stddef.h>

#include "error.h"
#include "sandbox.h"

#define POLICY_MAX_BYTES (256 * 1024)

struct sandbox_policy {
    char name[32];
    int allow_gpu;
    int allow_exec;               /* documented only: execve is in the rules or not */
    int dev_shm;                  /* "dev_shm": true: /dev/shm is a symlink to /tmp */
    struct sandbox_limits limits; /* defaults, every field > 0 */
    void *rules;                  /* json_t array of rule objects, owned */
    void *bpf;                    /* struct sock_filter[], owned */
    size_t bpf_len;               /* instructions */
};

/* Loads <data_dir>/policies/<name>.json. `name` must be [a-z0-9-]+. */
enum kiln_rc policy_load(const char *data_dir, const char *name, struct sandbox_policy *p,
                         struct kiln_err *err) KILN_NODISCARD;

/* Builds p->bpf: the policy's rules, default action = user notification
 * (the sandbox's init names the refused syscall), wrong arch = kill. */
enum kiln_rc policy_compile(struct sandbox_policy *p, struct kiln_err *err) KILN_NODISCARD;

/* policy_load() and policy_compile() in one, remembered per process: a
 * later call whose policy file and fragments hold the same bytes (re-read
 * and compared each time) gets a copy of the compiled program without
 * libseccomp. p->rules is NULL on return. Thread-safe. */
enum kiln_rc policy_load_compiled(const char *data_dir, const char *name, struct sandbox_policy *p,
                                  struct kiln_err *err) KILN_NODISCARD;

void policy_free(struct sandbox_policy *p);

#endif
