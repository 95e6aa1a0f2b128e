#!/bin/bash
# eval.sh CASE SHARED_WORK - `kiln eval` end to end on the cpu backend.
#
# CASE pass fills SHARED_WORK (inputs and references of saxpy, seed 1) and
# is the fixture of the others, which start from a copy of those inputs so
# that each judges its candidate without regenerating anything.
. "$(dirname "$0")/lib.sh"
case_name=$1
shared=$2
junit_xsd=${3:-}

# check_junit FILE KIND: the --junit report's structure (eval_junit.h):
# <testsuites>, one suite "saxpy", one test case per visible case of the
# cpu backend plus "held_out" whatever happened (and, first, one named after
# the stage when no case carries the problem: "compile"); KIND pass (no
# failure, error or skip), failure (every problem a <failure>, each case
# its own message, the cases that never ran <skipped>) or error (one
# <error>, "compile", and every case <skipped>).
check_junit()
{
    python3 - "$1" "$2" "$KILN_SOURCE_DIR/workloads/saxpy/workload.json" <<'PY' || fail "the JUnit report ($2)"
import json, sys
import xml.etree.ElementTree as ET
path, kind, wl = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
root = ET.parse(path).getroot()
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
assert len(suites) == 1 and suites[0].get("name") == "saxpy", [s.attrib for s in suites]
suite = suites[0]
want = [c["name"] for c in wl["cases"] if "cpu" in c.get("backends", ["cpu"])] + ["held_out"]
if kind == "error":
    want = ["compile"] + want
cases = suite.findall("testcase")
assert [c.get("name") for c in cases] == want, [c.get("name") for c in cases]
assert all(c.get("classname") == "saxpy" for c in cases)
fails = [c for c in cases if c.find("failure") is not None]
errs = [c for c in cases if c.find("error") is not None]
skips = [c for c in cases if c.find("skipped") is not None]
for el in (root, suite):
    assert el.get("tests") == str(len(want)), el.attrib
    assert el.get("failures") == str(len(fails)) and el.get("errors") == str(len(errs)), el.attrib
    # The suite's time is the evaluation's wall time: more than its runs.
    assert float(el.get("time")) >= sum(float(c.get("time")) for c in cases) - 1e-6, el.attrib
    assert float(el.get("time")) > 0, el.attrib
assert suite.get("skipped") == str(len(skips)), suite.attrib
# Every message is one line of at most 200 characters; the verdict's detail
# (a compile error quotes the compiler) appears once in the whole report.
for c in cases:
    for p in list(c.iter("failure")) + list(c.iter("error")) + list(c.iter("skipped")):
        assert len(p.get("message")) <= 200 and "\n" not in p.get("message"), p.attrib
    # A case that never ran took no time and says so, about itself.
    for p in c.iter("skipped"):
        assert p.get("message").startswith("not run: "), p.attrib
        assert float(c.get("time")) == 0, c.attrib
# Each problem is the case's own: its message names it (issue 35 item 8).
for c in fails + errs:
    el = c.find("failure") if c.find("failure") is not None else c.find("error")
    if c.get("name") not in ("compile", "held_out"):
        assert el.get("message").startswith("case " + c.get("name") + " "), (c.get("name"), el.attrib)
if kind == "error":
    bodies = [p for c in cases for p in c.iter("error") if "kiln_undeclared_thing" in (p.text or "")]
    msgs = [p for c in cases for p in c.iter("error")
            if "kiln_undeclared_thing" in p.get("message")]
    assert len(bodies) == 1 and len(msgs) <= 1, (len(bodies), len(msgs))
props = {p.get("name"): p.get("value") for p in suite.find("properties")}
assert len(props["candidate_sha256"]) == 64 and props["device"] == "cpu", props
assert props["kiln_version"], props
if kind == "pass":
    assert not fails and not errs and not skips, (len(fails), len(errs), len(skips))
    assert all(float(c.get("time")) > 0 for c in cases if c.get("name").startswith("cpu_")), \
        [c.attrib for c in cases]
elif kind == "failure":
    assert fails and not errs, (len(fails), len(errs))
    # The correctness cases ran and were wrong; the performance cases and
    # the held-out check never ran: skipped, not failed.
    assert [c.get("name") for c in skips] == ["cpu_4m", "cpu_3m", "held_out"], [c.get("name") for c in skips]
    assert len(fails) == len(want) - len(skips), (len(fails), len(skips))
elif kind == "error":
    assert [c.get("name") for c in errs] == ["compile"] and not fails, (len(fails), len(errs))
    assert len(skips) == len(want) - 1, len(skips)
else:
    raise SystemExit("unknown kind " + kind)
PY
}

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
        --backend cpu "${FAST[@]}" --work "$shared" --json --arch sm_80
    expect_rc 0 "the starting kernel"
    # --arch means nothing to the cpu backend: said, not silently dropped.
    contains "$T/err" "kiln: note: --arch sm_80 is ignored: the cpu backend compiles for this machine's CPU"
    expect_json "$T/out" 'd["status"]' pass
    expect_json "$T/out" 'd["reverified"]' True
    expect_json "$T/out" 'len(d["cases"])' 11
    expect_json "$T/out" 'all(c["correct"] for c in d["cases"])' True
    expect_json "$T/out" 'd["speedup_vs_reference"] > 0' True
    # One naming scheme with summary.json, and where the verdict came from.
    expect_json "$T/out" 'd["version"]' 2
    expect_json "$T/out" 'sorted(d["case_ms"])' '["cpu_3m", "cpu_4m"]'
    expect_json "$T/out" 'd["geomean_ms"] > 0 and d["fraction_of_floor"] is None' True
    # cpu: nothing compiled for a GPU (issue #30: cuda records the target).
    expect_json "$T/out" 'd["arch"], d["target"]' "(None, None)"
    expect_json "$T/out" '[k for k in ("score_ms", "speedup_ref", "sol") if k in d]' '[]'
    expect_json "$T/out" 'd["device"] == {"backend": "cpu", "index": None, "model": None, "uuid": None, "driver": None}' True
    expect_json "$T/out" 'd["workload"]["name"] == "saxpy" and len(d["workload"]["sha256"]) == 64' True
    expect_json "$T/out" 'd["candidate"]["path"].endswith("workloads/saxpy/kernel.c")' True
    expect_json "$T/out" \
        'd["candidate"]["sha256"] == __import__("hashlib").sha256(open(d["candidate"]["path"], "rb").read()).hexdigest()' True
    expect_json "$T/out" 'sorted(d["kiln"])' '["revision", "version"]'
    expect_json "$T/out" \
        'all(c["speedup_vs_reference"] is None or abs(c["speedup_vs_reference"] - c["reference_ms"] / c["timing"]["median"]) < 1e-9 for c in d["cases"])' True
    # The turnaround breakdown (VERDICT.md section 8): every part, the
    # harness's own phases included, and the parts add up.
    expect_json "$T/out" 'sorted(d["turnaround_s"])' \
        '["baseline", "compile", "context", "correctness", "harness", "held_out", "ingest", "inputs", "layout", "other", "outputs", "read", "run", "sandbox", "start", "tar", "timing", "total", "upload", "verify"]'
    expect_json "$T/out" 'all(isinstance(v, float) and v >= 0 for v in d["turnaround_s"].values())' True
    # total is the wall time of the whole evaluation: the starting kernel,
    # the inputs, the baseline and the held-out check are parts of it, and
    # the parts (all but the aggregates harness and run) add up to it.
    expect_json "$T/out" \
        'abs(sum(v for k, v in d["turnaround_s"].items() if k not in ("harness", "run", "total")) - d["turnaround_s"]["total"]) < 1e-6' True
    expect_json "$T/out" \
        'd["turnaround_s"]["total"] >= sum(d["turnaround_s"][k] for k in ("compile", "inputs", "start", "baseline", "run", "verify", "held_out"))' True
    expect_json "$T/out" \
        'all(d["turnaround_s"][k] > 0 for k in ("inputs", "start", "baseline", "held_out"))' True
    expect_json "$T/out" \
        'abs(sum(d["turnaround_s"][k] for k in ("sandbox", "harness", "tar", "ingest")) - d["turnaround_s"]["run"]) < 0.2' True
    expect_json "$T/out" \
        'd["turnaround_s"]["harness"] >= sum(d["turnaround_s"][k] for k in ("context", "layout", "read", "upload", "correctness", "timing", "outputs"))' True
    expect_json "$T/out" \
        'd["turnaround_s"]["total"] >= d["turnaround_s"]["compile"] + d["turnaround_s"]["run"] + d["turnaround_s"]["verify"]' True
    # The start against itself (issue 35 item 2): no speedup is stated bare,
    # each says how it stands against both sides' noise.
    python3 - "$T/out" <<'PY' || fail "a speedup without its call against the noise"
import json, re, sys
d = json.load(open(sys.argv[1]))
calls = ("FAST", "SLOW", "SAME", "AMBIGUOUS")
assert d["speedup_vs_reference_call"] in calls, d["speedup_vs_reference_call"]
assert d["speedup_vs_reference_noise_pct"] > 0, d
assert re.search(r"x the reference \((FAST|SLOW|SAME|AMBIGUOUS): ", d["summary"]), d["summary"]
vis = [r for r in d["rows"] if r["speedup_vs_reference"] is not None]
assert vis and all(r["speedup_vs_reference_call"] in calls for r in vis), vis
assert all(r["speedup_vs_reference_call"] is None for r in d["rows"] if r["speedup_vs_reference"] is None)
assert d["timing_target"] is None, d["timing_target"]  # a fixed count
PY
    [ -d "$shared/inputs" ] || fail "--work $shared holds no inputs"
    # The table form of the same verdict.
    run_kiln "$T/out" "$T/err" eval saxpy "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" \
        --backend cpu "${FAST[@]}" --work "$shared"
    expect_rc 0 "the starting kernel (table)"
    # Every "vs ref" ratio says FAST, SLOW, SAME or AMBIGUOUS; so does the summary.
    python3 - "$T/out" <<'PY' || fail "the table states a bare speedup: $(cat "$T/out")"
import re, sys
text = open(sys.argv[1]).read()
rows = [l for l in text.splitlines() if re.match(r"  cpu_\dm ", l)]
assert rows, text
for l in rows:
    assert re.search(r" \d+\.\d\dx (FAST|SLOW|SAME|AMBIGUOUS) ", l), l
assert re.search(r"x the reference \((FAST|SLOW|SAME|AMBIGUOUS): ", text), text
PY
    contains "$T/out" "status: pass (stage pass)"
    contains "$T/out" "held-out check (fresh inputs, secret seed, unseen sizes): pass"
    contains "$T/out" "turnaround: compile "
    contains "$T/out" " s, sandbox "
    contains "$T/out" " s, verify "
    contains "$T/out" " s, held_out "
    # The printed parts add up to the printed total (within their rounding).
    sed -n 's/^  turnaround: //p' "$T/out" | python3 -c '
import sys
parts = [p.rsplit(" ", 2) for p in sys.stdin.read().strip().split(", ")]
vals = {name: float(v) for name, v, unit in parts}
assert list(vals)[-2:] == ["other", "total"], vals
s = sum(v for k, v in vals.items() if k != "total")
assert abs(s - vals["total"]) <= 0.0005 * len(vals) + 1e-9, (s, vals)
' || fail "the turnaround line does not add up: $(grep turnaround: "$T/out")"
    ;;
wrong)
    eval_candidate "$FIX/saxpy_wrong.c" --junit "$T/junit.xml"
    expect_rc 1 "a wrong candidate"
    expect_json "$T/out" 'd["status"]' wrong_answer
    expect_json "$T/out" 'd["detail"].startswith("case n1 (set 0): output out: 1 of 1 elements differ")' True
    expect_json "$T/out" 'any(c["correct"] for c in d["cases"])' False
    # Correctness cases first, and the first wrong answer ends it: no
    # performance case ran, none was timed (issue 26 item 5).
    expect_json "$T/out" '[c["case"] for c in d["cases"] if c["timing"] or c["scored"]]' '[]'
    expect_json "$T/out" 'sorted(set(c["case"] for c in d["cases"]))' \
        '["n1", "n2", "n31", "n4097", "prime"]'
    check_junit "$T/junit.xml" failure
    grep -q 'name="n1" time="[0-9.]*">' "$T/junit.xml" && grep -qF '1 of 1 elements differ' "$T/junit.xml" ||
        fail "the JUnit report does not name case n1's mismatch"
    # The harness log under a wrong answer says the cases ran, never "ok":
    # the harness cannot know, kiln judged the outputs (issue 35 item 12).
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_wrong.c" --backend cpu "${FAST[@]}" \
        --work "$T/work" --no-reference --no-baseline
    expect_rc 1 "a wrong candidate (table)"
    contains "$T/out" "harness log (tail):"
    contains "$T/out" "case n1: ran"
    not_contains "$T/out" "case n1: ok"
    not_contains "$T/out" "done: ok"
    # Correctness first (issue 35 item 4): with the start and the vendor
    # baseline asked for, a candidate wrong at n1 fails before either is timed.
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_wrong.c" --backend cpu "${FAST[@]}" \
        --work "$T/work" --json
    expect_rc 1 "a wrong candidate, with the start and the baseline"
    expect_json "$T/out" 'd["status"]' wrong_answer
    expect_json "$T/out" \
        'd["turnaround_s"]["start"] == 0 and d["turnaround_s"]["baseline"] == 0 and d["baseline"] is None' True
    ;;
set)
    # --set NAME=VALUE judges one configuration of the tunables (issue 26
    # item 13): WRONG=1 is compiled in, so the answer is wrong; the others
    # keep their defaults, and the verdict says what was evaluated.
    eval_candidate "$FIX/saxpy_tunable.c" --set WRONG=1
    expect_rc 1 "--set WRONG=1"
    expect_json "$T/out" 'd["status"]' wrong_answer
    expect_json "$T/out" 'd["config"] == {"WRONG": 1, "UNROLL": 1}' True
    # Unknown names and values outside a tunable's set are usage errors that
    # name the tunables there are; nothing is compiled.
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_tunable.c" --backend cpu --set WORNG=1
    expect_rc 2 "--set of an unknown tunable"
    contains "$T/err" "--set WORNG=1: no tunable WORNG; did you mean 'WRONG'? the candidate's: WRONG {0, 1} = 0, UNROLL {1, 2} = 1"
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_tunable.c" --backend cpu --set UNROLL=3
    expect_rc 2 "--set of a value outside the set"
    contains "$T/err" "--set UNROLL=3: not one of UNROLL's values"
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_tunable.c" --backend cpu --set UNROLL
    expect_rc 2 "--set without a value"
    contains "$T/err" "--set needs NAME=VALUE"
    ;;
junit_pass)
    # A passing candidate's JUnit report has no failure element.
    eval_candidate "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" --junit "$T/junit.xml"
    expect_rc 0 "the starting kernel with --junit"
    check_junit "$T/junit.xml" pass
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
    eval_candidate "$FIX/saxpy_nocompile.c" --junit "$T/junit.xml"
    check_junit "$T/junit.xml" error
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
    not_contains "$T/out" "median ms" # no case ran: no empty table header
    ;;
badarg)
    eval_candidate "$FIX/saxpy_badarg.c"
    expect_rc 1 "a plan naming an unknown argument"
    expect_json "$T/out" 'd["status"]' compile_error
    expect_json "$T/out" '"bogus_arg" in d["detail"] and "not in the signature" in d["detail"]' True
    ;;
junit_schema)
    # Jenkins' junit-10.xsd accepts the report of a pass, a wrong answer and
    # a compile error (tests/junit/README.md: where the schema comes from).
    if [ ! -r "$junit_xsd" ] || ! command -v xmllint >/dev/null; then
        echo "SKIP: needs xmllint (libxml2-utils) and Jenkins' junit-10.xsd at '$junit_xsd' (scripts/setup fetches it)"
        exit 77
    fi
    for c in "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c:pass:0" "$FIX/saxpy_wrong.c:failure:1" \
        "$FIX/saxpy_nocompile.c:error:1"; do
        IFS=: read -r file kind want <<<"$c"
        eval_candidate "$file" --junit "$T/junit-$kind.xml" --no-baseline
        expect_rc "$want" "$(basename "$file") with --junit"
        check_junit "$T/junit-$kind.xml" "$kind"
        xmllint --noout --schema "$junit_xsd" "$T/junit-$kind.xml" 2>"$T/xmllint.err" ||
            fail "junit-10.xsd refuses the report of $(basename "$file"): $(cat "$T/xmllint.err")"
    done
    ;;
formats)
    # --csv and --markdown: one header row, one row per case and input set;
    # two output formats at once is a usage error.
    eval_candidate "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" --no-baseline
    cp "$T/out" "$T/doc.json"
    for fmt in csv markdown; do
        run_kiln "$T/out" "$T/err" eval saxpy "$KILN_SOURCE_DIR/workloads/saxpy/kernel.c" \
            --backend cpu "${FAST[@]}" --no-reference --no-baseline --work "$T/work" --$fmt
        expect_rc 0 "--$fmt"
        cp "$T/out" "$T/table.$fmt"
    done
    python3 - "$T/table.csv" "$T/table.markdown" "$T/doc.json" <<'PY' || fail "the --csv/--markdown tables"
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
doc = json.load(open(sys.argv[3]))
cols = ["case", "set", "check", "status", "sizes", "samples", "median_ms", "min_ms", "max_ms",
        "noise_pct", "rse_target", "gb_per_s", "gflop_per_s", "speedup_vs_reference",
        "speedup_vs_reference_call", "speedup_vs_baseline", "fraction_of_floor"]
ctx = ["rows_version", "kiln", "workload", "workload_sha256", "candidate_sha256", "seed", "device",
       "compile_flags", "config", "timing_rule"]
assert list(rows[0]) == cols + ctx, list(rows[0])
# One schema: --json's rows have the same columns, the same rows (held-out
# ones included) and the same values as the CSV; its context is every CSV
# row's last columns.
# (Each table is its own run: timings and the secret held-out draw differ;
# the cases, their sizes and which values are known do not.)
assert doc["rows_version"] == 2 and [list(r) for r in doc["rows"]] == [cols] * len(doc["rows"])
jvis = [r for r in doc["rows"] if r["check"] == "visible"]
cvis = [r for r in rows if r["check"] == "visible"]
assert len(jvis) == len(cvis), (len(jvis), len(cvis))
for j, r in zip(jvis, cvis):
    for k in cols:
        # noise_pct needs 2 samples of the set: which set gets the odd run varies.
        assert k == "noise_pct" or (r[k] == "") == (j[k] is None), (k, r[k], j[k])
        if k in ("case", "set", "check", "status", "sizes"):
            assert r[k] == str(j[k]), (k, r[k], j[k])
    assert all(r[k] == str(doc["row_context"][k]) for k in ctx if k not in ("kiln", "candidate_sha256")), r
for j, c in zip(jvis, doc["cases"]):
    assert j["samples"] == (c["timing"]["n"] if c["timing"] else None), (j, c["timing"])
    assert j["median_ms"] == (c["timing"]["median"] if c["timing"] else None), (j, c["timing"])
jheld = [r for r in doc["rows"] if r["check"] == "held_out"]
assert jheld and {r["case"] for r in jheld} == {c["name"] for c in doc["held_out_draw"]["cases"]}, jheld
assert all(r["workload"] == "saxpy" and len(r["candidate_sha256"]) == 64
           and r["device"].startswith("cpu") and r["compile_flags"].startswith("cc ")
           and r["seed"] == "1" and r["timing_rule"].startswith("fixed") for r in rows), rows[0]
# The visible cases, then the held-out check's, each row saying which.
held = [r for r in rows if r["check"] == "held_out"]
rows = [r for r in rows if r["check"] == "visible"]
assert [(r["case"], int(r["set"])) for r in rows] == [(c["case"], c["set"]) for c in doc["cases"]]
assert doc["held_out"] == "pass", doc["held_out"]
assert held and {r["case"] for r in held} == {c["name"] for c in doc["held_out_draw"]["cases"]}, held
assert all(r["status"] == "pass" for r in held), held
for r, c in zip(rows, doc["cases"]):
    assert r["status"] == "pass", r
    assert r["sizes"].startswith("n="), r
    # No reference, baseline or floor (cpu): empty, never 0; untimed cases too.
    assert r["speedup_vs_reference"] == r["speedup_vs_baseline"] == r["fraction_of_floor"] == "", r
    # No call without a ratio; no --until-rse target with a fixed count.
    assert r["speedup_vs_reference_call"] == r["rse_target"] == "", r
    assert (r["median_ms"] != "") == (c["timing"] is not None), (r, c["timing"])
    if r["median_ms"]:
        assert float(r["min_ms"]) <= float(r["median_ms"]) <= float(r["max_ms"]), r
        assert int(r["samples"]) >= 1, r
        # Throughput from the workload's cost model: saxpy moves 12 bytes an element.
        n = int(r["sizes"].split("=")[1])
        assert abs(float(r["gb_per_s"]) - 12 * n / (float(r["median_ms"]) / 1e3) / 1e9) \
            <= 1e-3 * float(r["gb_per_s"]), r
md = open(sys.argv[2]).read().splitlines()
assert md[0].startswith("kiln eval rows v2: workload saxpy") and md[1] == "", md[:2]
assert md[2] == "| " + " | ".join(cols) + " |", md[2]
assert md[3].startswith("|---|---|---|---|---|---:"), md[3]
assert len(md) == 4 + len(rows) + len(held) and all(l.startswith("| ") and l.endswith(" |") for l in md[4:]), md
assert " | held_out | " in md[-1], md[-1]
PY
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_wrong.c" --json --csv
    expect_rc 2 "--json with --csv"
    contains "$T/err" "--json and --csv exclude each other"
    # --quiet: nothing on stdout, the exit status says it.
    eval_candidate "$FIX/saxpy_wrong.c"
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_wrong.c" --backend cpu "${FAST[@]}" \
        --no-reference --no-baseline --work "$T/work" --quiet
    expect_rc 1 "--quiet, a wrong candidate"
    [ ! -s "$T/out" ] || fail "--quiet printed: $(head -3 "$T/out")"
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
