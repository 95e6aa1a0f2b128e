#!/bin/bash
# heldout.sh CASE - held-out sizes nobody saw, unpredictable inputs, timed
# held-out runs and the timing options, end to end on the cpu backend.
#
#   iterations       --iterations 1 and 2 judge the starting kernel (no
#                    "no timings reported"), marked as having no interval
#   warmups          --warmups 0 runs no warmup (it used to run 10)
#   seed             no --seed: a fresh seed per evaluation, recorded;
#                    --seed N reproduces the same input bytes
#   listed_sizes     a candidate right only on the sizes the workload lists
#                    fails the held-out check (sizes drawn from a secret seed)
#   fast_on_visible  a candidate fast only on the visible inputs it knows is
#                    flagged inconsistent_timing by the timed held-out cases
. "$(dirname "$0")/lib.sh"
case_name=$1
KERNEL="$KILN_SOURCE_DIR/workloads/saxpy/kernel.c"
QUICK=(--backend cpu --no-reference --no-baseline --json)

# inputs_digest WORK: one line per visible input file: its set and sha256.
inputs_digest()
{
    (cd "$1/inputs" && find . -path '*/in/*.npy' -type f | sort | xargs sha256sum)
}

case "$case_name" in
iterations)
    for n in 1 2; do
        run_kiln "$T/out" "$T/err" eval saxpy "$KERNEL" "${QUICK[@]}" --seed 3 --warmups 1 \
            --iterations $n --work "$T/work"
        expect_rc 0 "the starting kernel with --iterations $n"
        expect_json "$T/out" 'd["status"]' pass
        expect_json "$T/out" 'all(c["correct"] for c in d["cases"])' True
        # Three input sets per performance case: n runs time n of them, once each.
        expect_json "$T/out" 'sorted(set(c["timing"]["n"] for c in d["cases"] if c["scored"] and c["timing"]))' '[1]'
        expect_json "$T/out" 'sum(1 for c in d["cases"] if c["scored"] and c["timing"])' $((2 * n))
        expect_json "$T/out" '"no confidence interval" in d["summary"]' True
        expect_json "$T/out" '"not timed (fewer iterations than sets)" in d["summary"]' True
    done
    # The table says it too.
    run_kiln "$T/out" "$T/err" eval saxpy "$KERNEL" --backend cpu --no-reference --no-baseline \
        --seed 3 --warmups 1 --iterations 1 --work "$T/work"
    expect_rc 0 "the starting kernel with --iterations 1 (table)"
    contains "$T/out" "(1 sample: no interval)"
    contains "$T/out" "(not timed: fewer iterations than sets)"
    ;;
warmups)
    run_kiln "$T/out" "$T/err" eval saxpy "$KERNEL" "${QUICK[@]}" --seed 3 --warmups 0 \
        --iterations 3 --work "$T/work"
    expect_rc 0 "the starting kernel with --warmups 0"
    expect_json "$T/work/cand-candidate/plan.json" 'd["warmups"]' 0
    expect_json "$T/work/cand-candidate/run/timings.json" 'sorted(set(c["warmup"] for c in d["cases"]))' '[0]'
    run_kiln "$T/out" "$T/err" eval saxpy "$KERNEL" "${QUICK[@]}" --seed 3 --warmups 2 \
        --iterations 3 --work "$T/work"
    expect_rc 0 "the starting kernel with --warmups 2"
    expect_json "$T/work/cand-candidate/plan.json" 'd["warmups"]' 2
    ;;
seed)
    for k in 1 2; do
        run_kiln "$T/out" "$T/err" eval saxpy "$KERNEL" "${QUICK[@]}" --warmups 1 --iterations 5 \
            --work "$T/work$k"
        expect_rc 0 "evaluation $k without --seed"
        cp "$T/out" "$T/out$k"
        expect_json "$T/out$k" 'd["seed_source"]' random
    done
    s1=$(jq_py "$T/out1" 'd["seed"]')
    s2=$(jq_py "$T/out2" 'd["seed"]')
    [ "$s1" != "$s2" ] || fail "two evaluations without --seed both used seed $s1"
    [ "$(inputs_digest "$T/work1")" != "$(inputs_digest "$T/work2")" ] ||
        fail "two evaluations without --seed generated the same inputs"
    # --seed with the recorded seed reproduces the first evaluation's inputs.
    run_kiln "$T/out" "$T/err" eval saxpy "$KERNEL" "${QUICK[@]}" --warmups 1 --iterations 5 \
        --seed "$s1" --work "$T/work3"
    expect_rc 0 "evaluation with --seed $s1"
    expect_json "$T/out" 'd["seed"]' "$s1"
    expect_json "$T/out" 'd["seed_source"]' "--seed"
    [ "$(inputs_digest "$T/work1")" = "$(inputs_digest "$T/work3")" ] ||
        fail "--seed $s1 did not reproduce the inputs of the evaluation that recorded it"
    # The held-out draw is recorded after the check: seed and drawn sizes.
    expect_json "$T/out" 'd["held_out"]' pass
    expect_json "$T/out" 'd["held_out_draw"]["seed"] > 0' True
    expect_json "$T/out" 'all(c["name"].startswith("ho_") for c in d["held_out_draw"]["cases"] if not c["fixed"])' True
    expect_json "$T/out" 'any(c["timed"] for c in d["held_out_draw"]["cases"])' True
    ;;
listed_sizes)
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_listed_sizes.c" "${QUICK[@]}" "${FAST[@]}" \
        --work "$T/work"
    expect_rc 1 "a candidate right only on the listed sizes"
    expect_json "$T/out" 'd["status"]' wrong_answer
    expect_json "$T/out" 'd["stage"]' held_out
    expect_json "$T/out" '"held-out check" in d["detail"] and "ho_" in d["detail"]' True
    # It passed every visible case: only the drawn sizes caught it.
    expect_json "$T/out" 'all(c["correct"] for c in d["cases"])' True
    ;;
fast_on_visible)
    # Visible inputs with a marker the candidate recognises, as given
    # --input-cases (CASE-SEED/in/*.npy); held-out inputs never take them.
    python3 - "$KILN_SOURCE_DIR/workloads/saxpy/workload.json" "$T/given" <<'PY' || fail "writing the marked inputs"
import array, json, os, random, struct, sys
# No numpy on the host (only in the sandbox's image): .npy written by hand.
def save(path, values):
    hdr = ("{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % len(values)).encode()
    hdr += b" " * (64 - (10 + len(hdr) + 1) % 64) + b"\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr)
        f.write(values.tobytes())
def noise(rng, n):  # a random block repeated: quick, and random enough here
    block = array.array("f", [rng.uniform(-1, 1) for _ in range(65537)])
    return (block * (n // len(block) + 1))[:n]
wl = json.load(open(sys.argv[1]))
for c in wl["cases"]:
    if "cpu" not in c.get("backends", ["cpu"]):
        continue
    for s in range(3 if c["kind"] == "performance" else 1):
        d = os.path.join(sys.argv[2], "%s-%d" % (c["name"], 100 + s), "in")
        os.makedirs(d)
        rng = random.Random(100 + s)
        n = c["sizes"]["n"]
        x = noise(rng, n)
        x[0] = 1234.5
        save(os.path.join(d, "x.npy"), x)
        save(os.path.join(d, "y.npy"), noise(rng, n))
PY
    # Three samples per set at least: the rule needs an interval on both sides.
    run_kiln "$T/out" "$T/err" eval saxpy "$FIX/saxpy_fast_on_visible.c" "${QUICK[@]}" \
        --warmups 1 --iterations 9 --input-cases "$T/given" --work "$T/work"
    expect_rc 1 "a candidate fast only on the visible inputs"
    expect_json "$T/out" 'd["status"]' inconsistent_timing
    expect_json "$T/out" 'd["stage"]' held_out
    expect_json "$T/out" '"ho_near" in d["detail"] and "predicts" in d["detail"]' True
    expect_json "$T/out" 'all(c["correct"] for c in d["cases"])' True
    # The honest kernel on the same inputs passes the same check.
    run_kiln "$T/out" "$T/err" eval saxpy "$KERNEL" "${QUICK[@]}" --warmups 1 --iterations 9 \
        --input-cases "$T/given" --work "$T/work"
    expect_rc 0 "the starting kernel on the marked inputs"
    expect_json "$T/out" 'd["held_out"]' pass
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
echo "ok: heldout $case_name"
