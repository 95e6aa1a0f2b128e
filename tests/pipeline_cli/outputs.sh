#!/bin/bash
# outputs.sh - --json and --quiet on the commands that print results
# without running a candidate: kiln workloads, kiln doctor (issue 17).
. "$(dirname "$0")/lib.sh"

run_kiln "$T/out" "$T/err" workloads --json
expect_rc 0 "kiln workloads --json"
expect_json "$T/out" 'd["version"]' 1
expect_json "$T/out" 'all(w["status"] == "ok" for w in d["workloads"])' True
expect_json "$T/out" '[w["backends"] for w in d["workloads"] if w["name"] == "saxpy"]' '["cuda,cpu"]'
expect_json "$T/out" 'all(len(w["sha256"]) == 64 and w["cases"] >= w["performance_cases"] >= 1 for w in d["workloads"])' True
run_kiln "$T/text" "$T/err" workloads
expect_rc 0 "kiln workloads"
[ "$(wc -l <"$T/text")" = "$(jq_py "$T/out" 'len(d["workloads"])')" ] ||
    fail "the text lists $(wc -l <"$T/text") workloads, --json $(jq_py "$T/out" 'len(d["workloads"])')"
# The text names each workload as kiln eval takes it (kernelbench/kb_19_relu,
# not kb_19_relu), in one column: the backends start at the same place.
python3 - "$T/text" "$T/out" <<'PY' || fail "kiln workloads: names or columns ($(head -3 "$T/text"))"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
names = [w["name"] for w in json.load(open(sys.argv[2]))["workloads"]]
assert [l.split()[0] for l in lines] == names, ([l.split()[0] for l in lines], names)
assert len({l.index(" cuda") if " cuda" in l else l.index(" cpu") for l in lines}) == 1, lines
PY
run_kiln "$T/out" "$T/err" workloads --quiet
expect_rc 0 "kiln workloads --quiet"
[ ! -s "$T/out" ] || fail "kiln workloads --quiet printed: $(head -3 "$T/out")"
# A broken workload: status broken with the reason, exit 1 (quiet too).
mkdir -p "$T/data/workloads"
cp -a "$KILN_SOURCE_DIR/workloads/saxpy" "$T/data/workloads/saxpy"
mkdir -p "$T/data/workloads/broken" && echo '{' >"$T/data/workloads/broken/workload.json"
KILN_DATA_DIR=$T/data run_kiln "$T/out" "$T/err" workloads --json
expect_rc 1 "kiln workloads --json with a broken workload"
expect_json "$T/out" '[(w["name"], w["status"]) for w in d["workloads"]]' '[["broken", "broken"], ["saxpy", "ok"]]'
expect_json "$T/out" 'bool([w for w in d["workloads"] if w["name"] == "broken"][0]["error"])' True
KILN_DATA_DIR=$T/data run_kiln "$T/out" "$T/err" workloads --quiet
expect_rc 1 "kiln workloads --quiet with a broken workload"
[ ! -s "$T/out" ] || fail "kiln workloads --quiet printed: $(head -3 "$T/out")"

# kiln doctor: --quiet says by its exit status what --json says in "status".
run_kiln "$T/out" "$T/err" doctor --json
want=$rc
expect_json "$T/out" 'd["version"]' 1
expect_json "$T/out" 'd["status"]' "$want"
# The exit status says whether kiln can do its job here: 1 only for a
# needed check that is not OK (issue 35 item 12). Without a GPU the gpu
# line is information, so a cpu-only host whose cpu backend works passes.
expect_json "$T/out" 'd["status"] == int(any(c["needed"] and c["state"] != "OK" for c in d["checks"]))' True
if [ ! -d /proc/driver/nvidia/gpus ] || [ -z "$(ls -A /proc/driver/nvidia/gpus 2>/dev/null)" ]; then
    expect_json "$T/out" '[[c["state"], c["needed"]] for c in d["checks"] if c["check"] == "gpu"]' \
        '[["MISSING", false]]'
fi
# KernelBench imports need torch: checked in the script sandbox, optional.
expect_json "$T/out" '[[c["state"] in ("OK", "DEGRADED"), c["needed"]] for c in d["checks"] if c["check"] == "torch"]' \
    '[[true, false]]'
run_kiln "$T/out" "$T/err" doctor --quiet
expect_rc "$want" "kiln doctor --quiet"
[ ! -s "$T/out" ] || fail "kiln doctor --quiet printed: $(head -3 "$T/out")"
run_kiln "$T/out" "$T/err" doctor --json --quiet
expect_rc 2 "kiln doctor --json --quiet"
contains "$T/err" "--json and --quiet exclude each other"
echo "ok: outputs"
