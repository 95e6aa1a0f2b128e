#!/bin/bash
# kernels_emu.sh TUNE_CONFIGS SOURCE_DIR: runs each built-in workload's
# kernel.cu on the CPU (cuda_emu.h, built with AddressSanitizer and UBSan)
# against float64 references over edge-case shapes and misaligned buffers,
# for a seeded sample of 4 configurations per workload (the defaults first),
# or every configuration the tuner may pick with KILN_KERNELS_ALL=1; the
# sample holds every value of every tunable (tune_configs). Configurations
# with a cp.async path run it too (cuda_emu.h's deferred copies).
# KernelBench starts included (kb_23_softmax is softmax_rows' kernel).
# A kernel with no CPU path of its own (gemm_bf16: tensor cores) names
# KILN_EMU_MMA and is built with it always (cuda_emu.h's ldmatrix, mma.sync
# and cp.async); its WGMMA=1 configurations have no emulation and are
# skipped (said so): nvcc compiles them (kernels_nvcc, kernels_every_arch).
set -u
configs=$1 src=$2
here=$(cd "$(dirname "$0")" && pwd)
cxx=$(command -v c++ || command -v g++) || { echo "skipped: no C++ compiler"; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export ASAN_OPTIONS=detect_leaks=0:detect_stack_use_after_return=0
cxxflags=(-std=c++17 -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all
    -Wall -Werror -Wno-unknown-pragmas -I"$here")
fails=0 total=0
for wl in gemm_bf16 sgemm saxpy reduce_sum transpose softmax_rows layernorm conv2d \
    kb_1_square_matrix_multiplication kb_16_matmul_with_transposed_a \
    kb_47_sum_reduction_over_a_dimension kb_19_relu; do
    dir=$src/workloads/$wl
    [ -d "$dir" ] || dir=$src/workloads/kernelbench/$wl
    if [ "${KILN_KERNELS_ALL:-0}" = 1 ]; then
        list=$("$configs" "$dir") || { echo "FAIL $wl: tune_configs failed"; exit 1; }
    else
        list=$("$configs" "$dir" 4 "${KILN_KERNELS_SEED:-1}") || { echo "FAIL $wl: tune_configs failed"; exit 1; }
    fi
    # Dynamic shared memory as a pointer the check sets (cuda_emu.h).
    sed 's/extern __shared__ \([A-Za-z_0-9]*\) \([A-Za-z_0-9]*\)\[\];/\1 *\2 = (\1 *)emu_dynamic_smem;/' \
        "$dir/kernel.cu" >"$tmp/kernel.cu"
    # The check does not depend on the configuration: built once per
    # workload; only the kernel's translation unit is built per configuration
    # (cuda_emu_kernel.cpp), which is what the test's time goes to.
    if ! "$cxx" "${cxxflags[@]}" -DWL_$wl -c -x c++ "$here/cuda_emu_check.cpp" \
        -o "$tmp/check.o" >"$tmp/log" 2>&1; then
        echo "FAIL $wl: the check does not build"
        head -20 "$tmp/log"
        fails=$((fails + 1))
        continue
    fi
    emu=()
    grep -q KILN_EMU_MMA "$tmp/kernel.cu" && emu=(-DKILN_EMU_MMA)
    while read -r cfg; do
        defs=()
        for kv in $cfg; do defs+=("-D$kv"); done
        if [ ${#emu[@]} -gt 0 ] && [[ " $cfg " == *" WGMMA=1 "* ]]; then
            echo "skip $wl $cfg: no wgmma in the emulator"
            continue
        fi
        total=$((total + 1))
        if ! "$cxx" "${cxxflags[@]}" "${emu[@]}" -DWL_$wl -DKERNEL="\"$tmp/kernel.cu\"" "${defs[@]}" \
            -c -x c++ "$here/cuda_emu_kernel.cpp" -o "$tmp/kernel.o" >"$tmp/log" 2>&1 ||
            ! "$cxx" -fsanitize=address,undefined "$tmp/check.o" "$tmp/kernel.o" -o "$tmp/check" \
                >>"$tmp/log" 2>&1; then
            echo "FAIL $wl $cfg: does not build"
            head -20 "$tmp/log"
            fails=$((fails + 1))
            continue
        fi
        # shellcheck disable=SC2086
        if ! "$tmp/check" "$dir/kernel.cu" $cfg >"$tmp/log" 2>&1; then
            echo "FAIL $wl $cfg:"
            grep -v "ASan doesn't fully support" "$tmp/log" | head -20
            fails=$((fails + 1))
        else
            echo "ok $wl $cfg"
        fi
        # A configuration that takes a cp.async path (sm_80+; the build above
        # ran its fallback) runs again with cuda_emu.h's cp.async: when
        # KILN_EMU_CP_ASYNC changes the preprocessed kernel.
        if grep -q KILN_EMU_CP_ASYNC "$tmp/kernel.cu" &&
            ! cmp -s <("$cxx" -E -P "${defs[@]}" -x c++ "$tmp/kernel.cu" 2>/dev/null) \
                <("$cxx" -E -P -DKILN_EMU_CP_ASYNC "${defs[@]}" -x c++ "$tmp/kernel.cu" 2>/dev/null); then
            total=$((total + 1))
            # shellcheck disable=SC2086
            if ! "$cxx" "${cxxflags[@]}" -DWL_$wl -DKERNEL="\"$tmp/kernel.cu\"" -DKILN_EMU_CP_ASYNC \
                "${defs[@]}" -c -x c++ "$here/cuda_emu_kernel.cpp" -o "$tmp/kernel.o" \
                >"$tmp/log" 2>&1 ||
                ! "$cxx" -fsanitize=address,undefined "$tmp/check.o" "$tmp/kernel.o" \
                    -o "$tmp/check" >>"$tmp/log" 2>&1 ||
                ! "$tmp/check" "$dir/kernel.cu" $cfg >"$tmp/log" 2>&1; then
                echo "FAIL $wl $cfg (cp.async):"
                grep -v "ASan doesn't fully support" "$tmp/log" | head -20
                fails=$((fails + 1))
            else
                echo "ok $wl $cfg (cp.async)"
            fi
        fi
    done <<<"$list"
done
echo "$total configurations run, $fails failed"
[ "$fails" = 0 ]
