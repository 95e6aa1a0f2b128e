#!/bin/bash
# workload_check.sh builtin NAME | hostile KIND - `kiln workload check`.
#
# builtin: a built-in workload passes on the cpu backend.
# hostile: a small cpu workload written here, broken in one way, fails with
# exit status 1 and a message naming the problem (its scripts, its
# workload.json, every problem at once, or its starting kernel, which is
# compiled and run); an unused tunable is a warning; scripts read the
# scalars' values from case.json; a local directory named like a built-in
# is said to shadow it; kiln optimize of a broken start leaves no run.
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
    # The starting kernel broken (issue 35 item 5), or an unused tunable.
    case "$1" in
    start_nocompile) sed -i 's|^{$|{\n    syntax error here;|' "$d/kernel.c" ;;
    start_wrong) sed -i 's|out\[i\] = 2 \* x\[i\] + y\[i\];|out[i] = x[i] + y[i];|' "$d/kernel.c" ;;
    start_int) sed -i 's|^void axpy(long long n,|void axpy(int n,|' "$d/kernel.c" ;;
    unused_tunable) sed -i '1i // kiln: tunable SPARE {1, 2, 4} = 1' "$d/kernel.c" ;;
    esac
}

# The tiny workload with a float32 scalar `a` = 3 that inputs.py and
# reference.py read from case.json's "scalars" (issue 35 item 11), not
# from a copy of workload.json's value.
make_scalar_workload()
{
    make_workload control
    local d=$T/wl
    python3 - "$d/workload.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["signature"].insert(1, {"name": "a", "kind": "scalar", "type": "float32", "value": 3.0})
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
    sed -i 's|^n = int(case\["sizes"\]\["n"\])$|n = int(case["sizes"]["n"])\nassert case["scalars"] == {"n": n, "a": 3.0}, case|' "$d/inputs.py"
    sed -i 's|(2 \* x + y)|(float(json.load(open(sys.argv[1]))["scalars"]["a"]) * x + y)|' "$d/reference.py"
    sed -i -e 's|args(n, x, y, out)|args(n, a, x, y, out)|' \
        -e 's|long long n, const float \*x|long long n, float a, const float *x|' \
        -e 's|out\[i\] = 2 \* x\[i\]|out[i] = a * x[i]|' "$d/kernel.c"
}

case "$mode" in
builtin)
    run_kiln "$T/out" "$T/err" workload check "$what" --backend cpu --cache "$T/cache"
    expect_rc 0 "kiln workload check $what --backend cpu"
    contains "$T/out" "$what: workload check passed"
    not_contains "$T/out" "FAIL"
    # Its starting kernel was compiled and run (issue 35 item 5).
    contains "$T/out" "kernel.c compiles and is correct on the"
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
        # What the file holds, not a byte count (issue 35 item 11).
        want="x.npy: got float64 (3,), the signature says float32 (3,)" want2=""
        ;;
    start_nocompile)
        # The starting kernel is compiled and run (issue 35 item 5).
        want="compile_error (stage compile): compilation failed: kernel.c:4:5: error:"
        want2="FAIL  cpu  starting kernel kernel.c: compile_error"
        ;;
    start_wrong)
        want="wrong_answer (stage verify): case small (set 0): output out: 3 of 3 elements differ"
        want2="FAIL  cpu  starting kernel kernel.c: wrong_answer"
        ;;
    start_int)
        want="kernel.c:2: kernel parameters: axpy's parameter 1 \`int n\` is a 4-byte integer, but args() passes n, an int64"
        want2="FAIL  cpu  starting kernel kernel.c: compile_error (stage compile)"
        ;;
    scalar_value)
        make_scalar_workload
        run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu --cache "$T/cache"
        expect_rc 0 "kiln workload check of scripts reading case.json's scalars"
        contains "$T/out" "tiny_axpy: workload check passed"
        contains "$T/out" "kernel.c compiles and is correct on the 1 correctness case"
        echo "ok: workload hostile scalar_value"
        exit 0
        ;;
    unused_tunable)
        # A warning, not a problem: the check passes and names it.
        make_workload unused_tunable
        run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu --cache "$T/cache"
        expect_rc 0 "kiln workload check with an unused tunable"
        contains "$T/out" "WARN  cpu  kernel.c:1: tunable SPARE is never used in the code: the tuner would try its 3 values for nothing"
        contains "$T/out" "tiny_axpy: workload check passed"
        echo "ok: workload hostile unused_tunable"
        exit 0
        ;;
    many_errors)
        # Every problem of workload.json in one run, not one per run.
        make_workload control
        python3 - "$T/wl/workload.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["descripton"] = d.pop("description")
d["signature"][1]["dtpye"] = d["signature"][1].pop("dtype")
d["cases"][0]["sizes"]["n"] = 0
d["cases"][1]["kind"] = "perf"
json.dump(d, open(sys.argv[1], "w"), indent=1)
PY
        for fmt in text json; do
            args=(workload check "$T/wl" --backend cpu --cache "$T/cache")
            [ "$fmt" = json ] && args+=(--json)
            run_kiln "$T/out" "$T/err" "${args[@]}"
            expect_rc 1 "kiln workload check ($fmt) of a workload.json with five problems"
            python3 - "$T/out" "$fmt" <<'PY' || fail "not every problem was named ($fmt): $(cat "$T/out")"
import json, sys
want = ['(top level): unknown key "descripton"; did you mean "description"?',
        '(top level): missing required key "description"',
        'signature[1]: unknown key "dtpye"; did you mean "dtype"?',
        'cases[0].sizes.n: 0 is not in 1..2^40',
        'cases[1].kind: unknown kind "perf" (correctness or performance)']
text = open(sys.argv[1]).read()
if sys.argv[2] == "json":
    assert json.load(open(sys.argv[1]))["problems"] == want, text
else:
    assert "workload.json: 5 problems:" in text, text
    assert [l.split("FAIL    ", 1)[1] for l in text.splitlines() if l.startswith("FAIL    ")] == want, text
PY
        done
        echo "ok: workload hostile many_errors"
        exit 0
        ;;
    start_cuda)
        # A cuda start is compiled (and run where there is a GPU): an `int
        # n` for an int64 fails the check; the right one passes, said as
        # compiled only when there is no GPU (issue 35 item 5).
        if ! command -v nvcc >/dev/null 2>&1 && [ ! -x /usr/local/cuda/bin/nvcc ]; then
            echo "SKIP: needs nvcc"
            exit 77
        fi
        make_workload control
        sed -i 's|"backends": \["cpu"\]|"backends": ["cuda"]|' "$T/wl/workload.json"
        rm "$T/wl/kernel.c"
        cat >"$T/wl/kernel.cu" <<'CU'
// kiln: launch axpy grid(cdiv(n, 256)) block(256) args(n, x, y, out)
extern "C" __global__ void axpy(int n, const float *x, const float *y, float *out)
{
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        out[i] = 2 * x[i] + y[i];
}
CU
        run_kiln "$T/out" "$T/err" workload check "$T/wl" --cache "$T/cache"
        expect_rc 1 "kiln workload check of a cuda start taking int n for an int64"
        contains "$T/out" "FAIL  cuda starting kernel kernel.cu: compile_error (stage compile)"
        contains "$T/out" "axpy's parameter 1 \`int n\` is a 4-byte integer, but args() passes n, an int64"
        sed -i 's|axpy(int n,|axpy(long long n,|' "$T/wl/kernel.cu"
        run_kiln "$T/out" "$T/err" workload check "$T/wl" --cache "$T/cache"
        expect_rc 0 "kiln workload check of a right cuda start"
        if grep -q "no usable GPU" "$T/out"; then
            contains "$T/out" "ok    cuda kernel.cu compiles (not run: no usable GPU here)"
        else
            contains "$T/out" "ok    cuda kernel.cu compiles and is correct on the 1 correctness case"
        fi
        echo "ok: workload hostile start_cuda"
        exit 0
        ;;
    shadow)
        # A directory here named like a built-in is used, and said so.
        make_workload control
        mv "$T/wl" "$T/saxpy"
        rc=$(cd "$T" && "$KILN_BIN" workload check saxpy --backend cpu --cache "$T/cache" \
            >"$T/out" 2>"$T/err"; echo $?)
        expect_rc 0 "kiln workload check of ./saxpy"
        contains "$T/out" "tiny_axpy: workload check passed"
        contains "$T/err" "kiln: warning: 'saxpy' is the directory ./saxpy here, not the built-in workload saxpy"
        echo "ok: workload hostile shadow"
        exit 0
        ;;
    unstarted)
        # kiln optimize of a start that does not compile fails before its
        # first candidate: no run is left suggesting kiln resume (item 5).
        make_workload start_nocompile
        run_kiln "$T/out" "$T/err" optimize "$T/wl" --backend cpu --results "$T/res" \
            --max-iterations 2 --seed 1
        [ "$rc" != 0 ] || fail "kiln optimize of a start that does not compile passed"
        contains "$T/err" "does not compile"
        not_contains "$T/err" "kiln resume"
        [ -z "$(ls -A "$T/res" 2>/dev/null)" ] || fail "a run was left behind: $(ls "$T/res")"
        echo "ok: workload hostile unstarted"
        exit 0
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
