#!/bin/bash
# inputs.sh MODE - how inputs and references are prepared (pipeline/inputs.c).
#
# parallel: sets generated one at a time and three at a time
#           (KILN_INPUT_JOBS) are the same bytes, `ok` marks included; a
#           bad KILN_INPUT_JOBS is refused.
# cache:    a second check of the same cache generates nothing (a file planted
#           in every set directory survives; a regenerated set is rebuilt from
#           an empty directory); a damaged set is rebuilt, and only it; one
#           `kiln eval` runs each set's scripts once.
# order:    the cheapest set is generated first (a smoke test), then the
#           costliest (one at a time, the log says the order).
# errors:   with two sets failing, the error reported is the same one at any
#           parallelism: the costliest's; with every set failing, the
#           cheapest's (run first).
# weak:     a weak reference's flag and explanation reach the table from the
#           set's `ok` mark.
. "$(dirname "$0")/lib.sh"
mode=$1

# A tiny cpu workload: out = 2 * x + y. $1: a python statement inputs.py
# runs first (n is the case's size); $2: what reference.py writes as out.
make_workload()
{
    local d=$T/wl
    mkdir -p "$d"
    cat >"$d/workload.json" <<'JSON'
{
  "name": "tiny_axpy",
  "description": "out = 2 * x + y for small float32 vectors.",
  "sizes": ["n"],
  "signature": [
    {"name": "n",   "kind": "scalar", "type": "int64",   "expr": "n"},
    {"name": "x",   "kind": "tensor", "dtype": "float32", "shape": ["n"], "role": "in"},
    {"name": "y",   "kind": "tensor", "dtype": "float32", "shape": ["n"], "role": "in"},
    {"name": "out", "kind": "tensor", "dtype": "float32", "shape": ["n"], "role": "out"}
  ],
  "cases": [
    {"name": "small", "kind": "correctness", "sizes": {"n": 3}},
    {"name": "mid",   "kind": "correctness", "sizes": {"n": 1000}},
    {"name": "perf",  "kind": "performance", "sizes": {"n": 40000}}
  ],
  "held_out": [{"name": "held", "sizes": {"n": 77}}],
  "tolerance": {},
  "cost": {"bytes": "12*n", "flops": "2*n"},
  "backends": ["cpu"]
}
JSON
    cat >"$d/inputs.py" <<PY
import json, os, sys
import numpy as np
case = json.load(open(sys.argv[1]))
n = int(case["sizes"]["n"])
$1
rng = np.random.default_rng(int(case["seed"]))
np.save(os.path.join(sys.argv[2], "x.npy"), rng.standard_normal(n).astype(np.float32))
np.save(os.path.join(sys.argv[2], "y.npy"), rng.standard_normal(n).astype(np.float32))
PY
    cat >"$d/reference.py" <<PY
import os, sys
import numpy as np
x = np.load(os.path.join(sys.argv[2], "x.npy")).astype(np.float64)
y = np.load(os.path.join(sys.argv[2], "y.npy")).astype(np.float64)
np.save(os.path.join(sys.argv[3], "out.npy"), ($2).astype(np.float32))
PY
    cat >"$d/kernel.c" <<'C'
// kiln: launch axpy args(n, x, y, out)
void axpy(long long n, const float *x, const float *y, float *out)
{
    for (long long i = 0; i < n; i++)
        out[i] = 2 * x[i] + y[i];
}
C
}

# The set directories under a cache, one per line.
set_dirs()
{
    find "$1" -mindepth 2 -maxdepth 2 -type d ! -name scripts | sort
}

case "$mode" in
parallel)
    # A built-in workload: real generators, several sets of each kind.
    for j in 1 3; do
        KILN_INPUT_JOBS=$j run_kiln "$T/out" "$T/err" workload check saxpy --backend cpu \
            --seed 7 --cache "$T/c$j"
        expect_rc 0 "kiln workload check saxpy with KILN_INPUT_JOBS=$j"
        sed 's/ *$//' "$T/out" >"$T/table$j"
    done
    [ "$(set_dirs "$T/c1" | wc -l)" -ge 8 ] || fail "too few sets: $(set_dirs "$T/c1")"
    diff -r "$T/c1" "$T/c3" >"$T/diff" || fail "parallel sets differ: $(head -5 "$T/diff")"
    diff "$T/table1" "$T/table3" >"$T/diff" || fail "tables differ: $(head -5 "$T/diff")"
    # A KILN_INPUT_JOBS that is not 1 to 16 is refused, naming the variable.
    KILN_INPUT_JOBS=lots run_kiln "$T/out" "$T/err" workload check saxpy --backend cpu \
        --cache "$T/c1"
    expect_rc 1 "KILN_INPUT_JOBS=lots"
    contains "$T/out" "KILN_INPUT_JOBS=lots: expected a number of sets at a time, 1 to 16"
    ;;
cache)
    make_workload "" "2 * x + y"
    args=(workload check "$T/wl" --backend cpu --seed 3 --cache "$T/cache")
    run_kiln "$T/out" "$T/err" "${args[@]}"
    expect_rc 0 "first check"
    n=0
    while read -r d; do
        echo planted >"$d/planted"
        n=$((n + 1))
    done < <(set_dirs "$T/cache")
    [ "$n" = 4 ] || fail "expected 4 sets (3 visible, 1 held-out), found $n"
    run_kiln "$T/out" "$T/err" "${args[@]}"
    expect_rc 0 "second check"
    left=$(find "$T/cache" -name planted | wc -l)
    [ "$left" = 4 ] || fail "the second check regenerated $((4 - left)) of 4 cached sets"
    # A damaged set is rebuilt (its planted file goes), the others are not.
    perf=$(set_dirs "$T/cache" | grep /perf-)
    printf 'x' >>"$perf/in/x.npy"
    run_kiln "$T/out" "$T/err" "${args[@]}"
    expect_rc 0 "check after damaging one set"
    [ ! -e "$perf/planted" ] || fail "the damaged set was not rebuilt"
    left=$(find "$T/cache" -name planted | wc -l)
    [ "$left" = 3 ] || fail "expected the 3 intact sets kept, $left were"
    # One run prepares each set once: kiln eval's log names every
    # generated set, and none twice (3 visible sets: perf has 3).
    run_kiln "$T/out" "$T/err" eval "$T/wl" "$T/wl/kernel.c" --backend cpu "${FAST[@]}" \
        --work "$T/eval"
    expect_rc 0 "kiln eval"
    grep -o 'generating inputs and reference for case .*' "$T/err" | sort >"$T/gen"
    [ "$(wc -l <"$T/gen")" = "$(sort -u "$T/gen" | wc -l)" ] || fail "a set generated twice: $(cat "$T/gen")"
    [ "$(grep -c 'case perf' "$T/gen")" -ge 3 ] || fail "perf sets not all generated: $(cat "$T/gen")"
    ;;
order)
    make_workload "" "2 * x + y"
    KILN_INPUT_JOBS=1 run_kiln "$T/out" "$T/err" eval "$T/wl" "$T/wl/kernel.c" --backend cpu \
        "${FAST[@]}" --work "$T/eval"
    expect_rc 0 "kiln eval"
    grep -o 'generating inputs and reference for case [a-z]* set [0-9]*' "$T/err" |
        awk '{print $7 "/" $9}' | head -5 | tr '\n' ' ' >"$T/order"
    [ "$(cat "$T/order")" = "small/0 perf/0 perf/1 perf/2 mid/0 " ] ||
        fail "sets not generated cheapest, then costliest first: $(cat "$T/order")"
    ;;
errors)
    # mid and perf fail; the report must not depend on which finished first.
    make_workload 'assert n < 1000, "n=%d is too big" % n' "2 * x + y"
    for j in 1 3; do
        KILN_INPUT_JOBS=$j run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu \
            --cache "$T/c$j" --json
        expect_rc 1 "check with failing sets, KILN_INPUT_JOBS=$j"
        python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["problems"])' \
            "$T/out" | sed -e "s#$T/c$j##g" -e "s/ in [0-9.]* s;/ in N s;/" >"$T/problems$j"
    done
    contains "$T/problems1" "n=40000 is too big"
    diff "$T/problems1" "$T/problems3" >"$T/diff" || fail "errors differ: $(cat "$T/diff")"
    make_workload 'assert n < 0, "n=%d is too big" % n' "2 * x + y"
    KILN_INPUT_JOBS=3 run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu \
        --cache "$T/c4"
    expect_rc 1 "check with every set failing"
    contains "$T/out" "visible cases on cpu: inputs.py (case small,"
    ;;
weak)
    # A constant reference: every set is weak; the perf one fails the check.
    make_workload "" "0 * x"
    run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu --cache "$T/cache"
    expect_rc 1 "check with a weak reference"
    [ "$(grep -c '^  \(WEAK\|FAIL\) .* weak: ' "$T/out")" = 4 ] ||
        fail "not 4 weak rows: $(cat "$T/out")"
    # The start (2x + y) disagrees with the constant reference: its own row.
    contains "$T/out" "starting kernel kernel.c: wrong_answer"
    contains "$T/out" "weak: out: "
    # Cached: the flags come from the marks, the same as when generated.
    cp "$T/out" "$T/first"
    run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu --cache "$T/cache"
    expect_rc 1 "second check with a weak reference"
    diff "$T/first" "$T/out" >"$T/diff" || fail "cached weak flags differ: $(cat "$T/diff")"
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "ok: inputs $mode"
