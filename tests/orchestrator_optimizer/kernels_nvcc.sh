#!/bin/bash
# kernels_nvcc.sh TUNE_CONFIGS SOURCE_DIR: compiles each built-in workload's
# kernel.cu with nvcc for sm_90 (as sm_90a, which kiln compiles an sm_90 GPU
# for: base/gpuarch.h), the way pipeline/compile.c does (-cubin -O3,
# one -DNAME=V per tunable), for the configurations the tuner may pick: a
# seeded sample of 6 per workload (the defaults first, then more until every
# value of every tunable is in), or all of them with
# KILN_KERNELS_ALL=1 (thousands of compiles: run it after changing a kernel).
# A configuration that spills registers (ptxas -v) fails too. Exits 77
# without the CUDA toolkit.
set -u
configs=$1 src=$2
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ ! -x "$nvcc" ]; then
    echo "skipped: nvcc not found (install the CUDA toolkit or put nvcc on PATH)"
    exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 total=0
for dir in "$src"/workloads/*/ "$src"/workloads/kernelbench/*/; do
    wl=$(basename "$dir")
    [ -f "$dir/kernel.cu" ] || continue
    if [ "${KILN_KERNELS_ALL:-0}" = 1 ]; then
        list=$("$configs" "$dir") || { echo "FAIL $wl: tune_configs failed"; exit 1; }
    else
        list=$("$configs" "$dir" 6 "${KILN_KERNELS_SEED:-1}") || { echo "FAIL $wl: tune_configs failed"; exit 1; }
    fi
    [ -n "$list" ] || { echo "FAIL $wl: no configuration"; exit 1; }
    while read -r cfg; do
        defs=()
        for kv in $cfg; do defs+=("-D$kv"); done
        total=$((total + 1))
        if ! "$nvcc" -cubin -arch=sm_90a -O3 -Xptxas -v -o "$tmp/k.cubin" "$dir/kernel.cu" \
            "${defs[@]}" >"$tmp/log" 2>&1; then
            echo "FAIL $wl $cfg:"
            head -20 "$tmp/log"
            fails=$((fails + 1))
        elif grep -Eq '[1-9][0-9]* bytes spill (stores|loads)' "$tmp/log"; then
            # A spill is a configuration the requires should have refused.
            echo "FAIL $wl $cfg: spills: $(grep -Eo '[0-9]+ bytes spill [a-z]+' "$tmp/log" | tr '\n' ' ')"
            fails=$((fails + 1))
        fi
    done <<<"$list"
    echo "$wl: $(wc -l <<<"$list") configurations compiled"
done
echo "$total compiles, $fails failed"
[ "$fails" = 0 ]
