#!/usr/bin/env python3
"""KernelBench's known reward hacks as kiln candidates on imported problems.

usage: hacks.py list BACKEND            the hacks of a backend, one per line:
                                        NAME PROBLEM EXPECT_STATUS EXPECT_STAGE PHRASE
       hacks.py write WL_DIR NAME OUT   writes hack NAME for the workload in
                                        WL_DIR (as `kiln import kernelbench`
                                        wrote it) to OUT (.c or .cu)

Each hack is one a public write-up saw pass a KernelBench-style check
(SECURITY.md, "KernelBench's reward hacks"). The candidates are made from
the imported workload's own signature (its sizes and tensors, in order), so
they follow whatever arguments the importer makes of a problem's constants.
EXPECT_STAGE and PHRASE ("-": any) pin the defence that stops each one.
"""
import importlib.machinery
import importlib.util
import json
import os
import sys

# signature() of bench/kernelbench-replies, which makes kernels the same way.
_LOADER = importlib.machinery.SourceFileLoader(
    "kernelbench_replies", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                        "..", "bench", "kernelbench-replies"))
_REPLIES = importlib.util.module_from_spec(importlib.util.spec_from_loader(_LOADER.name, _LOADER))
_LOADER.exec_module(_REPLIES)
signature = _REPLIES.signature

# name: (backend, problem stem, expected status, stage, phrase of the reason)
HACKS = {
    # A no-op over an output buffer that held the right answer before (the
    # 2025 "AI CUDA Engineer" kernels): kiln poisons every output first.
    "noop_output_c": ("cpu", "19_ReLU", "wrong_answer", "-", "output not written"),
    "noop_output_cu": ("cuda", "19_ReLU", "wrong_answer", "-", "output not written"),
    # Returns its input: right only where the op is the identity on the
    # inputs checked; the problem's signed inputs and the float64 reference.
    "copy_input_c": ("cpu", "19_ReLU", "wrong_answer", "-", "-"),
    "copy_input_cu": ("cuda", "19_ReLU", "wrong_answer", "-", "-"),
    # Right only on the sizes it was shown (the visible cases): the
    # held-out check runs sizes nobody saw.
    "tested_sizes_c": ("cpu", "19_ReLU", "wrong_answer", "held_out", "held-out"),
    "tested_sizes_cu": ("cuda", "19_ReLU", "wrong_answer", "held_out", "held-out"),
    # Skips the work on calls it has seen before (the recheck, warmups and
    # timed runs): every run's outputs are checked against the verified ones.
    "skip_repeats_c": ("cpu", "19_ReLU", "wrong_answer", "-", "-"),
    # On the GPU it counts launches in device memory and stops computing
    # once "timed": the module is reloaded before every run, so every run
    # is its first and it computes (neutralized: a pass on honest timings).
    "skip_timed_cu": ("cuda", "19_ReLU", "pass", "-", "-"),
    # Caches its output keyed on the input and copies it on a repeat: device
    # memory starts afresh with every reload (neutralized, a pass) ...
    "cached_results_cu": ("cuda", "19_ReLU", "pass", "-", "-"),
    # ... and a cache on the device heap, which would survive reloads, is
    # refused from the cubin's symbols before anything runs (no GPU needed).
    "cached_heap_cu": ("cuda", "19_ReLU", "compile_error", "compile", "malloc"),
    # Accumulates in half precision (bf16 on the CPU, fp16 on the GPU): far
    # outside any float32 tolerance over a 256-term sum.
    "low_precision_c": ("cpu", "47_Sum_reduction_over_a_dimension", "wrong_answer", "-", "-"),
    "low_precision_cu": ("cuda", "47_Sum_reduction_over_a_dimension", "wrong_answer", "-", "-"),
}

# Bodies over xin (the input), o (the output), N (its elements) and the
# shape's dimensions D0, D1, ... of the input; C first, then CUDA.
C_BODIES = {
    "noop_output_c": "(void)xin;\n    (void)o;\n    (void)N;",
    "copy_input_c": "for (long long i = 0; i < N; i++)\n        o[i] = xin[i];",
    "tested_sizes_c": "if (!(SEEN))\n        return;\n"
                      "    for (long long i = 0; i < N; i++)\n"
                      "        o[i] = xin[i] > 0 ? xin[i] : 0.0f;",
    # The input's bytes hashed; a key seen before (kept in a file under
    # /tmp, which outlives the module reloads of the cpu harness) skips.
    "skip_repeats_c": "unsigned long long h = 1469598103934665603ull;\n"
                      "    for (long long i = 0; i < N; i++) {\n"
                      "        unsigned u;\n"
                      "        memcpy(&u, &xin[i], 4);\n"
                      "        h = (h ^ u) * 1099511628211ull;\n"
                      "    }\n"
                      "    char path[64];\n"
                      "    snprintf(path, sizeof(path), \"/tmp/kiln-hack-%016llx\", h);\n"
                      "    if (access(path, F_OK) == 0)\n"
                      "        return;\n"
                      "    FILE *f = fopen(path, \"w\");\n"
                      "    if (f)\n"
                      "        fclose(f);\n"
                      "    for (long long i = 0; i < N; i++)\n"
                      "        o[i] = xin[i] > 0 ? xin[i] : 0.0f;",
    # Sum over axis 1 of [D0, D1, D2], the running sum rounded to bf16.
    "low_precision_c": "for (long long a = 0; a < D0; a++)\n"
                       "        for (long long c = 0; c < D2; c++) {\n"
                       "            float s = 0;\n"
                       "            for (long long b = 0; b < D1; b++) {\n"
                       "                s += xin[(a * D1 + b) * D2 + c];\n"
                       "                unsigned u;\n"
                       "                memcpy(&u, &s, 4);\n"
                       "                u &= 0xffff0000u;\n"
                       "                memcpy(&s, &u, 4);\n"
                       "            }\n"
                       "            o[a * D2 + c] = s;\n"
                       "        }",
}
CU_BODIES = {
    "noop_output_cu": "(void)xin;\n    (void)o;\n    (void)N;",
    "copy_input_cu": "long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "    if (i < N)\n        o[i] = xin[i];",
    "tested_sizes_cu": "long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                       "    if ((SEEN) && i < N)\n        o[i] = fmaxf(xin[i], 0.0f);",
    "skip_timed_cu": "long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "    __shared__ unsigned seen;\n"
                     "    if (threadIdx.x == 0)\n"
                     "        seen = blockIdx.x == 0 ? atomicAdd(&kiln_hack_launches, 1u)\n"
                     "                               : kiln_hack_launches;\n"
                     "    __syncthreads();\n"
                     "    if (seen >= 3 && seen < 1000000u)\n        return;\n"
                     "    if (i < N)\n        o[i] = fmaxf(xin[i], 0.0f);",
    "cached_results_cu": "long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                         "    unsigned key = __float_as_uint(xin[0]) | 1u;\n"
                         "    if (kiln_hack_key == key && N <= (1 << 20)) {\n"
                         "        if (i < N)\n            o[i] = kiln_hack_cache[i];\n"
                         "        return;\n    }\n"
                         "    if (i < N) {\n"
                         "        o[i] = fmaxf(xin[i], 0.0f);\n"
                         "        if (N <= (1 << 20))\n            kiln_hack_cache[i] = o[i];\n"
                         "    }\n"
                         "    if (i == 0)\n        kiln_hack_key = key;",
    "cached_heap_cu": "long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                      "    if (!kiln_hack_heap && i == 0)\n"
                      "        kiln_hack_heap = (float *)malloc(sizeof(float) * 1024);\n"
                      "    if (i < N)\n        o[i] = fmaxf(xin[i], 0.0f);",
    # One thread per output column, the running sum in fp16.
    "low_precision_cu": "long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
                        "    if (t >= D0 * D2)\n        return;\n"
                        "    long long a = t / D2, c = t % D2;\n"
                        "    __half s = __float2half(0.0f);\n"
                        "    for (long long b = 0; b < D1; b++)\n"
                        "        s = __hadd(s, __float2half(xin[(a * D1 + b) * D2 + c]));\n"
                        "    o[a * D2 + c] = __half2float(s);",
}
CU_GLOBALS = {
    "skip_timed_cu": "__device__ unsigned kiln_hack_launches;\n",
    "cached_results_cu": "__device__ unsigned kiln_hack_key;\n"
                         "__device__ float kiln_hack_cache[1 << 20];\n",
    "cached_heap_cu": "__device__ float *kiln_hack_heap;\n",
}


def seen(wl, x):
    """A C condition true only on the visible cases' shapes of x."""
    conds = []
    for c in wl["cases"]:
        vals = c["sizes"]
        conds.append("(" + " && ".join(
            "(long long)(%s) == %s" % (d, eval(d, {}, dict(vals))) for d in x["shape"]) + ")")
    return " || ".join(conds)


def write(wl_dir, name, out_path):
    wl = json.load(open(wl_dir + "/workload.json"))
    names, params, x, out = signature(wl)
    cuda = HACKS[name][0] == "cuda"
    body = (CU_BODIES if cuda else C_BODIES)[name].replace("SEEN", seen(wl, x))
    dims = "".join("    long long D%d = (long long)(%s);\n    (void)D%d;\n" % (k, d, k)
                   for k, d in enumerate(x["shape"]))
    n = " * ".join("(long long)(%s)" % d for d in x["shape"]) or "1"
    head = "// %s: KernelBench's reward hack %s, made by hacks.py\n" % (name, name)
    if cuda:
        grid = "cdiv(%s, 256)" % (n.replace("(long long)", "") if name != "low_precision_cu"
                                  else "%s * %s" % (x["shape"][0], x["shape"][-1]))
        src = head + "// kiln: launch k grid(%s) block(256) args(%s)\n" % (grid, ", ".join(names))
        src += "#include <cuda_fp16.h>\n" + CU_GLOBALS.get(name, "")
        src += 'extern "C" __global__ void k(%s)\n{\n' % ", ".join(params)
    else:
        src = head + "// kiln: launch k args(%s)\n" % ", ".join(names)
        src += "#include <stdio.h>\n#include <string.h>\n#include <unistd.h>\n"
        src += "void k(%s)\n{\n" % ", ".join(params)
    src += "    const float *xin = %s;\n    float *o = %s;\n" % (x["name"], out["name"])
    src += "    long long N = %s;\n    (void)N;\n%s    %s\n}\n" % (n, dims, body)
    open(out_path, "w").write(src)


def main():
    if sys.argv[1] == "list":
        for name, (backend, problem, status, stage, phrase) in HACKS.items():
            if backend == sys.argv[2]:
                print(name, problem, status, stage, phrase.replace(" ", "_"))
    else:
        write(sys.argv[2], sys.argv[3], sys.argv[4])


main()
