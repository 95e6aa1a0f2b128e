/* libFuzzer target: given_inputs_open on arbitrary bytes as an --input-cases
 * tarball, for a small fixed workload. What it accepts must be sets of
 * visible cases with canonical seeds, in order, and every input must read
 * back with its digest; freeing it leaves nothing behind. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "given.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char wl_json[] =
    "{\"name\": \"fz\", \"description\": \"fuzz\", \"sizes\": [\"n\"],"
    " \"signature\": ["
    "  {\"name\": \"n\", \"kind\": \"scalar\", \"type\": \"int64\", \"expr\": \"n\"},"
    "  {\"name\": \"x\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"], "
    "\"role\": \"in\"},"
    "  {\"name\": \"y\", \"kind\": \"tensor\", \"dtype\": \"int8\", \"shape\": [\"n\", \"2\"], "
    "\"role\": \"inout\"},"
    "  {\"name\": \"out\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"], "
    "\"role\": \"out\"}],"
    " \"cases\": [{\"name\": \"c1\", \"kind\": \"correctness\", \"sizes\": {\"n\": 2}},"
    "            {\"name\": \"p1\", \"kind\": \"performance\", \"sizes\": {\"n\": 4}}],"
    " \"held_out\": [{\"name\": \"h\", \"sizes\": {\"n\": 3}}],"
    " \"tolerance\": {}, \"cost\": {\"bytes\": \"4*n\", \"flops\": \"n\"}, \"backends\": "
    "[\"cpu\"]}";

static struct workload *wl;
static char dir[64], tar[96];

static int empty_dir(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    int n = 0;
    while (d && (e = readdir(d)))
        n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && strcmp(e->d_name, "in.tar");
    if (d)
        closedir(d);
    return n == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    if (!wl) {
        snprintf(dir, sizeof(dir), "/tmp/kiln-fuzz-given-XXXXXX");
        if (!mkdtemp(dir) ||
            workload_parse_json(wl_json, sizeof(wl_json) - 1, "fuzz", &wl, &err) != KILN_OK)
            abort();
        snprintf(tar, sizeof(tar), "%s/in.tar", dir);
    }
    FILE *f = fopen(tar, "we");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    struct given_inputs g;
    if (given_inputs_open(tar, wl, KILN_BACKEND_CPU, 1, dir, &g, &err) == KILN_OK) {
        if (g.n < 2 || strlen(g.sha256) != SHA256_HEX_LEN)
            abort();
        for (size_t i = 0; i < g.n; i++) {
            const struct given_set *s = &g.sets[i];
            if (s->wcase < wl->cases || s->wcase >= wl->cases + wl->ncases ||
                s->seed >= (1ULL << 53) ||
                (i && s[-1].wcase == s->wcase && s[-1].seed >= s->seed) ||
                (i && s[-1].wcase > s->wcase))
                abort();
            for (int a = 1; a <= 2; a++) {
                char *buf;
                size_t len;
                if (given_inputs_read(&g, i, a, &buf, &len, &err) != KILN_OK)
                    abort();
                free(buf);
            }
        }
        given_inputs_free(&g);
    }
    if (!empty_dir(dir))
        abort(); /* the unpacked tarball was left behind */
    return 0;
}
