#!/bin/bash
# kernels_archs.sh TUNE_CONFIGS SOURCE_DIR "ARCHS": every built-in workload's
# kernel.cu compiles for every architecture kiln supports (ARCHS: the
# toolkit's list from sm_75 on, x10, as cmake/KilnDeps.cmake found it):
#   - its defaults (the tuner's start), as one fatbin holding SASS for each
#     architecture and PTX for the lowest;
#   - for each architecture, a configuration the tuner may propose there
#     (tune_configs with KILN_TUNE_ARCH: that architecture's limits and the
#     kernel's DEVICE_* requires); architectures given the same one share a
#     fatbin.
# Each fatbin's images are checked by fatbin_archs.py (CI has no cuobjdump).
# A kernel that uses a newer GPU's feature without __CUDA_ARCH__ or a
# require fails here. An architecture a kernel's requires refuse as a
# whole (gemm_bf16 below sm_80) must be refused with "the kernel needs
# sm_XX or newer", and its defaults still compile there (the fatbin).
# sm_90 is built as sm_90a, as kiln compiles it (base/gpuarch.h).
# Exits 77 without the CUDA toolkit.
set -u
configs=$1 src=$2 archs=$3
here=$(cd "$(dirname "$0")" && pwd)
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ ! -x "$nvcc" ]; then
    echo "skipped: nvcc not found (install the CUDA toolkit or put nvcc on PATH)"
    exit 77
fi
[ -n "$archs" ] || { echo "FAIL: no architecture list (kiln was configured without CUDA?)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0 total=0
fail() {
    echo "FAIL $*"
    head -20 "$tmp/log"
    fails=$((fails + 1))
}
# build DIR "ARCHS" CHECK CFG: one fatbin of DIR's kernel.cu with CFG's
# defines for ARCHS (plus PTX of the lowest with CHECK --expect).
build() {
    local dir=$1 list=$2 check=$3 cfg=$4 gencode=() defs=() a
    for a in $list; do
        [ "$a" = 90 ] && a=90a
        gencode+=(-gencode "arch=compute_$a,code=sm_$a")
    done
    [ "$check" = --expect ] && gencode+=(-gencode "arch=compute_${list%% *},code=compute_${list%% *}")
    for kv in $cfg; do defs+=("-D$kv"); done
    total=$((total + 1))
    if ! "$nvcc" -fatbin -O3 "${gencode[@]}" -o "$tmp/k.fatbin" "$dir/kernel.cu" "${defs[@]}" \
        >"$tmp/log" 2>&1; then
        fail "$(basename "$dir") [$cfg] for sm_${list// / sm_}:"
    elif ! python3 "$here/fatbin_archs.py" "$check" "$list" "$tmp/k.fatbin" >"$tmp/log" 2>&1; then
        fail "$(basename "$dir") [$cfg]:"
    fi
}
for dir in "$src"/workloads/*/ "$src"/workloads/kernelbench/*/; do
    wl=$(basename "$dir")
    [ -f "$dir/kernel.cu" ] || continue
    declare -A group=()
    defaults=
    for a in $archs; do
        # Line 1: the defaults; line 2: another configuration, when the
        # tuner has one on this architecture (the same seed for each, so
        # that architectures with the same space share a compile).
        if ! out=$(KILN_TUNE_ARCH=sm_$a "$configs" "$dir" 2 "${KILN_KERNELS_SEED:-1}" 2>"$tmp/log"); then
            if grep -q "the kernel needs sm_[0-9]* or newer" "$tmp/log"; then
                echo "ok   $wl sm_$a: refused ($(grep -o "the kernel needs sm_[0-9]* or newer" "$tmp/log"))"
            else
                fail "$wl sm_$a: tune_configs failed"
            fi
            continue
        fi
        defaults=$(sed -n 1p <<<"$out")
        cfg=$(sed -n 2p <<<"$out")
        [ -n "$cfg" ] && group[$cfg]="${group[$cfg]:-}${group[$cfg]:+ }$a"
    done
    build "$dir" "$archs" --expect "$defaults"
    for cfg in "${!group[@]}"; do build "$dir" "${group[$cfg]}" --has "$cfg"; done
    echo "$wl: defaults and ${#group[@]} other configuration(s) compiled for sm_${archs// / sm_}"
    unset group
done
echo "$total fatbins, $fails failed"
[ "$fails" = 0 ]
