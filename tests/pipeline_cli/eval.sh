#!/bin/bash
# eval.sh CASE SHARED_WORK - `kiln eval` end to end on the cpu backend.
#
# CASE pass fills SHARED_WORK (inputs and references of saxpy, seed 1) and
# is the fixture of the others, which start from a copy of those inputs so
# that each judges its candidate without regenerating anything.
. "$(dirname "$0")/lib.sh"
case_name=$1
shared=$2

# eval_candidate FILE [ARGS...]: `kiln eval saxpy FILE --json` in $T/work.
eval_candidate()
{
    local file=$1
    shift
    if [ ! -d "$T/work/inputs" ]; then
        [ -d "$shared/inputs" ] || fail "$shared/inputs is missing (the pipeline_eval_pass fixture did not run)"
        mkdir -p "$T/work" && cp -a "$shared/inputs" "$T/work/inputs" || fail "copying the shared inputs"
    fi
    run_kiln "$T/out" "$T/err" eval saxpy "$file" --backend cpu "${FAST[@]}" --no-reference \
        --work "$T/work" --json "$@"
}

case "$case_name" in
pass)
    rm -rf "$shared"
    run_kiln "$T/out" "$T/err" eval saxpy "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" \
        --backend cpu "${FAST[@]}" --work "$shared" --json
    expect_rc 0 "the starting kernel"
    expect_json "$T/out" 'd["status"]' pass
    expect_json "$T/out" 'd["reverified"]' True
    expect_json "$T/out" 'len(d["cases"])' 11
    expect_json "$T/out" 'all(c["correct"] for c in d["cases"])' True
    expect_json "$T/out" 'd["speedup_ref"] > 0' True
    # The turnaround breakdown (VERDICT.md section 8): every part, the
    # harness's own phases included, and the parts add up.
    expect_json "$T/out" 'sorted(d["turnaround_s"])' \
        '["compile", "context", "correctness", "harness", "ingest", "layout", "outputs", "read", "run", "sandbox", "tar", "timing", "total", "upload", "verify"]'
    expect_json "$T/out" 'all(isinstance(v, float) and v >= 0 for v in d["turnaround_s"].values())' True
    expect_json "$T/out" \
        'abs(sum(d["turnaround_s"][k] for k in ("sandbox", "harness", "tar", "ingest")) - d["turnaround_s"]["run"]) < 0.2' True
    expect_json "$T/out" \
        'd["turnaround_s"]["harness"] >= sum(d["turnaround_s"][k] for k in ("context", "layout", "read", "upload", "correctness", "timing", "outputs"))' True
    expect_json "$T/out" \
        'd["turnaround_s"]["total"] >= d["turnaround_s"]["compile"] + d["turnaround_s"]["run"] + d["turnaround_s"]["verify"]' True
    [ -d "$shared/inputs" ] || fail "--work $shared holds no inputs"
    # The table form of the same verdict.
    run_kiln "$T/out" "$T/err" eval saxpy "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" \
        --backend cpu "${FAST[@]}" --work "$shared" --no-reference
    expect_rc 0 "the starting kernel (table)"
    contains "$T/out" "status: pass (stage pass)"
    contains "$T/out" "held-out check (fresh inputs, secret seed, unseen sizes): pass"
    contains "$T/out" "turnaround: compile "
    contains "$T/out" " s, sandbox "
    contains "$T/out" " s, verify "
    ;;
wrong)
    eval_candidate "$FIX/saxpy_wrong.c" --junit "$T/junit.xml"
    expect_rc 1 "a wrong candidate"
    expect_json "$T/out" 'd["status"]' wrong_answer
    expect_json "$T/out" 'd["detail"].startswith("case n1 (set 0): output out: 1 of 1 elements differ")' True
    expect_json "$T/out" 'any(c["correct"] for c in d["cases"])' False
    python3 - "$T/junit.xml" <<'PY' || fail "the JUnit report"
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuite", root.tag
cases = root.findall("testcase")
assert len(cases) == int(root.get("tests")) and len(cases) >= 11, len(cases)
failures = [c for c in cases if c.find("failure") is not None]
assert len(failures) == int(root.get("failures")) and len(failures) >= 11, len(failures)
n1 = [c for c in cases if c.get("name") == "n1.s0"]
assert n1 and "1 of 1 elements differ" in n1[0].find("failure").get("message")
PY
    ;;
junit_pass)
    # A passing candidate's JUnit report has no failure element.
    eval_candidate "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" --junit "$T/junit.xml"
    expect_rc 0 "the starting kernel with --junit"
    python3 - "$T/junit.xml" <<'PY' || fail "the JUnit report of a pass"
import sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == "testsuite" and root.get("failures") == "0", root.attrib
assert len(root.findall("testcase")) >= 11
assert not list(root.iter("failure"))
PY
    ;;
half)
    eval_candidate "$FIX/saxpy_half.c"
    expect_rc 1 "a candidate that writes half the output"
    expect_json "$T/out" 'd["status"]' wrong_answer
    expect_json "$T/out" '"output not written" in d["detail"]' True
    expect_json "$T/out" '[o["unwritten"] for c in d["cases"] if c["case"] == "n31" for o in c["outputs"]]' '[16]'
    expect_json "$T/out" '[o["first_unwritten"] for c in d["cases"] if c["case"] == "n31" for o in c["outputs"]]' '[15]'
    ;;
segv)
    eval_candidate "$FIX/saxpy_segv.c"
    expect_rc 1 "a crashing candidate"
    expect_json "$T/out" 'd["status"]' runtime_error
    expect_json "$T/out" '"signal 11" in d["detail"]' True
    # A harness that died reported no phases: null, the parent's parts are there.
    expect_json "$T/out" '[d["turnaround_s"][k] for k in ("context", "timing", "harness")]' \
        '[null, null, null]'
    expect_json "$T/out" 'd["turnaround_s"]["run"] > 0 and d["turnaround_s"]["sandbox"] > 0' True
    ;;
hang)
    start=$SECONDS
    eval_candidate "$FIX/saxpy_hang.c" --timeout 5
    expect_rc 1 "a hanging candidate"
    expect_json "$T/out" 'd["status"]' timeout
    expect_json "$T/out" '"timeout after" in d["detail"]' True
    # The harness's own watchdog ends it inside the sandbox's limit and
    # names the case and where it was (issue 13 item 15).
    expect_json "$T/out" '"case n1: timeout (correctness, set s0, run 0)" in d["detail"]' True
    [ $((SECONDS - start)) -lt 60 ] || fail "--timeout 5 took $((SECONDS - start)) s"
    ;;
nocompile)
    eval_candidate "$FIX/saxpy_nocompile.c"
    expect_rc 1 "a candidate that does not compile"
    expect_json "$T/out" 'd["status"]' compile_error
    expect_json "$T/out" '"kiln_undeclared_thing" in d["detail"]' True
    # The compiler's diagnostics reach the user, with the line.
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_nocompile.c" --backend cpu "${FAST[@]}" \
        --no-reference --work "$T/work"
    expect_rc 1 "a candidate that does not compile (table)"
    contains "$T/out" "status: compile_error"
    contains "$T/out" "kiln_undeclared_thing"
    # ... named by the user's file, once, with no sandbox path (/in/...).
    contains "$T/out" "$FIX/saxpy_nocompile.c:6:36: error:"
    [ "$(grep -c "saxpy_nocompile.c:6:36: error:" "$T/out")" = 1 ] || fail "the diagnostics were printed more than once"
    not_contains "$T/out" "/in/"
    not_contains "$T/out" "candidate.c"
    ;;
badarg)
    eval_candidate "$FIX/saxpy_badarg.c"
    expect_rc 1 "a plan naming an unknown argument"
    expect_json "$T/out" 'd["status"]' compile_error
    expect_json "$T/out" '"bogus_arg" in d["detail"] and "not in the signature" in d["detail"]' True
    ;;
usage)
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_wrong.c" --bogus-option
    expect_rc 2 "an unknown option"
    [ "$(wc -l <"$T/err")" = 1 ] || fail "an unknown option printed $(wc -l <"$T/err") lines: $(cat "$T/err")"
    contains "$T/err" "--bogus-option"
    [ ! -s "$T/out" ] || fail "an unknown option printed on stdout"
    ;;
baseline)
    # The workload's memcpy baseline, timed by the cpu harness in its own
    # sandbox, reaches the verdict: per case baseline_ms and the ratio.
    eval_candidate "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c"
    expect_rc 0 "the starting kernel with its baseline"
    python3 - "$T/out" "$KILN_SOURCE_DIR/workloads/saxpy/workload.json" <<'PY' || fail "the baseline in the verdict"
import json, sys
d = json.load(open(sys.argv[1]))
wl = json.load(open(sys.argv[2]))
b = d["baseline"]
assert b["kind"] == "memcpy" and b["status"] == "ok" and b["detail"] == "", b
perf = {c["name"]: c["sizes"]["n"] for c in wl["cases"]
        if c["kind"] == "performance" and "cpu" in c.get("backends", ["cpu"])}
assert set(b["ms"]) == set(perf), (b["ms"], perf)
for name, ms in b["ms"].items():
    # 12*n bytes read plus written: a plausible memory bandwidth for a CPU.
    gbs = 12 * perf[name] / (ms * 1e-3) / 1e9
    assert 0.05 < gbs < 2000, (name, ms, gbs)
for c in d["cases"]:
    if c["scored"]:
        assert c["baseline_ms"] == b["ms"][c["case"]], c
        want = c["baseline_ms"] / c["timing"]["median"]
        assert abs(c["speedup_vs_baseline"] - want) <= 1e-9 * want, c
    else:
        assert c["baseline_ms"] is None and c["speedup_vs_baseline"] is None, c
assert d["speedup_vs_baseline"] > 0, d["speedup_vs_baseline"]
assert "the vendor baseline" in d["summary"], d["summary"]
PY
    # The table: a "vs baseline" column and the baseline's own line.
    run_kiln "$T/out" "$T/err" eval saxpy "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" \
        --backend cpu "${FAST[@]}" --no-reference --work "$T/work"
    expect_rc 0 "the starting kernel with its baseline (table)"
    contains "$T/out" "vs baseline"
    contains "$T/out" "vendor baseline (memcpy): cpu_4m "
    ;;
no_baseline)
    # --no-baseline: nothing timed, every baseline field null.
    eval_candidate "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" --no-baseline
    expect_rc 0 "the starting kernel without its baseline"
    expect_json "$T/out" 'd["baseline"]' None
    expect_json "$T/out" 'd["speedup_vs_baseline"]' None
    expect_json "$T/out" 'all(c["baseline_ms"] is None and c["speedup_vs_baseline"] is None for c in d["cases"])' True
    ;;
baseline_unavailable)
    # cuBLAS on the cpu backend: reported as unavailable with the reason,
    # the candidate judged as usual, every baseline field null.
    run_kiln "$T/out" "$T/err" eval sgemm "$KILN_SOURCE_DIR/workloads/sgemm/kernel.c" \
        --backend cpu "${FAST[@]}" --no-reference --work "$T/work" --json
    expect_rc 0 "the sgemm starting kernel on the cpu backend"
    expect_json "$T/out" 'd["status"]' pass
    expect_json "$T/out" 'd["baseline"]["kind"]' cublas_sgemm
    expect_json "$T/out" 'd["baseline"]["status"]' unavailable
    expect_json "$T/out" '"not available on the cpu backend" in d["baseline"]["detail"]' True
    expect_json "$T/out" 'd["baseline"]["ms"]' '{}'
    expect_json "$T/out" 'd["speedup_vs_baseline"]' None
    expect_json "$T/out" 'all(c["baseline_ms"] is None for c in d["cases"])' True
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
echo "ok: eval $case_name"
