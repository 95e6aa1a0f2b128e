/*
 * cpu_trampoline.h - generates the C source kiln links with a CPU candidate:
 * one `void kiln_launch_<i>(void *const *args)` per launch of the plan,
 * which reads each argument the harness passes (args[k] points at the k-th
 * value: a scalar of the signature's C type, or a tensor address as a
 * uint64_t) and calls the candidate's function with the plan's arguments in
 * order. The parent compiles it with the candidate (`cc -O2 -shared -fPIC`)
 * in the compile sandbox; the CPU harness dlsym()s the kiln_launch_<i>.
 *
 * C types: int32 -> int, int64 -> long long, float32 -> float, float64 ->
 * double; tensors -> pointers to the element type (float16 and bfloat16 as
 * uint16_t, bool as _Bool), `const` for role in.
 *
 * Ownership: *out is a NUL-terminated malloc'd string the caller frees.
 */
#ifndef KILN_CPU_TRAMPOLINE_H
#define KILN_CPU_TRAMPOLINE_H

#include "error.h"
#include "harness_plan.h"

/* The C element type of a tensor of dtype `dt` ("float", "int64_t",
 * "uint16_t" for float16 and bfloat16, "_Bool"); NULL for DT_INVALID. */
const char *cpu_trampoline_elem_type(enum tensor_dtype dt);

/* Fails (KILN_E_REJECTED) when the plan is invalid or one function is
 * launched with two different argument type lists (C has one prototype
 * per function). */
enum kiln_rc cpu_trampoline_source(const struct harness_plan *plan, char **out,
                                   struct kiln_err *err) KILN_NODISCARD;

#endif
