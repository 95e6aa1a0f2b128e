#!/bin/bash
# kiln-nvrtc never loads the GPU driver: NVRTC 13.0 dlopens libcuda.so.1 (its
# compile cache) and calls cuInit, which on a GPU host makes syscalls the
# nvrtc policy kills the compile for. A stand-in libcuda.so.1 that announces
# itself is put first on the library path; the compile must succeed without
# it being loaded. Needs a C compiler and kiln-nvrtc (skips without them).
set -uo pipefail
nvrtc=$1
src=$KILN_SOURCE_DIR/workloads/saxpy/kernel.cu
[ -x "$nvrtc" ] || { echo "SKIP: kiln-nvrtc not built (no NVRTC in this toolkit)"; exit 77; }
cc=$(command -v cc || command -v gcc) || { echo "SKIP: no C compiler"; exit 77; }
dir=$(mktemp -d); trap 'rm -rf "$dir"' EXIT
cat >"$dir/fake.c" <<'C'
#include <stdio.h>
__attribute__((constructor)) static void loaded(void) { fputs("FAKE-LIBCUDA-LOADED\n", stderr); }
int cuInit(unsigned flags) { (void)flags; fputs("FAKE-CUINIT\n", stderr); return 100; }
C
"$cc" -shared -fPIC -o "$dir/libcuda.so.1" "$dir/fake.c" || { echo "FAIL: building the stand-in"; exit 1; }
# A plain dlopen("libcuda.so.1") by name, with the same library path, finds
# the stand-in (else the test proves nothing).
LD_LIBRARY_PATH=$dir python3 - <<'PY' 2>"$dir/probe.err" || { cat "$dir/probe.err"; echo "FAIL: stand-in not loadable by name"; exit 1; }
import ctypes
ctypes.CDLL("libcuda.so.1")
PY
grep -q FAKE-LIBCUDA-LOADED "$dir/probe.err" || { echo "FAIL: stand-in does not announce itself"; exit 1; }
LD_LIBRARY_PATH=$dir "$nvrtc" -arch=sm_90 -o "$dir/out.cubin" "$src" -DBLOCK=256 -DITEMS=1 \
    >"$dir/log" 2>&1
rc=$?
cat "$dir/log"
[ $rc -eq 0 ] || { echo "FAIL: kiln-nvrtc exit $rc"; exit 1; }
[ -s "$dir/out.cubin" ] || { echo "FAIL: no cubin"; exit 1; }
if grep -q "FAKE-" "$dir/log"; then
    echo "FAIL: kiln-nvrtc loaded libcuda.so.1"
    exit 1
fi
echo "ok: compiled without loading libcuda.so.1"
