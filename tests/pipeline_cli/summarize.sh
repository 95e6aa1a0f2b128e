#!/bin/bash
# summarize.sh - `kiln summarize RUN...`: fast_p over several workloads'
# runs (orchestrator/records/fastp.h). The runs are summary.json files as kiln
# optimize writes them (version 2), one written before summary.json had a
# version, one from a newer kiln.
. "$(dirname "$0")/lib.sh"

# run_dir NAME JSON: a run directory holding only summary.json.
run_dir()
{
    mkdir -p "$T/$1" && printf '%s\n' "$2" >"$T/$1/summary.json"
}
run_dir run-001 '{"version": 2, "run": "run-001", "workload": "saxpy", "best": {"candidate": "004", "geomean_ms": 0.19, "speedup_vs_reference": 2.5, "speedup_vs_baseline": null, "fraction_of_floor": null, "held_out": "pass", "summary": "pass"}}'
run_dir run-002 '{"version": 2, "run": "run-002", "workload": "sgemm", "best": {"candidate": "002", "speedup_vs_reference": 1.2}}'
run_dir run-003 '{"version": 2, "run": "run-003", "workload": "softmax", "best": null}'
# Before summary.json had a version: 0 meant "no reference".
run_dir run-004 '{"run": "run-004", "workload": "l2norm", "best": {"candidate": "001", "speedup_vs_reference": 0, "fraction_of_floor": 0}}'
runs=("$T/run-001" "$T/run-002" "$T/run-003" "$T/run-004")

run_kiln "$T/out" "$T/err" summarize "${runs[@]}" --json --fast-p 1.5
expect_rc 0 "four runs"
expect_json "$T/out" 'd["version"]' 1
expect_json "$T/out" 'd["problems"]' 4
expect_json "$T/out" 'd["fast_p"] == {"0": 0.75, "1": 0.5, "2": 0.25, "1.5": 0.25}' True
expect_json "$T/out" '[r["correct"] for r in d["runs"]]' '[true, true, false, true]'
expect_json "$T/out" '[r["speedup_vs_reference"] for r in d["runs"]]' '[2.5, 1.2, null, null]'
expect_json "$T/out" '[r["summary_version"] for r in d["runs"]]' '[2, 2, 2, 1]'

run_kiln "$T/out" "$T/err" summarize "${runs[@]}"
expect_rc 0 "four runs (text)"
contains "$T/out" "fast_0 0.750  fast_1 0.500  fast_2 0.250"
contains "$T/out" "softmax"

run_kiln "$T/out" "$T/err" summarize "${runs[@]}" --csv
expect_rc 0 "four runs (csv)"
[ "$(cat "$T/out")" = "$(printf 'p,fast_p,count,problems,vs\n0,0.75,3,4,reference\n1,0.5,2,4,reference\n2,0.25,1,4,reference')" ] ||
    fail "--csv printed: $(cat "$T/out")"
run_kiln "$T/out" "$T/err" summarize "${runs[@]}" --markdown
expect_rc 0 "four runs (markdown)"
contains "$T/out" "| 1 | 0.5 | 2 | 4 | reference |"
not_contains "$T/out" "torch_eager"

# Against torch (KernelBench's table): runs of imported problems whose
# summary.json has the torch baseline's geomeans (synthetic timings).
torch_run() # NAME WORKLOAD BEST_MS|null EAGER_MS COMPILE_MS|null
{
    local best=null
    [ "$3" = null ] || best="{\"candidate\": \"001\", \"geomean_ms\": $3, \"speedup_vs_reference\": null}"
    run_dir "$1" "{\"version\": 2, \"workload\": \"$2\", \"best\": $best, \"baseline\": {\"kind\": \"torch\", \"status\": \"ok\", \"detail\": \"\", \"ms\": {}, \"geomean_ms\": $4, \"compile\": {\"status\": \"ok\", \"detail\": \"\", \"ms\": {}, \"geomean_ms\": $5}}}"
}
torch_run t1 kb_a 1.0 2.5 1.5
torch_run t2 kb_b 2.0 3.0 null
torch_run t3 kb_c null 1.0 1.0
run_dir t4 '{"version": 2, "workload": "kb_d", "best": {"candidate": "002", "geomean_ms": 1.0}, "baseline": {"kind": "memcpy", "geomean_ms": 0.5}}'
truns=("$T/t1" "$T/t2" "$T/t3" "$T/t4")
run_kiln "$T/out" "$T/err" summarize "${truns[@]}" --json
expect_rc 0 "runs with torch times"
expect_json "$T/out" 'd["fast_p_vs_torch_eager"] == {"0": 0.75, "1": 0.5, "2": 0.25}' True
expect_json "$T/out" 'd["fast_p_vs_torch_compile"] == {"0": 0.75, "1": 0.25, "2": 0.0}' True
expect_json "$T/out" '[r["speedup_vs_torch_eager"] for r in d["runs"]]' '[2.5, 1.5, null, null]'
expect_json "$T/out" '[r["speedup_vs_torch_compile"] for r in d["runs"]]' '[1.5, null, null, null]'
expect_json "$T/out" '[r["torch_eager_ms"] for r in d["runs"]]' '[2.5, 3.0, 1.0, null]'
run_kiln "$T/out" "$T/err" summarize "${truns[@]}" --csv
expect_rc 0 "runs with torch times (csv)"
contains "$T/out" "1,0.5,2,4,torch_eager"
contains "$T/out" "1,0.25,1,4,torch_compile"
run_kiln "$T/out" "$T/err" summarize "${truns[@]}"
expect_rc 0 "runs with torch times (text)"
contains "$T/out" "fast_0 0.750  fast_1 0.500  fast_2 0.250  (fraction of workloads correct and more than p times as fast as torch eager; 3 of 4 with a torch eager time)"
contains "$T/out" "fast_0 0.750  fast_1 0.250  fast_2 0.000  (fraction of workloads correct and more than p times as fast as torch.compile; 2 of 4 with a torch.compile time)"
# The runs without torch times print no torch rows, in --json null.
run_kiln "$T/out" "$T/err" summarize "${runs[@]}" --json
expect_json "$T/out" 'd["fast_p_vs_torch_eager"]' None

run_kiln "$T/out" "$T/err" summarize "${runs[@]}" --quiet
expect_rc 0 "--quiet"
[ ! -s "$T/out" ] || fail "--quiet printed: $(cat "$T/out")"

# Refusals: two output formats, two runs of one workload, a newer format,
# a run that is not one, a bad threshold.
run_kiln "$T/out" "$T/err" summarize "${runs[@]}" --json --markdown
expect_rc 2 "--json --markdown"
contains "$T/err" "--json and --markdown exclude each other"
run_dir run-005 '{"version": 2, "workload": "saxpy", "best": null}'
run_kiln "$T/out" "$T/err" summarize "$T/run-001" "$T/run-005"
expect_rc 2 "two runs of saxpy"
contains "$T/err" "both runs of workload saxpy: give one run per workload"
run_dir run-006 '{"version": 3, "workload": "conv", "best": null}'
run_kiln "$T/out" "$T/err" summarize "$T/run-006"
expect_rc 2 "a newer summary.json"
contains "$T/err" "summary.json has format version 3, newer than this kiln reads (2): use a newer kiln"
mkdir -p "$T/empty"
run_kiln "$T/out" "$T/err" summarize "$T/empty"
expect_rc 2 "a directory without summary.json"
contains "$T/err" "empty: not a finished kiln optimize run"
run_kiln "$T/out" "$T/err" summarize "$T/run-001" --fast-p -1
expect_rc 2 "--fast-p -1"
contains "$T/err" "--fast-p needs a number 0..1000"
echo "ok: summarize"
