#!/bin/bash
# agree.sh - one statistic for every row: kiln optimize's printed table,
# summary.json, each verdict.json and report.html agree on the starting
# kernel, the best and every ratio (agree.py says how). A tiny saxpy with two
# performance cases of different sizes, so that the geomean over cases and
# each case's median over its input sets both matter.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/wl" && cp -r "$KILN_SOURCE_DIR/workloads/saxpy" "$T/wl/tiny" || fail "copying saxpy"
python3 - "$T/wl/tiny/workload.json" <<'PY'
import json, sys
p = sys.argv[1]
w = json.load(open(p))
w["name"] = "tiny"
w["cases"] = [{"name": "n31", "kind": "correctness", "sizes": {"n": 31}},
              {"name": "p16k", "kind": "performance", "sizes": {"n": 16384}, "backends": ["cpu"]},
              {"name": "p64k", "kind": "performance", "sizes": {"n": 65536}, "backends": ["cpu"]},
              {"name": "big", "kind": "performance", "sizes": {"n": 65536}, "backends": ["cuda"]}]
w["held_out"] = [{"name": "held", "sizes": {"n": 4099}}]
json.dump(w, open(p, "w"), indent=1)
PY
run_kiln "$T/out" "$T/err" optimize "$T/wl/tiny" --backend cpu --proposer tune --max-iterations 3 \
    --warmups 1 --iterations 20 --results "$T/results" --quiet
expect_rc 0 "kiln optimize"
python3 "$KILN_SOURCE_DIR/tests/pipeline_cli/agree.py" "$T/results/run-001" "$T/out" ||
    fail "the records disagree (above); the table was:
$(cat "$T/out")"
echo "agree: ok"
