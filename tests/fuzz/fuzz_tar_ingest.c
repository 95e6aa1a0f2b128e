/* libFuzzer target: tar_ingest_fd on arbitrary bytes fed through a memfd.
 * Accepted contents must obey the rules they were ingested under. The same
 * bytes ingested with every file left in the stream (rules.in_stream) must
 * be accepted or rejected alike, with spans that hold the same data. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tar_ingest.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const patterns[] = {"out/*/*.npy", "timings.json", "log.txt", "*"};

/* An empty private directory; in-stream mode never writes to it. */
static int spans_dir(void)
{
    static int dfd = -1;
    if (dfd < 0) {
        char path[] = "/tmp/kiln-fuzz-tar-XXXXXX";
        if (!mkdtemp(path))
            abort();
        dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
            abort();
    }
    return dfd;
}

/* In-stream mode agrees with memory mode (c is NULL when that rejected). */
static void check_spans(int fd, const struct tar_rules *rules, const struct tar_contents *c)
{
    struct tar_rules r = *rules;
    r.in_stream = r.patterns;
    r.n_in_stream = r.n_patterns;
    struct tar_names n;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (lseek(fd, 0, SEEK_SET) != 0)
        abort();
    enum kiln_rc rc = tar_ingest_to_dir(fd, &r, spans_dir(), &n, &err);
    if ((rc == KILN_OK) != (c != NULL))
        abort();
    if (rc != KILN_OK)
        return;
    if (n.n != 0 || n.nspans != c->n)
        abort();
    for (size_t i = 0; i < n.nspans; i++) {
        const struct tar_span *sp = &n.spans[i];
        if (strcmp(sp->name, c->entries[i].name) != 0 || sp->len != c->entries[i].len)
            abort();
        char *buf = malloc(sp->len + 1);
        if (!buf || pread(fd, buf, sp->len, (off_t)sp->offset) != (ssize_t)sp->len ||
            memcmp(buf, c->entries[i].data, sp->len) != 0)
            abort();
        free(buf);
    }
    tar_names_free(&n);
}

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
    if (tar_ingest_fd(fd, &rules, &c, &err) != KILN_OK) {
        check_spans(fd, &rules, NULL);
    } else {
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
        check_spans(fd, &rules, &c);
        tar_contents_free(&c);
    }
    close(fd);
    return 0;
}
