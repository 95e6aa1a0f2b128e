/*
 * policy_disk.h - compiled policies kept across processes; private to
 * policy.c (policy.h is the contract).
 *
 * `kiln sandbox` is a process per sandbox, and parsing a policy and
 * compiling it with libseccomp took 1-2 ms of the ~6 ms of CPU a start
 * costs. One record per policy, in fs_runtime_dir(), holds the exact bytes
 * it was built from (the policy file and its fragments), the policy's
 * settings and its BPF. It is used only when those bytes are still what
 * the files hold (re-read and compared), it was written by this very kiln
 * executable (device, inode, size, mtime of /proc/self/exe) with this
 * libseccomp, and the directory and the record are this user's alone
 * (SECURITY.md). Anything unexpected is a miss, and a miss compiles.
 */
#ifndef KILN_SANDBOX_POLICY_DISK_H
#define KILN_SANDBOX_POLICY_DISK_H

#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

#define POLICY_MAX_INCLUDES 4

/* The bytes a policy was built from: its file and its fragments', in the
 * order read, each as "name\0" + 8-byte length + text. */
struct policy_texts {
    char *buf;
    size_t len;
};

/* A cache lookup, so `bool`, not kiln_rc: a miss is no failure (anything
 * unexpected is a miss and the caller compiles), and nobody reads why. */

/* Re-reads the files recorded in t (under data_dir/policies/) and compares
 * their bytes; true if every file still holds them. t must be well formed. */
bool policy_texts_match_files(const char *data_dir, const struct policy_texts *t);

/* True when a usable record of policy `name` was found: *p filled (rules
 * NULL, bpf owned) and *t the bytes it was built from (owned); false
 * otherwise, nothing taken. */
bool policy_disk_found(const char *data_dir, const char *name, struct sandbox_policy *p,
                       struct policy_texts *t);

/* The checks and decoding of policy_disk_found() on a record's bytes, for
 * the fuzz target: `build` is what the record must say wrote it. True when
 * the record is usable, with *p and *t filled as there. */
bool policy_disk_record_usable(const char *rec, size_t len, const char *build, const char *data_dir,
                               const char *name, struct sandbox_policy *p, struct policy_texts *t);

/* Writes the record of p built from t (best effort: a temporary file
 * renamed into place, so readers see the old record or the new one). */
void policy_disk_store(const struct policy_texts *t, const struct sandbox_policy *p);

#endif
