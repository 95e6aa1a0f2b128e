#include "doctor.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "docs_index.h"
#include "gpuarch.h"
#include "gpuinfo.h"
#include "kiln_version.h"
#include "session.h"
#include "hostvars.h"
#include "profile.h"
#include "proc.h"
#include "pyfind.h"
#include "sandbox.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static struct doctor_item *add(struct doctor_report *r, const char *name, enum doctor_state st)
{
    if (r->n == DOCTOR_MAX_ITEMS)
        return NULL;
    struct doctor_item *it = &r->items[r->n++];
    memset(it, 0, sizeof(*it));
    snprintf(it->name, sizeof(it->name), "%s", name);
    it->state = st;
    it->needed = true;
    return it;
}

/* An NVIDIA GPU is there: then what the cuda backend needs is needed. */
static bool host_has_gpu(void)
{
    struct gpuinfo gpus[GPUINFO_MAX];
    size_t n = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    return gpuinfo_list("/proc", gpus, &n, &e) == KILN_OK && n > 0;
}

#define SETF(field, ...) snprintf((field), sizeof(field), __VA_ARGS__)

/* Runs fn in a forked child; returns its exit status (0 ok, else errno). */
static int in_child(int (*fn)(void))
{
    pid_t pid = fork();
    if (pid < 0)
        return errno;
    if (pid == 0)
        _exit(fn());
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return errno;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 255;
}

static void check_kernel(struct doctor_report *r)
{
    struct utsname u;
    uname(&u);
    int major = 0, minor = 0;
    sscanf(u.release, "%d.%d", &major, &minor);
    /* 5.4: pidfd_open, clone flags kiln filters, seccomp KILL_PROCESS. */
    int ok = major > 5 || (major == 5 && minor >= 4);
    struct doctor_item *it = add(r, "kernel", ok ? DOCTOR_OK : DOCTOR_DEGRADED);
    if (!it)
        return;
    SETF(it->detail, "Linux %s (%s)", u.release, u.machine);
    if (!ok) {
        SETF(it->fix, "use Linux 5.4 or newer");
        SETF(it->disables, "untested kernel: sandbox features may fail");
    }
}

static int try_userns(void)
{
    int flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC |
                CLONE_NEWUTS | CLONE_NEWCGROUP;
    return unshare(flags) == 0 ? 0 : errno;
}

static void check_userns(struct doctor_report *r)
{
    int e = in_child(try_userns);
    struct doctor_item *it = add(r, "user namespaces", e == 0 ? DOCTOR_OK : DOCTOR_MISSING);
    if (!it)
        return;
    if (e == 0) {
        SETF(it->detail, "user, mount, pid, net, ipc, uts and cgroup namespaces can be created");
        return;
    }
    SETF(it->detail, "unshare(user+mount+pid+net+ipc+uts+cgroup) failed: %s", strerror(e));
    SETF(it->fix, "sysctl -w kernel.unprivileged_userns_clone=1 user.max_user_namespaces=15000 "
                  "(or run outside a container that forbids namespaces)");
    SETF(it->disables, "every sandbox: kiln cannot run untrusted code");
}

static int try_seccomp(void)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
        return errno;
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return ENOMEM;
    int rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(getppid), 0);
    if (rc == 0)
        rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc != 0)
        return -rc;
    /* The filter must be in force, not only accepted. */
    errno = 0;
    return syscall(SYS_getppid) == -1 && errno == EPERM ? 0 : EINVAL;
}

static void check_seccomp(struct doctor_report *r)
{
    int e = in_child(try_seccomp);
    unsigned api = seccomp_api_get();
    const struct scmp_version *v = seccomp_version();
    /* API level 3 brings SECCOMP_RET_KILL_PROCESS; kiln needs it. */
    enum doctor_state st = e != 0 ? DOCTOR_MISSING : api < 3 ? DOCTOR_DEGRADED : DOCTOR_OK;
    struct doctor_item *it = add(r, "seccomp", st);
    if (!it)
        return;
    if (e != 0) {
        SETF(it->detail, "installing a seccomp filter failed: %s", strerror(e));
        SETF(it->fix, "use a kernel with CONFIG_SECCOMP_FILTER=y");
        SETF(it->disables, "every sandbox: kiln cannot run untrusted code");
        return;
    }
    SETF(it->detail, "filter mode works (libseccomp %u.%u.%u, API level %u)", v->major, v->minor,
         v->micro, api);
    if (api < 3) {
        SETF(it->fix, "upgrade the kernel and libseccomp (need API level 3)");
        SETF(it->disables, "whole-process kill on a refused syscall");
    }
}

static int read_line(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    if (!fgets(buf, (int)cap, f))
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return 0;
}

static void check_cgroups(struct doctor_report *r)
{
    struct statfs sf;
    char ctl[256] = "";
    if (statfs("/sys/fs/cgroup", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC) {
        read_line("/sys/fs/cgroup/cgroup.controllers", ctl, sizeof(ctl));
        int mem = strstr(ctl, "memory") != NULL, pids = strstr(ctl, "pids") != NULL;
        int writable = access("/sys/fs/cgroup/cgroup.subtree_control", W_OK) == 0;
        enum doctor_state st = mem && pids && writable ? DOCTOR_OK : DOCTOR_DEGRADED;
        struct doctor_item *it = add(r, "cgroups", st);
        if (!it)
            return;
        it->needed = false; /* rlimits stand in, and say so */
        SETF(it->detail, "cgroup v2 at /sys/fs/cgroup, controllers: %s; %s", ctl,
             writable ? "kiln can create child cgroups" : "not writable by kiln");
        if (st != DOCTOR_OK) {
            SETF(it->fix, "run kiln as root or in a delegated cgroup (systemd-run --user -p "
                          "Delegate=yes) with memory and pids enabled");
            SETF(it->disables, "memory.max and pids.max caps: weaker rlimit fallbacks apply");
        }
        return;
    }
    int v1mem = access("/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK) == 0;
    int v1pids = access("/sys/fs/cgroup/pids", F_OK) == 0;
    read_line("/sys/fs/cgroup/unified/cgroup.controllers", ctl, sizeof(ctl));
    struct doctor_item *it = add(r, "cgroups", DOCTOR_DEGRADED);
    if (!it)
        return;
    it->needed = false; /* v1 or rlimits stand in, and say so */
    SETF(it->detail,
         "no pure cgroup v2: hybrid layout (v2 controllers: %s; v1 memory: %s, "
         "v1 pids: %s)",
         ctl[0] ? ctl : "none", v1mem ? "yes" : "no", v1pids ? "yes" : "no");
    SETF(it->fix, "boot with systemd.unified_cgroup_hierarchy=1 for cgroup v2");
    SETF(it->disables, "cgroup v2 limits: kiln uses v1 memory/pids where it can write them, "
                       "else rlimits");
}

typedef int (*cu_fn_int)(unsigned);
typedef int (*cu_fn_pint)(int *);

static int driver_cuda_version(void);

static void check_gpus(struct doctor_report *r)
{
    struct gpuinfo gpus[GPUINFO_MAX];
    size_t n = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    char drv[64] = "";
    if (gpuinfo_list("/proc", gpus, &n, &e) != KILN_OK || n == 0) {
        struct doctor_item *it = add(r, "gpu", DOCTOR_MISSING);
        if (!it)
            return;
        it->needed = false; /* a cpu-only host: the cpu backend is its job */
        SETF(it->detail, "no NVIDIA GPU found%s%s", e.msg[0] ? ": " : "", e.msg);
        SETF(it->fix, "install the NVIDIA driver on a machine with a GPU");
        SETF(it->disables, "the cuda backend (kiln eval/optimize --backend cuda); "
                           "the cpu backend and everything else work");
        return;
    }
    if (gpuinfo_driver_version("/proc", drv, sizeof(drv), &e) != KILN_OK)
        snprintf(drv, sizeof(drv), "unknown");
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib)
        dlclose(lib);
    int cuda_ver = driver_cuda_version();
    int ctl = access("/dev/nvidiactl", F_OK) == 0, uvm = access("/dev/nvidia-uvm", F_OK) == 0;
    for (size_t i = 0; i < n; i++) {
        char node[32];
        snprintf(node, sizeof(node), "/dev/nvidia%d", gpus[i].minor);
        int has = access(node, F_OK) == 0;
        char name[32];
        snprintf(name, sizeof(name), "gpu %zu", i);
        enum doctor_state st = has && ctl && uvm && lib ? DOCTOR_OK : DOCTOR_MISSING;
        struct doctor_item *it = add(r, name, st);
        if (!it)
            return;
        SETF(it->detail,
             "%s, bus %s, nodes %s%s /dev/nvidiactl%s /dev/nvidia-uvm%s, driver %s, "
             "CUDA driver API %d.%d%s",
             gpus[i].model, gpus[i].bus_id, node, has ? "" : " (absent)", ctl ? "" : " (absent)",
             uvm ? "" : " (absent)", drv, cuda_ver / 1000, (cuda_ver % 1000) / 10,
             lib ? "" : " (libcuda.so.1 not loadable)");
        if (st != DOCTOR_OK) {
            SETF(it->fix, "load nvidia and nvidia-uvm modules (nvidia-modprobe -u -c=0) and "
                          "install libcuda.so.1");
            SETF(it->disables, "this GPU");
        }
    }
}

/* The CUDA version the driver supports (cuDriverGetVersion: 12080 for
 * 12.8), 0 when libcuda.so.1 cannot be loaded or initialised. */
static int driver_cuda_version(void)
{
    int v = 0;
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return 0;
    cu_fn_int cu_init = (cu_fn_int)dlsym(lib, "cuInit");
    cu_fn_pint cu_ver = (cu_fn_pint)dlsym(lib, "cuDriverGetVersion");
    if (cu_init && cu_ver && cu_init(0) == 0)
        cu_ver(&v);
    dlclose(lib);
    return v;
}

/* Each GPU's architecture, what kiln compiles for on it, and whether the
 * toolkit and the driver support that (issue #30). */
static void check_archs(struct doctor_report *r)
{
    char list[GPUARCH_LIST_CHARS];
    gpuarch_supported_text(list);
    struct gpuinfo gpus[GPUINFO_MAX];
    size_t n = 0;
    struct kiln_err e;
    kiln_err_clear(&e);
    char harness[PATH_MAX];
    if (gpuinfo_list("/proc", gpus, &n, &e) != KILN_OK || n == 0 ||
        eval_harness_path(KILN_BACKEND_CUDA, harness, sizeof(harness), &e) != KILN_OK) {
        struct doctor_item *it = add(r, "arch", list[0] ? DOCTOR_OK : DOCTOR_MISSING);
        if (it)
            it->needed = n > 0; /* without a GPU the cuda backend is not this host's job */
        if (it && list[0])
            SETF(it->detail,
                 "no GPU to ask here: candidates are compiled for sm_%d unless --arch names "
                 "another; this kiln compiles for %s (CUDA %s)",
                 GPUARCH_DEFAULT, list, KILN_CUDA_VERSION);
        else if (it) {
            SETF(it->detail, "kiln was built without the CUDA toolkit");
            SETF(it->fix, "install the CUDA toolkit and rebuild (scripts/setup)");
            SETF(it->disables, "the cuda backend");
        }
        return;
    }
    int drv = driver_cuda_version(), tk_major = atoi(KILN_CUDA_VERSION);
    for (size_t i = 0; i < n; i++) {
        struct gpu_props props;
        struct eval_target t;
        struct device_limits lim;
        char name[32];
        snprintf(name, sizeof(name), "arch of gpu %zu", i);
        kiln_err_clear(&e);
        enum kiln_rc rc = eval_device_probe(harness, (int)i, &props, &lim, &e);
        if (rc == KILN_OK)
            rc = eval_target_resolve(NULL, &lim, (int)i, &t, &e);
        bool driver_ok = drv / 1000 >= tk_major;
        struct doctor_item *it =
            add(r, name, rc == KILN_OK && driver_ok ? DOCTOR_OK : DOCTOR_MISSING);
        if (!it)
            return;
        if (rc != KILN_OK) {
            SETF(it->detail, "%s", e.msg);
            SETF(it->fix, "kiln doctor's gpu lines say what is missing; a GPU newer than the "
                          "toolkit needs a newer CUDA toolkit");
            SETF(it->disables, "the cuda backend on this GPU");
            continue;
        }
        struct gpu_peaks pk = {0};
        struct kiln_err pe;
        kiln_err_clear(&pe);
        if (gpupeak_compute(&props, &pk, &pe) != KILN_OK)
            pk.bytes_per_s = 0; /* a figure only: the line then says 0.00 */
        SETF(it->detail,
             "%s is %s; kiln compiles for %s (the toolkit, CUDA %s, supports it); the driver "
             "supports CUDA %d.%d%s; DRAM %.2f TB/s nominal, a device copy measured %.2f TB/s",
             gpus[i].model, t.arch, t.arch, KILN_CUDA_VERSION, drv / 1000, (drv % 1000) / 10,
             driver_ok ? "" : ", older than the toolkit: its cubins may not load",
             pk.bytes_per_s / 1e12, props.copy_mb_per_s / 1e6);
        if (!driver_ok) {
            SETF(it->fix,
                 "install a driver that supports CUDA %d (or build kiln with a toolkit "
                 "the driver supports)",
                 tk_major);
            SETF(it->disables, "the cuda backend on this GPU");
        }
    }
}

static void check_nvcc(struct doctor_report *r)
{
    char out[4096];
    int st = -1;
    struct kiln_err e;
    kiln_err_clear(&e);
    char *argv1[] = {"nvcc", "--version", NULL};
    char *argv2[] = {"/usr/local/cuda/bin/nvcc", "--version", NULL};
    const char *used = "nvcc";
    if (proc_capture(argv1, out, sizeof(out), 10000, &st, &e) != KILN_OK || st != 0) {
        kiln_err_clear(&e);
        used = argv2[0];
        if (proc_capture(argv2, out, sizeof(out), 10000, &st, &e) != KILN_OK)
            st = -1;
    }
    const char *rel = st == 0 ? strstr(out, "release ") : NULL;
    struct doctor_item *it = add(r, "nvcc", rel ? DOCTOR_OK : DOCTOR_MISSING);
    if (!it)
        return;
    it->needed = host_has_gpu();
    if (!rel) {
        SETF(it->detail, "nvcc not found in PATH or /usr/local/cuda/bin");
        SETF(it->fix, "install the CUDA toolkit in /usr/local/cuda");
        SETF(it->disables, "compiling CUDA candidates");
        return;
    }
    SETF(it->detail, "%s: %.*s", used, (int)strcspn(rel, "\n"), rel);
}

typedef int (*nvrtc_ver_fn)(int *, int *);

static void check_nvrtc(struct doctor_report *r)
{
    static const char *names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so",
                                  "/usr/local/cuda/lib64/libnvrtc.so", NULL};
    void *lib = NULL;
    const char *found = NULL;
    /* Kept loaded (RTLD_NODELETE): unloading NVRTC would unload the libstdc++
     * it brought in, whose emergency exception pool would then look leaked. */
    for (const char **n = names; *n && !lib; n++)
        if ((lib = dlopen(*n, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)))
            found = *n;
    int major = 0, minor = 0;
    if (lib) {
        nvrtc_ver_fn fn = (nvrtc_ver_fn)dlsym(lib, "nvrtcVersion");
        if (fn)
            fn(&major, &minor);
        dlclose(lib);
    }
    struct doctor_item *it = add(r, "nvrtc", major ? DOCTOR_OK : DOCTOR_DEGRADED);
    if (!it)
        return;
    it->needed = false;
    if (!major) {
        SETF(it->detail, "libnvrtc not loadable");
        SETF(it->fix, "install the CUDA toolkit's NVRTC (cuda-nvrtc package)");
        SETF(it->disables, "nothing yet: kiln compiles with nvcc");
        return;
    }
    SETF(it->detail, "NVRTC %d.%d (%s)", major, minor, found);
}

static void check_python(struct doctor_report *r)
{
    struct pyfind py;
    struct kiln_err e;
    kiln_err_clear(&e);
    enum kiln_rc rc = pyfind_numpy(&py, &e);
    struct doctor_item *it = add(r, "python3+numpy", rc == KILN_OK ? DOCTOR_OK : DOCTOR_MISSING);
    if (!it)
        return;
    if (rc != KILN_OK) {
        SETF(it->detail, "%s", e.msg);
        SETF(it->fix, "apt-get install python3 python3-numpy (or set KILN_PYTHON to a python3 "
                      "that imports numpy)");
        SETF(it->disables, "workload input and reference scripts");
        return;
    }
    SETF(it->detail, "%s: Python %s, numpy %s", py.path, py.python_version, py.numpy_version);
}

/* What each sandbox image resolves to on this host (images/<name>.json). */
static void check_images(struct doctor_report *r)
{
    static const char *const names[] = {"compile", "script", "gpu-run"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        char title[32], desc[1024];
        struct kiln_err err;
        kiln_err_clear(&err);
        snprintf(title, sizeof(title), "image %s", names[i]);
        struct hostvars *hv = calloc(1, sizeof(*hv));
        enum kiln_rc rc = hv ? hostvars_for_image(NULL, names[i], hv, &err)
                             : kiln_fail(&err, KILN_E_NOMEM, "out of memory");
        if (rc == KILN_OK)
            rc = sandbox_image_describe(NULL, names[i], hv->vars, desc, sizeof(desc), &err);
        free(hv);
        struct doctor_item *it = add(r, title, rc == KILN_OK ? DOCTOR_OK : DOCTOR_MISSING);
        if (!it)
            return;
        SETF(it->detail, "%s", rc == KILN_OK ? desc : err.msg);
        if (rc != KILN_OK) {
            SETF(it->fix, "install what the message names, or edit %s/images/%s.json",
                 sandbox_data_dir(), names[i]);
            SETF(it->disables, "sandboxes of kind %s", names[i]);
        }
    }
}

/* Runs `python3 -c CODE` in a real script sandbox, as inputs.py and
 * reference.py run (policy and image "script", the sandbox's own uid):
 * true when it exited 0; `why` (cap bytes) says what went wrong, or holds
 * its stdout's first line when it worked. */
static bool script_sandbox_python(const char *code, double *wall_s, char *why, size_t cap)
{
    struct kiln_err err;
    kiln_err_clear(&err);
    struct hostvars *hv = calloc(1, sizeof(*hv));
    struct sandbox_result res;
    memset(&res, 0, sizeof(res));
    char *argv[] = {"python3", "-c", (char *)code, NULL};
    struct sandbox_spec spec = {
        .policy = "script", .image = "script", .argv = argv, .stdin_fd = -1, .tar_fd = -1};
    spec.limits.timeout_ms = 60000;
    enum kiln_rc rc = hv ? hostvars_for_image(NULL, "script", hv, &err)
                         : kiln_fail(&err, KILN_E_NOMEM, "out of memory");
    if (rc == KILN_OK) {
        spec.vars = hv->vars;
        rc = sandbox_run(&spec, &res, &err);
    }
    free(hv);
    bool ok = rc == KILN_OK && res.verdict == SANDBOX_EXITED && res.exit_code == 0;
    *wall_s = res.wall_s;
    if (ok) {
        const char *o = res.out.data ? res.out.data : "";
        snprintf(why, cap, "%.*s", (int)strcspn(o, "\n"), o);
    } else {
        char line[256];
        if (rc == KILN_OK)
            sandbox_verdict_line(&res, line, sizeof(line));
        const char *e = rc == KILN_OK && res.err.data ? res.err.data : "";
        size_t len = strlen(e);
        snprintf(why, cap, "%s%s%s", rc == KILN_OK ? line : err.msg, *e ? "; stderr: " : "",
                 len > 400 ? e + len - 400 : e);
    }
    sandbox_result_free(&res);
    return ok;
}

/* A real script sandbox: python3 importing numpy under the script policy
 * and image. Finding python3 as root proves little: the sandbox's
 * unprivileged uid must reach it too. */
static void check_script_sandbox(struct doctor_report *r)
{
    char why[600];
    double wall = 0;
    bool ok = script_sandbox_python("import numpy", &wall, why, sizeof(why));
    struct doctor_item *it = add(r, "script sandbox", ok ? DOCTOR_OK : DOCTOR_MISSING);
    if (it && ok)
        SETF(it->detail, "python3 -c 'import numpy' ran in the script sandbox in %.3f s", wall);
    if (it && !ok) {
        SETF(it->detail, "python3 -c 'import numpy' in the script sandbox: %s", why);
        SETF(it->fix, "make python3 and its prefix readable by any user (every directory "
                      "above it needs o+x; a pyenv under /root is not), or point KILN_PYTHON "
                      "at a python3 outside private directories");
        SETF(it->disables, "workload input and reference scripts");
    }
}

/* torch in the script sandbox: `kiln import kernelbench` runs each
 * problem's model there (its probe imports torch). Optional. Found, not
 * imported: importing torch takes seconds, finding it milliseconds. */
static void check_torch(struct doctor_report *r)
{
    static const char find[] = "import importlib.util as u, sys\n"
                               "if u.find_spec('torch') is None:\n"
                               "    sys.exit('No module named torch')\n"
                               "try:\n"
                               "    import importlib.metadata as m\n"
                               "    print(m.version('torch'))\n"
                               "except Exception:\n"
                               "    print('(version unknown)')\n";
    char why[600];
    double wall = 0;
    bool ok = script_sandbox_python(find, &wall, why, sizeof(why));
    struct doctor_item *it = add(r, "torch", ok ? DOCTOR_OK : DOCTOR_DEGRADED);
    if (!it)
        return;
    it->needed = false;
    if (ok) {
        SETF(it->detail, "torch %s found by python3 in the script sandbox", why);
        return;
    }
    SETF(it->detail, "python3 in the script sandbox finds no torch: %s", why);
    SETF(it->fix, "apt-get install python3-torch (or install torch for the python3 kiln runs: "
                  "KILN_PYTHON)");
    SETF(it->disables, "kiln import kernelbench (its probe runs the model with torch)");
}

/* Nsight Compute for `kiln optimize --profile` (cheap: ncu is not run). */
static void check_profiler(struct doctor_report *r)
{
    char desc[512];
    bool found = profile_describe_host(desc, sizeof(desc));
    struct doctor_item *it = add(r, "profiler", found ? DOCTOR_OK : DOCTOR_DEGRADED);
    if (!it)
        return;
    it->needed = false;
    SETF(it->detail, "%s", desc);
    if (!found) {
        SETF(it->fix, "install Nsight Compute (cuda-nsight-compute) or set KILN_NCU to ncu");
        SETF(it->disables, "kiln optimize --profile (runs go on without it)");
    }
}

/* kiln's documentation index for `kiln docs search` and `optimize --docs`. */
static void check_docs(struct doctor_report *r)
{
    char path[PATH_MAX];
    struct docs_index *ix = NULL;
    struct kiln_err e;
    kiln_err_clear(&e);
    enum kiln_rc rc = docs_index_builtin_path(path, sizeof(path), &e);
    if (rc == KILN_OK)
        rc = docs_index_open(path, &ix, &e);
    struct doctor_item *it = add(r, "docs index", rc == KILN_OK ? DOCTOR_OK : DOCTOR_DEGRADED);
    if (it)
        it->needed = false;
    if (it && rc == KILN_OK)
        SETF(it->detail, "%s: %zu passages", path, docs_index_count(ix));
    if (it && rc != KILN_OK) {
        SETF(it->detail, "%s", e.msg);
        SETF(it->fix, "cmake --build build --target kiln_docs_db (or set KILN_DOCS_DB)");
        SETF(it->disables, "kiln docs search, kiln optimize --docs");
    }
    docs_index_close(ix);
}

static void (*const checks[])(struct doctor_report *) = {
    check_kernel,         check_userns, check_seccomp,  check_cgroups, check_gpus,
    check_archs,          check_nvcc,   check_nvrtc,    check_python,  check_images,
    check_script_sandbox, check_torch,  check_profiler, check_docs,
};

enum kiln_rc doctor_collect(struct doctor_report *r, struct kiln_err *err)
{
    r->n = 0;
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
        checks[i](r);
    if (r->n == DOCTOR_MAX_ITEMS)
        return kiln_fail(err, KILN_E_INTERNAL, "doctor report overflowed %d items",
                         DOCTOR_MAX_ITEMS);
    return KILN_OK;
}

const char *doctor_state_name(enum doctor_state s)
{
    switch (s) {
    case DOCTOR_OK:
        return "OK";
    case DOCTOR_DEGRADED:
        return "DEGRADED";
    case DOCTOR_MISSING:
        return "MISSING";
    }
    return "?";
}

int doctor_exit_status(const struct doctor_report *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->items[i].needed && r->items[i].state != DOCTOR_OK)
            return 1;
    return 0;
}
