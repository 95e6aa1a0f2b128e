/* libFuzzer target: the archive reader (runarchive_open_mem: zstd with a
 * cap, tar_ingest's rules, MANIFEST parse and check) on arbitrary bytes,
 * and manifest_parse on its own. An accepted archive must have a MANIFEST
 * that every extracted file matches; accepted MANIFEST text must format
 * back to the same bytes. Nothing may be left behind either way. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "runarchive.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *scratch(void)
{
    static char path[] = "/tmp/kiln-fuzz-archive-XXXXXX";
    static int made;
    if (!made) {
        if (!mkdtemp(path))
            abort();
        made = 1;
    }
    return path;
}

static int empty_dir(const char *path)
{
    DIR *d = opendir(path);
    if (!d)
        abort();
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d)) != NULL)
        n += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    return n == 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    struct manifest m;
    if (manifest_parse((const char *)data, size, &m, &err) == KILN_OK) {
        char *text = NULL;
        size_t len = 0;
        if (manifest_format(&m, &text, &len, &err) != KILN_OK || len != size ||
            memcmp(text, data, size) != 0)
            abort();
        free(text);
        manifest_free(&m);
    }
    kiln_err_clear(&err);
    const struct runarchive_limits lim = {1u << 20, 64, 256u << 10};
    struct runarchive ar;
    if (runarchive_open_mem(data, size, scratch(), &lim, &ar, &err) == KILN_OK) {
        struct manifest_diff d;
        struct kiln_err e2;
        kiln_err_clear(&e2);
        if (manifest_check_dir(ar.run, NULL, NULL, NULL, &d, &e2) != KILN_OK)
            abort();
        runarchive_close(&ar);
    } else if (err.msg[0] == '\0') {
        abort(); /* every refusal says why */
    }
    if (!empty_dir(scratch()))
        abort(); /* extraction leftovers */
    return 0;
}
