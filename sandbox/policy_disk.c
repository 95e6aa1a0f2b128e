/* policy_disk.c - compiled policies kept across processes (policy_disk.h). */
#include "policy_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <seccomp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "fdio.h"
#include "fsutil.h"

#define DISK_MAGIC     "kilnbpf2"
#define DISK_TEXTS_MAX ((1 + POLICY_MAX_INCLUDES) * (POLICY_MAX_BYTES + 48))

struct disk_head {
    char magic[8];
    char build[160]; /* which executable and libseccomp wrote it (build_id) */
    char name[32];
    int32_t allow_gpu, dev_shm;
    struct sandbox_limits limits;
    uint64_t texts_len; /* bytes of policy_texts after the head */
    uint64_t bpf_len;   /* struct sock_filter after the texts */
};

/* This executable (a relink changes it) and the libseccomp it runs with. */
static int build_id(char *out, size_t cap)
{
    struct stat st;
    const struct scmp_version *v = seccomp_version();
    if (stat("/proc/self/exe", &st) < 0 || !v)
        return -1;
    int n = snprintf(out, cap, "exe %llu:%llu:%lld:%lld.%09ld libseccomp %u.%u.%u",
                     (unsigned long long)st.st_dev, (unsigned long long)st.st_ino,
                     (long long)st.st_size, (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec,
                     v->major, v->minor, v->micro);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static int record_name(const char *name, char *out, size_t cap)
{
    int n = snprintf(out, cap, "policy-%s.bpf", name);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

static bool name_ok(const char *s, size_t max)
{
    size_t l = strnlen(s, max);
    if (!l || l == max)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-' || *s == '_'))
            return false;
    return true;
}

/* The texts' layout checked before anything walks it: names, lengths in
 * bounds, at most the policy and its fragments, the policy first. */
static bool texts_valid(const char *name, const char *buf, size_t len)
{
    size_t at = 0, files = 0;
    while (at < len) {
        size_t room = len - at, nl = strnlen(buf + at, room < 32 ? room : 32);
        unsigned long long l;
        if (nl == room || nl == 32 || !name_ok(buf + at, 32) ||
            (files == 0 && strcmp(buf + at, name)) || room - nl - 1 < sizeof(l))
            return false;
        memcpy(&l, buf + at + nl + 1, sizeof(l));
        if (l > POLICY_MAX_BYTES || l > room - nl - 1 - sizeof(l) ||
            ++files > 1 + POLICY_MAX_INCLUDES)
            return false;
        at += nl + 1 + sizeof(l) + l;
    }
    return files > 0;
}

bool policy_texts_match_files(const char *data_dir, const struct policy_texts *t)
{
    size_t at = 0;
    while (at < t->len) {
        const char *name = t->buf + at;
        size_t nl = strlen(name) + 1;
        unsigned long long l;
        memcpy(&l, t->buf + at + nl, sizeof(l));
        const char *want = t->buf + at + nl + sizeof(l);
        char path[4096], *text = NULL;
        size_t len = 0;
        struct kiln_err e;
        kiln_err_clear(&e);
        snprintf(path, sizeof(path), "%s/policies/%s.json", data_dir, name);
        if (fs_read_file(path, POLICY_MAX_BYTES, &text, &len, &e) != KILN_OK)
            return false;
        bool same = len == l && !memcmp(text, want, len);
        free(text);
        if (!same)
            return false;
        at += nl + sizeof(l) + l;
    }
    return true;
}

static bool limits_ok(const struct sandbox_limits *l)
{
    const long long *v = (const long long *)l;
    for (size_t i = 0; i < sizeof(*l) / sizeof(long long); i++)
        if (v[i] <= 0)
            return false;
    return true;
}

/* The record's bytes, when the file is this user's alone and of a size a
 * record can have; NULL otherwise. */
static char *read_record(const char *name, size_t *len)
{
    char file[64];
    *len = 0;
    if (record_name(name, file, sizeof(file)) < 0)
        return NULL;
    return fs_runtime_read(file, sizeof(struct disk_head) + 1,
                           sizeof(struct disk_head) + DISK_TEXTS_MAX +
                               BPF_MAXINSNS * sizeof(struct sock_filter),
                           0, len);
}

bool policy_disk_record_usable(const char *rec, size_t len, const char *build, const char *data_dir,
                               const char *name, struct sandbox_policy *p, struct policy_texts *t)
{
    struct disk_head h;
    if (len <= sizeof(h))
        return false;
    memcpy(&h, rec, sizeof(h));
    const char *texts = rec + sizeof(h);
    size_t rest = len - sizeof(h);
    bool ok = !memcmp(h.magic, DISK_MAGIC, sizeof(h.magic)) &&
              !strncmp(h.build, build, sizeof(h.build)) && !strncmp(h.name, name, sizeof(h.name)) &&
              strnlen(h.name, sizeof(h.name)) < sizeof(h.name) && limits_ok(&h.limits) &&
              h.texts_len > 0 && h.texts_len <= rest && h.bpf_len > 0 &&
              h.bpf_len <= BPF_MAXINSNS &&
              rest - h.texts_len == h.bpf_len * sizeof(struct sock_filter) &&
              texts_valid(name, texts, (size_t)h.texts_len);
    struct policy_texts got = {NULL, 0};
    void *bpf = NULL;
    if (ok) {
        got.buf = malloc((size_t)h.texts_len);
        bpf = malloc((size_t)h.bpf_len * sizeof(struct sock_filter));
        ok = got.buf && bpf;
    }
    if (ok) {
        memcpy(got.buf, texts, (size_t)h.texts_len);
        got.len = (size_t)h.texts_len;
        ok = policy_texts_match_files(data_dir, &got);
    }
    if (!ok) {
        free(got.buf);
        free(bpf);
        return false;
    }
    memcpy(bpf, texts + h.texts_len, (size_t)h.bpf_len * sizeof(struct sock_filter));
    memset(p, 0, sizeof(*p));
    p->bpf = bpf;
    p->bpf_len = (size_t)h.bpf_len;
    snprintf(p->name, sizeof(p->name), "%s", h.name);
    p->allow_gpu = h.allow_gpu != 0;
    p->dev_shm = h.dev_shm != 0;
    p->limits = h.limits;
    *t = got;
    return true;
}

bool policy_disk_found(const char *data_dir, const char *name, struct sandbox_policy *p,
                       struct policy_texts *t)
{
    char build[sizeof(((struct disk_head *)0)->build)];
    size_t len = 0;
    if (build_id(build, sizeof(build)) < 0)
        return false;
    char *rec = read_record(name, &len);
    if (!rec)
        return false;
    bool hit = policy_disk_record_usable(rec, len, build, data_dir, name, p, t);
    free(rec);
    return hit;
}

void policy_disk_store(const struct policy_texts *t, const struct sandbox_policy *p)
{
    struct disk_head h;
    memset(&h, 0, sizeof(h));
    char file[64];
    if (build_id(h.build, sizeof(h.build)) < 0 || record_name(p->name, file, sizeof(file)) < 0)
        return;
    memcpy(h.magic, DISK_MAGIC, sizeof(h.magic));
    snprintf(h.name, sizeof(h.name), "%s", p->name);
    h.allow_gpu = p->allow_gpu;
    h.dev_shm = p->dev_shm;
    h.limits = p->limits;
    h.texts_len = t->len;
    h.bpf_len = p->bpf_len;
    struct iovec parts[] = {
        {.iov_base = &h, .iov_len = sizeof(h)},
        {.iov_base = t->buf, .iov_len = t->len},
        {.iov_base = p->bpf, .iov_len = p->bpf_len * sizeof(struct sock_filter)}};
    fs_runtime_write(file, parts, 3);
}
