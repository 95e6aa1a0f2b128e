/*
 * cuda_emu_check.cpp - runs one built-in workload's kernel.cu, built for one
 * configuration of its tunables, on the CPU (cuda_emu.h) over small cases
 * chosen to hit every edge (sizes that are not multiples of any tile, a
 * single row or column, k = 1, misaligned buffers that must take the scalar
 * fallback), and compares each output with a float64 reference written
 * here. The launch plan (grid, block, args order) is read from the file's
 * own `// kiln: launch` directives and evaluated with the tunables given, so
 * a wrong directive fails this check as it would fail on the GPU.
 *
 * The kernel is built apart, per configuration (cuda_emu_kernel.cpp); this
 * file does not depend on the configuration, so it is built once per
 * workload and linked with each (kernels_emu.sh).
 *
 * Build: c++ -std=c++17 -c -DWL_<name> cuda_emu_check.cpp, linked with
 *        cuda_emu_kernel.cpp's object for the configuration
 * Run:   cuda_emu_check path/kernel.cu NAME=v ...   (exit 0: all cases pass)
 */
#include "cuda_emu.h"
#include "cuda_emu_kernels.h"

#include <map>
#include <string>

namespace {

typedef std::map<std::string, long long> vars_t;

/* The candidate expression language: + - * / %, parentheses, unary minus,
 * cdiv/min/max. Errors abort: the files are ours. */
struct parser {
    const std::string &s;
    size_t i;
    const vars_t &v;
    void ws()
    {
        while (i < s.size() && s[i] == ' ')
            i++;
    }
    [[noreturn]] void die(const char *what)
    {
        fprintf(stderr, "expression '%s': %s at column %zu\n", s.c_str(), what, i + 1);
        exit(2);
    }
    long long primary()
    {
        ws();
        if (i < s.size() && s[i] == '(') {
            i++;
            long long r = sum();
            ws();
            if (i >= s.size() || s[i] != ')')
                die("expected )");
            i++;
            return r;
        }
        if (i < s.size() && s[i] == '-') {
            i++;
            return -primary();
        }
        if (i < s.size() && isdigit((unsigned char)s[i])) {
            long long r = 0;
            while (i < s.size() && isdigit((unsigned char)s[i]))
                r = r * 10 + (s[i++] - '0');
            return r;
        }
        size_t st = i;
        while (i < s.size() && (isalnum((unsigned char)s[i]) || s[i] == '_'))
            i++;
        std::string id = s.substr(st, i - st);
        if (id.empty())
            die("expected a value");
        ws();
        if (i < s.size() && s[i] == '(') {
            i++;
            long long a = sum();
            ws();
            if (s[i] != ',')
                die("expected ,");
            i++;
            long long b = sum();
            ws();
            if (s[i] != ')')
                die("expected )");
            i++;
            if (id == "cdiv")
                return (a + b - 1) / b;
            if (id == "min")
                return a < b ? a : b;
            if (id == "max")
                return a > b ? a : b;
            die("unknown function");
        }
        auto it = v.find(id);
        if (it == v.end())
            die("unknown name");
        return it->second;
    }
    long long product()
    {
        long long r = primary();
        for (;;) {
            ws();
            if (i >= s.size() || (s[i] != '*' && s[i] != '/' && s[i] != '%'))
                return r;
            char op = s[i++];
            long long b = primary();
            r = op == '*' ? r * b : op == '/' ? r / b : r % b;
        }
    }
    long long sum()
    {
        long long r = product();
        for (;;) {
            ws();
            if (i >= s.size() || (s[i] != '+' && s[i] != '-'))
                return r;
            char op = s[i++];
            long long b = product();
            r = op == '+' ? r + b : r - b;
        }
    }
};

long long eval(const std::string &e, const vars_t &v)
{
    parser p{e, 0, v};
    long long r = p.sum();
    p.ws();
    if (p.i != e.size())
        p.die("trailing text");
    return r;
}

struct launch_plan {
    std::string kernel, grid, block, args, smem;
};

std::vector<launch_plan> g_plans;
vars_t g_tunables;

/* The text of clause `name(...)` in a directive line (balanced parens). */
std::string clause(const std::string &line, const std::string &name)
{
    size_t at = line.find(" " + name + "(");
    if (at == std::string::npos)
        return "";
    size_t i = at + name.size() + 2, depth = 1, st = i;
    while (i < line.size() && depth) {
        depth += line[i] == '(';
        depth -= line[i] == ')';
        i++;
    }
    return line.substr(st, i - st - 1);
}

void read_plans(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        perror(path);
        exit(2);
    }
    char buf[2048];
    while (fgets(buf, sizeof buf, f)) {
        std::string l(buf);
        size_t at = l.find("// kiln: launch ");
        if (at == std::string::npos)
            continue;
        l = l.substr(at + 16);
        while (!l.empty() && (l.back() == '\n' || l.back() == '\r'))
            l.pop_back();
        launch_plan p;
        p.kernel = l.substr(0, l.find(' '));
        p.grid = clause(" " + l, "grid");
        p.block = clause(" " + l, "block");
        p.args = clause(" " + l, "args");
        p.smem = clause(" " + l, "smem");
        g_plans.push_back(p);
    }
    fclose(f);
}

/* Splits "a, b, c" at top-level commas and evaluates each. */
dim3 eval_dims(const std::string &list, const vars_t &v)
{
    std::vector<long long> out;
    int depth = 0;
    size_t st = 0;
    for (size_t i = 0; i <= list.size(); i++) {
        char ch = i < list.size() ? list[i] : ',';
        depth += ch == '(';
        depth -= ch == ')';
        if (ch == ',' && depth == 0) {
            out.push_back(eval(list.substr(st, i - st), v));
            st = i + 1;
        }
    }
    dim3 d;
    d.x = (unsigned)out[0];
    if (out.size() > 1)
        d.y = (unsigned)out[1];
    if (out.size() > 2)
        d.z = (unsigned)out[2];
    return d;
}

int g_failures;

/* Launches every planned launch of `kernel` (checking its args list is
 * `want_args`), with the case's sizes bound. */
void run(const char *kernel, const char *want_args, vars_t sizes, std::function<void()> call)
{
    for (auto &kv : g_tunables)
        sizes[kv.first] = kv.second;
    for (auto &p : g_plans) {
        if (p.kernel != kernel)
            continue;
        if (p.args != want_args) {
            fprintf(stderr, "launch %s: args(%s), expected args(%s)\n", kernel, p.args.c_str(),
                    want_args);
            exit(1);
        }
        emu::launch(eval_dims(p.grid, sizes), eval_dims(p.block, sizes), call);
        return;
    }
    fprintf(stderr, "no launch of %s in the file\n", kernel);
    exit(1);
}

uint64_t g_rng = 0x2545F4914F6CDD1DULL;
float frand()
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (float)((g_rng >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

/* A buffer of exactly n floats at a 16-byte boundary, or 4 bytes past one,
 * so that AddressSanitizer (the check is built with it) catches a read or
 * write past either end, and UBSan a float4 access that is not aligned. */
struct buffer {
    float *base, *p;
    buffer(size_t n, bool misalign)
    {
        /* malloc is 16-byte aligned; the buffer ends exactly at its last float. */
        base = static_cast<float *>(malloc((n + (misalign ? 1 : 0)) * sizeof(float)));
        if (!base || ((uintptr_t)base & 15))
            abort();
        p = base + (misalign ? 1 : 0);
    }
    ~buffer()
    {
        free(base);
    }
    buffer(const buffer &) = delete;
    buffer &operator=(const buffer &) = delete;
};

void compare(const char *what, const float *got, const std::vector<double> &want, double atol,
             double rtol)
{
    for (size_t i = 0; i < want.size(); i++) {
        double d = fabs((double)got[i] - want[i]);
        if (!(d <= atol + rtol * fabs(want[i]))) {
            fprintf(stderr, "%s: element %zu is %.9g, expected %.9g\n", what, i, (double)got[i],
                    want[i]);
            g_failures++;
            return;
        }
    }
}

#if defined(WL_sgemm)
/* Runs the case `launches` times (the split-K counters a launch leaves
 * behind must not spoil the next) and requires the same bits every time:
 * kiln fails a candidate whose outputs vary between runs. */
void check_case(long long m_, long long n_, long long k_, bool misalign, int launches = 1)
{
    buffer A(m_ * k_, misalign), B(k_ * n_, misalign), C(m_ * n_, misalign);
    for (long long i = 0; i < m_ * k_; i++)
        A.p[i] = frand();
    for (long long i = 0; i < k_ * n_; i++)
        B.p[i] = frand() / sqrtf((float)k_);
    std::vector<double> want(m_ * n_);
    for (long long r = 0; r < m_; r++)
        for (long long c = 0; c < n_; c++) {
            double s = 0;
            for (long long kk = 0; kk < k_; kk++)
                s += (double)A.p[r * k_ + kk] * B.p[kk * n_ + c];
            want[r * n_ + c] = s;
        }
    std::vector<float> first(m_ * n_);
    for (int launch = 1; launch <= launches; launch++) {
        for (long long i = 0; i < m_ * n_; i++)
            C.p[i] = NAN; /* poisoned: an unwritten element fails */
        run("sgemm", "m, n, k, A, B, C", {{"m", m_}, {"n", n_}, {"k", k_}},
            [&] { sgemm(m_, n_, k_, A.p, B.p, C.p); });
        char what[112];
        snprintf(what, sizeof what, "sgemm %lldx%lldx%lld%s, launch %d", m_, n_, k_,
                 misalign ? " misaligned" : "", launch);
        compare(what, C.p, want, 1e-4, 1e-4);
        if (launch == 1)
            memcpy(first.data(), C.p, first.size() * sizeof(float));
        else if (memcmp(first.data(), C.p, first.size() * sizeof(float)) != 0) {
            fprintf(stderr, "%s: output differs from launch 1 (not deterministic)\n", what);
            g_failures++;
        }
    }
}

void check_all()
{
    const long long shapes[][3] = {{1, 1, 1},   {7, 13, 1},   {31, 17, 257}, {64, 64, 64},
                                   {1, 100, 33}, {100, 1, 40}, {67, 131, 37}, {129, 65, 20}};
    for (auto &s : shapes)
        check_case(s[0], s[1], s[2], false);
    check_case(36, 68, 24, true);
    check_case(36, 68, 24, false);
    /* Deep products: split over K where SPLITK > 1 (k >= 512), slices whose
     * ends are not tile multiples, more tiles than one, misaligned. */
    check_case(5, 7, 4099, false, 2);
    check_case(70, 45, 1031, false, 2);
    check_case(33, 20, 2052, true, 2);
}
#endif


#if defined(WL_gemm_bf16)
/* The launch's smem(...) bytes for the case's sizes, exactly: shared memory
 * past them is a heap overflow AddressSanitizer reports. */
size_t smem_bytes(const vars_t &sizes)
{
    vars_t v = sizes;
    for (auto &kv : g_tunables)
        v[kv.first] = kv.second;
    for (auto &p : g_plans)
        if (p.kernel == "gemm_bf16" && !p.smem.empty())
            return (size_t)eval(p.smem, v);
    return 0;
}

/* bf16 operands at `offset` bytes past a 16-byte boundary (2: every row
 * start misaligned, so the kernel must gather instead of cp.async), the
 * output poisoned with NaN (0xFFFF): an unwritten element fails. */
void check_case(long long m_, long long n_, long long k_, int offset)
{
    auto alloc = [&](long long count) {
        char *p = static_cast<char *>(aligned_alloc(16, ((size_t)count * 2 + offset + 15) / 16 * 16));
        if (!p)
            abort();
        return p;
    };
    char *a_raw = alloc(m_ * k_), *b_raw = alloc(k_ * n_), *c_raw = alloc(m_ * n_);
    uint16_t *A = reinterpret_cast<uint16_t *>(a_raw + offset);
    uint16_t *B = reinterpret_cast<uint16_t *>(b_raw + offset);
    uint16_t *C = reinterpret_cast<uint16_t *>(c_raw + offset);
    for (long long i = 0; i < m_ * k_; i++)
        A[i] = emu_bf16_rn(frand());
    for (long long i = 0; i < k_ * n_; i++)
        B[i] = emu_bf16_rn(frand() * 1.7320508f / sqrtf((float)k_));
    for (long long i = 0; i < m_ * n_; i++)
        C[i] = 0xFFFF;
    std::vector<double> want(m_ * n_);
    for (long long r = 0; r < m_; r++)
        for (long long c = 0; c < n_; c++) {
            double s = 0;
            for (long long kk = 0; kk < k_; kk++)
                s += (double)emu_bf16_to_float(A[r * k_ + kk]) * emu_bf16_to_float(B[kk * n_ + c]);
            want[r * n_ + c] = s;
        }
    vars_t sizes = {{"m", m_}, {"n", n_}, {"k", k_}};
    size_t smem = smem_bytes(sizes);
    char *shared = static_cast<char *>(aligned_alloc(1024, (smem + 1023) / 1024 * 1024));
    if (!shared)
        abort();
    emu_dynamic_smem = reinterpret_cast<float *>(shared);
    run("gemm_bf16", "m, n, k, A, B, C", sizes, [&] { gemm_bf16(m_, n_, k_, A, B, C); });
    std::vector<float> got(m_ * n_);
    for (long long i = 0; i < m_ * n_; i++)
        got[i] = emu_bf16_to_float(C[i]);
    char what[112];
    snprintf(what, sizeof what, "gemm_bf16 %lldx%lldx%lld%s", m_, n_, k_,
             offset ? " misaligned" : "");
    /* The workload's tolerance: one bf16 ulp, float32 accumulation near 0. */
    compare(what, got.data(), want, 1e-3, 8e-3);
    free(shared);
    free(a_raw);
    free(b_raw);
    free(c_raw);
}

void check_all()
{
    /* Every edge: single elements, k = 1, primes, rows that are not 16-byte
     * aligned (k or n not a multiple of 8), exact tile multiples, more k
     * tiles than stages, decode-like skinny m, pointers 2 bytes off. */
    const long long shapes[][3] = {{1, 1, 1},   {7, 13, 1},   {31, 17, 40}, {67, 131, 37},
                                   {16, 200, 72}, {130, 72, 48}, {64, 64, 64}, {129, 9, 136},
                                   {3, 264, 200}};
    for (auto &s : shapes)
        check_case(s[0], s[1], s[2], 0);
    check_case(40, 72, 56, 2);
    check_case(33, 20, 19, 2);
}
#endif

#if defined(WL_saxpy)
void check_case(long long n, bool misalign)
{
    buffer x(n, misalign), y(n, misalign), out(n, misalign);
    for (long long i = 0; i < n; i++) {
        x.p[i] = frand();
        y.p[i] = frand();
        out.p[i] = NAN;
    }
    const float a = 2.5f;
    run("saxpy", "n, a, x, y, out", {{"n", n}}, [&] { saxpy(n, a, x.p, y.p, out.p); });
    std::vector<double> want(n);
    for (long long i = 0; i < n; i++)
        want[i] = (double)a * x.p[i] + y.p[i];
    char what[64];
    snprintf(what, sizeof what, "saxpy n=%lld%s", n, misalign ? " misaligned" : "");
    compare(what, out.p, want, 1e-5, 1e-5);
}

void check_all()
{
    for (long long n : {1LL, 2LL, 3LL, 31LL, 4097LL, 70001LL})
        check_case(n, false);
    check_case(4103, true);
}
#endif

#if defined(WL_reduce_sum)
void check_case(long long n, bool misalign)
{
    buffer x(n, misalign), out(1, false);
    for (long long i = 0; i < n; i++)
        x.p[i] = (frand() < -0.6f ? -1.0f : 1.0f) * expf(frand());
    out.p[0] = NAN;
    std::vector<double> want(1, 0.0);
    for (long long i = 0; i < n; i++)
        want[0] += x.p[i];
    /* Twice: state a launch leaves behind (a counter) must not spoil the next. */
    for (int launch = 1; launch <= 2; launch++) {
        out.p[0] = NAN;
        run("reduce_sum", "n, x, out", {{"n", n}}, [&] { reduce_sum(n, x.p, out.p); });
        char what[80];
        snprintf(what, sizeof what, "reduce_sum n=%lld%s, launch %d", n,
                 misalign ? " misaligned" : "", launch);
        compare(what, out.p, want, 1e-5, 1e-4);
    }
}

void check_all()
{
    for (long long n : {1LL, 2LL, 31LL, 997LL, 65537LL, 1000003LL})
        check_case(n, false);
    check_case(40001, true);
}
#endif

#if defined(WL_transpose)
void check_case(long long rows, long long cols)
{
    buffer x(rows * cols, false), out(rows * cols, false);
    for (long long i = 0; i < rows * cols; i++) {
        x.p[i] = frand();
        out.p[i] = NAN;
    }
    run("transpose", "rows, cols, x, out", {{"rows", rows}, {"cols", cols}},
        [&] { transpose(rows, cols, x.p, out.p); });
    std::vector<double> want(rows * cols);
    for (long long r = 0; r < rows; r++)
        for (long long c = 0; c < cols; c++)
            want[c * rows + r] = x.p[r * cols + c];
    char what[64];
    snprintf(what, sizeof what, "transpose %lldx%lld", rows, cols);
    compare(what, out.p, want, 0, 0);
}

void check_all()
{
    const long long shapes[][2] = {{1, 1}, {1, 1003}, {1003, 1}, {37, 123}, {31, 33}, {65, 64}};
    for (auto &s : shapes)
        check_case(s[0], s[1]);
}
#endif

#if defined(WL_softmax_rows)
void check_case(long long rows, long long cols, bool misalign)
{
    buffer x(rows * cols, misalign), out(rows * cols, misalign);
    for (long long r = 0; r < rows; r++) {
        float off = (float)((r % 5) - 2) * 150.0f, scale = r % 3 == 0 ? 0.01f : 8.0f;
        for (long long c = 0; c < cols; c++)
            x.p[r * cols + c] = off + scale * frand();
    }
    for (long long i = 0; i < rows * cols; i++)
        out.p[i] = NAN;
    run("softmax_rows", "rows, cols, x, out", {{"rows", rows}, {"cols", cols}},
        [&] { softmax_rows(rows, cols, x.p, out.p); });
    std::vector<double> want(rows * cols);
    for (long long r = 0; r < rows; r++) {
        double m = -INFINITY, s = 0;
        for (long long c = 0; c < cols; c++)
            m = fmax(m, x.p[r * cols + c]);
        for (long long c = 0; c < cols; c++)
            s += exp(x.p[r * cols + c] - m);
        for (long long c = 0; c < cols; c++)
            want[r * cols + c] = exp(x.p[r * cols + c] - m) / s;
    }
    char what[64];
    snprintf(what, sizeof what, "softmax_rows %lldx%lld%s", rows, cols,
             misalign ? " misaligned" : "");
    compare(what, out.p, want, 1e-9, 1e-4);
}

void check_all()
{
    const long long shapes[][2] = {{1, 1},   {1, 7},    {37, 1023}, {67, 33},
                                   {5, 4100}, {3, 20011}, {301, 3}, {9, 1028}};
    for (auto &s : shapes)
        check_case(s[0], s[1], false);
    check_case(9, 1028, true);
}
#endif

#if defined(WL_layernorm)
void check_case(long long rows, long long cols, bool misalign)
{
    buffer x(rows * cols, misalign), g(cols, misalign), b(cols, misalign),
        out(rows * cols, misalign);
    for (long long r = 0; r < rows; r++) {
        float sd = r % 3 == 0 ? 0.003f : r % 3 == 1 ? 1.0f : 10.0f, mean = 4.0f * sd * frand();
        for (long long c = 0; c < cols; c++)
            x.p[r * cols + c] = mean + sd * frand() * 1.7f;
    }
    for (long long c = 0; c < cols; c++) {
        g.p[c] = 1.0f + 0.5f * frand();
        b.p[c] = 0.5f * frand();
    }
    for (long long i = 0; i < rows * cols; i++)
        out.p[i] = NAN;
    const float eps = 1e-5f;
    run("layernorm", "rows, cols, eps, x, gamma, beta, out", {{"rows", rows}, {"cols", cols}},
        [&] { layernorm(rows, cols, eps, x.p, g.p, b.p, out.p); });
    std::vector<double> want(rows * cols);
    for (long long r = 0; r < rows; r++) {
        double m = 0, v = 0;
        for (long long c = 0; c < cols; c++)
            m += x.p[r * cols + c];
        m /= (double)cols;
        for (long long c = 0; c < cols; c++)
            v += (x.p[r * cols + c] - m) * (x.p[r * cols + c] - m);
        v /= (double)cols;
        for (long long c = 0; c < cols; c++)
            want[r * cols + c] =
                (x.p[r * cols + c] - m) / sqrt(v + (double)eps) * g.p[c] + b.p[c];
    }
    char what[64];
    snprintf(what, sizeof what, "layernorm %lldx%lld%s", rows, cols, misalign ? " misaligned" : "");
    compare(what, out.p, want, 5e-5, 1e-4);
}

void check_all()
{
    const long long shapes[][2] = {{5, 1},    {7, 2},    {1, 1021}, {67, 97},
                                   {13, 4100}, {3, 20003}, {301, 3}, {9, 1028}};
    for (auto &s : shapes)
        check_case(s[0], s[1], false);
    check_case(9, 1028, true);
}
#endif

#if defined(WL_kb_1_square_matrix_multiplication) || defined(WL_kb_16_matmul_with_transposed_a)
/* C[M][N] = op(A) B: A stored M x K, or K x M when transposed (problem 16). */
void check_case(long long M, long long K, long long N, bool misalign)
{
#if defined(WL_kb_1_square_matrix_multiplication)
    const bool trans = false;
    K = N = M; /* square */
#else
    const bool trans = true;
#endif
    buffer A(M * K, misalign), B(K * N, misalign), out(M * N, misalign);
    for (long long i = 0; i < M * K; i++)
        A.p[i] = frand();
    for (long long i = 0; i < K * N; i++)
        B.p[i] = frand();
    for (long long i = 0; i < M * N; i++)
        out.p[i] = NAN;
#if defined(WL_kb_1_square_matrix_multiplication)
    run("matmul", "N, A, B, out", {{"N", N}}, [&] { matmul(N, A.p, B.p, out.p); });
#else
    run("matmul_tn", "M, K, N, A, B, out", {{"M", M}, {"K", K}, {"N", N}},
        [&] { matmul_tn(M, K, N, A.p, B.p, out.p); });
#endif
    std::vector<double> want(M * N);
    for (long long r = 0; r < M; r++)
        for (long long c = 0; c < N; c++) {
            double acc = 0;
            for (long long k = 0; k < K; k++)
                acc += (double)(trans ? A.p[k * M + r] : A.p[r * K + k]) * B.p[k * N + c];
            want[r * N + c] = acc;
        }
    char what[96];
    snprintf(what, sizeof what, "matmul %lldx%lldx%lld%s", M, K, N, misalign ? " misaligned" : "");
    compare(what, out.p, want, 1e-4, 1e-4);
}

void check_all()
{
    const long long shapes[][3] = {{1, 1, 1}, {13, 7, 5}, {67, 33, 129}, {64, 8, 64}, {41, 100, 3}};
    for (auto &s : shapes)
        check_case(s[0], s[1], s[2], false);
    check_case(68, 36, 24, true);
    check_case(68, 36, 24, false);
}
#endif

#if defined(WL_kb_47_sum_reduction_over_a_dimension)
void check_case(long long b, long long d1, long long d2)
{
    buffer x(b * d1 * d2, false), out(b * d2, false);
    for (long long i = 0; i < b * d1 * d2; i++)
        x.p[i] = frand();
    for (long long i = 0; i < b * d2; i++)
        out.p[i] = NAN;
    run("sum_dim1", "batch_size, dim1, dim2, x, out",
        {{"batch_size", b}, {"dim1", d1}, {"dim2", d2}},
        [&] { sum_dim1(b, d1, d2, x.p, out.p); });
    std::vector<double> want(b * d2, 0.0);
    for (long long i = 0; i < b; i++)
        for (long long r = 0; r < d1; r++)
            for (long long j = 0; j < d2; j++)
                want[i * d2 + j] += x.p[(i * d1 + r) * d2 + j];
    char what[64];
    snprintf(what, sizeof what, "sum_dim1 %lldx%lldx%lld", b, d1, d2);
    compare(what, out.p, want, 1e-5, 1e-4);
}

void check_all()
{
    const long long shapes[][3] = {{1, 1, 1}, {3, 13, 5}, {16, 67, 67}, {2, 257, 33}};
    for (auto &s : shapes)
        check_case(s[0], s[1], s[2]);
}
#endif

#if defined(WL_kb_19_relu)
void check_case(long long b, long long d, bool misalign)
{
    buffer x(b * d, misalign), out(b * d, misalign);
    for (long long i = 0; i < b * d; i++) {
        x.p[i] = frand();
        out.p[i] = NAN;
    }
    run("relu", "batch_size, dim, x, out", {{"batch_size", b}, {"dim", d}},
        [&] { relu(b, d, x.p, out.p); });
    std::vector<double> want(b * d);
    for (long long i = 0; i < b * d; i++)
        want[i] = x.p[i] > 0 ? x.p[i] : 0.0;
    char what[64];
    snprintf(what, sizeof what, "relu %lldx%lld%s", b, d, misalign ? " misaligned" : "");
    compare(what, out.p, want, 0, 0);
}

void check_all()
{
    const long long shapes[][2] = {{1, 1}, {1, 3}, {13, 13}, {16, 4099}};
    for (auto &s : shapes)
        check_case(s[0], s[1], false);
    check_case(7, 1001, true);
}
#endif

#if defined(WL_conv2d)
void check_case(long long n, long long c, long long h, long long w, long long k, long long r,
                long long s, long long p, long long q)
{
    long long ph = (p - h + r - 1) / 2, pw = (q - w + s - 1) / 2;
    buffer x(n * c * h * w, false), wt(k * c * r * s, false), out(n * k * p * q, false);
    for (long long i = 0; i < n * c * h * w; i++)
        x.p[i] = frand();
    for (long long i = 0; i < k * c * r * s; i++)
        wt.p[i] = frand() / sqrtf((float)(c * r * s));
    for (long long i = 0; i < n * k * p * q; i++)
        out.p[i] = NAN;
    /* The kernel's dynamic shared memory: the launch's smem(...) bytes. */
    std::vector<float> smem(1 << 16);
    emu_dynamic_smem = smem.data();
    run("conv2d", "n, c, h, w, k, r, s, p, q, pad_h, pad_w, x, weight, out",
        {{"n", n}, {"c", c}, {"h", h}, {"w", w}, {"k", k}, {"r", r}, {"s", s}, {"p", p}, {"q", q}},
        [&] { conv2d(n, c, h, w, k, r, s, p, q, ph, pw, x.p, wt.p, out.p); });
    std::vector<double> want(n * k * p * q);
    for (long long b = 0; b < n; b++)
        for (long long o = 0; o < k; o++)
            for (long long y = 0; y < p; y++)
                for (long long z = 0; z < q; z++) {
                    double acc = 0;
                    for (long long ci = 0; ci < c; ci++)
                        for (long long i = 0; i < r; i++)
                            for (long long j = 0; j < s; j++) {
                                long long iy = y - ph + i, iz = z - pw + j;
                                if (iy >= 0 && iy < h && iz >= 0 && iz < w)
                                    acc += (double)x.p[((b * c + ci) * h + iy) * w + iz] *
                                           wt.p[((o * c + ci) * r + i) * s + j];
                            }
                    want[((b * k + o) * p + y) * q + z] = acc;
                }
    char what[96];
    snprintf(what, sizeof what, "conv2d n%lld c%lld %lldx%lld k%lld %lldx%lld -> %lldx%lld", n, c,
             h, w, k, r, s, p, q);
    compare(what, out.p, want, 1e-4, 1e-4);
}

void check_all()
{
    check_case(1, 1, 1, 1, 1, 1, 1, 1, 1);
    check_case(1, 3, 7, 5, 2, 3, 3, 7, 5);
    check_case(2, 3, 13, 11, 5, 3, 5, 11, 7);
    check_case(1, 4, 9, 17, 3, 1, 7, 9, 17);
    check_case(1, 9, 6, 6, 9, 3, 3, 4, 4);
    check_case(2, 2, 3, 3, 2, 5, 5, 3, 3);
}
#endif

} // namespace

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cuda_emu_check KERNEL.cu [NAME=VALUE ...]\n");
        return 2;
    }
    read_plans(argv[1]);
    for (int i = 2; i < argc; i++) {
        const char *eq = strchr(argv[i], '=');
        if (!eq)
            return 2;
        g_tunables[std::string(argv[i], (size_t)(eq - argv[i]))] = atoll(eq + 1);
    }
    check_all();
    return g_failures ? 1 : 0;
}
