#!/bin/bash
# given.sh CASE SHARED_WORK - `--input-cases` and `--reference` end to end on
# the cpu backend with saxpy. SHARED_WORK is the pipeline_eval_pass fixture:
# a first `kiln eval` whose inputs (seed 1) the second runs here are given.
#   identical     kiln eval --input-cases DIR (another seed): the same inputs,
#                 byte for byte, and the digest given.h documents
#   tar           the same as a ustar tarball: same digest, no leftovers
#   hostile       wrong dtype, wrong shape, missing case/file, extra file or
#                 set, held-out set, oversized, symlinks, tar with .., links,
#                 a GNU header: each refused (exit 2) naming set and file
#   check         kiln workload check --input-cases: passes; a bad set fails
#   reference_wrong  a wrong --reference makes the starting kernel fail
#   reference_bad    a missing, directory or non-.py --reference: exit 2
#   resume        optimize with both, killed, originals deleted, resumed
. "$(dirname "$0")/lib.sh"
case_name=$1
shared=$2
[ "$case_name" = reference_bad ] || [ -d "$shared/inputs" ] ||
    fail "$shared/inputs is missing (the pipeline_eval_pass fixture did not run)"
KERNEL=$KILN_SOURCE_DIR/workloads/saxpy/kernel.c
RES=$T/results

# The one content-hash directory of the shared inputs.
src_sets()
{
    local d
    d=$(ls -d "$shared"/inputs/*/) || fail "no inputs in $shared"
    [ "$(echo "$d" | wc -l)" = 1 ] || fail "$shared/inputs holds several workloads"
    echo "${d%/}"
}

# digest DIR: the input-cases digest of the sets in DIR, computed as given.h
# documents it (saxpy on cpu: inputs x and y).
digest()
{
    python3 - "$1" "$KILN_SOURCE_DIR/workloads/saxpy/workload.json" <<'PY'
import hashlib, json, os, struct, sys
root, wl = sys.argv[1], json.load(open(sys.argv[2]))
cases = [c["name"] for c in wl["cases"] if "cpu" in c.get("backends", wl["backends"])]
ins = [a["name"] for a in wl["signature"] if a["kind"] == "tensor" and a["role"] != "out"]
sets = []
for e in os.listdir(root):
    c, _, s = e.rpartition("-")
    if c in cases:
        sets.append((cases.index(c), int(s), c, s))
h = hashlib.sha256(b"kiln-input-cases-v1\n")
for _, _, c, s in sorted(sets):
    h.update(c.encode() + b"\0" + s.encode() + b"\0")
    for t in ins:
        data = open(os.path.join(root, "%s-%s" % (c, s), "in", t + ".npy"), "rb").read()
        h.update(t.encode() + b".npy\0" + struct.pack("<Q", len(data)) + hashlib.sha256(data).digest())
print(h.hexdigest())
PY
}

# in_hashes DIR: "SET/in/FILE sha256" for every input file under DIR's sets.
in_hashes()
{
    (cd "$1" && find . -path '*/in/*.npy' -type f | sort | xargs sha256sum | awk '{print $2, $1}')
}

# npy PATH DESCR SHAPE COUNT: a .npy written without numpy (zeros).
npy()
{
    python3 - "$@" <<'PY'
import struct, sys
path, descr, shape, count = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
size = int(descr[2:])
hdr = ("{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, shape)).encode()
hdr += b" " * (64 - (10 + len(hdr) + 1) % 64) + b"\n"
open(path, "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr + b"\0" * (size * count))
PY
}

# given_copy: $T/g, a hard-linked copy of the shared inputs; files are
# replaced, never written in place, so the shared ones stay intact.
given_copy()
{
    rm -rf "$T/g"
    cp -al "$shared/inputs" "$T/g" || fail "copying the shared inputs"
    G=$T/g/$(basename "$(src_sets)")
    N1=$(basename "$(ls -d "$G"/n1-*)")
}

eval_given()
{
    run_kiln "$T/out" "$T/err" eval saxpy "$KERNEL" --backend cpu "${FAST[@]}" --no-reference \
        --work "$T/work" --json "$@"
}

# refused WHAT FRAGMENT ARGS...: kiln eval refuses the given data (exit 2),
# saying FRAGMENT, before any sandbox ran and leaving no unpacked tarball.
refused()
{
    local what=$1 frag=$2
    shift 2
    rm -rf "$T/work"
    eval_given "$@"
    expect_rc 2 "$what"
    contains "$T/err" "$frag"
    [ ! -s "$T/out" ] || fail "$what: printed a verdict"
    [ -z "$(ls -d "$T"/work/given-tar-* 2>/dev/null)" ] || fail "$what: the unpacked tarball was left"
    [ ! -d "$T/work/cand-candidate" ] || fail "$what: a candidate ran"
}

# ustar TAR DIR: a plain ustar tarball of DIR's contents (python's tarfile).
ustar()
{
    python3 - "$1" "$2" <<'PY'
import os, sys, tarfile
with tarfile.open(sys.argv[1], "w", format=tarfile.USTAR_FORMAT) as t:
    for n in sorted(os.listdir(sys.argv[2])):
        t.add(os.path.join(sys.argv[2], n), arcname=n)
PY
}

# bad_tar TAR KIND: a one-entry tarball: dotdot, symlink or gnu.
bad_tar()
{
    python3 - "$1" "$2" <<'PY'
import io, sys, tarfile
kind = sys.argv[2]
fmt = tarfile.GNU_FORMAT if kind == "gnu" else tarfile.USTAR_FORMAT
with tarfile.open(sys.argv[1], "w", format=fmt) as t:
    i = tarfile.TarInfo({"dotdot": "n1-1/in/../../evil.npy"}.get(kind, "n1-1/in/x.npy"))
    if kind == "symlink":
        i.type, i.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(i)
    else:
        i.size = 1
        t.addfile(i, io.BytesIO(b"x"))
PY
}

case "$case_name" in
identical)
    src=$(src_sets)
    # Another seed: the given sets decide, not the seed.
    eval_given --input-cases "$shared" --seed 77
    expect_rc 0 "kiln eval --input-cases (a --work directory as-is)"
    expect_json "$T/out" 'd["status"]' pass
    expect_json "$T/out" 'd["held_out"]' pass
    want=$(digest "$src")
    expect_json "$T/out" 'd["input_cases"]["sha256"]' "$want"
    expect_json "$T/out" 'd["input_cases"]["path"]' "$shared"
    expect_json "$T/out" 'd["reference_script"]' None
    [ "$(ls "$T/work/inputs" | wc -l)" = 1 ] || fail "several input caches in $T/work/inputs"
    in_hashes "$src" >"$T/first"
    in_hashes "$T/work/inputs"/* >"$T/second"
    [ -s "$T/first" ] || fail "no input files in the first run"
    diff "$T/first" "$T/second" >&2 || fail "the second run's inputs differ from the first's"
    # The cache of given data is keyed by its digest, not the workload's hash.
    [ "$(basename "$(ls -d "$T"/work/inputs/*)")" != "$(basename "$src")" ] ||
        fail "given inputs share the generated inputs' cache key"
    # Held-out inputs are the workload's own, fresh: none of the given sets.
    for d in "$T"/work/inputs-held/*/*-*; do
        case $(basename "$d") in held_tiny-* | ho_draw*-* | ho_near*-*) ;; *) fail "held-out set $d" ;; esac
    done
    # The table form says where the inputs came from.
    run_kiln "$T/out" "$T/err" eval saxpy "$KERNEL" --backend cpu "${FAST[@]}" --no-reference \
        --work "$T/work" --input-cases "$shared"
    expect_rc 0 "kiln eval --input-cases (table)"
    contains "$T/out" "inputs: from --input-cases $shared (sha256 ${want:0:16})"
    ;;
tar)
    src=$(src_sets)
    ustar "$T/cases.tar" "$src" || fail "making the tarball"
    eval_given --input-cases "$T/cases.tar"
    expect_rc 0 "kiln eval --input-cases TAR"
    expect_json "$T/out" 'd["status"]' pass
    expect_json "$T/out" 'd["input_cases"]["sha256"]' "$(digest "$src")"
    in_hashes "$src" >"$T/first"
    in_hashes "$T/work/inputs"/* >"$T/second"
    diff "$T/first" "$T/second" >&2 || fail "the tarball's inputs differ from the directory's"
    [ -z "$(ls -d "$T"/work/given-tar-* 2>/dev/null)" ] || fail "the unpacked tarball was left"
    ;;
hostile)
    given_copy
    rm "$G/$N1/in/x.npy" && npy "$G/$N1/in/x.npy" '<i4' '(1,)' 1
    refused "wrong dtype" "$N1/in/x.npy" --input-cases "$T/g"
    contains "$T/err" "x.npy: got int32, the signature says float32"
    given_copy
    rm "$G/$N1/in/x.npy" && npy "$G/$N1/in/x.npy" '<f4' '(1, 1)' 1
    refused "wrong shape" "got shape (1, 1), the signature says (1,)" --input-cases "$T/g"
    given_copy
    rm "$G/$N1/in/x.npy" && npy "$G/$N1/in/x.npy" '<f4' '(300000,)' 300000
    refused "oversized" "$N1/in/x.npy has 1200128 bytes, more than the 65540" --input-cases "$T/g"
    given_copy
    rm -r "$G"/n31-*
    refused "missing case" "no input set for case n31 (expected $G/n31-SEED/in/x.npy)" \
        --input-cases "$T/g"
    given_copy
    rm "$G/$N1/in/y.npy"
    refused "missing file" "$G/$N1/in/y.npy is missing (case n1 needs input y, float32 (1,))" \
        --input-cases "$T/g"
    given_copy
    rm -r "$(ls -d "$G"/cpu_4m-* | head -1)"
    refused "too few sets" "case cpu_4m has 2 input sets, this command needs 3" --input-cases "$T/g"
    given_copy
    npy "$G/$N1/in/z.npy" '<f4' '(1,)' 1
    refused "extra file" "$N1/in/z.npy: unexpected file" --input-cases "$T/g"
    given_copy
    echo junk >"$G/$N1/notes.txt"
    refused "extra file in a set" "$N1/notes.txt: unexpected entry" --input-cases "$T/g"
    given_copy
    mkdir "$G/bogus-5"
    refused "unknown case" "bogus-5: the workload has no case bogus" --input-cases "$T/g"
    given_copy
    cp -al "$G/$N1" "$G/held_tiny-5"
    refused "held-out set" "held-out inputs are always generated fresh" --input-cases "$T/g"
    given_copy
    rm "$G/$N1/in/x.npy" && ln -s "$(ls -d "$shared"/inputs/*/"$N1")/in/x.npy" "$G/$N1/in/x.npy"
    refused "symlinked file" "$N1/in/x.npy is a symbolic link" --input-cases "$T/g"
    given_copy
    mv "$G/$N1" "$T/elsewhere" && ln -s "$T/elsewhere" "$G/$N1"
    refused "symlinked set" "$N1 is a symbolic link" --input-cases "$T/g"
    rm -rf "$T/elsewhere"
    bad_tar "$T/dotdot.tar" dotdot
    refused "tar with .." "parent-directory component" --input-cases "$T/dotdot.tar"
    bad_tar "$T/symlink.tar" symlink
    refused "tar with a symlink" "symbolic link" --input-cases "$T/symlink.tar"
    bad_tar "$T/gnu.tar" gnu
    refused "GNU tar" "kiln accepts plain ustar only" --input-cases "$T/gnu.tar"
    gzip -c "$T/symlink.tar" >"$T/cases.tar.gz"
    refused "compressed tarball" "not a directory or a .tar file" --input-cases "$T/cases.tar.gz"
    refused "missing path" "--input-cases $T/nothing: cannot open it" --input-cases "$T/nothing"
    # kiln optimize refuses before it makes a run directory.
    given_copy
    rm "$G/$N1/in/y.npy"
    run_kiln "$T/out" "$T/err" optimize saxpy --backend cpu --results "$RES" --input-cases "$T/g"
    expect_rc 2 "kiln optimize with a bad --input-cases"
    contains "$T/err" "in/y.npy is missing"
    [ ! -e "$RES/run-001" ] || fail "a run directory was made for bad input cases"
    ;;
check)
    run_kiln "$T/out" "$T/err" workload check saxpy --backend cpu --input-cases "$shared"
    expect_rc 0 "kiln workload check --input-cases"
    contains "$T/out" "cpu: 11 input sets from $(src_sets)"
    contains "$T/out" "saxpy: workload check passed"
    given_copy
    rm "$G/$N1/in/x.npy" && npy "$G/$N1/in/x.npy" '<i4' '(1,)' 1
    run_kiln "$T/out" "$T/err" workload check saxpy --backend cpu --input-cases "$T/g"
    expect_rc 1 "kiln workload check with a bad set"
    contains "$T/out" "FAIL  visible cases on cpu: --input-cases $T/g:"
    contains "$T/out" "PROBLEMS FOUND"
    ;;
reference_wrong)
    # out = a*x - y: runs, writes the right files, computes the wrong thing.
    sed 's/+ y\[lo:hi\]/- y[lo:hi]/' "$KILN_SOURCE_DIR/workloads/saxpy/reference.py" >"$T/wrong.py"
    ! cmp -s "$T/wrong.py" "$KILN_SOURCE_DIR/workloads/saxpy/reference.py" ||
        fail "could not derive a wrong reference from saxpy's reference.py"
    run_kiln "$T/out" "$T/err" optimize saxpy --backend cpu "${FAST[@]}" --max-iterations 1 \
        --results "$RES" --input-cases "$shared" --reference "$T/wrong.py"
    expect_rc 1 "kiln optimize with a wrong --reference"
    contains "$T/err" "starting kernel (kernel.c) fails against the --reference script $T/wrong.py"
    contains "$T/err" "wrong_answer"
    # Failed before its first candidate: nothing to resume, so no run is
    # left behind to suggest it (issue 35 item 5).
    [ ! -e "$RES/run-001" ] || fail "a run that never started was left in $RES"
    not_contains "$T/err" "kiln resume"
    ;;
reference_bad)
    mkdir -p "$T/refdir"
    printf '\x93NUMPY\x01\x00' >"$T/out.npy"
    printf 'print(1)\0' >"$T/binary.py"
    for args in "eval saxpy $KERNEL --backend cpu" "optimize saxpy --backend cpu --results $RES" \
        "workload check saxpy --backend cpu"; do
        # shellcheck disable=SC2086
        run_kiln "$T/out" "$T/err" $args --reference "$T/missing.py"
        expect_rc 2 "$args --reference (missing)"
        contains "$T/err" "--reference $T/missing.py: cannot open it"
        # shellcheck disable=SC2086
        run_kiln "$T/out" "$T/err" $args --reference "$T/refdir"
        expect_rc 2 "$args --reference (a directory)"
        contains "$T/err" "is a directory: --reference takes one python script"
        # shellcheck disable=SC2086
        run_kiln "$T/out" "$T/err" $args --reference "$T/out.npy"
        expect_rc 2 "$args --reference (an .npy)"
        contains "$T/err" "is not a .py file"
        # shellcheck disable=SC2086
        run_kiln "$T/out" "$T/err" $args --reference "$T/binary.py"
        expect_rc 2 "$args --reference (binary)"
        contains "$T/err" "is binary"
    done
    [ ! -e "$RES/run-001" ] || fail "a run directory was made for a bad --reference"
    ;;
resume)
    ustar "$T/cases.tar" "$(src_sets)" || fail "making the tarball"
    cp "$KILN_SOURCE_DIR/workloads/saxpy/reference.py" "$T/ref.py"
    # --keep-inputs (resume keeps it from run.json): the finished run's
    # work/inputs are compared with the given sets below.
    "$KILN_BIN" optimize saxpy --backend cpu "${FAST[@]}" --results "$RES" --quiet \
        --max-iterations 2 --input-cases "$T/cases.tar" --reference "$T/ref.py" --keep-inputs \
        >"$T/first.out" 2>"$T/first.err" &
    pid=$!
    _kiln_bg_pids+=("$pid")
    run=$RES/run-001
    has_history()
    {
        python3 -c 'import json,sys; sys.exit(len(json.load(open(sys.argv[1]))) < 1)' "$1" 2>/dev/null
    }
    wait_for 300 has_history "$run/history.json" ||
        fail "no history entry within 300 s: $(cat "$T/first.err")"
    kill -9 "$pid"
    wait "$pid" 2>/dev/null
    want=$(digest "$(src_sets)")
    # The run is self-contained: the originals may go.
    rm "$T/cases.tar" "$T/ref.py"
    # A changed copy is refused before any work.
    cp -a "$run" "$RES/run-tampered"
    echo "# changed" >>"$RES/run-tampered/given/reference.py"
    run_kiln "$T/out" "$T/err" resume "$RES/run-tampered"
    expect_rc 1 "kiln resume of a run whose --reference copy was changed"
    contains "$T/err" "changed: given/reference.py"
    # With its MANIFEST rewritten to match, the digest in run.json still catches it.
    python3 - "$RES/run-tampered" <<'PY'
import hashlib, os, sys
d = sys.argv[1]
lines = open(os.path.join(d, "MANIFEST")).read().splitlines(True)
f = "given/reference.py"
data = open(os.path.join(d, f), "rb").read()
new = "%s %d %s\n" % (hashlib.sha256(data).hexdigest(), len(data), f)
lines = [new if l.split(" ")[-1] == f + "\n" and not l.startswith("next ") else l for l in lines]
open(os.path.join(d, "MANIFEST"), "w").write("".join(lines))
PY
    run_kiln "$T/out" "$T/err" resume "$RES/run-tampered"
    expect_rc 1 "kiln resume of a run whose --reference copy and MANIFEST were changed"
    contains "$T/err" "it was changed after the run started"
    run_kiln "$T/out" "$T/err" resume "$run"
    expect_rc 0 "kiln resume with given data"
    expect_json "$run/history.json" 'len(d)' 2
    for f in run.json summary.json; do
        expect_json "$run/$f" 'd["input_cases"]["sha256"]' "$want"
        expect_json "$run/$f" 'd["input_cases"]["path"]' "$T/cases.tar"
        expect_json "$run/$f" 'd["reference_script"]["path"]' "$T/ref.py"
        expect_json "$run/$f" 'd["reference_script"]["sha256"]' \
            "$(sha256sum "$KILN_SOURCE_DIR/workloads/saxpy/reference.py" | cut -d' ' -f1)"
    done
    expect_json "$run/summary.json" 'd["best_candidate"]["held_out"]' pass
    [ "$(digest "$run/given/inputs")" = "$want" ] || fail "given/inputs is not the given data"
    in_hashes "$(src_sets)" >"$T/first"
    in_hashes "$run/work/inputs"/* >"$T/second"
    diff "$T/first" "$T/second" >&2 || fail "the resumed run's inputs differ from the given ones"
    contains "$run/report.html" "given with --input-cases $T/cases.tar"
    contains "$run/report.html" "given with --reference $T/ref.py"
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
echo "ok: given $case_name"
