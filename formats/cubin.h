/*
 * cubin.h - a compiled CUDA candidate (candidate.cubin, an ELF64 image that
 * came out of the compile sandbox) read as hostile data: size-limited,
 * every offset and count bounds-checked (fuzzed: tests/fuzz/fuzz_cubin.c).
 *
 * The one question asked of it: does it call device-side malloc or free?
 * The device heap survives module reloads (and a heap limit of 0 is not
 * enforced by the driver), so a candidate could keep results there between
 * runs; kiln refuses such a cubin before anything loads it, in the parent
 * (pipeline/evaluate.c) and again in the harness (hx_cuda.c).
 */
#ifndef KILN_CUBIN_H
#define KILN_CUBIN_H

#include <stdbool.h>
#include <stddef.h>

#include "error.h"

#define CUBIN_MAX_BYTES (64u << 20)

/*
 * KILN_OK when `data` (len bytes) is a well-formed ELF64 little-endian
 * CUDA image whose symbol tables import no device heap function: no
 * undefined symbol whose name, compared without case, contains "malloc" or
 * ends in "free" (malloc, free, __cuda_syscall_aligned_malloc behind
 * __nv_aligned_device_malloc, a device-side cudaMalloc/cudaFree). Other
 * imports (vprintf for printf, __assertfail) are allowed. KILN_E_REJECTED with the
 * symbol named otherwise; KILN_E_PARSE for a malformed image or one that is
 * not an ELF cubin (PTX or a fatbin would be compiled by the driver, out of
 * this check's sight); KILN_E_LIMIT over CUBIN_MAX_BYTES.
 */
enum kiln_rc cubin_check_heap(const void *data, size_t len, struct kiln_err *err) KILN_NODISCARD;

/*
 * Which of the functions `want` (nwant names) the ELF64 little-endian image
 * `data` defines with global or weak binding (a cubin's kernels, cuda set;
 * else the cpu backend's candidate.so, whose undefined symbols the linker
 * leaves for dlopen to miss): found[i] for want[i]. `defined` (cap bytes)
 * receives the functions it does define, ", "-joined and capped with
 * "...", kiln's and the toolchain's own (kiln_*, __*, _init, _fini, names with $) left out, for the
 * message naming a missing one. Same limits and errors as cubin_check_heap (EM_CUDA only when
 * cuda).
 */
enum kiln_rc elf_find_functions(const void *data, size_t len, int cuda, const char *const *want,
                                size_t nwant, bool *found, char *defined, size_t cap,
                                struct kiln_err *err) KILN_NODISCARD;

#endif
