/*
 * test_tar_ingest.c - tar ingestion against hostile streams built here
 * byte by byte (traversal, absolute names, links, devices, pax/GNU
 * smuggling, lying sizes, truncation, a compression bomb, 100 000 files),
 * and against what libarchive's pax_restricted writer really produces.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tar_ingest.h"

/* ---- a raw tar builder: full control over every header field ---------- */

struct tarbuf {
    unsigned char *p;
    size_t len, cap;
};

static void tb_raw(struct tarbuf *b, const void *d, size_t n)
{
    if (b->len + n > b->cap) {
        size_t ncap = b->cap ? b->cap : 4096;
        while (ncap < b->len + n)
            ncap *= 2;
        b->p = realloc(b->p, ncap);
        assert_non_null(b->p);
        b->cap = ncap;
    }
    if (d)
        memcpy(b->p + b->len, d, n);
    else
        memset(b->p + b->len, 0, n);
    b->len += n;
}

static void tb_pad(struct tarbuf *b)
{
    size_t pad = (512 - b->len % 512) % 512;
    tb_raw(b, NULL, pad);
}

/* A ustar header; `size` is what the header claims, whatever follows. */
static void tb_header(struct tarbuf *b, const char *name, char type, unsigned long long size,
                      const char *link)
{
    unsigned char h[512];
    memset(h, 0, sizeof(h));
    size_t nl = strlen(name);
    if (nl <= 100) {
        memcpy(h, name, nl);
    } else {
        const char *slash = strchr(name + nl - 100 - 1, '/');
        assert_non_null(slash);
        memcpy(h + 345, name, (size_t)(slash - name)); /* prefix */
        memcpy(h, slash + 1, strlen(slash + 1));
    }
    snprintf((char *)h + 100, 8, "%07o", 0644);
    snprintf((char *)h + 108, 8, "%07o", 1000);
    snprintf((char *)h + 116, 8, "%07o", 1000);
    snprintf((char *)h + 124, 12, "%011llo", size);
    snprintf((char *)h + 136, 12, "%011o", 1700000000);
    h[156] = (unsigned char)type;
    if (link)
        memcpy(h + 157, link, strlen(link));
    memcpy(h + 257,
           "ustar\0"
           "00",
           8);
    memcpy(h + 265, "kiln", 4);
    memcpy(h + 297, "kiln", 4);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
    tb_raw(b, h, 512);
}

static void tb_file(struct tarbuf *b, const char *name, const char *data)
{
    size_t n = strlen(data);
    tb_header(b, name, '0', n, NULL);
    tb_raw(b, data, n);
    tb_pad(b);
}

/* A pax extended header ('x') or global header ('g') with one record. */
static void tb_pax(struct tarbuf *b, char type, const char *key, const char *value)
{
    char rec[512];
    size_t body = strlen(key) + strlen(value) + 3; /* ' ' '=' '\n' */
    size_t len = body + 1;
    while ((size_t)snprintf(NULL, 0, "%zu", len) + body != len)
        len++;
    snprintf(rec, sizeof(rec), "%zu %s=%s\n", len, key, value);
    tb_header(b, "PaxHeaders/x", type, strlen(rec), NULL);
    tb_raw(b, rec, strlen(rec));
    tb_pad(b);
}

static void tb_end(struct tarbuf *b)
{
    tb_raw(b, NULL, 1024);
}

/* The bytes as a readable fd at offset 0. */
static int tb_fd(const void *p, size_t n)
{
    int fd = memfd_create("tar", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, p, n), (ssize_t)n);
    assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

/* ---- running ingestion -------------------------------------------------- */

static const char *const std_patterns[] = {"out/*/*.npy", "timings.json", "log.txt"};

static struct tar_rules std_rules(void)
{
    return (struct tar_rules){.patterns = std_patterns,
                              .n_patterns = 3,
                              .max_file_bytes = 1 << 20,
                              .max_total_bytes = 4 << 20,
                              .max_files = 64};
}

static enum kiln_rc ingest_mem(const void *p, size_t n, const struct tar_rules *rules,
                               struct tar_contents *c, struct kiln_err *err)
{
    int fd = tb_fd(p, n);
    kiln_err_clear(err);
    enum kiln_rc rc = tar_ingest_fd(fd, rules, c, err);
    close(fd);
    return rc;
}

static char tmpdir[64];
static int count_dir(int dirfd);

/* Directory mode with every file left in the stream (rules.in_stream =
 * its patterns): nothing may ever be written to the directory. */
static enum kiln_rc ingest_spans(const void *p, size_t n, const struct tar_rules *rules,
                                 struct tar_names *names, struct kiln_err *err)
{
    static int dfd = -1;
    if (dfd < 0) {
        char path[128];
        snprintf(path, sizeof(path), "%s/spans", tmpdir);
        assert_int_equal(mkdir(path, 0700), 0);
        dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        assert_true(dfd >= 0);
    }
    struct tar_rules r = *rules;
    r.in_stream = rules->patterns;
    r.n_in_stream = rules->n_patterns;
    int fd = tb_fd(p, n);
    kiln_err_clear(err);
    enum kiln_rc rc = tar_ingest_to_dir(fd, &r, dfd, names, err);
    close(fd);
    assert_int_equal(count_dir(dfd), 0);
    return rc;
}

/* Expects rejection in memory mode with exactly `msg`, and the same
 * verdict when the files are left in the stream. */
static void expect_msg(struct tarbuf *b, const struct tar_rules *rules, enum kiln_rc rc,
                       const char *msg)
{
    struct tar_contents c;
    struct tar_names names;
    struct kiln_err err;
    enum kiln_rc got = ingest_mem(b->p, b->len, rules, &c, &err);
    if (got != rc || strcmp(err.msg, msg) != 0)
        fail_msg("expected rc %d \"%s\", got rc %d \"%s\"", rc, msg, got, err.msg);
    assert_null(c.entries);
    assert_int_equal(c.n, 0);
    got = ingest_spans(b->p, b->len, rules, &names, &err);
    if (got != rc || strcmp(err.msg, msg) != 0)
        fail_msg("in-stream mode: expected rc %d \"%s\", got rc %d \"%s\"", rc, msg, got, err.msg);
    assert_null(names.spans);
    assert_int_equal(names.nspans, 0);
}

/* Expects rejection with a message containing `needle`, in both modes. */
static void expect_sub(struct tarbuf *b, const struct tar_rules *rules, const char *needle)
{
    struct tar_contents c;
    struct tar_names names;
    struct kiln_err err;
    enum kiln_rc got = ingest_mem(b->p, b->len, rules, &c, &err);
    if (got != KILN_E_REJECTED || !strstr(err.msg, needle))
        fail_msg("expected rejection with \"%s\", got rc %d \"%s\"", needle, got, err.msg);
    assert_null(c.entries);
    got = ingest_spans(b->p, b->len, rules, &names, &err);
    if (got != KILN_E_REJECTED || !strstr(err.msg, needle))
        fail_msg("in-stream mode: expected rejection with \"%s\", got rc %d \"%s\"", needle, got,
                 err.msg);
    assert_null(names.spans);
}

/* One stream: a valid file, then one hostile entry; expects `msg`. */
static void one_bad(const char *name, char type, const char *link, const char *msg)
{
    struct tarbuf b = {0};
    struct tar_rules rules = std_rules();
    tb_file(&b, "out/c0/x.npy", "fine");
    tb_header(&b, name, type, 0, link);
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED, msg);
    free(b.p);
}

/* ---- tests --------------------------------------------------------------- */

static void test_name_matching(void **state)
{
    (void)state;
    assert_true(tar_name_matches("out/*/*.npy", "out/case0/y.npy"));
    assert_true(tar_name_matches("out/*/*.npy", "out/c/a.b.npy"));
    assert_false(tar_name_matches("out/*/*.npy", "out/y.npy"));
    assert_false(tar_name_matches("out/*/*.npy", "out/a/b/y.npy"));
    assert_false(tar_name_matches("out/*/*.npy", "out/a/.npy"));
    assert_false(tar_name_matches("out/*/*.npy", "out/a/y.npyx"));
    assert_false(tar_name_matches("out/*/*.npy", "out//y.npy"));
    assert_true(tar_name_matches("timings.json", "timings.json"));
    assert_false(tar_name_matches("timings.json", "timings.jso"));
    assert_false(tar_name_matches("timings.json", "timings.json/x"));
    assert_false(tar_name_matches("*", "a b"));
    assert_true(tar_name_matches("*-*", "a-b-c"));
}

/* What kiln's sandbox init writes: libarchive pax_restricted, ordinary
 * metadata, directory entries first. */
static void write_legit(struct tarbuf *out)
{
    struct archive *a = archive_write_new();
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    size_t cap = 1 << 20, used = 0;
    unsigned char *mem = malloc(cap);
    assert_non_null(mem);
    assert_int_equal(archive_write_open_memory(a, mem, cap, &used), ARCHIVE_OK);
    static const char *dirs[] = {"out/", "out/c0/", "out/c1/"};
    for (size_t i = 0; i < 3; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, dirs[i]);
        archive_entry_set_filetype(e, AE_IFDIR);
        archive_entry_set_perm(e, 0755);
        archive_entry_set_mtime(e, 1700000000, 123456789);
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        archive_entry_free(e);
    }
    static const char *names[] = {"out/c1/y.npy", "out/c0/y.npy", "timings.json", "log.txt"};
    static const char *datas[] = {"one", "zero", "{\"t\": [1.5]}", ""};
    for (size_t i = 0; i < 4; i++) {
        struct archive_entry *e = archive_entry_new();
        archive_entry_set_pathname(e, names[i]);
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_perm(e, 0644);
        archive_entry_set_uid(e, 1000);
        archive_entry_set_uname(e, "candidate");
        archive_entry_set_mtime(e, 1700000000, 123456789);
        archive_entry_set_size(e, (la_int64_t)strlen(datas[i]));
        assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
        assert_int_equal(archive_write_data(a, datas[i], strlen(datas[i])),
                         (la_ssize_t)strlen(datas[i]));
        archive_entry_free(e);
    }
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    out->p = mem;
    out->len = used;
    out->cap = cap;
}

static void test_legit_memory(void **state)
{
    (void)state;
    struct tarbuf b = {0};
    write_legit(&b);
    struct tar_rules rules = std_rules();
    struct tar_contents c;
    struct kiln_err err;
    enum kiln_rc rc = ingest_mem(b.p, b.len, &rules, &c, &err);
    if (rc != KILN_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(c.n, 4);
    /* Sorted by name. */
    assert_string_equal(c.entries[0].name, "log.txt");
    assert_string_equal(c.entries[1].name, "out/c0/y.npy");
    assert_string_equal(c.entries[2].name, "out/c1/y.npy");
    assert_string_equal(c.entries[3].name, "timings.json");
    const struct tar_entry *e = tar_contents_find(&c, "timings.json");
    assert_non_null(e);
    assert_int_equal(e->len, 12);
    assert_string_equal(e->data, "{\"t\": [1.5]}"); /* NUL-terminated */
    e = tar_contents_find(&c, "log.txt");
    assert_non_null(e);
    assert_int_equal(e->len, 0);
    assert_non_null(e->data);
    assert_null(tar_contents_find(&c, "out/c2/y.npy"));
    tar_contents_free(&c);
    assert_null(c.entries);
    free(b.p);
}

static int count_dir(int dirfd)
{
    int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fdopendir(fd);
    assert_non_null(d);
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            n++;
    }
    closedir(d);
    return n;
}

static int fresh_dir(const char *sub)
{
    char path[128];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, sub);
    assert_int_equal(mkdir(path, 0700), 0);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(fd >= 0);
    return fd;
}

static void test_legit_dir(void **state)
{
    (void)state;
    struct tarbuf b = {0};
    write_legit(&b);
    struct tar_rules rules = std_rules();
    int dfd = fresh_dir("legit");
    int fd = tb_fd(b.p, b.len);
    struct tar_names names;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = tar_ingest_to_dir(fd, &rules, dfd, &names, &err);
    if (rc != KILN_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(names.n, 4);
    assert_string_equal(names.names[0], "log.txt");
    assert_string_equal(names.names[3], "timings.json");
    struct stat st;
    assert_int_equal(fstatat(dfd, "out/c1/y.npy", &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_int_equal(st.st_size, 3);
    assert_int_equal(fstatat(dfd, "out/c0", &st, AT_SYMLINK_NOFOLLOW), 0);
    assert_int_equal(st.st_mode & 07777, 0700);
    int ffd = openat(dfd, "timings.json", O_RDONLY | O_CLOEXEC);
    char buf[32] = {0};
    assert_int_equal(read(ffd, buf, sizeof(buf)), 12);
    assert_string_equal(buf, "{\"t\": [1.5]}");
    close(ffd);
    tar_names_free(&names);
    close(fd);
    close(dfd);
    free(b.p);
}

/* Files left in the stream: the .npy outputs are read through and
 * counted but not written; their spans point at their data in the stream
 * file; the small documents are extracted as usual. */
static void test_legit_spans(void **state)
{
    (void)state;
    struct tarbuf b = {0};
    write_legit(&b);
    struct tar_rules rules = std_rules();
    const char *in_stream[] = {"out/*/*.npy"};
    rules.in_stream = in_stream;
    rules.n_in_stream = 1;
    int dfd = fresh_dir("legit-spans");
    int fd = tb_fd(b.p, b.len);
    struct tar_names names;
    struct kiln_err err;
    kiln_err_clear(&err);
    enum kiln_rc rc = tar_ingest_to_dir(fd, &rules, dfd, &names, &err);
    if (rc != KILN_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(names.n, 2);
    assert_string_equal(names.names[0], "log.txt");
    assert_string_equal(names.names[1], "timings.json");
    assert_int_equal(names.nspans, 2);
    assert_string_equal(names.spans[0].name, "out/c0/y.npy");
    assert_string_equal(names.spans[1].name, "out/c1/y.npy");
    const struct tar_span *sp = tar_names_span(&names, "out/c0/y.npy");
    assert_ptr_equal(sp, &names.spans[0]);
    assert_null(tar_names_span(&names, "timings.json"));
    assert_int_equal(sp->len, 4);
    assert_int_equal(sp->offset % 512, 0);
    char data[8] = {0};
    assert_int_equal(pread(fd, data, sp->len, (off_t)sp->offset), 4);
    assert_string_equal(data, "zero");
    sp = tar_names_span(&names, "out/c1/y.npy");
    assert_int_equal(pread(fd, data, sp->len, (off_t)sp->offset), 3);
    assert_memory_equal(data, "one", 3);
    struct stat st;
    assert_int_equal(fstatat(dfd, "timings.json", &st, AT_SYMLINK_NOFOLLOW), 0);
    /* Nothing was created for the files left in the stream. */
    assert_int_equal(fstatat(dfd, "out", &st, AT_SYMLINK_NOFOLLOW), -1);
    assert_int_equal(count_dir(dfd), 2);
    tar_names_free(&names);
    assert_null(names.spans);
    assert_int_equal(names.nspans, 0);
    close(fd);

    /* A stream read from the middle of a file: offsets count from there. */
    size_t pre = 1000;
    unsigned char *shifted = calloc(1, pre + b.len);
    assert_non_null(shifted);
    memcpy(shifted + pre, b.p, b.len);
    fd = tb_fd(shifted, pre + b.len);
    assert_int_equal(lseek(fd, (off_t)pre, SEEK_SET), (off_t)pre);
    int dfd2 = fresh_dir("legit-spans2");
    rc = tar_ingest_to_dir(fd, &rules, dfd2, &names, &err);
    if (rc != KILN_OK)
        fail_msg("%s", err.msg);
    sp = tar_names_span(&names, "out/c0/y.npy");
    assert_int_equal(pread(fd, data, sp->len, (off_t)(pre + sp->offset)), 4);
    assert_memory_equal(data, "zero", 4);
    tar_names_free(&names);
    close(fd);
    close(dfd2);
    free(shifted);
    close(dfd);
    free(b.p);
}

static void test_traversal_and_names(void **state)
{
    (void)state;
    one_bad("../x", '0', NULL, "tar entry \"../x\": parent-directory component");
    one_bad("out/../../etc/x.npy", '0', NULL,
            "tar entry \"out/../../etc/x.npy\": parent-directory component");
    one_bad("/etc/passwd", '0', NULL, "tar entry \"/etc/passwd\": absolute path");
    one_bad("./out/c0/y.npy", '0', NULL,
            "tar entry \"./out/c0/y.npy\": '.' component (names are not normalized)");
    one_bad("out//c0/y.npy", '0', NULL,
            "tar entry \"out//c0/y.npy\": empty path component ('//' or a leading or doubled "
            "'/')");
    one_bad("out/c0/.y.npy", '0', NULL, "tar entry \"out/c0/.y.npy\": component starting with '.'");
    one_bad("out/c0/a b.npy", '0', NULL,
            "tar entry \"out/c0/a b.npy\": byte 0x20 is not allowed in names (use "
            "[A-Za-z0-9._-])");
    one_bad("out/c0/\"\n\x1b.npy", '0', NULL,
            "tar entry \"out/c0/\\x22\\x0a\\x1b.npy\": byte 0x22 is not allowed in names (use "
            "[A-Za-z0-9._-])");
    one_bad("out/c0/y.txt", '0', NULL, "tar entry \"out/c0/y.txt\": not a name this step produces");
    one_bad("out/c0/z/y.npy", '0', NULL,
            "tar entry \"out/c0/z/y.npy\": not a name this step produces");
    /* Directories: expected ones are skipped, others rejected. */
    one_bad("evil/", '5', NULL, "tar entry \"evil/\": unexpected directory");
    one_bad("out/c0/y.npy/", '5', NULL, "tar entry \"out/c0/y.npy/\": unexpected directory");
    one_bad("out/../", '5', NULL, "tar entry \"out/../\": parent-directory component");
    /* A "regular file" named with a trailing '/' is a directory to tar. */
    one_bad("timings.json/", '0', NULL, "tar entry \"timings.json/\": unexpected directory");

    struct tarbuf b = {0};
    struct tar_rules rules = std_rules();
    tb_header(&b, "out/", '5', 0, NULL);
    tb_header(&b, "out/c0/", '5', 0, NULL);
    tb_file(&b, "out/c0/y.npy", "ok");
    tb_end(&b);
    struct tar_contents c;
    struct kiln_err err;
    assert_int_equal(ingest_mem(b.p, b.len, &rules, &c, &err), KILN_OK);
    assert_int_equal(c.n, 1);
    tar_contents_free(&c);
    free(b.p);
    /* A directory header claiming data: libarchive reads that "data" as
     * the next header, so what hides there is checked like any entry. */
    b = (struct tarbuf){0};
    tb_header(&b, "out/", '5', 512, NULL);
    tb_header(&b, "../hidden", '0', 0, NULL);
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED, "tar entry \"../hidden\": parent-directory component");
    free(b.p);
    /* GNU dumpdir ('D'): a directory whose data libarchive would skip. */
    b = (struct tarbuf){0};
    tb_header(&b, "out/", 'D', 10, NULL);
    tb_raw(&b, "0123456789", 10);
    tb_pad(&b);
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED, "tar entry \"out/\": directory entry carrying data");
    free(b.p);
}

static void test_links_and_devices(void **state)
{
    (void)state;
    one_bad("out/c0/y.npy", '2', "/etc/passwd", "tar entry \"out/c0/y.npy\": symbolic link");
    one_bad("out/c0/y.npy", '1', "out/c0/x.npy", "tar entry \"out/c0/y.npy\": hard link");
    one_bad("log.txt", '6', NULL, "tar entry \"log.txt\": FIFO");
    one_bad("log.txt", '3', NULL, "tar entry \"log.txt\": character device");
    one_bad("log.txt", '4', NULL, "tar entry \"log.txt\": block device");
}

static void test_extension_headers(void **state)
{
    (void)state;
    struct tar_rules rules = std_rules();
    /* pax 'path' renames the next entry behind the ustar name. */
    struct tarbuf b = {0};
    tb_file(&b, "out/c0/x.npy", "fine");
    tb_pax(&b, 'x', "path", "../../etc/cron.d/x");
    tb_file(&b, "log.txt", "harmless");
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED,
               "tar entry \"../../etc/cron.d/x\": pax or GNU extension header, or a pre-POSIX "
               "header (kiln accepts plain ustar only)");
    free(b.p);
    /* pax 'size' changes how many bytes belong to the entry. */
    b = (struct tarbuf){0};
    tb_pax(&b, 'x', "size", "2");
    tb_file(&b, "log.txt", "harmless");
    tb_end(&b);
    expect_sub(&b, &rules, "tar entry \"log.txt\": pax or GNU extension header");
    free(b.p);
    /* A global header. */
    b = (struct tarbuf){0};
    tb_pax(&b, 'g', "path", "x");
    tb_file(&b, "log.txt", "harmless");
    tb_end(&b);
    expect_sub(&b, &rules, "pax or GNU extension header");
    free(b.p);
    /* GNU long name ('L'): the next entry takes its name from the data. */
    b = (struct tarbuf){0};
    tb_header(&b, "././@LongLink", 'L', 14, NULL);
    tb_raw(&b, "../../evil.sh", 14);
    tb_pad(&b);
    tb_file(&b, "log.txt", "harmless");
    tb_end(&b);
    /* The smuggled name is the one checked (and rejected). */
    expect_msg(&b, &rules, KILN_E_REJECTED,
               "tar entry \"../../evil.sh\": parent-directory component");
    free(b.p);
    /* The same with a name that would pass every check. */
    b = (struct tarbuf){0};
    tb_file(&b, "out/c0/x.npy", "fine");
    tb_header(&b, "././@LongLink", 'L', 8, NULL);
    tb_raw(&b, "log.txt", 8);
    tb_pad(&b);
    tb_file(&b, "timings.json", "harmless");
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED,
               "tar entry \"log.txt\": extension header before this entry (pax, GNU long "
               "name or volume header; kiln accepts plain ustar only)");
    free(b.p);
    /* GNU long link ('K'): libarchive attaches a link target to the entry. */
    b = (struct tarbuf){0};
    tb_header(&b, "././@LongLink", 'K', 12, NULL);
    tb_raw(&b, "/etc/shadow", 12);
    tb_pad(&b);
    tb_file(&b, "log.txt", "harmless");
    tb_end(&b);
    expect_sub(&b, &rules, "tar entry \"log.txt\": ");
    free(b.p);
    /* A GNU volume header, skipped silently by libarchive. */
    b = (struct tarbuf){0};
    tb_header(&b, "volume", 'V', 0, NULL);
    tb_file(&b, "log.txt", "harmless");
    tb_end(&b);
    expect_sub(&b, &rules, "tar entry \"log.txt\": extension header before this entry");
    free(b.p);
    /* A pre-POSIX (v7) header without the ustar magic. */
    b = (struct tarbuf){0};
    tb_file(&b, "log.txt", "x");
    memset(b.p + 257, 0, 8);
    unsigned sum = 0;
    memset(b.p + 148, ' ', 8);
    for (int i = 0; i < 512; i++)
        sum += b.p[i];
    snprintf((char *)b.p + 148, 8, "%06o", sum);
    tb_end(&b);
    expect_sub(&b, &rules, "tar entry \"log.txt\": pax or GNU extension header, or a pre-POSIX");
    free(b.p);
}

static void test_duplicates(void **state)
{
    (void)state;
    struct tar_rules rules = std_rules();
    struct tarbuf b = {0};
    tb_file(&b, "out/c0/y.npy", "first");
    tb_file(&b, "log.txt", "x");
    tb_file(&b, "out/c0/y.npy", "second");
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED, "tar entry \"out/c0/y.npy\": duplicate name");
    /* In a directory: O_EXCL catches it, and what was written is removed. */
    int dfd = fresh_dir("dup");
    int fd = tb_fd(b.p, b.len);
    struct tar_names names;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(tar_ingest_to_dir(fd, &rules, dfd, &names, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg,
                        "tar entry \"out/c0/y.npy\": duplicate name (or already in the directory)");
    assert_null(names.names);
    assert_int_equal(count_dir(dfd), 0);
    close(fd);
    close(dfd);
    free(b.p);
}

static void test_dir_never_follows(void **state)
{
    (void)state;
    struct tar_rules rules = std_rules();
    int dfd = fresh_dir("follow");
    int elsewhere = fresh_dir("elsewhere");
    char target[128];
    snprintf(target, sizeof(target), "%s/elsewhere", tmpdir);
    /* Planted links: a directory link on the path, a file link at a leaf. */
    assert_int_equal(symlinkat(target, dfd, "out"), 0);
    snprintf(target, sizeof(target), "%s/elsewhere/victim", tmpdir);
    assert_int_equal(symlinkat(target, dfd, "log.txt"), 0);

    struct tarbuf b = {0};
    tb_file(&b, "out/c0/y.npy", "escape");
    tb_end(&b);
    int fd = tb_fd(b.p, b.len);
    struct tar_names names;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(tar_ingest_to_dir(fd, &rules, dfd, &names, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg,
                        "tar entry \"out/c0/y.npy\": a leading component is already a file");
    close(fd);
    free(b.p);

    b = (struct tarbuf){0};
    tb_file(&b, "log.txt", "escape");
    tb_end(&b);
    fd = tb_fd(b.p, b.len);
    kiln_err_clear(&err);
    assert_int_equal(tar_ingest_to_dir(fd, &rules, dfd, &names, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg,
                        "tar entry \"log.txt\": duplicate name (or already in the directory)");
    assert_int_equal(count_dir(elsewhere), 0);
    assert_int_equal(count_dir(dfd), 2); /* the two planted links, untouched */
    close(fd);
    free(b.p);
    close(dfd);
    close(elsewhere);
}

static void test_cleanup_on_failure(void **state)
{
    (void)state;
    struct tar_rules rules = std_rules();
    struct tarbuf b = {0};
    tb_file(&b, "out/c0/y.npy", "a");
    tb_file(&b, "out/c1/y.npy", "b");
    tb_file(&b, "timings.json", "{}");
    tb_header(&b, "../escape", '0', 0, NULL);
    tb_end(&b);
    int dfd = fresh_dir("cleanup");
    int fd = tb_fd(b.p, b.len);
    struct tar_names names;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(tar_ingest_to_dir(fd, &rules, dfd, &names, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg, "tar entry \"../escape\": parent-directory component");
    assert_int_equal(count_dir(dfd), 0);
    close(fd);
    close(dfd);
    free(b.p);
}

static void test_caps(void **state)
{
    (void)state;
    struct tar_rules rules = std_rules();
    rules.max_file_bytes = 1000;
    rules.max_total_bytes = 2500;
    rules.max_files = 3;
    char big[1201];
    memset(big, 'a', 1200);
    big[1200] = '\0';
    char ok[901];
    memset(ok, 'b', 900);
    ok[900] = '\0';

    struct tarbuf b = {0};
    tb_file(&b, "out/c0/y.npy", big);
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED,
               "tar entry \"out/c0/y.npy\": file exceeds the per-file byte cap");
    free(b.p);

    b = (struct tarbuf){0};
    tb_file(&b, "out/c0/y.npy", ok);
    tb_file(&b, "out/c1/y.npy", ok);
    tb_file(&b, "out/c2/y.npy", ok);
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED,
               "tar entry \"out/c2/y.npy\": stream exceeds the total byte cap");
    free(b.p);

    b = (struct tarbuf){0};
    tb_file(&b, "out/c0/y.npy", "1");
    tb_file(&b, "out/c1/y.npy", "2");
    tb_file(&b, "out/c2/y.npy", "3");
    tb_file(&b, "out/c3/y.npy", "4");
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED, "tar entry \"out/c3/y.npy\": more than 3 files");
    free(b.p);

    /* Directory entries are capped too (2 * max_files + 64 headers). */
    b = (struct tarbuf){0};
    for (int i = 0; i < 100; i++)
        tb_header(&b, "out/", '5', 0, NULL);
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED, "tar entry \"out/\": too many entries");
    free(b.p);
}

static void test_lying_sizes_and_truncation(void **state)
{
    (void)state;
    struct tar_rules rules = std_rules();
    /* Header claims 1 GiB, 10 bytes follow: rejected before any reading. */
    struct tarbuf b = {0};
    tb_header(&b, "out/c0/y.npy", '0', 1ULL << 30, NULL);
    tb_raw(&b, "0123456789", 10);
    tb_pad(&b);
    tb_end(&b);
    expect_msg(&b, &rules, KILN_E_REJECTED,
               "tar entry \"out/c0/y.npy\": file exceeds the per-file byte cap");
    free(b.p);
    /* Header claims 4000 bytes, the stream ends first. */
    b = (struct tarbuf){0};
    tb_header(&b, "out/c0/y.npy", '0', 4000, NULL);
    tb_raw(&b, "0123456789", 10);
    expect_sub(&b, &rules, "tar stream: Truncated tar archive");
    free(b.p);
    /* Header claims 5 bytes, 1000 follow: the rest is parsed as a header. */
    b = (struct tarbuf){0};
    tb_header(&b, "out/c0/y.npy", '0', 5, NULL);
    for (int i = 0; i < 1000; i++)
        tb_raw(&b, "Z", 1);
    tb_pad(&b);
    tb_end(&b);
    expect_sub(&b, &rules, "tar stream: ");
    free(b.p);
    /* A valid archive cut in the middle of a file's data. */
    b = (struct tarbuf){0};
    write_legit(&b);
    struct tar_contents c;
    struct kiln_err err;
    size_t cut = 0;
    /* Find the data of timings.json and cut inside it. */
    for (size_t i = 0; i + 5 < b.len; i++) {
        if (memcmp(b.p + i, "{\"t\":", 5) == 0) {
            cut = i + 3;
            break;
        }
    }
    assert_true(cut > 0);
    assert_int_equal(ingest_mem(b.p, cut, &rules, &c, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "tar stream: Truncated tar archive"));
    /* Cut inside a header. */
    assert_int_equal(ingest_mem(b.p, 512 * 3 + 100, &rules, &c, &err), KILN_E_REJECTED);
    assert_non_null(strstr(err.msg, "tar stream: "));
    /* Empty input is not a tar stream. */
    assert_int_equal(ingest_mem(b.p, 0, &rules, &c, &err), KILN_E_REJECTED);
    free(b.p);
    /* Only the end-of-archive blocks: an empty, valid archive. */
    b = (struct tarbuf){0};
    tb_end(&b);
    assert_int_equal(ingest_mem(b.p, b.len, &rules, &c, &err), KILN_OK);
    assert_int_equal(c.n, 0);
    free(b.p);
}

/* 64 MiB of zeros gzip-compressed to a few dozen KiB. */
static void test_compression_bomb(void **state)
{
    (void)state;
    struct archive *a = archive_write_new();
    assert_int_equal(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
    assert_int_equal(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    size_t cap = 4 << 20, used = 0;
    unsigned char *mem = malloc(cap);
    assert_non_null(mem);
    assert_int_equal(archive_write_open_memory(a, mem, cap, &used), ARCHIVE_OK);
    struct archive_entry *e = archive_entry_new();
    archive_entry_set_pathname(e, "log.txt");
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    size_t total = 64 << 20;
    archive_entry_set_size(e, (la_int64_t)total);
    assert_int_equal(archive_write_header(a, e), ARCHIVE_OK);
    static unsigned char zeros[1 << 16];
    for (size_t done = 0; done < total; done += sizeof(zeros))
        assert_int_equal(archive_write_data(a, zeros, sizeof(zeros)), (la_ssize_t)sizeof(zeros));
    archive_entry_free(e);
    assert_int_equal(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    assert_true(used < (1 << 20));

    struct tar_rules rules = std_rules();
    rules.max_file_bytes = rules.max_total_bytes = (size_t)1 << 40; /* caps out of the way */
    struct tarbuf b = {.p = mem, .len = used, .cap = cap};
    expect_msg(&b, &rules, KILN_E_REJECTED,
               "tar stream: Unrecognized archive format (after entry \"(start)\")");
    free(mem);
}

/* Writes `n` empty files out/f<i>.npy into fd, then the end blocks. */
static void write_many(int fd, int n)
{
    struct tarbuf b = {0};
    char name[64];
    for (int i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "out/f%d.npy", i);
        tb_header(&b, name, '0', 0, NULL);
        if (b.len >= (1 << 20) || i == n - 1) {
            if (i == n - 1)
                tb_end(&b);
            size_t off = 0;
            while (off < b.len) {
                ssize_t w = write(fd, b.p + off, b.len - off);
                if (w <= 0) {
                    free(b.p);
                    return; /* the reader stopped: EPIPE */
                }
                off += (size_t)w;
            }
            b.len = 0;
        }
    }
    free(b.p);
}

static enum kiln_rc ingest_many(int n, size_t max_files, struct tar_contents *c,
                                struct kiln_err *err)
{
    int p[2];
    assert_int_equal(pipe2(p, O_CLOEXEC), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(p[0]);
        signal(SIGPIPE, SIG_IGN);
        write_many(p[1], n);
        _exit(0);
    }
    close(p[1]);
    static const char *const pat[] = {"out/*.npy"};
    struct tar_rules rules = {.patterns = pat,
                              .n_patterns = 1,
                              .max_file_bytes = 16,
                              .max_total_bytes = 16,
                              .max_files = max_files};
    kiln_err_clear(err);
    enum kiln_rc rc = tar_ingest_fd(p[0], &rules, c, err);
    close(p[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return rc;
}

static void test_hundred_thousand_files(void **state)
{
    (void)state;
    struct tar_contents c;
    struct kiln_err err;
    assert_int_equal(ingest_many(100000, 1000, &c, &err), KILN_E_REJECTED);
    assert_string_equal(err.msg, "tar entry \"out/f1000.npy\": more than 1000 files");
    assert_null(c.entries);
    /* Allowed that many, it takes them all, in n log n. */
    enum kiln_rc rc = ingest_many(100000, 100000, &c, &err);
    if (rc != KILN_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(c.n, 100000);
    assert_non_null(tar_contents_find(&c, "out/f99999.npy"));
    tar_contents_free(&c);
}

static int make_tmpdir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/kiln-tar-XXXXXX");
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_name_matching),
        cmocka_unit_test(test_legit_memory),
        cmocka_unit_test(test_legit_dir),
        cmocka_unit_test(test_legit_spans),
        cmocka_unit_test(test_traversal_and_names),
        cmocka_unit_test(test_links_and_devices),
        cmocka_unit_test(test_extension_headers),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_dir_never_follows),
        cmocka_unit_test(test_cleanup_on_failure),
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_lying_sizes_and_truncation),
        cmocka_unit_test(test_compression_bomb),
        cmocka_unit_test(test_hundred_thousand_files),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
