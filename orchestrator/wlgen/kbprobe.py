# kbprobe.py - run by `kiln import kernelbench` in the script sandbox (never
# on the host): evaluates an untrusted KernelBench problem to learn what its
# workload needs. argv: plan.json problem.py out.json.
#
# plan.json: {"consts": {NAME: int}, "budgets": {CASE: bytes},
#             "odd": [CASE...], "perf": CASE, "real_cap": bytes}
# For every case it halves the problem's largest constant (pinned in the
# module's source, so constants derived from it follow) until the tensors'
# bytes (inputs, parameters, output) fit the case's budget; the perf case
# keeps the problem's own sizes when they fit. Shapes come from torch's
# "meta" device (no memory, no arithmetic); where the model does not run on
# meta, from a real run at sizes whose inputs fit real_cap. Writes out.json:
#   {"mode": "meta"|"real", "inputs": [{"dtype"}], "params": [{"name",
#    "dtype"}], "out": {"dtype"}, "cases": [{"name", "consts": {NAME: int},
#    "shapes": [[dims] per input, per param, then the output]}],
#    "scaled": [[NAME, from, to]]}  or  {"error": "one line"}
import ast
import json
import sys

plan = json.load(open(sys.argv[1]))
SRC = open(sys.argv[2], encoding="utf-8").read()
OUT = sys.argv[3]


def finish(doc):
    with open(OUT, "w") as f:
        json.dump(doc, f)
    sys.exit(0)


try:
    import torch
except ImportError as e:
    finish({"error": "importing torch in the script sandbox failed (%s); install torch for "
            "the sandbox's python3 (Debian: python3-torch)" % e})

torch.set_num_threads(1)
DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
          torch.int64: "int64", torch.int32: "int32", torch.int16: "int16", torch.int8: "int8",
          torch.uint8: "uint8", torch.bool: "bool"}
FACTORIES = ["randn", "rand", "randint", "randperm", "zeros", "ones", "empty", "full",
             "arange", "eye", "linspace", "tensor", "normal", "randn_like", "rand_like",
             "randint_like", "zeros_like", "ones_like", "empty_like", "full_like"]
# Sizes are positive: a constant like `dim = -1` (an axis) is left alone.
CONSTS = {k: int(v) for k, v in plan["consts"].items() if 1 <= int(v) <= (1 << 40)}


def assigned_names(node):
    """`NAME = ...` and `A, B = ...` at module level: the names bound."""
    if not isinstance(node, ast.Assign) or len(node.targets) != 1:
        return []
    t = node.targets[0]
    if isinstance(t, ast.Name):
        return [t.id]
    if isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
        return [e.id for e in t.elts]
    return []


class Refusal(Exception):
    pass


def pinned_source(pins):
    """The problem's module with each module-level `NAME = ...` followed by
    `NAME = _kiln_pin(NAME, "NAME")`, which gives a pinned int constant (or
    tuple element, "NAME__i") its case's value; constants computed from it
    follow."""
    tree = ast.parse(SRC)
    body = []
    for node in tree.body:
        body.append(node)
        for n in assigned_names(node):
            body.append(ast.parse("%s = _kiln_pin(%s, %r)" % (n, n, n)).body[0])
    tree.body = body
    ast.fix_missing_locations(tree)
    return compile(tree, "PROBLEM.py", "exec")


def pinner(pins):
    def pin(v, n):
        if type(v) is int:
            return pins.get(n, v)
        if type(v) in (tuple, list):
            return type(v)(pins.get("%s__%d" % (n, i), x) for i, x in enumerate(v))
        return v
    return pin


def discover_consts():
    """Module-level names bound to an int by `NAME = ...` / `A, B = ...`."""
    ns = {"__name__": "kernelbench_problem"}
    with OnMeta():
        exec(compile(SRC, "PROBLEM.py", "exec"), ns)
    for node in ast.parse(SRC).body:
        # A tuple's literal elements only: (in_channels, height) follows its names.
        literal = [isinstance(e, ast.Constant) for e in node.value.elts] \
            if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Tuple, ast.List)) \
            else []
        for n in assigned_names(node):
            v = ns.get(n)
            if type(v) is int and 1 <= v <= (1 << 40) and n not in CONSTS:
                CONSTS[n] = v
            if type(v) in (tuple, list) and len(v) <= 8:  # input_shape = (32768,)
                for i, x in enumerate(v):
                    k = "%s__%d" % (n, i)
                    if type(x) is int and 1 <= x <= (1 << 40) and k not in CONSTS and \
                            i < len(literal) and literal[i]:
                        CONSTS[k] = x


class OnMeta:
    """Tensor factories default to the meta device; .cuda() is a no-op."""

    def __enter__(self):
        self.saved = {n: getattr(torch, n) for n in FACTORIES if hasattr(torch, n)}
        for n, f in self.saved.items():
            def wrap(*a, _f=f, **k):
                if k.get("device") is None:
                    k["device"] = "meta"
                return _f(*a, **k)
            setattr(torch, n, wrap)
        return self

    def __exit__(self, *exc):
        for n, f in self.saved.items():
            setattr(torch, n, f)


def nbytes(shape, dtype):
    n = torch.tensor([], dtype=dtype).element_size()
    for d in shape:
        n *= d
    return n


def describe(pins, meta, forward=True):
    """Runs the problem at `pins`; returns (consts, inputs, params, out)."""
    ns = {"__name__": "kernelbench_problem", "_kiln_pin": pinner(pins)}
    torch.manual_seed(0)
    with torch.no_grad():
        if meta:
            with OnMeta():
                exec(pinned_source(pins), ns)
                model = ns["Model"](*list(ns["get_init_inputs"]()))
                xs = list(ns["get_inputs"]())
        else:
            exec(pinned_source(pins), ns)
            model = ns["Model"](*list(ns["get_init_inputs"]()))
            xs = list(ns["get_inputs"]())
        raw = xs
        # A python int or float (a scale factor) travels as a 0-d tensor of
        # float64 / int64; forward() gets the python value back.
        xs = [torch.tensor(x, dtype=torch.float64 if type(x) is float else torch.int64)
              if type(x) in (int, float) else x for x in raw]
        for i, x in enumerate(xs):
            if not isinstance(x, torch.Tensor):
                raise Refusal("get_inputs()[%d] is a python %s, not a tensor" %
                              (i, type(x).__name__))
            if x.dtype not in DTYPES:
                raise Refusal("get_inputs()[%d] has dtype %s" % (i, x.dtype))
        params = list(model.named_parameters())
        for name, p in params:
            if p.dtype not in DTYPES:
                raise Refusal("parameter %s has dtype %s" % (name, p.dtype))
        y = None
        if forward:
            y = model(*raw)
            if not isinstance(y, torch.Tensor):
                raise Refusal("forward() returns a %s, not one tensor" % type(y).__name__)
            if y.dtype not in DTYPES:
                raise Refusal("forward() returns dtype %s" % y.dtype)
    consts = {}
    for k in CONSTS:
        n, _, i = k.rpartition("__") if k.rpartition("__")[2].isdigit() else (k, "", "")
        v = ns.get(n if i else k)
        v = v[int(i)] if i and type(v) in (tuple, list) and int(i) < len(v) else v
        if type(v) is int and 1 <= v <= (1 << 40):
            consts[k] = v
    SCALAR[:] = [type(x) in (int, float) for x in raw]
    return consts, xs, params, y


def total_bytes(xs, params, y):
    t = sum(nbytes(x.shape, x.dtype) for x in xs)
    t += sum(nbytes(p.shape, p.dtype) for _, p in params)
    return t + (nbytes(y.shape, y.dtype) if y is not None else 0)


MODE = "meta"
SCALAR = []  # per input: a python number (True) or a tensor
VALIDATE_BELOW = 4 << 20


def measure(pins):
    """Bytes of every tensor at `pins`, or None when the problem fails there."""
    try:
        if MODE == "meta":
            got = total_bytes(*describe(pins, True)[1:])
            # Meta checks shapes, not every rule (a kernel larger than its
            # input passes there): small sizes are run for real too.
            if got <= VALIDATE_BELOW:
                describe(pins, False)
            return got
        _, xs, params, _ = describe(pins, True, forward=False)
        ins = total_bytes(xs, params, None)
        if ins > plan["real_cap"]:
            return 2 * ins  # too big to run: an estimate, the output as big as the inputs
        return total_bytes(*describe(pins, False)[1:])
    except Refusal:
        raise
    except Exception:
        return None


def shrink(budget):
    """Halves the largest constant until the bytes fit the budget."""
    pins, frozen = {}, set()
    have = measure(pins)
    if have is None:
        return None, None
    while have > budget:
        values = dict(CONSTS, **pins)
        cands = [k for k in values if k not in frozen and values[k] >= 8]
        if not cands:
            # As small as halving gets: a correctness case may be larger
            # than its budget; a performance case must fit its own.
            return (pins, have) if have <= plan["budgets"][plan["perf"]] else (None, have)
        k = max(cands, key=lambda c: (values[c], c))
        trial = dict(pins, **{k: (values[k] + 1) // 2})
        got = measure(trial)
        if got is None:
            # Sizes that must stay equal (x * y broadcasting): halve together.
            same = [c for c in cands if values[c] == values[k]]
            trial = dict(pins, **{c: (values[c] + 1) // 2 for c in same})
            got = measure(trial) if len(same) > 1 else None
        if got is None or got >= have:
            frozen.add(k)  # the problem breaks there, or it sizes nothing
            continue
        pins, have = trial, got
    return pins, have


def make_odd(pins, budget, step):
    """Each shrunk constant made odd (+step) where the problem still runs."""
    cap = 2 * max(budget, measure(pins) or 0)  # halving may have stopped above budget
    for k in sorted(pins):
        if pins[k] % 2 == 0 and pins[k] + step >= 1:
            trial = dict(pins, **{k: pins[k] + step})
            got = measure(trial)
            if got is not None and got <= cap:
                pins = trial
    return pins


def main():
    global MODE
    discover_consts()
    try:
        describe({}, True)
    except Refusal:
        raise
    except Exception:
        MODE = "real"  # shapes from small real runs only
    cases, scaled = [], []
    for name, budget in plan["budgets"].items():
        pins, have = shrink(budget)
        if pins is None:
            if have is None:
                raise Refusal("the problem does not run at its own sizes (nor at the meta "
                              "device's): %s" % why_fails({}))
            raise Refusal("case %s: no constant can be halved to fit %d bytes (%s needed)" %
                          (name, budget, have))
        if name in plan["odd"]:
            # Up for the first, down for the next: where halving stops at
            # the same sizes for every case, the cases still differ.
            pins = make_odd(pins, budget, 1 if name == plan["odd"][0] else -1)
        big = name == plan["perf"] and MODE == "meta"
        consts, xs, params, y = describe(pins, big)
        if name == plan["perf"]:
            scaled = [[k, CONSTS[k], v] for k, v in sorted(pins.items()) if v != CONSTS[k]]
        cases.append({"name": name, "consts": consts,
                      "shapes": [list(x.shape) for x in xs] +
                      [list(p.shape) for _, p in params] + [list(y.shape)]})
    finish({"mode": MODE, "inputs": [{"dtype": DTYPES[x.dtype], "scalar": s}
                                     for x, s in zip(xs, SCALAR)],
            "params": [{"name": n, "dtype": DTYPES[p.dtype]} for n, p in params],
            "out": {"dtype": DTYPES[y.dtype]}, "cases": cases, "scaled": scaled})


def why_fails(pins):
    try:
        describe(pins, False if MODE == "real" else True)
        return "?"
    except Exception as e:
        return "%s: %s" % (type(e).__name__, str(e).splitlines()[0][:160] if str(e) else "")


try:
    main()
except Refusal as e:
    finish({"error": str(e)})
except Exception as e:
    finish({"error": "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])})
