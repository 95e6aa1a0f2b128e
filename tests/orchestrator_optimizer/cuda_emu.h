/*
 * cuda_emu.h - runs the built-in workloads' CUDA kernels on the CPU, for
 * tests only: a block's threads are cooperative fibers (ucontext) on one OS
 * thread, switched at __syncthreads() and at warp shuffles, so every tiling,
 * vector-width and edge path of a kernel.cu is executed and checked here,
 * where there is no GPU. Blocks run one after another, so `__shared__`
 * becomes `static` (one copy, reused by each block in turn). A barrier that
 * can never complete (a divergent __syncthreads) aborts with a message: a
 * real GPU would hang or misbehave there too.
 *
 * What it does not model: memory ordering between blocks (blocks run one
 * after another, so an atomic is a plain read-modify-write and a fence is
 * nothing), timing,
 * occupancy, register or shared-memory limits (the `require` directives and
 * nvcc check those).
 */
#ifndef KILN_CUDA_EMU_H
#define KILN_CUDA_EMU_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <functional>
#include <vector>

struct uint3 {
    unsigned x, y, z;
};
struct dim3 {
    unsigned x = 1, y = 1, z = 1;
};
struct alignas(16) float4 {
    float x, y, z, w;
};
struct alignas(8) float2 {
    float x, y;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w)
{
    return uint4{x, y, z, w};
}
static inline float4 make_float4(float x, float y, float z, float w)
{
    return float4{x, y, z, w};
}

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __shared__      static
#define __restrict__
#define __align__(n) __attribute__((aligned(n)))
#define __launch_bounds__(...)

/* Dynamic shared memory: kernels_emu.sh rewrites `extern __shared__ T v[];`
 * into `T *v = (T *)emu_dynamic_smem;`, a buffer the check sets to at least
 * the launch's smem(...) bytes. */
inline float *emu_dynamic_smem = nullptr;

static inline float rsqrtf(float x)
{
    return 1.0f / sqrtf(x);
}
static inline float __fdividef(float a, float b)
{
    return a / b;
}
static inline unsigned atomicAdd(unsigned *p, unsigned v)
{
    unsigned old = *p;
    *p += v;
    return old;
}
static inline void __threadfence() {}
template <class T> static inline T __ldg(const T *p)
{
    return *p;
}

namespace emu
{

enum wait_kind { RUNNING, AT_BLOCK_BARRIER, AT_WARP_BARRIER, DONE };

struct fiber {
    ucontext_t ctx;
    wait_kind state;
    char *stack;
};

/* A thread's cp.async copies not yet landed (emu_cp_async below). */
struct async_copy {
    void *dst;
    const void *src;
    unsigned bytes, src_bytes, group;
};
struct async_queue {
    std::vector<async_copy> pending;
    unsigned committed = 0; /* groups committed so far */
};
inline async_queue async_q[1024];

struct machine {
    ~machine()
    {
        for (auto &f : fibers)
            free(f.stack);
    }
    ucontext_t sched;
    std::vector<fiber> fibers;
    unsigned nthreads = 0;
    int current = -1;
    std::function<void()> body;
    float xchg[1024];
    uint3 tid[1024];
    /* Warp-collective tensor-core operations (emu_ldmatrix_x4, emu_mma_*):
     * each lane's operands, read by the other lanes of its warp. */
    const void *ld_row[1024];
    uint32_t frag_a[1024][4], frag_b[1024][2];
};

inline machine &m()
{
    static machine mc;
    return mc;
}

} // namespace emu

/* inline, not static: the check's launch sets them, the kernel (another
 * translation unit: cuda_emu_kernel.cpp) reads them. */
inline uint3 blockIdx;
inline dim3 blockDim, gridDim;
/* The running fiber's index, set by the scheduler before each switch. */
#define threadIdx (emu::m().tid[emu::m().current])

namespace emu
{

inline void yield_as(wait_kind k)
{
    machine &mc = m();
    int me = mc.current;
    mc.fibers[me].state = k;
    swapcontext(&mc.fibers[me].ctx, &mc.sched);
}

/* Returns when the thread is done (uc_link resumes the scheduler), so that
 * every frame on the fiber's stack has unpoisoned its AddressSanitizer
 * redzones on the way out and the stack is clean for the next block. */
inline void entry()
{
    m().body();
    m().fibers[m().current].state = DONE;
}

/* Runs every fiber until each is done or waiting; releases a barrier once
 * all live fibers of its scope wait at it. */
inline void run_block()
{
    machine &mc = m();
    const unsigned n = mc.nthreads;
    for (unsigned t = 0; t < n; t++) {
        fiber &f = mc.fibers[t];
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack;
        f.ctx.uc_stack.ss_size = 256 * 1024;
        f.ctx.uc_link = &mc.sched;
        makecontext(&f.ctx, entry, 0);
        /* The stack is set up; with its size left in the context, ASan's
         * swapcontext would clear the stack's shadow at every switch into
         * the fiber: 32 KiB of memset per switch (most of this test's time),
         * and the redzones of the frames that are live on it. */
        f.ctx.uc_stack.ss_size = 0;
        f.state = RUNNING;
        /* Copies a thread of the previous block never waited for are dropped:
         * the hardware would not land them in this block's shared memory. */
        async_q[t] = async_queue();
    }
    for (;;) {
        bool progressed = false;
        for (unsigned t = 0; t < n; t++) {
            if (mc.fibers[t].state != RUNNING)
                continue;
            mc.current = (int)t;
            swapcontext(&mc.sched, &mc.fibers[t].ctx);
            progressed = true;
        }
        if (progressed)
            continue;
        /* Everyone is blocked or done: release warps whose live lanes all wait. */
        bool released = false;
        for (unsigned w = 0; w * 32 < n; w++) {
            unsigned lo = w * 32, hi = lo + 32 < n ? lo + 32 : n, waiting = 0, live = 0;
            for (unsigned t = lo; t < hi; t++) {
                live += mc.fibers[t].state != DONE;
                waiting += mc.fibers[t].state == AT_WARP_BARRIER;
            }
            if (waiting > 0 && waiting == live) {
                for (unsigned t = lo; t < hi; t++)
                    if (mc.fibers[t].state == AT_WARP_BARRIER)
                        mc.fibers[t].state = RUNNING;
                released = true;
            }
        }
        if (released)
            continue;
        unsigned at_block = 0, live = 0;
        for (unsigned t = 0; t < n; t++) {
            live += mc.fibers[t].state != DONE;
            at_block += mc.fibers[t].state == AT_BLOCK_BARRIER;
        }
        if (live == 0)
            return;
        if (at_block != live) {
            fprintf(stderr,
                    "cuda_emu: deadlock: %u of %u live threads at __syncthreads, the "
                    "rest at a warp shuffle\n",
                    at_block, live);
            abort();
        }
        for (unsigned t = 0; t < n; t++)
            if (mc.fibers[t].state == AT_BLOCK_BARRIER)
                mc.fibers[t].state = RUNNING;
    }
}

/* Launches `body` (a call of the kernel) on grid x block. */
inline void launch(dim3 grid, dim3 block, std::function<void()> body)
{
    machine &mc = m();
    unsigned n = block.x * block.y * block.z;
    if (n == 0 || n > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0) {
        fprintf(stderr, "cuda_emu: bad launch: block %u threads, grid %u x %u x %u\n", n, grid.x,
                grid.y, grid.z);
        abort();
    }
    while (mc.fibers.size() < n) {
        fiber f{};
        f.stack = static_cast<char *>(malloc(256 * 1024));
        if (!f.stack)
            abort();
        mc.fibers.push_back(f);
    }
    mc.nthreads = n;
    mc.body = std::move(body);
    gridDim = grid;
    blockDim = block;
    for (unsigned t = 0; t < n; t++)
        mc.tid[t] = uint3{t % block.x, (t / block.x) % block.y, t / (block.x * block.y)};
    for (unsigned z = 0; z < grid.z; z++)
        for (unsigned y = 0; y < grid.y; y++)
            for (unsigned x = 0; x < grid.x; x++) {
                blockIdx = uint3{x, y, z};
                run_block();
            }
}

inline unsigned linear_tid()
{
    return (unsigned)m().current;
}

/* A value exchange among the lanes of the caller's warp. */
inline float exchange(float v, unsigned src_lane, bool keep_own)
{
    machine &mc = m();
    unsigned t = linear_tid(), base = t & ~31u;
    mc.xchg[t] = v;
    yield_as(AT_WARP_BARRIER);
    unsigned src = base + src_lane;
    float r = keep_own || src >= mc.nthreads ? v : mc.xchg[src];
    yield_as(AT_WARP_BARRIER); /* nobody overwrites xchg before all have read */
    return r;
}

} // namespace emu

/* cp.async (sm_80+), for kernels that call these under KILN_EMU_CP_ASYNC
 * (kernels_emu.sh defines it when a kernel.cu names it): a copy is queued
 * when issued and done when a wait_group releases its group, not before,
 * as the hardware may; so a kernel that reads shared memory before waiting
 * (or waits for the wrong group) reads stale data and fails its check.
 * src_bytes < bytes zero-fills the rest, as cp.async's src-size does. */
static inline void emu_cp_async(void *dst, const void *src, unsigned bytes, unsigned src_bytes)
{
    if ((bytes != 4 && bytes != 8 && bytes != 16) || src_bytes > bytes ||
        ((uintptr_t)dst % bytes) != 0 || (src_bytes == bytes && (uintptr_t)src % bytes) != 0) {
        fprintf(stderr, "cuda_emu: cp.async of %u bytes (%u from src): size or alignment\n", bytes,
                src_bytes);
        abort();
    }
    emu::async_queue &q = emu::async_q[emu::linear_tid()];
    q.pending.push_back(emu::async_copy{dst, src, bytes, src_bytes, q.committed});
}
static inline void emu_cp_async_commit()
{
    emu::async_q[emu::linear_tid()].committed++;
}
/* cp.async.wait_group n: every group but the newest n has landed. */
static inline void emu_cp_async_wait(unsigned n)
{
    emu::async_queue &q = emu::async_q[emu::linear_tid()];
    std::vector<emu::async_copy> keep;
    for (auto &c : q.pending) {
        if (c.group + n < q.committed) {
            memcpy(c.dst, c.src, c.src_bytes);
            memset(static_cast<char *>(c.dst) + c.src_bytes, 0, c.bytes - c.src_bytes);
        } else {
            keep.push_back(c);
        }
    }
    q.pending.swap(keep);
}

/* bfloat16 <-> float: the upper half of a float32, rounded to nearest
 * (ties to even) on the way down; a NaN stays a quiet NaN. */
static inline float emu_bf16_to_float(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof(f));
    return f;
}
static inline uint16_t emu_bf16_rn(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof(u));
    if ((u & 0x7F800000u) == 0x7F800000u && (u & 0x007FFFFFu))
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7FFFu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* ldmatrix.sync.aligned.m8n8.x4[.trans].shared.b16, after the PTX ISA:
 * lanes 8i .. 8i+7 each give the address of one 16-byte row of 8x8 matrix
 * i; lane l receives in r[i] the elements (l/4, 2(l%4)) and (l/4, 2(l%4)+1)
 * of matrix i, or with .trans those of its transpose ((2(l%4), l/4) and
 * (2(l%4)+1, l/4)), the first in the low half. A row address that is not
 * 16-byte aligned aborts, as the hardware faults. */
static inline void emu_ldmatrix_x4(uint32_t *r, const void *row, bool trans)
{
    emu::machine &mc = emu::m();
    unsigned t = emu::linear_tid(), base = t & ~31u, l = t & 31u;
    if ((uintptr_t)row % 16) {
        fprintf(stderr, "cuda_emu: ldmatrix row address %p is not 16-byte aligned\n", row);
        abort();
    }
    mc.ld_row[t] = row;
    emu::yield_as(emu::AT_WARP_BARRIER);
    for (unsigned i = 0; i < 4; i++) {
        uint16_t e[2];
        for (unsigned h = 0; h < 2; h++) {
            unsigned rr = trans ? 2 * (l % 4) + h : l / 4, cc = trans ? l / 4 : 2 * (l % 4) + h;
            memcpy(&e[h], static_cast<const char *>(mc.ld_row[base + 8 * i + rr]) + 2 * cc, 2);
        }
        r[i] = (uint32_t)e[0] | (uint32_t)e[1] << 16;
    }
    emu::yield_as(emu::AT_WARP_BARRIER); /* nobody moves on before all have read */
}

/* mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 d, a, b, d after the
 * PTX ISA's fragments (g = lane / 4, t = lane % 4; low half first): a[0]
 * A(g, 2t..2t+1), a[1] A(g+8, 2t..), a[2] A(g, 2t+8..), a[3] A(g+8,
 * 2t+8..); b[0] B(2t..2t+1, g), b[1] B(2t+8..2t+9, g); d[0..1] D(g,
 * 2t..2t+1), d[2..3] D(g+8, 2t..2t+1). Sums in float, k in order. */
static inline void emu_mma_16816_bf16(float *d, const uint32_t *a, const uint32_t *b)
{
    emu::machine &mc = emu::m();
    unsigned t = emu::linear_tid(), base = t & ~31u, l = t & 31u;
    memcpy(mc.frag_a[t], a, sizeof(mc.frag_a[t]));
    memcpy(mc.frag_b[t], b, sizeof(mc.frag_b[t]));
    emu::yield_as(emu::AT_WARP_BARRIER);
    float A[16][16], B[16][8];
    for (unsigned x = 0; x < 32; x++) {
        unsigned g = x / 4, q = x % 4;
        const uint32_t *fa = mc.frag_a[base + x], *fb = mc.frag_b[base + x];
        for (unsigned h = 0; h < 2; h++) {
            A[g][2 * q + h] = emu_bf16_to_float((uint16_t)(fa[0] >> 16 * h));
            A[g + 8][2 * q + h] = emu_bf16_to_float((uint16_t)(fa[1] >> 16 * h));
            A[g][2 * q + 8 + h] = emu_bf16_to_float((uint16_t)(fa[2] >> 16 * h));
            A[g + 8][2 * q + 8 + h] = emu_bf16_to_float((uint16_t)(fa[3] >> 16 * h));
            B[2 * q + h][g] = emu_bf16_to_float((uint16_t)(fb[0] >> 16 * h));
            B[2 * q + 8 + h][g] = emu_bf16_to_float((uint16_t)(fb[1] >> 16 * h));
        }
    }
    unsigned g = l / 4, q = l % 4;
    for (unsigned e = 0; e < 4; e++) {
        unsigned row = g + 8 * (e / 2), col = 2 * q + e % 2;
        float s = d[e];
        for (unsigned kk = 0; kk < 16; kk++)
            s += A[row][kk] * B[kk][col];
        d[e] = s;
    }
    emu::yield_as(emu::AT_WARP_BARRIER);
}

static inline void __syncthreads()
{
    emu::yield_as(emu::AT_BLOCK_BARRIER);
}
static inline void __syncwarp(unsigned mask = 0xffffffffu)
{
    (void)mask;
    emu::yield_as(emu::AT_WARP_BARRIER);
}
static inline float __shfl_xor_sync(unsigned mask, float v, int lane_mask, int width = 32)
{
    (void)mask;
    (void)width;
    unsigned lane = emu::linear_tid() & 31u;
    return emu::exchange(v, lane ^ (unsigned)lane_mask, false);
}
static inline float __shfl_down_sync(unsigned mask, float v, unsigned delta, int width = 32)
{
    (void)mask;
    (void)width;
    unsigned lane = emu::linear_tid() & 31u;
    return emu::exchange(v, lane + delta, lane + delta >= 32);
}
static inline float __shfl_sync(unsigned mask, float v, int src, int width = 32)
{
    (void)mask;
    (void)width;
    return emu::exchange(v, (unsigned)src & 31u, false);
}

#endif
