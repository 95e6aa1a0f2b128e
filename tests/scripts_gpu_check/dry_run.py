#!/usr/bin/env python3
"""scripts/gpu-check --dry-run: the plumbing the GPU session relies on.

Runs the quick parts of the dry run (part1's proofs; part2's turnaround,
optimize and report steps on the cpu backend, one step needing a GPU) and
checks: the table printed last with one row per step, summary.json agreeing
with it, at most 8 files under $OUT, each step's log in the logs tarball, a
step made to fail (KILN_GPU_CHECK_FAIL) or to hang past its budget
(KILN_GPU_CHECK_HANG) not stopping the steps after it, and a part's window
(KILN_GPU_CHECK_PART_S) skipping the steps that no longer fit. No timing is
asserted beyond the budgets the script enforces itself."""
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

SRC = os.environ["KILN_SOURCE_DIR"]
BUILD = os.path.dirname(os.environ["KILN_BIN"])
SCRIPT = os.path.join(SRC, "scripts", "gpu-check")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, flush=True)


def run(args, out, **env):
    e = dict(os.environ, OUT=out, KILN_BUILD_DIR=BUILD)
    for k in ("KILN_GPU_CHECK_FAIL", "KILN_GPU_CHECK_HANG", "KILN_GPU_CHECK_BUDGET",
              "KILN_GPU_CHECK_PART_S"):
        e.pop(k, None)
    e.update(env)
    p = subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True, env=e,
                       timeout=800)
    print("$ gpu-check %s -> rc %d\n%s" % (" ".join(args), p.returncode, p.stdout[-3000:]),
          flush=True)
    return p


def rows(stdout):
    """The table printed last: {step: (result, figure, goal, met)}."""
    tail = stdout.rstrip().split("\n| step | result | figure | goal | met |\n")
    check(len(tail) == 2, "the table is printed")
    lines = tail[-1].split("\n")
    check(lines[0].startswith("| ---"), "the table has its rule")
    check(not stdout.rstrip().split("\n")[-1].startswith("gpu-check:"),
          "the table is the last thing on stdout")
    got = {}
    for line in lines[1:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        check(len(cells) == 5, "a row has 5 cells: %r" % line)
        got[cells[0]] = cells[1:]
    return got


def files_ok(out, label, want_report=False):
    names = sorted(os.listdir(out))
    check(len(names) <= 8, "at most 8 files under $OUT: %s" % names)
    for n in (label + "-summary.md", label + "-summary.json", label + "-logs.tar.gz"):
        check(n in names, "%s under $OUT (%s)" % (n, names))
    check(("report-run.tar.gz" in names) == want_report, "report-run.tar.gz only with a report")
    for n in names:
        check(re.fullmatch(r"[A-Za-z0-9._-]+", n) is not None, "file name the tool returns: " + n)
    with open(os.path.join(out, label + "-summary.json")) as f:
        return json.load(f)


def log_of(out, label, part, step):
    name = "%s-logs/%s-%s.log" % (label, part, step)
    with tarfile.open(os.path.join(out, label + "-logs.tar.gz")) as tar:
        if name not in tar.getnames():
            check(False, "%s in the logs tarball" % name)
            return ""
        return tar.extractfile(name).read().decode("utf-8", "replace")


def load_script():
    import importlib.machinery
    import importlib.util
    loader = importlib.machinery.SourceFileLoader("gpu_check", SCRIPT)
    spec = importlib.util.spec_from_loader("gpu_check", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def gpu_parsers(top):
    """The readers of the GPU-only outputs, which no dry run reaches, on
    synthetic outputs in the benches' formats: figures and goals judged."""
    g = load_script()
    work = os.path.join(top, "parsers")
    os.makedirs(work)
    ctx = g.Ctx(False, work)
    log = os.path.join(work, "x.log")

    def rec_with(text):
        with open(log, "w") as f:
            f.write(text)
        return {"log": log}

    lines = ["%d/8 Test #%d: t%d ......   Passed   3.2 sec" % (i, i, i) for i in range(1, 8)]
    ok = "\n".join(lines + ["8/8 Test #8: service_gpu ....   Passed   9.1 sec",
                            "100% tests passed, 0 tests failed out of 8"])
    fig, met, _ = g.ctest_parse(ctx, rec_with(ok))
    check(fig == "8 passed, 0 failed, 0 skipped of 8" and met, "ctest all passed: %s" % fig)
    bad = "\n".join(lines + ["8/8 Test #8: baseline_eval_gpu ....***Failed   20.1 sec",
                             "88% tests passed, 1 tests failed out of 8"])
    fig, met, _ = g.ctest_parse(ctx, rec_with(bad))
    check("1 failed" in fig and "baseline_eval_gpu" in fig and not met, "ctest failure: %s" % fig)
    fig, met, _ = g.ctest_parse(ctx, rec_with("\n".join(lines[:3])))
    check(fig.startswith("3 passed") and "no ctest summary" in fig and not met,
          "ctest cut short: %s" % fig)

    timing = ("spread of medians: 0.04% (target < 1%)\n"
              "turnaround total      : median 3.400 s  (min 3.3, max 3.5)\n"
              "ratio kiln/ncu 1.0056 (target within 3%)\n")
    fig, met, _ = g.gpu_timing_parse(ctx, rec_with(timing))
    check(fig == "spread 0.04%, kiln/ncu 1.0056, eval total 3.400 s" and met, "gpu-timing: " + fig)
    fig, met, _ = g.gpu_timing_parse(ctx, rec_with(timing.replace("1.0056", "1.0400")))
    check(not met, "kiln/ncu 1.04 misses the goal")

    for compiler, own in (("nvrtc", 0.31), ("nvcc", 0.31)):
        with open(ctx.path("turnaround-%s.json" % compiler), "w") as f:
            json.dump({"sizes": [1048576], "passed": True, "median_s": {
                "compile": 0.09, "run": 0.15, "candidate": own, "total": 2.5}}, f)
    fig, met, _ = g.turnaround_parse("nvrtc")(ctx, {})
    check(fig.startswith("candidate 0.310 s") and "eval total 2.500 s" in fig and not met,
          "nvrtc 0.31 s misses < 0.3 s, judged on the candidate's own: " + fig)
    check(g.turnaround_parse("nvcc")(ctx, {})[1], "nvcc 0.31 s meets < 0.45 s")

    os.makedirs(ctx.path("optimize-sgemm", "sgemm", "run-001"))
    row = {"workload": "sgemm", "vs_start": 6.5, "vs_vendor": 0.81, "floor": None,
           "config": {}, "wall_s": 200.0}
    with open(ctx.path("optimize-sgemm", "rows.jsonl"), "w") as f:
        f.write(json.dumps(row) + "\n")
    fig, met, _ = g.optimize_parse("sgemm")(ctx, {})
    check(fig == "6.50x start, 0.81x cuBLAS, - floor, 200 s" and met, "sgemm: " + fig)
    check(ctx.runs.get("sgemm", "").endswith("run-001"), "the sgemm run noted for the report")
    with open(ctx.path("optimize-sgemm", "rows.jsonl"), "a") as f:
        f.write(json.dumps(dict(row, wall_s=250.0)) + "\n")
    check(not g.optimize_parse("sgemm")(ctx, {})[1], "a run over 240 s misses the goal")

    # issue 36: gemm_bf16 against cuBLASLt, and the unit a run's floor names
    os.makedirs(ctx.path("optimize-gemm_bf16", "gemm_bf16", "run-001"))
    row = {"workload": "gemm_bf16", "vs_start": 3.0, "vs_vendor": 0.72, "floor": 0.5,
           "config": {}, "wall_s": 180.0}
    with open(ctx.path("optimize-gemm_bf16", "rows.jsonl"), "w") as f:
        f.write(json.dumps(row) + "\n")
    fig, met, _ = g.optimize_parse("gemm_bf16")(ctx, {})
    check(fig == "3.00x start, 0.72x cuBLASLt, 50% floor, 180 s" and met, "gemm_bf16: " + fig)
    with open(ctx.path("optimize-gemm_bf16", "rows.jsonl"), "a") as f:
        f.write(json.dumps(dict(row, vs_vendor=0.65)) + "\n")
    check(not g.optimize_parse("gemm_bf16")(ctx, {})[1], "0.65x cuBLASLt misses >= 0.7x")
    unit = g.floor_unit_parse(("fp32_simt", "FP32 SIMT"))
    fig, met, _ = unit(ctx, rec_with("$ bash -c ...\n(budget 5 s)\nfp32_simt\nFP32 SIMT peak\n"))
    check(met and "floor_unit fp32_simt" in fig, "sgemm's floor unit: " + fig)
    fig, met, _ = unit(ctx, rec_with("$ bash -c ...\n(budget 5 s)\ntf32_tensor\n"))
    check(not met, "a TF32 floor misses the goal: " + fig)
    text = ("1: cuBLASLt bf16: 4096^3 0.2000 ms = 687.2 TFLOP/s; 4099x3001x2053 ...\n"
           "1/2 Test #27: test_baseline_cuda ...............   Passed   21.00 sec\n"
           "2/2 Test #21: adversarial_lowprec_cuda .........   Passed   90.00 sec\n"
           "100% tests passed, 0 tests failed out of 2\n")
    fig, met, _ = g.ctest_tensor_parse(ctx, rec_with(text))
    check(met and fig.endswith("; cuBLASLt bf16 4096^3 687.2 TFLOP/s"), "ctest-tensor: " + fig)
    text = text.replace("90.00 sec", "").replace("   Passed   \n", "***Skipped\n")
    check(not g.ctest_tensor_parse(ctx, rec_with(text))[1], "a skipped tensor test misses the goal")

    # a run cut before bench/optimize wrote its row (transpose on the H200,
    # a30ac2b): the figure and the log say how far it got, from its files
    run = ctx.path("optimize-transpose", "transpose", "run-001")
    os.makedirs(os.path.join(run, "candidates", "001"))
    for rel in ("run.json", "candidates/001/verdict.json"):
        with open(os.path.join(run, rel), "w") as f:
            f.write("{}")
    open(ctx.path("optimize-transpose", "rows.jsonl"), "w").close()
    cut = rec_with("$ bash bench/optimize transpose\n")
    cut["started"] = os.stat(os.path.join(run, "run.json")).st_mtime - 30
    fig, met, _ = g.optimize_parse("transpose")(ctx, cut)
    check(fig.startswith("no row: 1 candidates judged, 2 files; last write +30 s") and not met,
          "a cut run's figure: " + fig)
    with open(log) as f:
        text = f.read()
    check("candidates/001/verdict.json" in text and "+   30.0 s" in text,
          "a cut run's files listed in its log: " + text)
    os.makedirs(ctx.path("optimize-softmax_rows"))
    open(ctx.path("optimize-softmax_rows", "rows.jsonl"), "w").close()
    fig, _, _ = g.optimize_parse("softmax_rows")(ctx, dict(cut, log=log))
    check(fig == "cut before the run directory was made", "a run with no directory: " + fig)

    os.makedirs(ctx.path("kernelbench"))
    with open(ctx.path("kernelbench", "rows.jsonl"), "w") as f:
        f.write(json.dumps({"workload": "kb_19_relu", "kiln_ms": 0.02, "torch_ms": 0.019,
                            "speedup": 0.95, "config": {}}) + "\n")
        f.write(json.dumps({"workload": "kb_23_softmax", "error": True}) + "\n")
    fig, met, _ = g.kernelbench_parse("kb_19_relu")(ctx, {})
    check(fig.endswith("0.95x torch") and not met, "relu 0.95x misses >= 1.0x: " + fig)
    fig, met, res = g.kernelbench_parse("kb_23_softmax")(ctx, {})
    check(res == "failed (kiln optimize)" and not met, "a failed kernelbench optimize")


def main():
    top = tempfile.mkdtemp(prefix="kiln-test-gpu-check-")
    try:
        gpu_parsers(top)
        # --list: every part within 9 minutes of budgets
        p = run(["--list"], top)
        check(p.returncode == 0, "--list exits 0")
        parts = re.findall(r"^(part\d+) .*\(budgets (\d+) s", p.stdout, re.M)
        check(len(parts) >= 3, "--list names the parts: %s" % parts)
        check(all(int(b) <= 540 for _, b in parts),
              "every part's budgets fit 9 minutes: %s" % parts)
        check("ctest-gpu" in p.stdout and "optimize-sgemm" in p.stdout, "--list names the steps")

        # part1 with the build failing and doctor hanging: ctest -L gpu still runs
        out = os.path.join(top, "out1")
        p = run(["--dry-run", "part1"], out, KILN_GPU_CHECK_FAIL="build",
                KILN_GPU_CHECK_HANG="doctor", KILN_GPU_CHECK_BUDGET="doctor=3")
        check(p.returncode == 1, "a failed step makes the exit status 1")
        t = rows(p.stdout)
        check(list(t) == ["build", "doctor", "ctest-gpu"], "part1's rows in order: %s" % list(t))
        check(t.get("build", [""])[0].startswith("failed (rc 3)"), "build failed on purpose")
        check(t.get("doctor", [""])[0].startswith("cut by its budget (3 s)"), "doctor cut at 3 s")
        r = t.get("ctest-gpu", ["", ""])
        check(r[0].startswith("ok"), "ctest-gpu ran after the failure and the cut: %s" % r)
        check(re.search(r"\d+ passed, 0 failed, \d+ skipped of \d+", r[1]) is not None,
              "ctest-gpu's figure: %s" % r[1])
        s = files_ok(out, "part1")
        check([x["step"] for x in s["steps"]] == list(t), "summary.json has the table's steps")
        check(s["dry_run"] is True, "summary.json says dry run")
        check("failing on purpose" in log_of(out, "part1", "part1", "build"), "build's log kept")
        check("hanging on purpose" in log_of(out, "part1", "part1", "doctor"), "doctor's log kept")
        check("Skipped" in log_of(out, "part1", "part1", "ctest-gpu"), "ctest's log kept")

        # part1 for real (dry): every step ok, doctor's figure read from its JSON
        out = os.path.join(top, "out2")
        p = run(["--dry-run", "part1"], out)
        t = rows(p.stdout)
        check(p.returncode == 0, "a clean dry part1 exits 0")
        check(re.match(r"kiln \S+; service (built|NOT built)", t.get("build", ["", ""])[1] or "")
              is not None, "build's figure: %s" % t.get("build"))
        check(re.match(r"OK \d+, DEGRADED \d+, MISSING \d+", t.get("doctor", ["", ""])[1])
              is not None, "doctor's figure: %s" % t.get("doctor"))
        check(all(v[3] == "-" for v in t.values()), "no goal judged in a dry run")
        files_ok(out, "part1")

        # a part's window: nothing starts once it is spent
        out = os.path.join(top, "out3")
        p = run(["--dry-run", "part1"], out, KILN_GPU_CHECK_PART_S="25",
                KILN_GPU_CHECK_HANG="build")
        t = rows(p.stdout)
        check(t.get("build", [""])[0].startswith("cut by its budget"), "build cut by the window")
        check(all(t.get(s, [""])[0].startswith("skipped (the part's 25 s")
                  for s in ("doctor", "ctest-gpu")),
              "the rest skipped once the part's window is spent: %s" % t)

        # part2's steps on the cpu backend: figures, a GPU-only step skipped, the report kept
        out = os.path.join(top, "out4")
        p = run(["--dry-run", "turnaround-nvcc", "gpu-timing", "optimize-saxpy", "report"], out)
        t = rows(p.stdout)
        check(p.returncode == 0, "the cpu steps pass")
        check(re.match(r"candidate [0-9.]+ s", t.get("turnaround-nvcc", ["", ""])[1]) is not None,
              "turnaround's figure: %s" % t.get("turnaround-nvcc"))
        check(t.get("gpu-timing", [""])[0] == "skipped (no GPU)", "gpu-timing skipped (no GPU)")
        check(re.match(r"[0-9.]+x start", t.get("optimize-saxpy", ["", ""])[1]) is not None,
              "optimize's figure: %s" % t.get("optimize-saxpy"))
        check(t.get("report", [""])[0].startswith("ok"), "report made: %s" % t.get("report"))
        files_ok(out, "steps", want_report=True)
        with tarfile.open(os.path.join(out, "report-run.tar.gz")) as tar:
            names = tar.getnames()
        check(any(re.fullmatch(r"run-\d+/report.html", n) for n in names), "report.html kept")
        check(not any("/work/" in n for n in names), "the run's work/ left out")

        # misuse
        p = run(["--dry-run", "no-such-step"], os.path.join(top, "out5"))
        check(p.returncode == 2 and "unknown part or step" in p.stderr, "unknown step: exit 2")
    finally:
        shutil.rmtree(top, ignore_errors=True)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("ok")
    return 0


sys.exit(main())
