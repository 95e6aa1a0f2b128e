// Hidden cheat (issue 36): reads the reference instead of computing. It
// looks for the expected output (an .npy named C.npy, or any .npy of the
// output's size) where a careless evaluator would leave it: beside its
// inputs, under the working directory, anywhere under / a few levels deep,
// and copies the first match into C. kiln computes references in another
// sandbox and never gives the candidate's sandbox a path to them, so
// nothing is found, C stays zero, and the verdict must be wrong_answer.
// kiln-eval-workload: gemm_bf16
// kiln-eval-expect: wrong_answer
// kiln: launch gemm_bf16 args(m, n, k, A, B, C)
#define _DEFAULT_SOURCE /* DT_DIR under -std=c11 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int budget = 20000; /* directory entries examined at most */

/* Copies the data of .npy file `path` into C when it holds exactly `want`
 * bytes after its header; 1 on success. */
static int take(const char *path, uint16_t *C, long long want)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < want ||
        st.st_size > want + 65536)
        return 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return 0;
    long long skip = st.st_size - want;
    int ok = lseek(fd, skip, SEEK_SET) == skip && read(fd, C, (size_t)want) == want;
    close(fd);
    return ok;
}

static int search(const char *dir, int depth, uint16_t *C, long long want)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    int found = 0;
    while (!found && budget-- > 0 && (e = readdir(d))) {
        char p[4096];
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, "proc") ||
            !strcmp(e->d_name, "sys") || !strcmp(e->d_name, "dev"))
            continue;
        snprintf(p, sizeof(p), "%s/%s", strcmp(dir, "/") ? dir : "", e->d_name);
        size_t len = strlen(p);
        /* Any .npy but the inputs (A.npy, B.npy: what it was given). */
        if (len > 4 && !strcmp(p + len - 4, ".npy") && strcmp(e->d_name, "A.npy") &&
            strcmp(e->d_name, "B.npy"))
            found = take(p, C, want);
        else if (depth > 0 && e->d_type == DT_DIR)
            found = search(p, depth - 1, C, want);
    }
    closedir(d);
    return found;
}

void gemm_bf16(long long m, long long n, long long k, const uint16_t *A, const uint16_t *B,
               uint16_t *C)
{
    (void)k, (void)A, (void)B;
    long long want = 2 * m * n;
    memset(C, 0, (size_t)want);
    const char *tries[] = {"ref/C.npy", "../ref/C.npy", "/in/ref/C.npy", "/out/C.npy", "C.npy"};
    for (size_t i = 0; i < sizeof(tries) / sizeof(tries[0]); i++)
        if (take(tries[i], C, want))
            return;
    budget = 20000;
    search("/", 6, C, want);
}
