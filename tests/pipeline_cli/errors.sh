#!/bin/bash
# errors.sh CASE - what `kiln eval` says when something is wrong (issue 17):
# said once, naming the user's file and line, no sandbox scratch path, a
# "did you mean" for a mistyped name, and said before any slow stage ran.
#
#   fail_fast      a candidate that does not compile is reported before any
#                  input is generated or reference run (the work directory
#                  holds no input set, stderr no generation line)
#   compile        the compiler's message names mykernel.c:6:36, once
#   directive      a bad `// kiln:` directive names the file and its line
#   dashdash       `--` ends options: a candidate named -mykernel.c
#   workload_name  a mistyped built-in workload gets "did you mean"
#   json_key       a mistyped workload.json key gets "did you mean"
#   param_type     a kernel parameter whose type disagrees with the signature
#                  (`int n` for an int64) is a compile_error naming the line
#                  (issue 35 item 5)
#   launch_name    a launch directive naming a function the candidate does
#                  not define is a compile_error at stage compile, with the
#                  functions it does define, before any input exists
#                  (issue 26 item 4); the cubin's too where nvcc is
#   run_counter    a directory run-2147483647 in --results: refused naming it
#                  and kiln gc, never a run--2147483648 (issue 26 item 13)
#   no_gpu         --backend cuda on a host without a GPU: exit 2 naming the
#                  fix, before a run directory exists (issue 26 item 3)
. "$(dirname "$0")/lib.sh"
case_name=$1

# The undeclared-identifier candidate under the user's own file name.
cp "$FIX/saxpy_nocompile.c" "$T/mykernel.c" || fail "copying the fixture"

# no_scratch_paths FILE: nothing under the sandbox's or kiln's scratch.
no_scratch_paths()
{
    not_contains "$1" "/in/"
    not_contains "$1" "/out/"
    not_contains "$1" "/work/"
    not_contains "$1" "/tmp/kiln-"
    not_contains "$1" "candidate.c"
}

case "$case_name" in
fail_fast)
    rc=$(cd "$T" && "$KILN_BIN" eval saxpy mykernel.c --backend cpu --seed 1 --work "$T/work" \
        >"$T/out" 2>"$T/err"; echo $?)
    expect_rc 1 "a candidate that does not compile"
    contains "$T/out" "status: compile_error (stage compile)"
    contains "$T/out" "mykernel.c:6:36: error:"
    # Nothing slow ran: no generation, no reference, no baseline, and the
    # input cache holds no set (only the scripts it would run).
    not_contains "$T/err" "preparing inputs"
    not_contains "$T/err" "generating inputs"
    not_contains "$T/err" "evaluating reference"
    not_contains "$T/err" "vendor baseline"
    sets=$(find "$T/work/inputs" -mindepth 2 -maxdepth 2 -type d ! -name scripts 2>/dev/null)
    [ -z "$sets" ] || fail "input sets were generated before the compile failed: $sets"
    ;;
compile)
    rc=$(cd "$T" && "$KILN_BIN" eval saxpy mykernel.c --backend cpu --seed 1 >"$T/out" \
        2>"$T/err"; echo $?)
    expect_rc 1 "a candidate that does not compile"
    contains "$T/out" "mykernel.c:6:36: error: "
    contains "$T/out" "mykernel.c: In function"
    [ "$(grep -c "mykernel.c:6:36: error:" "$T/out" "$T/err" | awk -F: '{s += $2} END {print s}')" = 1 ] ||
        fail "the compiler's error was printed more than once: $(cat "$T/out")"
    no_scratch_paths "$T/out"
    no_scratch_paths "$T/err"
    # In gcc's own order (issue 35 item 6): the function's context line, the
    # error, its source line and caret right under it, then its note.
    python3 - "$T/out" <<'PY' || fail "the diagnostics were reordered: $(cat "$T/out")"
import sys
lines = open(sys.argv[1]).read().split("compiler diagnostics:\n", 1)[1].splitlines()
i = next(k for k, l in enumerate(lines) if l.startswith("mykernel.c: In function"))
assert lines[i + 1].startswith("mykernel.c:6:36: error: "), lines
assert "kiln_undeclared_thing;" in lines[i + 2] and lines[i + 2].lstrip().startswith("6 |"), lines
assert lines[i + 3].strip().startswith("| ") and "^" in lines[i + 3], lines
assert lines[i + 4].startswith("mykernel.c:6:36: note: "), lines
PY
    # --json keeps the whole message in the verdict, named the same way.
    rc=$(cd "$T" && "$KILN_BIN" eval saxpy mykernel.c --backend cpu --seed 1 --json >"$T/out" \
        2>"$T/err"; echo $?)
    expect_rc 1 "a candidate that does not compile (--json)"
    expect_json "$T/out" 'd["detail"].startswith("compilation failed: mykernel.c:6:36: error:")' True
    no_scratch_paths "$T/out"
    ;;
directive)
    sed 's|^// kiln: launch saxpy.*|&\n// kiln: grid(n)|' "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" \
        >"$T/baddir.c"
    line=$(grep -n '^// kiln: grid' "$T/baddir.c" | cut -d: -f1)
    rc=$(cd "$T" && "$KILN_BIN" eval saxpy baddir.c --backend cpu --seed 1 >"$T/out" \
        2>"$T/err"; echo $?)
    expect_rc 1 "a bad directive"
    contains "$T/out" "status: compile_error (stage parse)"
    contains "$T/out" "baddir.c:$line: launch plan directive: unknown directive 'kiln: grid'"
    no_scratch_paths "$T/out"
    # An argument the signature lacks: the launch directive's line.
    sed 's|args(n, a, x, y, out)|args(n, a, x, y, bogus)|' \
        "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" >"$T/badarg.c"
    line=$(grep -n 'bogus' "$T/badarg.c" | cut -d: -f1)
    rc=$(cd "$T" && "$KILN_BIN" eval saxpy badarg.c --backend cpu --seed 1 >"$T/out" \
        2>"$T/err"; echo $?)
    expect_rc 1 "a plan naming an unknown argument"
    contains "$T/out" "badarg.c:$line: launch plan: launch 1 (saxpy): args() names bogus"
    ;;
dashdash)
    cp "$T/mykernel.c" "$T/-mykernel.c"
    rc=$(cd "$T" && "$KILN_BIN" eval --backend cpu --seed 1 -- saxpy -mykernel.c >"$T/out" \
        2>"$T/err"; echo $?)
    expect_rc 1 "a candidate named -mykernel.c after --"
    contains "$T/out" "-mykernel.c:6:36: error:"
    # Options may still come first, and without -- the name is an option.
    rc=$(cd "$T" && "$KILN_BIN" eval --backend cpu saxpy -mykernel.c >"$T/out" 2>"$T/err"
        echo $?)
    expect_rc 2 "-mykernel.c without --"
    contains "$T/err" "unknown option '-m'; to name the file '-mykernel.c', put it after --"
    ;;
workload_name)
    run_kiln "$T/out" "$T/err" eval saxpi "$T/mykernel.c" --backend cpu
    expect_rc 2 "a mistyped workload name"
    contains "$T/err" "no built-in workload of that name; did you mean 'saxpy'?"
    [ "$(wc -l <"$T/err")" = 1 ] || fail "more than one line: $(cat "$T/err")"
    run_kiln "$T/out" "$T/err" eval zzzzzz "$T/mykernel.c" --backend cpu
    expect_rc 2 "an unknown workload name"
    not_contains "$T/err" "did you mean"
    # A group's member, by the name kiln workloads lists (GROUP/NAME), from
    # any directory; its bare name says which that is.
    rc=$(cd "$T" && "$KILN_BIN" eval kernelbench/kb_19_relu mykernel.c --backend cpu \
        >"$T/out" 2>"$T/err"; echo $?)
    not_contains "$T/err" "no workload directory"
    run_kiln "$T/out" "$T/err" eval kb_19_relu "$T/mykernel.c" --backend cpu
    expect_rc 2 "a group member's bare name"
    contains "$T/err" "the built-in workload of that name is 'kernelbench/kb_19_relu'"
    run_kiln "$T/out" "$T/err" eval kernelbench/../saxpy "$T/mykernel.c" --backend cpu
    expect_rc 2 "a built-in name that leaves its group"
    contains "$T/err" "no workload directory 'kernelbench/../saxpy'"
    ;;
json_key)
    cp -r "$KILN_SOURCE_DIR/workloads/saxpy" "$T/wl"
    sed -i 's/"description":/"descripton":/' "$T/wl/workload.json"
    run_kiln "$T/out" "$T/err" workload check "$T/wl" --backend cpu
    [ "$rc" != 0 ] || fail "a mistyped key was accepted"
    cat "$T/out" "$T/err" >"$T/all"
    # Named with every other problem of the file (issue 35 item 11).
    contains "$T/all" 'workload.json: 2 problems:'
    contains "$T/all" '(top level): unknown key "descripton"; did you mean "description"?'
    contains "$T/all" '(top level): missing required key "description"'
    ;;
param_type)
    # A kernel's `int n` where the signature passes an int64 (issue 35 item
    # 5): a compile_error at stage compile naming the line, the parameter
    # and the declaration to write, before any input exists; on the cuda
    # backend too (compiled, no GPU needed).
    sed 's|^void saxpy(long long n,|void saxpy(int n,|' "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" \
        >"$T/narrow.c"
    line=$(grep -n '^void saxpy(int n' "$T/narrow.c" | cut -d: -f1)
    [ -n "$line" ] || fail "the fixture has no 'int n' kernel"
    rc=$(cd "$T" && "$KILN_BIN" eval saxpy narrow.c --backend cpu --seed 1 --work "$T/work" \
        >"$T/out" 2>"$T/err"; echo $?)
    expect_rc 1 "a kernel taking int n for an int64"
    contains "$T/out" "status: compile_error (stage compile)"
    contains "$T/out" "narrow.c:$line: kernel parameters: saxpy's parameter 1 \`int n\` is a 4-byte integer, but args() passes n, an int64 in the workload's signature: declare it \`long long n\`"
    sets=$(find "$T/work/inputs" -mindepth 2 -maxdepth 2 -type d ! -name scripts 2>/dev/null)
    [ -z "$sets" ] || fail "input sets were generated before the parameters were checked: $sets"
    if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
        sed 's|void saxpy(long long n,|void saxpy(int n,|' "$KILN_SOURCE_DIR/workloads/saxpy/kernel.cu" \
            >"$T/narrow.cu"
        rc=$(cd "$T" && "$KILN_BIN" eval saxpy narrow.cu --backend cuda --seed 1 \
            >"$T/out" 2>"$T/err"; echo $?)
        expect_rc 1 "a cuda kernel taking int n for an int64"
        contains "$T/out" "status: compile_error (stage compile)"
        contains "$T/out" "saxpy's parameter 1 \`int n\` is a 4-byte integer"
    fi
    ;;
launch_name)
    sed 's|^// kiln: launch saxpy |// kiln: launch saxpyy |' \
        "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" >"$T/typo.c"
    line=$(grep -n '^// kiln: launch' "$T/typo.c" | cut -d: -f1)
    rc=$(cd "$T" && "$KILN_BIN" eval saxpy typo.c --backend cpu --seed 1 --work "$T/work" \
        >"$T/out" 2>"$T/err"; echo $?)
    expect_rc 1 "a launch of an undefined function"
    contains "$T/out" "status: compile_error (stage compile)"
    contains "$T/out" "typo.c:$line: launch 1 names saxpyy, which the candidate does not define"
    contains "$T/out" "did you mean 'saxpy'? it defines: saxpy)"
    not_contains "$T/out" "kiln_launch"
    not_contains "$T/err" "generating inputs"
    not_contains "$T/err" "evaluating reference"
    sets=$(find "$T/work/inputs" -mindepth 2 -maxdepth 2 -type d ! -name scripts 2>/dev/null)
    [ -z "$sets" ] || fail "input sets were generated before the launch was resolved: $sets"
    rc=$(cd "$T" && "$KILN_BIN" eval saxpy typo.c --backend cpu --seed 1 --json >"$T/out" \
        2>"$T/err"; echo $?)
    expect_rc 1 "a launch of an undefined function (--json)"
    expect_json "$T/out" 'd["status"], d["stage"]' "('compile_error', 'compile')"
    # The cubin's kernels, where nvcc can compile one (no GPU needed).
    if command -v nvcc >/dev/null 2>&1 || [ -x /usr/local/cuda/bin/nvcc ]; then
        sed 's|^extern "C" __global__|__global__|' "$KILN_SOURCE_DIR/workloads/saxpy/kernel.cu" \
            >"$T/mangled.cu"
        rc=$(cd "$T" && "$KILN_BIN" eval saxpy mangled.cu --backend cuda --seed 1 \
            >"$T/out" 2>"$T/err"; echo $?)
        expect_rc 1 "a launch of a C++ (mangled) kernel"
        contains "$T/out" "status: compile_error (stage compile)"
        contains "$T/out" "launch 1 names saxpy, which the candidate does not define"
        contains "$T/out" 'extern "C" __global__'
    fi
    ;;
run_counter)
    mkdir -p "$T/results/run-2147483647"
    run_kiln "$T/out" "$T/err" optimize saxpy --backend cpu --results "$T/results" \
        --max-iterations 1 --seed 1
    expect_rc 2 "kiln optimize past the last run number"
    contains "$T/err" "$T/results/run-2147483647: run numbers stop at 999999999"
    contains "$T/err" "kiln gc"
    [ "$(ls "$T/results")" = run-2147483647 ] || fail "a run directory was made: $(ls "$T/results")"
    ;;
no_gpu)
    if ls /proc/driver/nvidia/gpus/* >/dev/null 2>&1; then
        echo "skipped: this host has a GPU"
        exit 77
    fi
    mkdir "$T/cwd"
    rc=$(cd "$T/cwd" && "$KILN_BIN" optimize saxpy --backend cuda --max-iterations 1 \
        >"$T/out" 2>"$T/err"; echo $?)
    expect_rc 2 "kiln optimize --backend cuda without a GPU"
    contains "$T/err" "the cuda backend needs an NVIDIA GPU"
    contains "$T/err" "--backend cpu"
    not_contains "$T/err" "kiln resume"
    [ -z "$(ls -A "$T/cwd")" ] || fail "left behind: $(find "$T/cwd")"
    rc=$(cd "$T/cwd" && "$KILN_BIN" eval saxpy "$KILN_SOURCE_DIR/workloads/saxpy/kernel.cu" \
        --backend cuda >"$T/out" 2>"$T/err"; echo $?)
    expect_rc 2 "kiln eval --backend cuda without a GPU"
    contains "$T/err" "the cuda backend needs an NVIDIA GPU"
    contains "$T/err" "--backend cpu"
    [ -z "$(ls -A "$T/cwd")" ] || fail "left behind: $(find "$T/cwd")"
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
echo "ok: errors $case_name"
