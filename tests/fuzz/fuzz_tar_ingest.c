/* libFuzzer target: tar_ingest_fd on arbitrary bytes fed through a memfd.
 * Accepted contents must obey the rules they were ingested under. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tar_ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const patterns[] = {"out/*/*.npy", "timings.json", "log.txt", "*"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    if (size && write(fd, data, size) != (ssize_t)size)
        abort();
    if (lseek(fd, 0, SEEK_SET) != 0)
        abort();
    struct tar_rules rules = {.patterns = patterns,
                              .n_patterns = 4,
                              .max_file_bytes = 4096,
                              .max_total_bytes = 16384,
                              .max_files = 16};
    struct tar_contents c;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (tar_ingest_fd(fd, &rules, &c, &err) == KILN_OK) {
        size_t total = 0;
        for (size_t i = 0; i < c.n; i++) {
            const struct tar_entry *e = &c.entries[i];
            int ok = 0;
            for (size_t p = 0; p < rules.n_patterns; p++)
                ok |= tar_name_matches(patterns[p], e->name);
            if (!ok || e->len > rules.max_file_bytes || ((char *)e->data)[e->len] != '\0' ||
                strstr(e->name, "..") == e->name || e->name[0] == '/' ||
                (i > 0 && strcmp(c.entries[i - 1].name, e->name) >= 0) ||
                tar_contents_find(&c, e->name) != e)
                abort();
            total += e->len;
        }
        if (c.n > rules.max_files || total > rules.max_total_bytes)
            abort();
        tar_contents_free(&c);
    }
    close(fd);
    return 0;
}
