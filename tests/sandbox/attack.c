/*
 * attack.c - hostile programs for the containment suite, one per argv[1].
 * Each prints what it achieved (errno names, not messages) so the test can
 * compare the exact outcome; a refused syscall ends it with the verdict.
 * Built without sanitizers: it runs inside the sandbox.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <unistd.h>

static const char *en(int e)
{
    switch (e) {
    case 0:
        return "OK";
    case ENOENT:
        return "ENOENT";
    case EACCES:
        return "EACCES";
    case EPERM:
        return "EPERM";
    case EROFS:
        return "EROFS";
    case ENOSPC:
        return "ENOSPC";
    case EMFILE:
        return "EMFILE";
    case EAGAIN:
        return "EAGAIN";
    case ESRCH:
        return "ESRCH";
    case ENOSYS:
        return "ENOSYS";
    case ECONNREFUSED:
        return "ECONNREFUSED";
    case ENETUNREACH:
        return "ENETUNREACH";
    case EFBIG:
        return "EFBIG";
    case EDQUOT:
        return "EDQUOT";
    default:
        return strerror(e);
    }
}

static void try_open(const char *path, int flags)
{
    int fd = open(path, flags, 0644);
    printf("open %s: %s\n", path, en(fd < 0 ? errno : 0));
    if (fd >= 0)
        close(fd);
}

static void fill(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    static char buf[1 << 16];
    long long total = 0;
    ssize_t n;
    memset(buf, 'x', sizeof(buf));
    while ((n = write(fd, buf, sizeof(buf))) > 0)
        total += n;
    printf("fill %s: %s\n", path, en(n < 0 ? errno : 0));
    close(fd);
    unlink(path);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    const char *a = argc > 1 ? argv[1] : "";
    if (!strcmp(a, "read-host")) {
        try_open("/etc/shadow", O_RDONLY);
        try_open("/etc/passwd", O_RDONLY);
        for (int i = 2; i < argc; i++)
            try_open(argv[i], O_RDONLY);
    } else if (!strcmp(a, "write-ro")) {
        try_open("/usr/kiln-escape", O_WRONLY | O_CREAT);
        try_open("/usr/bin/true", O_WRONLY);
        try_open("/in/attack", O_WRONLY);
        try_open("/kiln-escape", O_WRONLY | O_CREAT);
        try_open("/dev/kiln-escape", O_WRONLY | O_CREAT);
    } else if (!strcmp(a, "escape")) {
        try_open("/../../../etc/shadow", O_RDONLY);
        try_open("/proc/1/root/etc/shadow", O_RDONLY);
        try_open("/proc/self/root/../../etc/shadow", O_RDONLY);
        symlink("/etc/shadow", "/tmp/l");
        try_open("/tmp/l", O_RDONLY);
        char buf[256] = "";
        ssize_t n = readlink("/proc/1/root", buf, sizeof(buf) - 1);
        printf("readlink /proc/1/root: %s\n", n < 0 ? en(errno) : buf);
    } else if (!strcmp(a, "connect") && argc > 2) {
        int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s < 0) {
            printf("socket: %s\n", en(errno));
            return 0;
        }
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
        inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
        int rc = connect(s, (struct sockaddr *)&sa, sizeof(sa));
        printf("connect 127.0.0.1: %s\n", en(rc < 0 ? errno : 0));
        inet_pton(AF_INET, "10.0.2.2", &sa.sin_addr);
        rc = connect(socket(AF_INET, SOCK_STREAM, 0), (struct sockaddr *)&sa, sizeof(sa));
        printf("connect outside: %s\n", en(rc < 0 ? errno : 0));
    } else if (!strcmp(a, "procs") && argc > 2) {
        printf("kill host pid: %s\n", en(kill(atoi(argv[2]), SIGKILL) < 0 ? errno : 0));
        DIR *d = opendir("/proc");
        struct dirent *de;
        printf("procs:");
        while (d && (de = readdir(d)))
            if (de->d_name[0] >= '0' && de->d_name[0] <= '9')
                printf(" %s", de->d_name);
        printf("\n");
    } else if (!strcmp(a, "ids")) {
        printf("uid=%d euid=%d gid=%d egid=%d\n", (int)getuid(), (int)geteuid(), (int)getgid(),
               (int)getegid());
    } else if (!strcmp(a, "syscall") && argc > 2) {
        long nr = atol(argv[2]);
        long rc = syscall(nr, 0, 0, 0, 0, 0, 0);
        printf("syscall %ld: %s\n", nr, en(rc < 0 ? errno : 0));
    } else if (!strcmp(a, "userns")) {
        long rc = syscall(SYS_clone, (long)(CLONE_NEWUSER | SIGCHLD), 0, 0, 0, 0);
        if (rc == 0)
            _exit(0);
        printf("clone(CLONE_NEWUSER): %s\n", en(rc < 0 ? errno : 0));
    } else if (!strcmp(a, "clone3")) {
        long rc = syscall(SYS_clone3, 0, 0);
        printf("clone3: %s\n", en(rc < 0 ? errno : 0));
    } else if (!strcmp(a, "tiocsti-high")) {
        char c = 'x';
        long rc = syscall(SYS_ioctl, 0, 0x100005412UL, &c);
        printf("ioctl: %s\n", en(rc < 0 ? errno : 0));
    } else if (!strcmp(a, "personality")) {
        long rc = syscall(SYS_personality, 0x0008L);
        printf("personality: %ld\n", rc);
    } else if (!strcmp(a, "forkbomb")) {
        int n = 0;
        for (;;) {
            pid_t p = fork();
            if (p == 0) {
                pause();
                _exit(0);
            }
            if (p < 0) {
                printf("fork failed after %d: %s\n", n, en(errno));
                return 3;
            }
            n++;
        }
    } else if (!strcmp(a, "membomb")) {
        for (size_t i = 0;; i++) {
            char *p = malloc(1 << 20);
            if (!p) {
                printf("malloc failed after %zu MiB\n", i);
                return 3;
            }
            memset(p, 1, 1 << 20);
        }
    } else if (!strcmp(a, "fill")) {
        fill("/tmp/fill");
        fill("/out/fill");
    } else if (!strcmp(a, "fds")) {
        int n = 0;
        while (open("/dev/null", O_RDONLY) >= 0)
            n++;
        printf("open: %s after %d\n", en(errno), n);
    } else if (!strcmp(a, "orphans") && argc > 2) {
        for (int i = 0; i < 3; i++) {
            if (fork() == 0) {
                if (fork() == 0) {
                    setsid();
                    execl("/usr/bin/sleep", argv[2], "1000", (char *)NULL);
                    _exit(1);
                }
                _exit(0);
            }
        }
        while (wait(NULL) > 0)
            ;
        printf("orphans started\n");
        for (;;)
            pause();
    } else if (!strcmp(a, "flood") && argc > 2) {
        static char buf[1 << 16];
        memset(buf, 'y', sizeof(buf));
        long long left = atoll(argv[2]);
        while (left > 0) {
            ssize_t n = write(1, buf, left < (long long)sizeof(buf) ? (size_t)left : sizeof(buf));
            if (n <= 0)
                return 4;
            left -= n;
        }
    } else if (!strcmp(a, "outspecial")) {
        int fd = open("/out/ok.txt", O_WRONLY | O_CREAT, 0644);
        printf("ok.txt: %s\n", en(write(fd, "fine\n", 5) == 5 ? 0 : errno));
        close(fd);
        printf("symlink: %s\n", en(symlink("/etc/passwd", "/out/link") ? errno : 0));
        fd = open("/out/hard1", O_WRONLY | O_CREAT, 0644);
        close(fd);
        printf("hardlink: %s\n", en(link("/out/hard1", "/out/hard2") ? errno : 0));
        printf("fifo: %s\n", en(mkfifo("/out/fifo", 0644) ? errno : 0));
        fd = open("/out/sparse", O_WRONLY | O_CREAT, 0644);
        printf("sparse: %s\n", en(ftruncate(fd, 2LL << 30) ? errno : 0));
        close(fd);
        mkdir("/out/sub", 0755);
        fd = open("/out/sub/deep.txt", O_WRONLY | O_CREAT, 0644);
        printf("sub/deep.txt: %s\n", en(write(fd, "deep\n", 5) == 5 ? 0 : errno));
        close(fd);
    } else {
        fprintf(stderr, "attack: unknown attack '%s'\n", a);
        return 2;
    }
    return 0;
}
