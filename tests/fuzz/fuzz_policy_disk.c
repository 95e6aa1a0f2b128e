/* libFuzzer target: the compiled-policy record (sandbox/policy_disk.c), read
 * from the user's runtime directory by every kiln sandbox. The input is a
 * record; its own build field is taken as this build's, so inputs reach the
 * layout checks, the texts walk and the comparison with the fixture policy
 * files. What decodes must be usable: the program's length in bounds. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "policy_disk.h"

/* The fixture policy the seed records were made from (tests/fuzz/corpus/). */
#define FZ_POLICY                                                                                  \
    "{\"include\": [\"frag\"], \"limits\": {\"timeout_ms\": 1, \"cpu_s\": 1, \"memory_mb\": 1, "   \
    "\"pids\": 1, \"fsize_mb\": 1, \"nofile\": 1, \"tmp_mb\": 1, \"out_mb\": 1, \"tar_mb\": 1, "   \
    "\"output_kb\": 1}, \"syscalls\": [{\"name\": \"write\", \"reason\": \"w\"}]}"
#define FZ_FRAG                                                                                    \
    "{\"fragment\": true, \"syscalls\": [{\"name\": \"read\", \"reason\": \"r\"}, {\"name\": "     \
    "\"sendmsg\", \"reason\": \"s\"}, {\"name\": \"close\", \"reason\": \"c\"}]}"

static char dir[256];

static void put(const char *rel, const char *text)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        abort();
}

static void fixture(void)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    char p[512];
    if (fs_make_tempdir("fuzzpd", dir, sizeof(dir), &err) != KILN_OK)
        abort();
    snprintf(p, sizeof(p), "%s/policies", dir);
    if (mkdir(p, 0755) < 0)
        abort();
    put("policies/fz.json", FZ_POLICY);
    put("policies/frag.json", FZ_FRAG);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0])
        fixture();
    char build[161] = "";
    if (size >= 8 + 160)
        memcpy(build, data + 8, 160);
    struct sandbox_policy p;
    struct policy_texts t;
    if (policy_disk_record_usable((const char *)data, size, build, dir, "fz", &p, &t)) {
        if (!p.bpf || p.bpf_len < 1 || p.bpf_len > 4096 || !t.len)
            abort();
        free(p.bpf);
        free(t.buf);
    }
    return 0;
}
