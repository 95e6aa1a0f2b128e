/* test_sandbox_data.c - policies, images and the /out packer, with hostile
 * fixtures made here. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fsutil.h"
#include "image.h"
#include "outpack.h"
#include "policy.h"

static const char *src_dir(void)
{
    const char *s = getenv("KILN_SOURCE_DIR");
    return s && *s ? s : sandbox_data_dir();
}

static void put(const char *dir, const char *rel, const char *text)
{
    char p[4096];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    FILE *f = fopen(p, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static char tmp[256];

static int setup(void **state)
{
    (void)state;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(fs_make_tempdir("sbtest", tmp, sizeof(tmp), &err), KILN_OK);
    char p[512];
    snprintf(p, sizeof(p), "%s/policies", tmp);
    mkdir(p, 0755);
    snprintf(p, sizeof(p), "%s/images", tmp);
    mkdir(p, 0755);
    put(tmp, "policies/frag.json",
        "{\"fragment\": true, \"syscalls\": [{\"name\": \"read\", \"reason\": \"r\"}, "
        "{\"name\": \"sendmsg\", \"reason\": \"s\"}, {\"name\": \"close\", \"reason\": \"c\"}]}");
    /* Compiled-policy records go here, not to the user's runtime directory. */
    snprintf(p, sizeof(p), "%s/run", tmp);
    mkdir(p, 0700);
    setenv("XDG_RUNTIME_DIR", p, 1);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    struct kiln_err err;
    kiln_err_clear(&err);
    if (fs_remove_tree(tmp, &err) != KILN_OK)
        return -1;
    return 0;
}

static void test_shipped_policies_compile(void **state)
{
    (void)state;
    const char *names[] = {"script", "compile", "gpu-run", "nvrtc", "torch-gpu"};
    for (size_t i = 0; i < sizeof(names) / sizeof(*names); i++) {
        struct sandbox_policy p;
        struct kiln_err err;
        kiln_err_clear(&err);
        assert_int_equal(policy_load(src_dir(), names[i], &p, &err), KILN_OK);
        assert_int_equal(policy_compile(&p, &err), KILN_OK);
        assert_true(p.bpf_len > 10);
        assert_int_equal(p.allow_gpu,
                         !strcmp(names[i], "gpu-run") || !strcmp(names[i], "torch-gpu"));
        assert_true(p.limits.timeout_ms > 0 && p.limits.output_bytes > 0);
        policy_free(&p);
    }
}

#define LIMITS                                                                                     \
    "\"limits\": {\"timeout_ms\": 1, \"cpu_s\": 1, \"memory_mb\": 1, \"pids\": 1, "                \
    "\"fsize_mb\": 1, \"nofile\": 1, \"tmp_mb\": 1, \"out_mb\": 1, \"tar_mb\": 1, "                \
    "\"output_kb\": 1}"

static void expect_policy_error(const char *json, enum kiln_rc rc, const char *needle)
{
    put(tmp, "policies/bad.json", json);
    struct sandbox_policy p;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(policy_load(tmp, "bad", &p, &err), rc);
    if (!strstr(err.msg, needle))
        fail_msg("'%s' not in '%s'", needle, err.msg);
}

static void test_hostile_policies(void **state)
{
    (void)state;
    expect_policy_error("{" LIMITS ", \"syscalls\": [{\"name\": \"nosuch\", \"reason\": \"x\"}]}",
                        KILN_E_PARSE, "unknown syscall 'nosuch'");
    expect_policy_error("{" LIMITS ", \"syscalls\": [{\"name\": \"read\"}]}", KILN_E_PARSE,
                        "one-line \"reason\"");
    expect_policy_error("{" LIMITS ", \"syscalls\": [{\"name\": \"read\", \"reason\": \"x\", "
                        "\"args\": [{\"arg\": 0, \"op\": \"bitand\", \"value\": 1}]}]}",
                        KILN_E_PARSE, "unknown op 'bitand'");
    expect_policy_error("{" LIMITS ", \"syscalls\": [{\"name\": \"read\", \"reason\": \"x\", "
                        "\"args\": [{\"arg\": 6, \"op\": \"eq\", \"value\": 1}]}]}",
                        KILN_E_PARSE, "\"arg\" 0-5");
    expect_policy_error("{\"limits\": {\"cpu_s\": 1}, \"syscalls\": []}", KILN_E_PARSE,
                        "has no default");
    expect_policy_error("{" LIMITS ", \"include\": [\"../x\"], \"syscalls\": []}", KILN_E_USAGE,
                        "is invalid");
    expect_policy_error("{" LIMITS ", \"syscalls\": [], \"syscalls\": []}", KILN_E_PARSE,
                        "duplicate");
    expect_policy_error("{\"fragment\": true, \"syscalls\": []}", KILN_E_USAGE, "is a fragment");
    expect_policy_error("[1, 2", KILN_E_PARSE, "bad.json:");
    struct sandbox_policy p;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(policy_load(tmp, "../policies/frag", &p, &err), KILN_E_USAGE);
    kiln_err_clear(&err);
    assert_int_equal(policy_load(tmp, "absent", &p, &err), KILN_E_NOTFOUND);
    /* A valid one with an include and an argument filter compiles. */
    put(tmp, "policies/good.json",
        "{" LIMITS ", \"include\": [\"frag\"], \"syscalls\": [{\"name\": \"socket\", "
        "\"reason\": \"x\", \"args\": [{\"arg\": 0, \"op\": \"masked_eq\", \"mask\": "
        "\"0xff\", \"value\": \"1\"}]}, {\"name\": \"clone3\", \"reason\": \"x\", "
        "\"errno\": \"ENOSYS\"}]}");
    kiln_err_clear(&err);
    assert_int_equal(policy_load(tmp, "good", &p, &err), KILN_OK);
    assert_int_equal(policy_compile(&p, &err), KILN_OK);
    assert_int_equal(p.limits.memory_bytes, 1 << 20);
    policy_free(&p);
}

/* The per-process memo of compiled policies: a hit gives the same program
 * and limits; an edited policy or fragment is recompiled on its next use. */
static void test_policy_memo(void **state)
{
    (void)state;
    char json[1024];
    snprintf(json, sizeof(json),
             "{\"include\": [\"frag\"], \"limits\": {\"timeout_ms\": 1, \"cpu_s\": 1, "
             "\"memory_mb\": %d, \"pids\": 1, \"fsize_mb\": 1, \"nofile\": 1, \"tmp_mb\": 1, "
             "\"out_mb\": 1, \"tar_mb\": 1, \"output_kb\": 1}, \"syscalls\": [{\"name\": "
             "\"write\", \"reason\": \"w\"}]}",
             1);

    put(tmp, "policies/memo.json", json);
    struct sandbox_policy a, b, c, fresh;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(policy_load_compiled(tmp, "memo", &a, &err), KILN_OK);
    assert_int_equal(policy_load_compiled(tmp, "memo", &b, &err), KILN_OK);
    assert_int_equal(policy_load(tmp, "memo", &fresh, &err), KILN_OK);
    assert_int_equal(policy_compile(&fresh, &err), KILN_OK);
    assert_int_equal(a.bpf_len, fresh.bpf_len);
    assert_int_equal(b.bpf_len, fresh.bpf_len);
    assert_memory_equal(b.bpf, fresh.bpf, fresh.bpf_len * 8);
    assert_true(a.bpf != b.bpf); /* each caller owns its copy */
    assert_int_equal(b.limits.memory_bytes, 1 << 20);
    policy_free(&b);
    policy_free(&fresh);
    /* Edit the policy: the new limit shows. */
    char *one = strstr(json, "\"memory_mb\": 1");
    assert_non_null(one);
    one[13] = '2';
    put(tmp, "policies/memo.json", json);
    assert_int_equal(policy_load_compiled(tmp, "memo", &b, &err), KILN_OK);
    assert_int_equal(b.limits.memory_bytes, 2 << 20);
    /* Edit the fragment: one more allowed syscall, a longer program. */
    put(tmp, "policies/frag.json",
        "{\"fragment\": true, \"syscalls\": [{\"name\": \"read\", \"reason\": \"r\"}, "
        "{\"name\": \"sendmsg\", \"reason\": \"s\"}, {\"name\": \"close\", \"reason\": "
        "\"c\"}, {\"name\": \"dup\", \"reason\": \"d\"}]}");
    assert_int_equal(policy_load_compiled(tmp, "memo", &c, &err), KILN_OK);
    assert_true(c.bpf_len > b.bpf_len);
    /* A broken edit fails; it does not fall back to the remembered one. */
    put(tmp, "policies/memo.json", "{");
    struct sandbox_policy d;
    assert_int_equal(policy_load_compiled(tmp, "memo", &d, &err), KILN_E_PARSE);
    put(tmp, "policies/frag.json",
        "{\"fragment\": true, \"syscalls\": [{\"name\": \"read\", \"reason\": \"r\"}, "
        "{\"name\": \"sendmsg\", \"reason\": \"s\"}, {\"name\": \"close\", \"reason\": "
        "\"c\"}]}");
    /* A policy that refuses sendmsg could not hand over its listener. */
    put(tmp, "policies/nosend.json",
        "{\"limits\": {\"timeout_ms\": 1, \"cpu_s\": 1, \"memory_mb\": 1, \"pids\": 1, "
        "\"fsize_mb\": 1, \"nofile\": 1, \"tmp_mb\": 1, \"out_mb\": 1, \"tar_mb\": 1, "
        "\"output_kb\": 1}, \"syscalls\": [{\"name\": \"close\", \"reason\": \"c\"}]}");
    kiln_err_clear(&err);
    assert_int_equal(policy_load(tmp, "nosend", &d, &err), KILN_E_PARSE);
    assert_non_null(strstr(err.msg, "must allow sendmsg without conditions"));
    policy_free(&a);
    policy_free(&b);
    policy_free(&c);
}

static void expect_image(const char *json, enum kiln_rc rc, const char *needle)
{
    put(tmp, "images/t.json", json);
    struct sandbox_image *im = malloc(sizeof(*im));
    assert_non_null(im);
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(image_load(tmp, "t", NULL, im, &err), rc);
    if (rc == KILN_OK) {
        if (!strstr(im->skipped, needle))
            fail_msg("'%s' not in skipped '%s'", needle, im->skipped);
        image_free(im);
    } else if (!strstr(err.msg, needle)) {
        fail_msg("'%s' not in '%s'", needle, err.msg);
    }
    free(im);
}

/* In a fresh process (no per-process memo): policy_load_compiled() gives
 * what a fresh compile gives. The child's exit status: 0 same, 1 not. */
static int fresh_process_matches(const char *name)
{
    pid_t pid = fork();
    if (pid == 0) {
        struct sandbox_policy got, want;
        struct kiln_err err;
        kiln_err_clear(&err);
        if (policy_load_compiled(tmp, name, &got, &err) != KILN_OK ||
            policy_load(tmp, name, &want, &err) != KILN_OK ||
            policy_compile(&want, &err) != KILN_OK)
            _exit(2);
        _exit(got.bpf_len == want.bpf_len && !memcmp(got.bpf, want.bpf, want.bpf_len * 8) &&
                      got.limits.memory_bytes == want.limits.memory_bytes
                  ? 0
                  : 1);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 3;
}

static ino_t record_inode(const char *name, mode_t *mode)
{
    char p[512];
    struct stat st;
    snprintf(p, sizeof(p), "%s/run/kiln/policy-%s.bpf", tmp, name);
    if (stat(p, &st) < 0)
        return 0;
    *mode = st.st_mode & 07777;
    return st.st_ino;
}

/* Overwrites `len` bytes at `off` of the record, keeping its inode. */
static void poke_record(const char *name, off_t off, const char *bytes, size_t len)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/run/kiln/policy-%s.bpf", tmp, name);
    int fd = open(p, O_WRONLY);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, bytes, len, off < 0 ? lseek(fd, 0, SEEK_END) + off : off),
                     (ssize_t)len);
    close(fd);
}

/* Compiled policies kept across processes: a record per policy, used by
 * the next process while the files hold the same bytes; an edited
 * fragment, a record someone else could write, or one whose recorded
 * bytes differ from the files is not used. */
static void test_policy_disk(void **state)
{
    (void)state;
    put(tmp, "policies/disk.json",
        "{\"include\": [\"frag\"], \"limits\": {\"timeout_ms\": 1, \"cpu_s\": 1, "
        "\"memory_mb\": 3, \"pids\": 1, \"fsize_mb\": 1, \"nofile\": 1, \"tmp_mb\": 1, "
        "\"out_mb\": 1, \"tar_mb\": 1, \"output_kb\": 1}, \"syscalls\": [{\"name\": "
        "\"write\", \"reason\": \"w\"}]}");
    mode_t mode = 0;
    assert_int_equal(fresh_process_matches("disk"), 0);
    ino_t first = record_inode("disk", &mode);
    assert_true(first != 0);
    assert_int_equal(mode, 0600);
    /* The next process uses the record: not rewritten. */
    assert_int_equal(fresh_process_matches("disk"), 0);
    assert_true(record_inode("disk", &mode) == first);
    /* An edited fragment: recompiled (a longer program), record replaced. */
    put(tmp, "policies/frag.json",
        "{\"fragment\": true, \"syscalls\": [{\"name\": \"read\", \"reason\": \"r\"}, "
        "{\"name\": \"sendmsg\", \"reason\": \"s\"}, {\"name\": \"close\", \"reason\": "
        "\"c\"}, {\"name\": \"dup\", \"reason\": \"d\"}]}");
    assert_int_equal(fresh_process_matches("disk"), 0);
    ino_t second = record_inode("disk", &mode);
    assert_true(second != first);
    /* A program changed in a record others may write: not used. */
    poke_record("disk", -8, "\x06\0\0\0\0\0\xff\x7f", 8); /* last insn: allow */
    char p[512];
    snprintf(p, sizeof(p), "%s/run/kiln/policy-disk.bpf", tmp);
    assert_int_equal(chmod(p, 0622), 0);
    assert_int_equal(fresh_process_matches("disk"), 0);
    assert_true(record_inode("disk", &mode) != second);
    assert_int_equal(mode, 0600);
    /* Recorded bytes that are not the files' (the limit 3 made 4): not used. */
    char rec[64 * 1024];
    int fd = open(p, O_RDONLY);
    ssize_t n = read(fd, rec, sizeof(rec));
    close(fd);
    assert_true(n > 0);
    char *at = memmem(rec, (size_t)n, "\"memory_mb\": 3", 14);
    assert_non_null(at);
    poke_record("disk", at - rec + 13, "4", 1);
    assert_int_equal(fresh_process_matches("disk"), 0);
    /* Cut short: not used. */
    assert_int_equal(truncate(p, n - 3), 0);
    assert_int_equal(fresh_process_matches("disk"), 0);
    put(tmp, "policies/frag.json",
        "{\"fragment\": true, \"syscalls\": [{\"name\": \"read\", \"reason\": \"r\"}, "
        "{\"name\": \"sendmsg\", \"reason\": \"s\"}, {\"name\": \"close\", \"reason\": "
        "\"c\"}]}");
}

/* Images and policies open the same way (sandbox/datadoc.c): the same
 * checks, and the same words naming the file and where the known ones are. */
static void test_data_doc_openings(void **state)
{
    (void)state;
    struct sandbox_policy p;
    struct sandbox_image im;
    struct kiln_err err = KILN_ERR_INIT;
    char want[1024];
    assert_int_equal(policy_load(tmp, "Bad/Name", &p, &err), KILN_E_USAGE);
    assert_string_equal(err.msg,
                        "policy name 'Bad/Name' is invalid: use lowercase letters, digits and '-'");
    kiln_err_clear(&err);
    assert_int_equal(image_load(tmp, "Bad/Name", NULL, &im, &err), KILN_E_USAGE);
    assert_string_equal(err.msg,
                        "image name 'Bad/Name' is invalid: use lowercase letters, digits and '-'");
    kiln_err_clear(&err);
    assert_int_equal(policy_load(tmp, "absent", &p, &err), KILN_E_NOTFOUND);
    snprintf(want, sizeof(want), "policy absent (ls %s/policies for the known ones): ", tmp);
    assert_memory_equal(err.msg, want, strlen(want));
    assert_non_null(strstr(err.msg, "policies/absent.json"));
    kiln_err_clear(&err);
    assert_int_equal(image_load(tmp, "absent", NULL, &im, &err), KILN_E_NOTFOUND);
    snprintf(want, sizeof(want), "image absent (ls %s/images for the known ones): ", tmp);
    assert_memory_equal(err.msg, want, strlen(want));
    assert_non_null(strstr(err.msg, "images/absent.json"));
    /* Each kind's own top-level keys. */
    put(tmp, "policies/odd.json", "{\"cwd\": \"/\"}");
    put(tmp, "images/odd.json", "{\"syscalls\": []}");
    kiln_err_clear(&err);
    assert_int_equal(policy_load(tmp, "odd", &p, &err), KILN_E_PARSE);
    assert_non_null(strstr(err.msg, "policies/odd.json"));
    assert_non_null(strstr(err.msg, "\"cwd\""));
    kiln_err_clear(&err);
    assert_int_equal(image_load(tmp, "odd", NULL, &im, &err), KILN_E_PARSE);
    assert_non_null(strstr(err.msg, "images/odd.json"));
    assert_non_null(strstr(err.msg, "\"syscalls\""));
}

static void test_images(void **state)
{
    (void)state;
    expect_image("{\"binds\": [{\"path\": \"/no/such/dir\"}], \"env\": {}, \"cwd\": \"/\"}",
                 KILN_E_NOTFOUND, "required path /no/such/dir");
    expect_image("{\"binds\": [{\"path\": \"usr\"}], \"env\": {}, \"cwd\": \"/\"}", KILN_E_PARSE,
                 "absolute path");
    expect_image("{\"binds\": [{\"path\": \"/usr/../etc\"}], \"env\": {}, \"cwd\": \"/\"}",
                 KILN_E_PARSE, "without . or ..");
    expect_image("{\"binds\": [{\"path\": \"/\"}], \"env\": {}, \"cwd\": \"/\"}", KILN_E_PARSE,
                 "not /");
    /* A placeholder the caller gave no value for: required fails naming it,
     * optional is skipped; a malformed one is a parse error. */
    expect_image("{\"binds\": [{\"path\": \"@home@\"}], \"env\": {}, \"cwd\": \"/\"}",
                 KILN_E_NOTFOUND, "@home@ not found on this host");
    expect_image("{\"binds\": [{\"path\": \"@home@\", \"optional\": true}], \"env\": {}, "
                 "\"cwd\": \"/\"}",
                 KILN_OK, "@home@ (not found on this host)");
    expect_image("{\"binds\": [{\"path\": \"@Home!\"}], \"env\": {}, \"cwd\": \"/\"}", KILN_E_PARSE,
                 "placeholder");
    expect_image("{\"binds\": [], \"env\": {\"A=B\": \"x\"}, \"cwd\": \"/\"}", KILN_E_PARSE,
                 "bad env name");
    expect_image("{\"binds\": [], \"env\": {}}", KILN_E_PARSE, "\"cwd\"");
    expect_image("{\"binds\": [{\"path\": \"/no/such\", \"optional\": true}, {\"path\": "
                 "\"/usr\"}], \"env\": {\"PATH\": \"/usr/bin\"}, \"cwd\": \"/tmp\"}",
                 KILN_OK, "/no/such (absent)");
    /* Symlinked and nested paths: a link is recreated, a path under an
     * earlier bind is not bound twice. */
    char link[512];
    snprintf(link, sizeof(link), "%s/lnk", tmp);
    assert_int_equal(symlink("usr/bin", link), 0);
    char json[2048];
    snprintf(json, sizeof(json),
             "{\"binds\": [{\"path\": \"/usr\"}, {\"path\": \"/usr/bin\"}, {\"path\": \"%s\"}], "
             "\"env\": {}, \"cwd\": \"/\"}",
             link);
    put(tmp, "images/t.json", json);
    struct sandbox_image *im = malloc(sizeof(*im));
    assert_non_null(im);
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(image_load(tmp, "t", NULL, im, &err), KILN_OK);
    assert_int_equal(im->n_binds, 2);
    assert_string_equal(im->binds[1].link, "usr/bin");
    image_free(im);
    free(im);
}

/* Placeholders take the caller's values: a bind binds the real path and
 * the given spelling; an env value is substituted, else the image's
 * "defaults", else an error naming it. The sandbox knows no name itself. */
static void test_image_vars(void **state)
{
    (void)state;
    char kit[512], lnk[600], real[PATH_MAX];
    snprintf(kit, sizeof(kit), "%s/cuda-kit", tmp);
    snprintf(lnk, sizeof(lnk), "%s/cuda-link", tmp);
    assert_int_equal(mkdir(kit, 0755), 0);
    assert_int_equal(symlink(kit, lnk), 0);
    assert_non_null(realpath(kit, real));
    char var[700];
    snprintf(var, sizeof(var), "cuda=%s", lnk);
    char *vars[] = {var, "other=/x", NULL};
    put(tmp, "images/t.json",
        "{\"binds\": [{\"path\": \"@cuda@\"}], \"env\": {\"LD_LIBRARY_PATH\": "
        "\"/a:@cuda@/lib64:/b\", \"P\": \"@py@/bin\"}, \"defaults\": {\"py\": \"/usr\"}, "
        "\"cwd\": \"/\"}");
    struct sandbox_image *im = malloc(sizeof(*im));
    assert_non_null(im);
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(image_load(tmp, "t", vars, im, &err), KILN_OK);
    char want[PATH_MAX + 64];
    snprintf(want, sizeof(want), "LD_LIBRARY_PATH=/a:%s/lib64:/b", lnk);
    assert_string_equal(im->env[0], want);
    assert_string_equal(im->env[1], "P=/usr/bin");
    assert_int_equal(im->n_binds, 2);
    assert_string_equal(im->binds[0].path, real);
    assert_string_equal(im->binds[1].path, lnk);
    image_free(im);
    /* No value and no default: the error names the env and the placeholder. */
    assert_int_equal(image_load(tmp, "t", NULL, im, &err), KILN_E_NOTFOUND);
    assert_non_null(strstr(err.msg, "@cuda@ not found on this host"));
    put(tmp, "images/t.json",
        "{\"binds\": [], \"env\": {\"L\": \"@cuda@/lib64\"}, \"cwd\": \"/\"}");
    kiln_err_clear(&err);
    assert_int_equal(image_load(tmp, "t", NULL, im, &err), KILN_E_PARSE);
    assert_non_null(strstr(err.msg, "env L uses @cuda@"));
    /* What a caller must supply. */
    put(tmp, "images/t.json",
        "{\"binds\": [{\"path\": \"@a_1@\"}, {\"path\": \"/usr\"}], \"env\": {\"X\": "
        "\"@b@:@a_1@:me@host\"}, \"cwd\": \"/\"}");
    char names[256];
    kiln_err_clear(&err);
    assert_int_equal(image_placeholders(tmp, "t", names, sizeof(names), &err), KILN_OK);
    assert_string_equal(names, "a_1 b");
    free(im);
}

/* Device nodes are the caller's to name, and only a policy with "gpu":
 * true may be granted any; refused before anything is forked. */
static void test_devices_need_policy(void **state)
{
    (void)state;
    char *argv[] = {"/bin/true", NULL};
    char *devs[] = {"null", NULL};
    struct sandbox_spec spec = {.policy = "script",
                                .image = "minimal",
                                .argv = argv,
                                .devices = devs,
                                .stdin_fd = -1,
                                .tar_fd = -1,
                                .data_dir = src_dir()};
    struct sandbox_result res;
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(sandbox_run(&spec, &res, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "policy script grants no GPU or other device"));
    /* An image bind under /tmp, which the set-up hides, is refused by name
     * before anything runs. */
    char cmd[700];
    snprintf(cmd, sizeof(cmd), "cp %s/policies/*.json %s/policies/", src_dir(), tmp);
    assert_int_equal(system(cmd), 0);
    put(tmp, "images/tmpbind.json",
        "{\"binds\": [{\"path\": \"@d@\"}], \"env\": {}, \"cwd\": \"/\"}");
    char *vars[] = {"d=/tmp", NULL};
    struct sandbox_spec s2 = {.policy = "script",
                              .image = "tmpbind",
                              .argv = argv,
                              .vars = vars,
                              .stdin_fd = -1,
                              .tar_fd = -1,
                              .data_dir = tmp};
    kiln_err_clear(&err);
    assert_int_equal(sandbox_run(&s2, &res, &err), KILN_E_UNSUPPORTED);
    assert_non_null(
        strstr(err.msg, "cannot bind /tmp: the sandbox's set-up hides the host's /tmp"));
    char *bad[] = {"../etc", NULL};
    spec.policy = "gpu-run";
    spec.devices = bad;
    kiln_err_clear(&err);
    assert_int_equal(sandbox_run(&spec, &res, &err), KILN_E_USAGE);
    assert_non_null(strstr(err.msg, "must be a name under /dev"));
}

struct skips {
    char text[4096];
    int n;
};

static void on_skip(void *ctx, const char *path, const char *why)
{
    struct skips *s = ctx;
    size_t l = strlen(s->text);
    snprintf(s->text + l, sizeof(s->text) - l, "%s: %s\n", path, why);
    s->n++;
}

static void test_outpack(void **state)
{
    (void)state;
    char d[512], p[600];
    snprintf(d, sizeof(d), "%s/out", tmp);
    assert_int_equal(mkdir(d, 0755), 0);
    put(d, "a.txt", "hello");
    put(d, "big.bin", "0123456789012345678901234567890123456789");
    snprintf(p, sizeof(p), "%s/lnk", d);
    assert_int_equal(symlink("/etc/passwd", p), 0);
    snprintf(p, sizeof(p), "%s/fifo", d);
    assert_int_equal(mkfifo(p, 0644), 0);
    char h1[600], h2[600];
    snprintf(h1, sizeof(h1), "%s/h1", d);
    snprintf(h2, sizeof(h2), "%s/h2", d);
    put(d, "h1", "x");
    assert_int_equal(link(h1, h2), 0);
    int dfd = open(d, O_RDONLY | O_DIRECTORY);
    int mfd = memfd_create("tar", 0);
    assert_true(dfd >= 0 && mfd >= 0);
    struct skips s;
    memset(&s, 0, sizeof(s));
    struct kiln_err err;
    kiln_err_clear(&err);
    /* 20 bytes of data allowed: a.txt fits, big.bin (40) does not. */
    assert_int_equal(outpack_write(dfd, mfd, 20, on_skip, &s, &err), KILN_OK);
    assert_int_equal(s.n, 5);
    assert_non_null(strstr(s.text, "lnk: symlink\n"));
    assert_non_null(strstr(s.text, "fifo: fifo\n"));
    assert_non_null(strstr(s.text, "h1: hard link\n"));
    assert_non_null(strstr(s.text, "h2: hard link\n"));
    assert_non_null(strstr(s.text, "big.bin: too large for the tar size cap\n"));
    lseek(mfd, 0, SEEK_SET);
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    assert_int_equal(archive_read_open_fd(a, mfd, 4096), ARCHIVE_OK);
    struct archive_entry *e;
    int n = 0;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        assert_string_equal(archive_entry_pathname(e), "a.txt");
        assert_int_equal(archive_entry_filetype(e), AE_IFREG);
        char buf[16] = "";
        assert_int_equal(archive_read_data(a, buf, sizeof(buf)), 5);
        assert_memory_equal(buf, "hello", 5);
        n++;
    }
    assert_int_equal(n, 1);
    archive_read_free(a);
    close(dfd);
    close(mfd);
}

/* Paths ustar holds only split into prefix and name (a 120-byte path in a
 * subdirectory), or not at all (a 130-byte file name: a pax path record),
 * and an empty /out (just the end of the archive): read back by libarchive
 * with the names and data intact. */
static void test_outpack_names(void **state)
{
    (void)state;
    char d[512], sub[700], name[160];
    snprintf(d, sizeof(d), "%s/out2", tmp);
    assert_int_equal(mkdir(d, 0755), 0);
    int dfd = open(d, O_RDONLY | O_DIRECTORY);
    int mfd = memfd_create("tar", 0);
    assert_true(dfd >= 0 && mfd >= 0);
    struct skips s;
    memset(&s, 0, sizeof(s));
    struct kiln_err err;
    kiln_err_clear(&err);
    assert_int_equal(outpack_write(dfd, mfd, 1 << 20, on_skip, &s, &err), KILN_OK);
    struct stat st;
    assert_int_equal(fstat(mfd, &st), 0);
    assert_int_equal(st.st_size, 1024);
    assert_int_equal(ftruncate(mfd, 0), 0);
    lseek(mfd, 0, SEEK_SET);

    char dir[80], file[120], split_path[200];
    memset(dir, 'd', 60);
    dir[60] = '\0';
    memset(file, 'f', 59);
    snprintf(file + 59, sizeof(file) - 59, ".txt"); /* 63 bytes: dir/file is 124 */
    snprintf(sub, sizeof(sub), "%s/%s", d, dir);
    assert_int_equal(mkdir(sub, 0755), 0);
    put(sub, file, "split");
    snprintf(split_path, sizeof(split_path), "%s/%s", dir, file);
    memset(name, 'n', 130);
    name[130] = '\0';
    put(d, name, "pax");
    close(dfd); /* a fresh directory offset: the writer reads from dfd's */
    dfd = open(d, O_RDONLY | O_DIRECTORY);
    assert_true(dfd >= 0);
    assert_int_equal(outpack_write(dfd, mfd, 1 << 20, on_skip, &s, &err), KILN_OK);
    assert_int_equal(s.n, 0);
    lseek(mfd, 0, SEEK_SET);
    struct archive *a = archive_read_new();
    archive_read_support_format_tar(a);
    assert_int_equal(archive_read_open_fd(a, mfd, 4096), ARCHIVE_OK);
    struct archive_entry *e;
    int seen = 0;
    while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
        char buf[16] = "";
        ssize_t n = archive_read_data(a, buf, sizeof(buf));
        if (!strcmp(archive_entry_pathname(e), split_path)) {
            assert_int_equal(n, 5);
            assert_memory_equal(buf, "split", 5);
            seen |= 1;
        } else {
            assert_string_equal(archive_entry_pathname(e), name);
            assert_int_equal(n, 3);
            assert_memory_equal(buf, "pax", 3);
            seen |= 2;
        }
    }
    assert_int_equal(seen, 3);
    archive_read_free(a);
    close(dfd);
    close(mfd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_policies_compile),
        cmocka_unit_test(test_hostile_policies),
        cmocka_unit_test(test_policy_memo),
        cmocka_unit_test(test_policy_disk),
        cmocka_unit_test(test_data_doc_openings),
        cmocka_unit_test(test_images),
        cmocka_unit_test(test_image_vars),
        cmocka_unit_test(test_devices_need_policy),
        cmocka_unit_test(test_outpack),
        cmocka_unit_test(test_outpack_names),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
