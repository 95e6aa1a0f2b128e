#!/bin/bash
# workload_check.sh builtin NAME | hostile KIND - `kiln workload check`.
#
# builtin: a built-in workload passes on the cpu backend.
# hostile: a small cpu workload written here, broken in one way, fails with
# exit status 1 and a message naming the problem.
. "$(dirname "$0")/lib.sh"
mode=$1
what=$2

# A tiny saxpy-like workload (cpu only) in $T/wl; KIND breaks one part.
make_workload()
{
    local d=$T/wl n_small=3
    mkdir -p "$d"
    [ "$1" = negative_size ] && n_small=-4
    cat >"$d/workload.json" <<JSON
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
    {"name": "small", "kind": "correctness", "sizes": {"n": $n_small}},
    {"name": "perf",  "kind": "performance", "sizes": {"n": 4096}}
  ],
  "held_out": [{"name": "held", "sizes": {"n": 77}}],
  "tolerance": {},
  "cost": {"bytes": "12*n", "flops": "2*n"},
  "backends": ["cpu"]
}
JSON
    local dtype=float32 extra="" spin=""
    [ "$1" = wrong_dtype ] && dtype=float64
    [ "$1" = extra_file ] && extra='np.save(os.path.join(sys.argv[2], "stowaway.npy"), x)'
    [ "$1" = forever ] && spin='while True: pass'
    cat >"$d/inputs.py" <<PY
import json, os, sys
import numpy as np
case = json.load(open(sys.argv[1]))
n = int(case["sizes"]["n"])
rng = np.random.default_rng(int(case["seed"]))
$spin
x = rng.standard_normal(n).astype(np.$dtype)
y = rng.standard_normal(n).astype(np.float32)
np.save(os.path.join(sys.argv[2], "x.npy"), x)
np.save(os.path.join(sys.argv[2], "y.npy"), y)
$extra
PY
    cat >"$d/reference.py" <<'PY'
import json, os, sys
import numpy as np
x = np.load(os.path.join(sys.argv[2], "x.npy")).astype(np.float64)
y = np.load(os.path.join(sys.argv[2], "y.npy")).astype(np.float64)
np.save(os.path.join(sys.argv[3], "out.npy"), (2 * x + y).astype(np.float32))
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

case "$mode" in
builtin)
    run_kiln "$T/out" "$T/err" workload check "$what" --backend cpu --cache "$T/cache"
    expect_rc 0 "kiln workload check $what --backend cpu"
    contains "$T/out" "$what: workload check passed"
    not_contains "$T/out" "FAIL"
    # Every row is a cpu case, and the held-out ones were checked too.
    contains "$T/out" "held-out"
    ! grep -E '^  (ok|WEAK|FAIL) +cuda' "$T/out" || fail "--backend cpu checked cuda cases"
    ;;
hostile)
    case "$what" in
    control)
        # The same workload unbroken passes, so the failures below are the breakage's.
        make_workload control
        run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu --cache "$T/cache"
        expect_rc 0 "kiln workload check of the unbroken tiny workload"
        contains "$T/out" "tiny_axpy: workload check passed"
        # --json: the same verdict as one document; --quiet: the exit status.
        run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu --cache "$T/cache" --json
        expect_rc 0 "kiln workload check --json of the unbroken tiny workload"
        expect_json "$T/out" '[d["version"], d["status"], d["problems"], d["workload"]["name"]]' \
            '[1, "pass", [], "tiny_axpy"]'
        run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu --cache "$T/cache" --quiet
        expect_rc 0 "kiln workload check --quiet of the unbroken tiny workload"
        [ ! -s "$T/out" ] || fail "--quiet printed: $(head -3 "$T/out")"
        echo "ok: workload hostile control"
        exit 0
        ;;
    wrong_backend)
        # A backend the workload does not list: said so, exit 2, nothing run
        # (it used to "pass" having checked nothing).
        make_workload control
        for fmt in "" --json; do
            run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cuda --cache "$T/cache" $fmt
            expect_rc 2 "kiln workload check --backend cuda $fmt of a cpu-only workload"
            contains "$T/err" 'tiny_axpy does not list the cuda backend (workload.json "backends": ["cpu"])'
            not_contains "$T/out" "workload check passed"
        done
        expect_json "$T/out" 'd["status"]' problems
        [ ! -d "$T/cache" ] || [ -z "$(ls -A "$T/cache")" ] || fail "--backend cuda ran scripts"
        echo "ok: workload hostile wrong_backend"
        exit 0
        ;;
    wrong_dtype)
        want="x.npy" want2="(the signature says x.npy is float32 (3,))"
        ;;
    extra_file)
        want="stowaway.npy" want2=""
        ;;
    forever)
        want="timeout" want2="inputs.py"
        ;;
    negative_size)
        want="workload.json: cases[0].sizes.n: -4" want2=""
        ;;
    esac
    make_workload "$what"
    args=(workload check "$T/wl" --backend cpu --cache "$T/cache")
    [ "$what" = forever ] && args+=(--timeout 3)
    start=$SECONDS
    run_kiln "$T/out" "$T/err" "${args[@]}"
    expect_rc 1 "kiln workload check of a workload with $what"
    cat "$T/out" "$T/err" >"$T/all"
    contains "$T/all" "$want"
    [ -z "$want2" ] || contains "$T/all" "$want2"
    [ "$what" = negative_size ] || contains "$T/out" "tiny_axpy: PROBLEMS FOUND"
    [ "$what" != forever ] || [ $((SECONDS - start)) -lt 60 ] ||
        fail "--timeout 3 took $((SECONDS - start)) s"
    if [ "$what" != forever ]; then
        run_kiln "$T/out" "$T/err" "${args[@]}" --json
        expect_rc 1 "kiln workload check --json of a workload with $what"
        expect_json "$T/out" 'd["status"]' problems
        python3 - "$T/out" "$want" <<'PY' || fail "--json does not name '$want': $(cat "$T/out")"
import json, sys
d = json.load(open(sys.argv[1]))
assert any(sys.argv[2] in p for p in d["problems"]), d["problems"]
PY
    fi
    ;;
*)
    fail "unknown mode $mode"
    ;;
esac
echo "ok: workload $mode $what"
