# hx_torch.py - kiln's torch baseline (HARNESS.md section 8): the problem's
# own torch Model, eager or through torch.compile, timed by kiln's rule:
# `warmups` runs then `iterations` measured runs per performance case, the
# input set of each run drawn in blocks that are random permutations of the
# case's sets (never the same set twice in a row), the cache flushed before
# every run (CUDA: a read of twice the L2, left running while the start
# event is enqueued, as kiln's harness does; CPU: a write of `flush_bytes`),
# and each run timed alone (CUDA events around forward(); CPU: the
# monotonic clock). It writes timings.json and status.json in the harness's
# formats (HARNESS.md section 4), which the parent parses strictly.
#
# argv: /in/plan.json /out. plan.json (written by pipeline/torch_baseline.c):
#   {"kiln_torch_plan": 1, "device": "cuda"|"cpu", "mode": "eager"|"compile",
#    "warmups": W, "iterations": N, "l2_flush": true, "flush_bytes": B,
#    "script": "/in/inputs.py",
#    "cases": [{"name": "kb", "sizes": {...}, "seeds": [s0, s1, s2]}]}
# Or, for a level's eager times at the problems' own sizes (kiln bench
# kernelbench --baseline-only), "problems": [{"name": "p0", "file":
# "/in/problems/1_Square_matrix_multiplication_.py"}, ...] instead of
# script and cases, and "deadline_s": no problem starts after it. Each file
# runs as KernelBench runs it (module constants as written, seed 0), its
# tensors made on the device; one set per problem.
# `script` is the workload's inputs.py as `kiln import kernelbench` writes
# it: its definitions (imports, functions, UPPER_CASE tables) give
# load_problem(case), which runs the problem with the case's constants. Each
# set's model and inputs are drawn the way inputs.py draws them (the set's
# seed, the model first, then get_inputs()), so the baseline runs on the
# very values the candidates get. The script's statements with effects
# (reading argv, saving files) are skipped.
#
# This runs beside the problem's own code, in the same process: its times
# are the problem's word, as KernelBench's own are (SECURITY.md).
import ast
import json
import os
import random
import sys
import time
import traceback

PLAN = json.load(open(sys.argv[1]))
OUT = sys.argv[2]
LOG = open(os.path.join(OUT, "log.txt"), "w")
T0 = time.monotonic()


def log(msg):
    LOG.write("[%9.3f] %s\n" % (time.monotonic() - T0, msg))
    LOG.flush()


def one_line(text, cap=200):
    """status.json's detail: printable ASCII, one line, at most `cap`."""
    s = "".join(c if " " <= c <= "~" else " " for c in str(text)).strip()
    return s[:cap]


def write_json(name, doc):
    tmp = os.path.join(OUT, name + ".tmp")
    with open(tmp, "w") as f:
        json.dump(doc, f)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, os.path.join(OUT, name))


def definitions(path):
    """The script's imports, functions, classes and UPPER_CASE tables, run
    in a fresh namespace; its other statements are left out."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)

    def upper(t):
        return isinstance(t, ast.Name) and t.id.isupper()

    keep = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Try, ast.FunctionDef, ast.ClassDef)):
            keep.append(node)
        elif isinstance(node, ast.Assign) and all(upper(t) for t in node.targets):
            keep.append(node)
    tree.body = keep
    ns = {"__name__": "kiln_torch_baseline"}
    exec(compile(tree, path, "exec"), ns)
    if "load_problem" not in ns:
        raise RuntimeError("%s defines no load_problem(case): the torch baseline needs a workload "
                           "written by kiln import kernelbench" % os.path.basename(path))
    return ns


def set_order(nsets, n, rng, last=-1):
    """n set indices in blocks that are permutations of all sets, never the
    same set twice in a row (HARNESS.md section 3 step 5)."""
    out = []
    while len(out) < n:
        block = list(range(nsets))
        rng.shuffle(block)
        if nsets > 1 and block[0] == (out[-1] if out else last):
            block[0], block[1] = block[1], block[0]
        out += block
    return out[:n]


class Device:
    """Where the model runs, and how one run is flushed and timed."""

    def __init__(self, torch, plan):
        self.torch = torch
        self.cuda = plan["device"] == "cuda"
        self.flush = None
        if self.cuda:
            if not torch.cuda.is_available():
                raise RuntimeError("torch %s sees no CUDA device (torch.cuda.is_available() "
                                   "is False)" % torch.__version__)
            self.dev = torch.device("cuda", 0)
            props = torch.cuda.get_device_properties(0)
            self.name = props.name
            l2 = getattr(props, "L2_cache_size", 0) or (128 << 20)
            if plan["l2_flush"]:
                self.flush = torch.zeros(2 * l2 // 4, dtype=torch.float32, device=self.dev)
            log("device %s, L2 %d bytes, torch %s" % (self.name, l2, torch.__version__))
        else:
            self.dev = torch.device("cpu")
            self.name = "cpu"
            if plan["l2_flush"]:
                self.flush = torch.zeros(max(1, int(plan["flush_bytes"])), dtype=torch.uint8)
            self.fill = 0
            torch.set_num_threads(1)  # as the cpu harness runs a candidate: one thread
            log("cpu, torch %s, one thread" % torch.__version__)

    def to(self, x):
        return x.to(self.dev) if isinstance(x, self.torch.Tensor) else x

    def run(self, f, xs):
        """One run: flush, then forward() alone between the timer's marks."""
        torch = self.torch
        if self.cuda:
            start = torch.cuda.Event(enable_timing=True)
            end = torch.cuda.Event(enable_timing=True)
            if self.flush is not None:
                self.flush.sum()  # left running: the start is stamped when forward() starts
            start.record()
            y = f(*xs)
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
        else:
            if self.flush is not None:
                self.fill = (self.fill + 1) & 0xFF
                self.flush.fill_(self.fill)
            t = time.perf_counter_ns()
            y = f(*xs)
            ms = (time.perf_counter_ns() - t) / 1e6
        del y
        return max(ms, 1e-6)


def make_sets(torch, ns, dev, seeds):
    """Per set: its parameters and inputs on the device, drawn as inputs.py
    draws them. The model is the first set's; the others' parameters are
    copied into it before their runs."""
    model, sets = None, []
    for seed in seeds:
        torch.manual_seed(int(seed) % (1 << 63))
        m = ns["Model"](*ns["get_init_inputs"]())
        xs = [dev.to(x) for x in ns["get_inputs"]()]
        m = m.to(dev.dev)
        if model is None:
            model = m
        sets.append(([p.detach().clone() for p in m.parameters()], xs))
    return model, sets


def time_case(torch, defs, plan, dev, case, rng):
    """Times one case; returns {set: [samples]} and the warmups run."""
    ns = defs["load_problem"]({"case": case["name"], "seed": case["seeds"][0],
                               "sizes": case["sizes"]})
    if not dev.cuda:
        torch.set_num_threads(1)  # load_problem takes up to 8; candidates run on one
    model, sets = make_sets(torch, ns, dev, case["seeds"])
    params = list(model.parameters())
    f = model
    if plan["mode"] == "compile":
        f = torch.compile(model)
        with torch.no_grad():
            dev.run(f, sets[0][1])  # compiles; not a sample
    current = [0]

    def run(k):
        if k != current[0]:
            with torch.no_grad():
                for p, v in zip(params, sets[k][0]):
                    p.copy_(v)
            current[0] = k
        return dev.run(f, sets[k][1])

    warm = set_order(len(sets), plan["warmups"], rng, current[0])
    samples = {k: [] for k in range(len(sets))}
    with torch.no_grad():
        for k in warm:
            run(k)
        for k in set_order(len(sets), plan["iterations"], rng, current[0]):
            samples[k].append(run(k))
    return samples, len(warm)


def time_problem(torch, plan, dev, path, rng):
    """One problem file at its own sizes: {0: samples} and the warmups."""
    ns = {"__name__": "kernelbench_problem"}
    exec(compile(open(path, encoding="utf-8").read(), path, "exec"), ns)
    torch.manual_seed(0)
    if hasattr(torch, "set_default_device"):
        torch.set_default_device(dev.dev)  # made on the device: no host copy of the inputs
    try:
        model = ns["Model"](*ns["get_init_inputs"]()).to(dev.dev)
        xs = [dev.to(x) for x in ns["get_inputs"]()]
    finally:
        if hasattr(torch, "set_default_device"):
            torch.set_default_device(None)
    samples = []
    with torch.no_grad():
        for _ in range(plan["warmups"]):
            dev.run(model, xs)
        for _ in range(plan["iterations"]):
            samples.append(dev.run(model, xs))
    del model, xs
    return {0: samples}, plan["warmups"]


def unavailable(why):
    return {"kind": "unavailable", "phase": "setup", "detail": one_line(why)}


def main():
    timings, cases, failed = [], [], False
    device = "cuda" if PLAN["device"] == "cuda" else "cpu"
    doc = {"version": 1, "backend": device, "device": device, "l2_flush": bool(PLAN["l2_flush"])}
    try:
        import torch
    except ImportError as e:
        torch, why = None, "torch baseline unavailable: importing torch failed (%s)" % e
    if torch is not None and PLAN["mode"] == "compile" and not hasattr(torch, "compile"):
        why = ("torch baseline unavailable: torch %s has no torch.compile (it needs torch >= 2.0)"
               % torch.__version__)
        torch = None
    dev = None
    if torch is not None:
        try:
            dev = Device(torch, PLAN)
            doc["device"] = one_line(dev.name, 120)
            defs = None if "problems" in PLAN else definitions(PLAN["script"])
        except Exception as e:  # the reason goes to status.json
            log(traceback.format_exc())
            why, dev = "torch baseline unavailable: %s: %s" % (type(e).__name__, e), None
    rng = random.SystemRandom()
    problems = "problems" in PLAN
    for case in PLAN["problems"] if problems else PLAN["cases"]:
        if problems and time.monotonic() - T0 > PLAN["deadline_s"]:
            cases.append({"case": case["name"], "status": "skipped"})
            continue
        if dev is None:
            cases.append({"case": case["name"], "status": "failed", "failure": unavailable(why)})
            failed = True
            continue
        try:
            if problems:
                samples, warm = time_problem(torch, PLAN, dev, case["file"], rng)
            else:
                samples, warm = time_case(torch, defs, PLAN, dev, case, rng)
        except Exception as e:
            log(traceback.format_exc())
            if dev.cuda:
                torch.cuda.empty_cache()  # an out-of-memory problem must not sink the next
            what = "torch.compile" if PLAN["mode"] == "compile" else "torch eager"
            where = os.path.basename(case["file"]) if problems else "case " + case["name"]
            cases.append({"case": case["name"], "status": "failed", "failure": unavailable(
                "torch baseline unavailable: %s failed on %s: %s: %s"
                % (what, where, type(e).__name__, e))})
            failed = True
            continue
        cases.append({"case": case["name"], "status": "ok"})
        for k, ms in samples.items():
            if ms:
                timings.append({"case": case["name"], "set": k, "samples_ms": ms,
                                "fingerprint_ok": True, "warmup": warm,
                                "l2_flush": bool(PLAN["l2_flush"])})
        log("case %s: %d samples" % (case["name"], sum(len(v) for v in samples.values())))
    write_json("timings.json", {"version": 1, "cases": timings})
    doc.update({"status": "failed" if failed else "ok", "cases": cases})
    write_json("status.json", doc)


main()
