#!/bin/bash
# import_probe.sh: kiln import kernelbench end to end on the problems in
# problems/ (made for these tests in KernelBench's format): the probe runs
# them in the script sandbox, a folder gives a table / JSON, a refusal says
# why, a long or hostile file name gives a safe workload name, and a written
# workload passes kiln workload check. (real.sh imports real KernelBench
# problems.) Needs torch in the script sandbox's python3 (Debian:
# python3-torch); skipped (77) without it.
set -u
fail() { echo "FAIL: $*"; exit 1; }
K=${KILN_BIN:?} SRC=${KILN_SOURCE_DIR:?}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P=$SRC/tests/orchestrator_import/problems

"$K" sandbox --policy script -- python3 -c "import torch" >"$T/out" 2>&1 || {
    grep -q "refused syscall" "$T/out" && fail "the script sandbox refuses torch: $(cat "$T/out")"
    echo "skipped: the script sandbox's python3 has no torch (install python3-torch)"
    exit 77
}
json() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); $2" "$1"; }

# A folder (probed; the whole check runs once, below): four workloads, one
# refusal with its reason.
"$K" import kernelbench "$P" -o "$T/all" --backend cpu --no-check --json >"$T/out" 2>"$T/err" ||
    fail "folder import: $(cat "$T/err" "$T/out")"
json "$T/out" '
rows = {r["problem"]: r for r in d["rows"]}
assert d["problems"] == 5 and d["imported"] == 4 and d["scaled"] == 2, d
hinge = rows["5_Pairwise_Hinge_Mean.py"]
assert hinge["scaled"].startswith("cpu: batch_size 32768 -> "), hinge
assert hinge["backends"] == ["cpu"], hinge
assert not rows["4_Returns_Tuple.py"]["imported"], rows
assert rows["4_Returns_Tuple.py"]["reason"] == "forward() returns a tuple, not one tensor", rows
conv = rows["2_Conv2d_GroupNorm_Tanh.py"]
assert conv["imported"] and conv["params"] == 4 and conv["inputs"] == 1, conv
assert conv["scaled"].startswith("cpu: batch_size 64 -> "), conv
assert conv["checked"] is None, conv
assert rows["1_Scaled_ReLU.py"]["scaled"] is None, rows
' || fail "folder --json: $(cat "$T/out")"
[ -d "$T/all/kb_4_returns_tuple" ] && fail "a refused problem left a directory"
w=$T/all/kb_2_conv2d_groupnorm_tanh/workload.json
# The parameters follow the inputs, in named_parameters() order.
json "$w" '
names = [a["name"] for a in d["signature"] if a["kind"] == "tensor"]
assert names == ["in0", "conv_weight", "conv_bias", "norm_weight", "norm_bias", "out"], names
assert d["sizes"] == ["batch_size", "in_channels", "out_channels", "height", "width",
                      "num_groups"], d["sizes"]
assert "out_channels % num_groups == 0" in d["held_out"]["where"], d["held_out"]
cpu = [c for c in d["cases"] if c["name"] == "cpu"][0]
assert cpu["backends"] == ["cpu"] and cpu["sizes"]["height"] < 512, cpu
assert "The cpu performance case scales every size by" in d["description"]
' || fail "conv workload: $(cat "$w")"
# An int64 output (argmax), a model parameter of its own, a derived constant.
json "$T/all/kb_3_matmul_bias_argmax/workload.json" '
sig = {a["name"]: a for a in d["signature"]}
assert sig["out"]["dtype"] == "int64" and sig["bias"]["shape"] == ["2*K"], sig
assert list(sig)[-4:] == ["A", "B", "bias", "out"], list(sig)
' || fail "argmax workload"
# A 0-d output; the tuple's element, tied to batch_size by broadcasting,
# one size with it.
json "$T/all/kb_5_pairwise_hinge_mean/workload.json" '
sig = {a["name"]: a for a in d["signature"]}
assert sig["out"]["shape"] == [] and sig["in0"]["shape"] == ["batch_size", "batch_size"], sig
assert d["sizes"] == ["batch_size"], d["sizes"]
' || fail "hinge workload"
grep -q 'PIN_OF = {"batch_size": "batch_size", "input_shape__0": "batch_size"}' \
    "$T/all/kb_5_pairwise_hinge_mean/inputs.py" || fail "hinge PIN_OF"
# A python float input: a 0-d float64 tensor, given back to forward() as a number.
json "$T/all/kb_1_scaled_relu/workload.json" '
sig = {a["name"]: a for a in d["signature"]}
assert sig["in1"]["shape"] == [] and sig["in1"]["dtype"] == "float64", sig
' || fail "relu workload"
grep -q '"in1", "float64", True' "$T/all/kb_1_scaled_relu/inputs.py" || fail "relu inputs.py"
# The whole check, the performance case too, without a starting kernel
# (optional, issue 29): the kernel part is said to be skipped.
cp -r "$T/all/kb_3_matmul_bias_argmax" "$T/wl3"
[ ! -e "$T/wl3/kernel.cu" ] || fail "imported without --kernel, yet kernel.cu exists"
"$K" workload check "$T/wl3" >"$T/out" 2>&1 || fail "workload check: $(tail -5 "$T/out")"
grep -q "^SKIP  cpu: no starting kernel (kernel.c), the kernel part is skipped" "$T/out" ||
    fail "the check did not say the kernel part was skipped: $(head -5 "$T/out")"

# None imported: exit 1, the table says why.
mkdir "$T/bad" && cp "$P/4_Returns_Tuple.py" "$T/bad/"
"$K" import kernelbench "$T/bad" -o "$T/bado" --backend cpu >"$T/out" 2>&1
[ $? = 1 ] || fail "a folder with nothing importable did not exit 1: $(cat "$T/out")"
grep -q "^4_Returns_Tuple.py  *refused   forward() returns a tuple" "$T/out" ||
    fail "table: $(cat "$T/out")"
grep -q "0 of 1 problems imported" "$T/out" || fail "summary: $(cat "$T/out")"

# Long and hostile file names: a derived name within 64 characters, the same
# every time; nothing of the name reaches the generated files unescaped.
long=75_conv_transposed_2D_asymmetric_input_asymmetric_kernel_strided__grouped____padded____dilated__
mkdir "$T/names"
cp "$P/1_Scaled_ReLU.py" "$T/names/$long.py"
cp "$P/1_Scaled_ReLU.py" "$T/names/"$'8_new\nline")\nimport os #.py'
"$K" import kernelbench "$T/names" -o "$T/n" --backend cpu --no-check >"$T/out" 2>&1 ||
    fail "names: $(cat "$T/out")"
grep -q "2 of 2 problems imported" "$T/out" || fail "names table: $(cat "$T/out")"
name=$(ls "$T/n" | grep '^kb_75')
[ ${#name} -le 64 ] || fail "derived name $name is ${#name} characters"
[[ $name =~ ^kb_75_conv_transposed_2d_asymmetric_input_asymmetric_ke_[0-9a-f]{8}$ ]] ||
    fail "derived name $name is not a readable prefix and a hash"
"$K" import kernelbench "$T/names/$long.py" -o "$T/again" --backend cpu --no-check --json >"$T/out" 2>&1 ||
    fail "single import: $(cat "$T/out")"
json "$T/out" "assert d['workload'] == '$name', d" || fail "the name changed: $(cat "$T/out")"
[ -d "$T/n/kb_8_new_line_import_os" ] || fail "hostile name: $(ls "$T/n")"
grep -q '^# Generated by `kiln import kernelbench` from .*/8_new_line___import_os__.py.$' \
    "$T/n/kb_8_new_line_import_os/inputs.py" || fail "the file name reached inputs.py unescaped"
grep -q '^import os #' "$T/n/kb_8_new_line_import_os/inputs.py" && fail "injected line"
echo "ok"
