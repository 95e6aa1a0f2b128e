# kbprobe.py - run by `kiln import kernelbench` in the script sandbox (never
# on the host): evaluates an untrusted KernelBench problem to learn what its
# workload needs. argv: plan.json problem.py out.json.
#
# plan.json: {"consts": {NAME: int}, "budgets": {"small", "odd", "held": bytes},
#             "cpu": bytes (0: no cpu performance case), "cuda": bytes (0: no
#             cuda performance case), "real_cap": bytes, "tolerance": float}
#
# What it learns, in order:
# 1. The problem's module-level integer constants. Those written as literals
#    and >= 8 are its sizes (batch, channels, features, lengths); smaller
#    ones (kernel sizes, strides, axes) stay as written, and constants
#    computed from others follow them.
# 2. Which sizes must stay equal (broadcasting ties them): they become one
#    size; every other pair is made to differ in the correctness cases, so
#    each distinct constant is its own kernel argument and a kernel that
#    mixes two of them up fails.
# 3. The cases: small and odd (correctness: every size distinct, odd where
#    the problem allows), held (a fixed held-out case, used only when ranges
#    cannot be drawn), cpu (performance, scaled to the cpu budget) and kb
#    (performance: the problem's own sizes when they fit the cuda budget).
#    Scaling multiplies every size by one factor (an odd size stays odd), so
#    the problem keeps its proportions.
# 4. An expression over the sizes for every tensor dimension, fitted on
#    random valid points and checked on all of them; the divisibility the
#    problem needs (GroupNorm's channels by its groups) as `where`
#    constraints; held-out ranges, checked by drawing from them as kiln does.
# 5. The flops of matrix products and convolutions (torch.utils.flop_counter's
#    rule) as an expression over the sizes, the float64 reference's peak
#    memory per tensor byte, and the tolerance: KernelBench's, with atol
#    lowered where the output is small so that zero never passes.
# Shapes come from torch's "meta" device (no memory, no arithmetic), with
# real runs at small sizes (meta checks shapes, not every rule); where the
# model does not run on meta, from real runs only, and the expressions give
# the shapes of the sizes too big to run.
#
# Writes out.json (kbprobe.h lists the fields) or {"error": "one line"}.
import ast
import json
import math
import random
import sys
import weakref

plan = json.load(open(sys.argv[1]))
SRC = open(sys.argv[2], encoding="utf-8").read()
OUT = sys.argv[3]


def finish(doc):
    with open(OUT, "w") as f:
        json.dump(doc, f)
    sys.exit(0)


try:
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
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
MIN_SIZE = 8          # a literal constant this large is a size
BIG = 1 << 40
VALIDATE_BELOW = 1 << 20  # meta shapes are confirmed by a real run below these bytes
FIT_POINTS = 10
HELD_SAMPLES = 12
RNG = random.Random(1)  # the import is deterministic


class Refusal(Exception):
    pass


def is_literal(node):
    """An expression of literals only (`2048 * 2`), no names."""
    return not any(isinstance(n, ast.Name) for n in ast.walk(node))


def bindings(node):
    """(name, literal) for every name a module-level assignment binds:
    `a = 1`, `a = b = 1`, `a, b = 1, 2`; a tuple value's elements are
    also bound as NAME__i ("input_shape__0")."""
    if not isinstance(node, ast.Assign):
        return []
    out = []
    for t in node.targets:
        if isinstance(t, ast.Name):
            out.append((t.id, node.value))
        elif isinstance(t, ast.Tuple) and all(isinstance(e, ast.Name) for e in t.elts):
            vals = node.value.elts if isinstance(node.value, ast.Tuple) and \
                len(node.value.elts) == len(t.elts) else [None] * len(t.elts)
            out += [(e.id, v) for e, v in zip(t.elts, vals)]
    return out


def pinned_code():
    """The problem's module with each module-level binding followed by
    `NAME = _kiln_pin(NAME, "NAME")`: a pinned int constant (or tuple
    element, "NAME__i") takes its point's value; constants computed from
    it follow."""
    tree = ast.parse(SRC)
    body = []
    for node in tree.body:
        body.append(node)
        for n, _ in bindings(node):
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


class OnMeta:
    """Tensor factories default to the meta device."""

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


CODE = pinned_code()
CONSTS = {}    # every positive int constant: NAME -> its value in the problem
LITERAL = []   # the sizes: literal constants >= MIN_SIZE, in source order


def discover_consts():
    ns = {"__name__": "kernelbench_problem", "_kiln_pin": pinner({})}
    with OnMeta():
        exec(CODE, ns)
    for node in ast.parse(SRC).body:
        for n, value in bindings(node):
            v = ns.get(n)
            if type(v) is int and 1 <= v <= BIG:
                CONSTS[n] = v
                if value is not None and is_literal(value) and v >= MIN_SIZE and n not in LITERAL:
                    LITERAL.append(n)
            elif type(v) in (tuple, list) and len(v) <= 8 and isinstance(value, ast.Tuple):
                for i, (x, e) in enumerate(zip(v, value.elts)):
                    k = "%s__%d" % (n, i)
                    if type(x) is int and 1 <= x <= BIG:
                        CONSTS[k] = x
                        if is_literal(e) and x >= MIN_SIZE and k not in LITERAL:
                            LITERAL.append(k)


# ---- one point: the problem run at some sizes ----

aten = torch.ops.aten
MATMULS = {"mm": 0, "addmm": 1, "bmm": 0, "baddbmm": 1}


def prod(xs):
    p = 1
    for x in xs:
        p *= int(x)
    return p


class Tracker(TorchDispatchMode):
    """Peak bytes of the tensors the forward holds at once, and each matrix
    product's and convolution's flops as factors (torch.utils.flop_counter's
    rule: 2 per multiply-add; elementwise work is not counted)."""

    def __init__(self):
        super().__init__()
        self.live = self.peak = 0
        self.terms = []  # [coefficient, [dimension, ...]] per op

    def free(self, n):
        self.live -= n

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        name = func.overloadpacket.__name__
        if name in MATMULS:
            a, b = args[MATMULS[name]], args[MATMULS[name] + 1]
            self.terms.append([2, list(a.shape) + [b.shape[-1]]])
        elif name == "convolution":
            x, w, transposed = args[0], args[1], args[6]
            spatial = list((x if transposed else out).shape[2:])
            self.terms.append([2, [x.shape[0]] + spatial + list(w.shape)])
            # float64 convolutions on the CPU unfold their input (im2col),
            # for the whole batch (transposed: one sample at a time).
            cols = prod(w.shape) * prod(spatial) // max(1, w.shape[0]) * 8
            cols *= 1 if transposed else x.shape[0]
            self.peak = max(self.peak, self.live + cols)
        if not any(r.alias_info is not None for r in func._schema.returns):
            for t in out if isinstance(out, (tuple, list)) else [out]:
                if isinstance(t, torch.Tensor):
                    n = t.numel() * t.element_size()
                    self.live += n
                    self.peak = max(self.peak, self.live)
                    weakref.finalize(t, self.free, n)
        return out


class Point:
    """What the problem makes at one assignment of its sizes."""

    def __init__(self, pins, meta, forward=True, track=False):
        self.pins = dict(pins)
        ns = {"__name__": "kernelbench_problem", "_kiln_pin": pinner(pins)}
        torch.manual_seed(0)
        with torch.no_grad():
            if meta:
                with OnMeta():
                    exec(CODE, ns)
                    model = ns["Model"](*list(ns["get_init_inputs"]()))
                    raw = list(ns["get_inputs"]())
            else:
                exec(CODE, ns)
                model = ns["Model"](*list(ns["get_init_inputs"]()))
                raw = list(ns["get_inputs"]())
        self.scalar = [type(x) in (int, float) for x in raw]
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
        self.inputs = [(DTYPES[x.dtype], list(x.shape)) for x in xs]
        self.params = [(n, DTYPES[p.dtype], list(p.shape)) for n, p in params]
        self.out = None
        self.bytes = sum(nbytes(x.shape, x.dtype) for x in xs) + \
            sum(nbytes(p.shape, p.dtype) for _, p in params)
        self.need, self.terms, self.y = 0, [], None
        if not forward:
            return
        with torch.no_grad():
            y = model(*raw)
        if not isinstance(y, torch.Tensor):
            raise Refusal("forward() returns a %s, not one tensor" % type(y).__name__)
        if y.dtype not in DTYPES:
            raise Refusal("forward() returns dtype %s" % y.dtype)
        self.out = (DTYPES[y.dtype], list(y.shape))
        self.bytes += nbytes(y.shape, y.dtype)
        if not track:
            return
        # The reference: the model and its float inputs in float64.
        model = model.double()
        x64 = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
               for x in raw]
        held = sum(nbytes(x.shape, x.dtype) for x in x64 if isinstance(x, torch.Tensor)) + \
            sum(nbytes(p.shape, p.dtype) for p in model.parameters())
        t = Tracker()
        with torch.no_grad(), t:
            y64 = model(*x64)
        self.need = self.bytes + held + t.peak
        self.terms = t.terms
        self.y = y64 if not meta else None

    def dims(self):
        """Every tensor's shape: inputs, parameters, then the output."""
        return [s for _, s in self.inputs] + [s for _, _, s in self.params] + [self.out[1]]


def nbytes(shape, dtype):
    return torch.tensor([], dtype=dtype).element_size() * prod(shape)


MODE = "meta"
CACHE = {}


def key(pins):
    return tuple(sorted(pins.items()))


def observe(pins, track=False, confirm=False):
    """The point at `pins`, or None when the problem fails there. With
    `confirm`, meta shapes below VALIDATE_BELOW bytes are confirmed by a
    real run (meta checks shapes, not every rule): the points kiln keeps
    are confirmed, the many a search tries are not."""
    k = (key(pins), track)
    got = CACHE[k] if k in CACHE else observe_new(pins, track)
    CACHE[k] = got
    if got is not None and confirm and MODE == "meta" and got.bytes <= VALIDATE_BELOW and \
            not valid_real(pins):
        return None
    return got


def observe_new(pins, track):
    got = None
    try:
        if MODE == "meta":
            got = Point(pins, True, track=track)
        else:
            got = Point(pins, True, forward=False)
            if got.bytes <= plan["real_cap"]:
                got = Point(pins, False, track=track)
            else:
                got.bytes *= 2  # too big to run: the output guessed as big as the inputs
    except Refusal:
        raise
    except Exception:
        got = None
    return got


def valid_real(pins):
    k = ("real", key(pins))
    if k not in CACHE:
        try:
            Point(pins, False)
            CACHE[k] = True
        except Refusal:
            raise
        except Exception:
            CACHE[k] = False
    return CACHE[k]


def why_fails(pins):
    try:
        Point(pins, MODE == "meta")
        return "?"
    except Exception as e:
        why = "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:160])
        if isinstance(e, AttributeError) and "torch" in str(e):
            # A newer torch's function (scaled_dot_product_attention is 2.0's).
            why += " (this torch is %s; import it where a newer torch is)" % torch.__version__
        return why


# ---- sizes: ties, scaling, distinct values ----

TIES = {}  # a size that must equal another -> that one
FROZEN = []  # literal constants >= MIN_SIZE that cannot change
FLOOR = [MIN_SIZE]  # scaling keeps a size at least this (or its own value)


def leaders():
    return [c for c in LITERAL if c not in TIES]


def with_ties(pins):
    for f, l in TIES.items():
        if l in pins:
            pins[f] = pins[l]
    return pins


def scaled(f, base=None):
    """Every size times f (an odd size stays odd); 1 at least."""
    pins = {}
    for c in leaders():
        v = (base or CONSTS)[c]
        # Never below MIN_SIZE (or the size itself): a skinny side of 32
        # scaled to 1 is no longer the problem's shape.
        w = max(min(v, FLOOR[0]), int(round(v * f)))
        if v % 2 and w % 2 == 0:
            w = w - 1 if w > 1 else w + 1
        pins[c] = w
    return with_ties(pins)


def nudges(v, light=False):
    out = []
    for d in range(1, 1 if light else 9):
        out += [v + d, v - d]
    for m in (2, 4, 8, 16):
        out += [v - v % m, v - v % m + m]
    return [w for w in out if w >= 1 and w != v]


def repair(pins, light=False):
    """`pins`, or the nearest valid point that changes one size a little
    (light: to a multiple of 2, 4, 8 or 16 only)."""
    if observe(pins):
        return pins
    for c in sorted(leaders(), key=lambda c: -pins[c]):
        for w in nudges(pins[c], light):
            trial = with_ties(dict(pins, **{c: w}))
            if observe(trial):
                return trial
    return None


def fit(budget):
    """The largest factor <= 1 whose point fits `budget` bytes, else the
    valid point with the fewest bytes: (pins, factor), or (None, None) when
    no factor gives a valid point. A coarse scan in powers of two (too
    small a factor breaks a problem as surely as too large a one overflows
    the budget), then bisection above the best; points a rounding broke
    (channels no longer divisible by groups) are repaired."""
    def at(f, light):
        p = repair(scaled(f), light)
        return (p, observe(p).bytes) if p is not None else (None, None)
    for light in (True, False):
        best = fewest = None
        for k in range(25):
            p, b = at(0.5 ** k, light)
            if p is None:
                continue
            if b <= budget:
                best = (k, p)
                break
            if fewest is None or b < fewest[1]:
                fewest = (p, b, 0.5 ** k)
        if best is not None or fewest is not None:
            break
    if best is None:
        return (fewest[0], fewest[2]) if fewest else (None, None)
    k, p = best
    if k == 0:
        return p, 1.0
    lo, hi, got = -float(k), -float(k - 1), (p, 0.5 ** k)
    for _ in range(6):
        mid = (lo + hi) / 2
        q, b = at(2 ** mid, True)
        if q is not None and b <= budget:
            lo, got = mid, (q, 2 ** mid)
        else:
            hi = mid
    return got


def find_ties(pins):
    """Sizes that cannot change alone at `pins`: tied to an equal one they
    can change with (x * y broadcasting ties them), else frozen at their
    value (a relation kiln cannot express, LayerNorm's shape equal to a
    convolution's output width): no longer sizes."""
    for c in list(LITERAL):
        if c in TIES:
            continue
        p = with_ties(dict(pins))
        v = p.get(c, CONSTS[c])
        if any(observe(with_ties(dict(p, **{c: w}))) for w in nudges(v)):
            continue
        for l in LITERAL:
            if l != c and l not in TIES and p.get(l, CONSTS[l]) == v and \
                    any(observe(with_ties(dict(p, **{c: w, l: w}))) for w in nudges(v)):
                first, then = sorted((c, l), key=LITERAL.index)
                TIES[then] = first  # the one written first names them
                break
        else:
            LITERAL.remove(c)
            FROZEN.append(c)


def distinct(pins, odd=0):
    """Each size a value no other size has (odd where the problem allows,
    looking up for odd=1 and down for odd=-1), changed as little as the
    problem allows; None when the result does not run."""
    used = set()
    for c in sorted(leaders(), key=lambda c: (-pins[c], LITERAL.index(c))):
        v = pins[c]
        cands = [v] + nudges(v)
        if odd:
            cands.sort(key=lambda w: (w % 2 == 0, abs(w - v), (w - v) * odd < 0))
        for w in cands:
            if w in used:
                continue
            trial = with_ties(dict(pins, **{c: w}))
            if observe(trial, confirm=True):
                pins = trial
                break
        used.add(pins[c])
    return pins if observe(pins, confirm=True) else None


# ---- expressions over the sizes ----

def render_linear(terms, c):
    """sum(k*x) + c as kiln writes it: "2*h - k + 1"."""
    out = ""
    for k, x in terms:
        if k == 0:
            continue
        t = x if abs(k) == 1 else "%d*%s" % (abs(k), x)
        out += ("- " if k < 0 else "+ " if out else "") + t + " "
        out = out if k > 0 or out != "- %s " % t else "-" + t + " "
    out = out.strip()
    return out if c == 0 else "%s %s %d" % (out, "+" if c > 0 else "-", abs(c))


def fit_floor(vec, xs, s):
    """Integers k (per column of xs) and c with (sum(k*x) + c)/s == vec at
    every point (numerator >= 0: kiln's / truncates), or None. The k come
    from least squares on s*vec (the division's remainder is < s), the c
    from the points' intervals."""
    a = torch.tensor([[float(x[i]) for x in xs] + [1.0] for i in range(len(vec))],
                     dtype=torch.float64)
    y = torch.tensor([[s * d + (s - 1) / 2.0] for d in vec], dtype=torch.float64)
    try:
        sol = torch.linalg.lstsq(a, y).solution.flatten().tolist()
    except Exception:
        return None
    ks = [int(round(v)) for v in sol[:-1]]
    if any(abs(k) > 64 for k in ks) or not any(ks):
        return None
    lo, hi = -BIG, BIG
    for i, d in enumerate(vec):
        t = sum(k * x[i] for k, x in zip(ks, xs))
        lo, hi = max(lo, s * d - t), min(hi, s * d + s - 1 - t)
    if lo > hi:
        return None
    c = lo if lo <= 0 <= hi else (lo if abs(lo) < abs(hi) else hi)
    if not all(sum(k * x[i] for k, x in zip(ks, xs)) + c >= 0 for i in range(len(vec))):
        return None
    return ks, c


def express(vec, names, cols):
    """An expression over the sizes `names` (values per point in cols[name])
    that gives `vec` at every point, or None. Forms, simplest first: a
    literal, a size, (a*x + b*y + c)/s (convolutions and pooling with their
    kernel size a size too, transposed convolutions), (x + c)/y (pooling
    whose stride is its kernel size), and products (flattening)."""
    if all(v == vec[0] for v in vec):
        return str(vec[0])
    for x in names:
        if cols[x] == vec:
            return x
    if len(vec) < 4:
        return None
    for width in (1, 2):
        for s in range(1, 17):
            for i, x in enumerate(names):
                for y in (names[i + 1:] if width == 2 else [None]):
                    vs = [x] + ([y] if y else [])
                    got = fit_floor(vec, [cols[v] for v in vs], s)
                    if got:
                        e = render_linear(list(zip(got[0], vs)), got[1])
                        return e if s == 1 else "(%s)/%d" % (e, s)
    for x in names:
        for y in names:
            if x == y:
                continue
            for c in range(-16, 17):
                if all(yv > 0 and xv + c >= 0 and (xv + c) // yv == d
                       for xv, yv, d in zip(cols[x], cols[y], vec)):
                    return "%s/%s" % (x, y) if c == 0 else "(%s)/%s" % (render_linear([(1, x)], c), y)
    for i, x in enumerate(names):
        for y in names[i:]:
            pv = [p * q for p, q in zip(cols[x], cols[y])]
            if all(d % p == 0 for d, p in zip(vec, pv)) and \
                    len(set(d // p for d, p in zip(vec, pv))) == 1:
                k = vec[0] // pv[0]
                return "%s*%s" % (x, y) if k == 1 else "%d*%s*%s" % (k, x, y)
    return None


def flops_expr(points, names, cols, kb):
    """The matrix products' and convolutions' flops at every point as one
    expression; terms no expression fits are left out (a lower bound), and
    the smallest too when the sum is longer than workload.json allows."""
    if not all(len(p.terms) == len(points[0].terms) for p in points):
        return "0", "the ops differ between sizes"
    terms = {}
    for i, (coef, _) in enumerate(points[0].terms):
        factors = []
        for d in range(len(points[0].terms[i][1])):
            vec = [p.terms[i][1][d] if d < len(p.terms[i][1]) else None for p in points]
            e = None if None in vec else express(vec, names, cols)
            if e is None:
                factors = None
                break
            factors.append(e)
        if factors is None:
            continue
        lit = prod(int(f) for f in factors if f.isdigit()) * coef
        syms = sorted("(%s)" % f if not f.isidentifier() else f
                      for f in factors if not f.isdigit())
        k = "*".join(syms)
        terms[k] = terms.get(k, 0) + lit
    if not terms:
        return "0", "no matrix product or convolution"

    def value(k, lit):
        return lit * eval_expr(k, kb) if k else lit
    order = sorted(terms, key=lambda k: -value(k, terms[k]))
    while order:
        e = " + ".join(("%d*%s" % (terms[k], k) if terms[k] != 1 else k) if k else str(terms[k])
                       for k in order)
        if len(e) <= 250:
            return e, ""
        order.pop()
    return "0", "too long"


def eval_expr(e, sizes):
    """Evaluates an expression this file wrote (integers, sizes, + - * /)."""
    return int(eval(e.replace("/", "//"), {"__builtins__": {}}, dict(sizes)))


# ---- the cases ----

def weak(y, atol, rtol):
    """Whether zero, or one constant, passes the tolerance (a 0-d output is
    one number: only zero can pass it)."""
    if not y.is_floating_point() or y.numel() == 0:
        return False
    y = y.double().flatten()
    if bool((y.abs() <= atol + rtol * y.abs()).all()):
        return True
    if y.numel() == 1:
        return False
    c = (y.max() + y.min()) / 2
    return bool(((c - y).abs() <= atol + rtol * y.abs()).all())


def reference_output(pins):
    try:
        return Point(pins, False, track=True).y
    except Exception:
        return None


def correctness_case(budget, odd):
    """Distinct sizes within about `budget` bytes, grown while the output
    is so small or flat that zero or a constant passes."""
    ran = False
    for grow in range(4):
        pins, _ = fit(budget << (2 * grow))
        if pins is None:
            return None
        pins = distinct(pins, odd) or (pins if observe(pins, confirm=True) else None)
        if pins is None or observe(pins).out is None:
            continue  # or too big to run where meta cannot
        if not observe(pins).out[0].startswith("float"):
            return pins
        y = reference_output(pins)
        ran = ran or y is not None
        if y is not None and not weak(y, plan["tolerance"] * 1e-3, plan["tolerance"]):
            return pins
    if not ran:
        return None
    raise Refusal("the output is zero or constant at every size kiln tried (up to %d bytes): "
                  "any constant kernel would pass" % (budget << 6))


def fit_points(base, names):
    """Valid points with every size of `names` drawn at random around
    `base`, for the expressions: here the sizes vary independently. Only
    valid draws are kept, so a constraint of the problem holds at all."""
    pts = []
    for _ in range(FIT_POINTS * 4):
        if len(pts) >= FIT_POINTS:
            break
        p = with_ties(dict(base, **{c: max(1, int(base[c] * math.exp(RNG.uniform(-0.7, 1.1))))
                                    for c in names}))
        if observe(p, confirm=True):
            pts.append(p)
    return pts


def divisibility(points, names):
    """`b % a == 0` (a a size) and `b % m == 0` (m a literal up to 16,
    grouped convolutions' channels) wherever it held at every point and
    does not by chance: the problem's own constraint, found because only
    valid points were kept."""
    out = []
    for b in names:
        vals = set(p.pins[b] for p in points)
        for m in (16, 8, 4, 3, 2):
            if len(vals) >= 3 and all(v % m == 0 for v in vals):
                out.append("%s %% %d == 0" % (b, m))
                break
        for a in names:
            if a != b and all(p.pins[b] % p.pins[a] == 0 for p in points) and \
                    any(p.pins[a] > 1 and p.pins[b] != p.pins[a] for p in points):
                out.append("%s %% %s == 0" % (b, a))
    return out[:16]


def draw_like_kiln(ranges, where, shapes, names):
    """A point drawn as kiln draws held-out cases: log-uniform in the
    ranges, the constraints met, every dimension >= 1."""
    for _ in range(4000):
        s = {}
        for n in names:
            lo, hi = ranges[n]
            s[n] = min(hi, max(lo, int(math.exp(RNG.uniform(math.log(lo), math.log(hi + 1))))))
        if not all(eval(w, {"__builtins__": {}}, dict(s)) for w in where):
            continue
        dims = [[eval_expr(e, s) for e in t] for t in shapes]
        if all(d >= 1 for t in dims for d in t):
            return s, dims
    return None, None


def held_out(points, names, cols, shapes, cases):
    """Ranges and constraints a kiln draw can use (checked by drawing as
    kiln does and running the problem there), or None where a drawn case
    could break the problem."""
    if any(e is None for t in shapes for e in t) or not names:
        return None
    where = divisibility(points, names)
    ranges = {n: [max(1, min(cols[n])), max(c["values"][n] for c in cases)] for n in names}
    for _ in range(HELD_SAMPLES):
        s, dims = draw_like_kiln(ranges, where, shapes, names)
        if s is None:
            return None
        got = observe(with_ties(dict(s)), confirm=True)
        if got is None or (got.out is not None and got.dims() != dims):
            return None
    return {"ranges": ranges, "where": where}


def performance_case(name, budget, factor):
    """The problem's own sizes, or all of them scaled by one factor to fit
    the budget's bytes and (its float64 reference, `factor` times its
    tensors' bytes) the host's memory. The note says which bound held."""
    cap, bound = budget["bytes"], "budget"
    if budget.get("host_memory") and budget["host_memory"] // factor < cap:
        cap, bound = budget["host_memory"] // factor, "host"
    pins, f = fit(cap)
    if pins is None or observe(pins).bytes > cap:
        FLOOR[0] = 1  # a problem whose only size is its batch: down to 1
        pins, f = fit(cap)
        FLOOR[0] = MIN_SIZE
    if pins is None or observe(pins).bytes > cap:
        raise Refusal("no scaling of the sizes fits the %s case into %d bytes" % (name, cap))
    sizes = [[c, CONSTS[c], pins[c]] for c in leaders() if pins[c] != CONSTS[c]]
    note = {"factor": round(f, 4), "bytes": cap, "bound": bound, "sizes": sizes} if sizes else None
    return pins, note


def shape_exprs(allp, names, cols):
    first = allp[0]
    shapes = []
    for t in range(len(first.dims())):
        nd = len(first.dims()[t])
        if any(len(p.dims()[t]) != nd for p in allp):
            raise Refusal("tensor %d changes its number of dimensions with the sizes" % t)
        shapes.append([express([p.dims()[t][d] for p in allp], names, cols) for d in range(nd)])
    return shapes


def case_dims(pins, shapes):
    got = observe(pins)
    if got is not None and got.out is not None:
        return got.dims()
    if any(e is None for t in shapes for e in t):
        raise Refusal("the model does not run on the meta device and this case is too big to "
                      "run for real: its shapes are unknown")
    return [[eval_expr(e, pins) for e in t] for t in shapes]


def tolerance(specs):
    """KernelBench's tolerance; atol lowered to that fraction of the
    output's RMS where the output is below 1, so zero never passes."""
    tol = plan["tolerance"]
    ys = [reference_output(p) for _, k, _, p in specs if k == "correctness"]
    rms = [float(y.double().pow(2).mean().sqrt()) for y in ys
           if y is not None and y.is_floating_point()]
    return float("%.1g" % (tol * min([1.0] + [max(r, 1e-6) for r in rms]))), tol


def main():
    global MODE
    discover_consts()
    try:
        Point({}, True)
    except Refusal:
        raise
    except Exception:
        MODE = "real"  # shapes from small real runs only
    budgets = plan["budgets"]
    if MODE == "meta":
        find_ties({})  # at the problem's own sizes: meta runs cost nothing
    else:
        base, _ = fit(budgets["odd"])
        if base is None:
            raise Refusal("the problem does not run at its own sizes nor scaled down: %s" %
                          why_fails({}))
        find_ties(base)
    specs = [("small", "correctness", None, correctness_case(budgets["small"], 0)),
             ("odd", "correctness", None, correctness_case(budgets["odd"], 1)),
             ("held", "held", None, correctness_case(budgets["held"], -1))]
    for name, _, _, pins in specs:
        if pins is None:
            raise Refusal("no %s case runs: %s" % (name, why_fails({})))
    tracked = [observe(p, track=True) for _, _, _, p in specs]
    factor = int(math.ceil(1.25 * max(p.need / max(1, p.bytes) for p in tracked)))
    scaled_by = {}
    for name, backend in (("cpu", "cpu"), ("kb", "cuda")):
        if plan[backend]:
            pins, scaled_by[name] = performance_case(name, plan[backend], factor)
            specs.append((name, "performance", backend, pins))
    if len(specs) == 3:
        raise Refusal("no backend asked for")
    names = [c for c in leaders() if len(set(p[c] for _, _, _, p in specs)) > 1]
    extra = [observe(p, track=True) for p in fit_points(specs[1][3], names)]
    allp = [p for p in [observe(p, track=True) for _, _, _, p in specs] + extra
            if p is not None and p.out is not None]
    cols = {n: [p.pins[n] for p in allp] for n in names}
    shapes = shape_exprs(allp, names, cols)
    cases = [{"name": n, "kind": k, "backend": b, "values": {c: p[c] for c in names},
              "dims": case_dims(p, shapes)} for n, k, b, p in specs]
    kb = dict(specs[-1][3])
    flops, why = flops_expr(allp, names, cols, {n: kb[n] for n in names})
    factor = int(math.ceil(1.25 * max(p.need / max(1, p.bytes) for p in allp)))
    atol, rtol = tolerance(specs)
    first = allp[0]
    finish({"mode": MODE,
            "inputs": [{"dtype": d, "scalar": s} for (d, _), s in zip(first.inputs, first.scalar)],
            "params": [{"name": n, "dtype": d} for n, d, _ in first.params],
            "out": {"dtype": first.out[0]},
            "sizes": names,
            "pins": {c: TIES.get(c, c) for c in LITERAL if TIES.get(c, c) in names},
            "shapes": shapes, "cases": cases,
            "held_out": held_out(allp, names, cols, shapes, cases),
            "flops": flops, "flops_note": why, "memory_factor": factor,
            "atol": atol, "rtol": rtol, "scaled": scaled_by})


try:
    main() if not __import__("os").environ.get("KBP_DEBUG") else None
except Refusal as e:
    finish({"error": str(e)})
except Exception as e:
    finish({"error": "%s: %s" % (type(e).__name__, (str(e).splitlines() or [""])[0][:200])})
