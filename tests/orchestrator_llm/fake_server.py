#!/usr/bin/env python3
"""A fake OpenAI-compatible chat-completions server for kiln's llm tests.

usage: fake_server.py PORT_FILE

Binds 127.0.0.1 on an ephemeral port, writes the port number to PORT_FILE
(atomically, via rename), and serves POST /v1/chat/completions until its
parent process dies or 900 seconds pass, whichever comes first.

The scenario is the request's "model" up to the first '#': tests append
'#tag' so that per-model request counters (for "fail, then succeed") never
collide. Every request is first checked for the shape kiln must send; a bad
request gets 422 with the reason, which makes the C test fail loudly.
"""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

KEY = "sk-kiln-test-0123456789abcdef"
GOOD = {
    "source": "// kiln: launch k grid(1) block(1) args(n)\n"
    'extern "C" __global__ void k(long long n) {}\n',
    "rationale": "a baseline",
    "language": "cuda",
}
HUGE = 10 * 1024 * 1024
# The saxpy_* scenarios answer `kiln optimize saxpy --backend cpu` (the
# pipeline tests): the workload's own kernel.c with another UNROLL default.
SAXPY_C = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "workloads",
                       "saxpy", "kernel.c")
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pipeline_cli",
                        "fixtures")
# saxpy_mix, by request number: a good candidate, malformed JSON, a missing
# field, a source that does not compile, 500 then (the retry) a good one,
# 401; good ones after that.
SAXPY_MIX = ["good:2", "malformed", "missing", "nocompile", "500", "good:8", "401"]
LIFETIME_S = 900  # a backstop only: it also stops when its parent dies; loaded CI machines are slow

# The wlgen_* scenarios answer `kiln optimize --description ... --backend cpu`
# (tests/pipeline_cli/generate.sh): a tiny axpy workload with a kernel.c, broken
# in one way per scenario. Candidate requests of the same model get the
# workload's kernel with another UNROLL.
WLGEN_KEYS = ["inputs_py", "kernel_c", "kernel_cu", "rationale", "reference_py", "workload_json"]
TINY_JSON = {
    "name": "tiny_axpy",
    "description": "out = 2.5 * x + y for float32 vectors of length n.",
    "sizes": ["n"],
    "signature": [
        {"name": "n", "kind": "scalar", "type": "int64", "expr": "n"},
        {"name": "a", "kind": "scalar", "type": "float32", "value": 2.5},
        {"name": "x", "kind": "tensor", "dtype": "float32", "shape": ["n"], "role": "in"},
        {"name": "y", "kind": "tensor", "dtype": "float32", "shape": ["n"], "role": "in"},
        {"name": "out", "kind": "tensor", "dtype": "float32", "shape": ["n"], "role": "out"},
    ],
    "cases": [
        {"name": "small", "kind": "correctness", "sizes": {"n": 3}},
        {"name": "odd", "kind": "correctness", "sizes": {"n": 1001}},
        {"name": "perf", "kind": "performance", "sizes": {"n": 262144}},
    ],
    "held_out": [{"name": "held", "sizes": {"n": 77}}],
    "tolerance": {"out": {"atol": 1e-5, "rtol": 1e-5}},
    "cost": {"bytes": "12*n", "flops": "2*n"},
    "backends": ["cpu"],
}
TINY_INPUTS = """import json, os, sys
import numpy as np
case = json.load(open(sys.argv[1]))
n = int(case["sizes"]["n"])
rng = np.random.default_rng(int(case["seed"]))
np.save(os.path.join(sys.argv[2], "x.npy"), rng.standard_normal(n).astype(np.DTYPE))
np.save(os.path.join(sys.argv[2], "y.npy"), rng.uniform(-4, 4, n).astype(np.float32))
"""
TINY_REFERENCE = """import json, os, sys
import numpy as np
x = np.load(os.path.join(sys.argv[2], "x.npy")).astype(np.float64)
y = np.load(os.path.join(sys.argv[2], "y.npy")).astype(np.float64)
np.save(os.path.join(sys.argv[3], "out.npy"), (2.5 * x + y).astype(np.float32))
"""
TINY_KERNEL = """// kiln: tunable UNROLL {1, 2, 4} = 1
// kiln: launch axpy args(n, a, x, y, out)
void axpy(long long n, float a, const float *x, const float *y, float *out)
{
    long long i = 0;
    for (; i + UNROLL <= n; i += UNROLL)
        for (int j = 0; j < UNROLL; j++)
            out[i + j] = A * x[i + j] + y[i + j];
    for (; i < n; i++)
        out[i] = A * x[i] + y[i];
}
"""
# wlgen_fix, by request number: a workload.json without held_out, then a
# starting kernel that computes the wrong thing, then a good answer. Each
# retry must carry the problem kiln found in the previous one.
WLGEN_FIX = ["nohelds", "badkernel", "good"]
WLGEN_FIX_FEEDBACK = {2: 'missing required key \\"held_out\\"', 3: "starting kernel (kernel.c) fails"}

counts = {}
lock = threading.Lock()


def envelope(content, finish="stop", usage=(120, 45), refusal=None):
    msg = {"role": "assistant", "content": content}
    if refusal is not None:
        msg["refusal"] = refusal
    d = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
    }
    if usage:
        d["usage"] = {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
        }
    return d


def check_request(req, raw):
    """Returns why the request is not what kiln should send, or None."""
    if KEY.encode() in raw:
        return "the API key appears in the request body"
    if not isinstance(req, dict) or not isinstance(req.get("model"), str):
        return "no model"
    msgs = req.get("messages")
    if not isinstance(msgs, list) or not msgs:
        return "no messages"
    for m in msgs:
        if m.get("role") not in ("system", "user") or not isinstance(m.get("content"), str):
            return "bad message " + json.dumps(m)[:80]
    if msgs[-1]["role"] != "user":
        return "last message is not the user's"
    fmt = req.get("response_format")
    if not isinstance(fmt, dict):
        return "no response_format"
    if fmt.get("type") == "json_schema":
        js = fmt.get("json_schema", {})
        schema = js.get("schema", {})
        if js.get("strict") is not True:
            return "json_schema is not strict"
        if js.get("name") == "kiln_workload":
            if sorted(schema.get("required", [])) != WLGEN_KEYS:
                return "the workload schema does not require " + ", ".join(WLGEN_KEYS)
            if schema.get("additionalProperties") is not False:
                return "the workload schema allows additional properties"
            return None
        if sorted(schema.get("required", [])) != ["language", "rationale", "source"]:
            return "schema does not require source, rationale, language"
        if schema.get("additionalProperties") is not False:
            return "schema allows additional properties"
        if schema["properties"]["language"].get("enum") != ["cuda", "c"]:
            return "schema language enum is wrong"
    elif fmt.get("type") != "json_object":
        return "unknown response_format " + str(fmt.get("type"))
    return None


def wlgen_answer(kind):
    """The content of one wlgen_* generation answer."""
    wl = json.loads(json.dumps(TINY_JSON))
    files = {"inputs_py": TINY_INPUTS.replace("DTYPE", "float32"), "reference_py": TINY_REFERENCE,
             "kernel_c": TINY_KERNEL.replace("A *", "a *"), "kernel_cu": None,
             "rationale": "float64 reference of a * x + y"}
    if kind == "nohelds":
        del wl["held_out"]
    elif kind == "badkernel":
        files["kernel_c"] = TINY_KERNEL.replace("A *", "3 * a *")
    elif kind == "dtype":
        files["inputs_py"] = TINY_INPUTS.replace("DTYPE", "float64")
    elif kind == "never":
        del files["reference_py"]
    files["workload_json"] = json.dumps(wl, indent=2) + "\n"
    return json.dumps(files)


def wlgen_candidate(unroll):
    src = TINY_KERNEL.replace("A *", "a *").replace("= 1\n", "= %d\n" % unroll, 1)
    return json.dumps({"source": src, "rationale": "UNROLL=%d" % unroll, "language": "c"})


def saxpy_source(unroll):
    with open(SAXPY_C) as f:
        src = f.read()
    return src.replace("tunable UNROLL {1, 2, 4, 8} = 4", "tunable UNROLL {1, 2, 4, 8} = %d" % unroll)


def saxpy_answer(kind):
    """(status, body) of one saxpy_* scenario step."""
    if kind.startswith("good"):
        unroll = int(kind.split(":")[1]) if ":" in kind else 2
        return 200, envelope(json.dumps({"source": saxpy_source(unroll),
                                         "rationale": "UNROLL=%d" % unroll, "language": "c"}))
    if kind.startswith("file:"):
        # A fixture of tests/pipeline_cli/fixtures as the candidate.
        name = os.path.basename(kind[len("file:"):])
        with open(os.path.join(FIXTURES, name)) as f:
            return 200, envelope(json.dumps({"source": f.read(), "rationale": name,
                                             "language": "c"}))
    if kind == "utf8":
        # 601 bytes of rationale: a byte limit of 500 cuts inside an "é".
        return 200, envelope(json.dumps({"source": saxpy_source(2),
                                         "rationale": "x" + "\u00e9" * 300, "language": "c"}))
    if kind == "malformed":
        return 200, envelope('{"source": "void f(void) {}", "rationale": ')
    if kind == "missing":
        return 200, envelope(json.dumps({"source": saxpy_source(2), "rationale": "no language"}))
    if kind == "nocompile":
        src = saxpy_source(2).replace("a * x[i] + y[i];\n}", "a * x[i] + y[i] + kiln_undeclared;\n}")
        return 200, envelope(json.dumps({"source": src, "rationale": "broken", "language": "c"}))
    if kind == "500":
        return 500, {"error": {"message": "upstream exploded"}}
    if kind == "401":
        return 401, {"error": {"message": "Incorrect API key provided",
                               "type": "invalid_request_error"}}
    return 422, {"error": {"message": "fake server: bad saxpy step " + kind}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, headers=(), length=True):
        if isinstance(body, (dict, list)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for k, v in headers:
            self.send_header(k, v)
        if length:
            self.send_header("Content-Length", str(len(body)))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        if n > 8 * 1024 * 1024:
            return self.reply(413, {"error": {"message": "request too large"}})
        raw = self.rfile.read(n)
        if self.path != "/v1/chat/completions":
            return self.reply(404, {"error": {"message": "no route for " + self.path}})
        try:
            req = json.loads(raw)
        except ValueError:
            return self.reply(400, {"error": {"message": "request is not JSON"}})
        problem = check_request(req, raw)
        if problem:
            return self.reply(422, {"error": {"message": "fake server: " + problem}})
        model = req["model"]
        scen = model.split("#")[0]
        with lock:
            counts[model] = counts.get(model, 0) + 1
            nth = counts[model]
        auth = self.headers.get("Authorization")
        fmt = req["response_format"]["type"]
        good = json.dumps(GOOD)

        if scen.startswith("wlgen_"):
            kind = scen[len("wlgen_"):]
            if req["response_format"].get("json_schema", {}).get("name") != "kiln_workload":
                with lock:
                    counts[model + "/candidate"] = counts.get(model + "/candidate", 0) + 1
                    nc = counts[model + "/candidate"]
                return self.reply(200, envelope(wlgen_candidate(2 if nc % 2 else 4)))
            if kind == "fix":
                want = WLGEN_FIX_FEEDBACK.get(nth)
                if want and want not in raw.decode():
                    return self.reply(422, {"error": {"message": "fake server: attempt %d "
                                                      "does not carry '%s'" % (nth, want)}})
                kind = WLGEN_FIX[nth - 1] if nth <= len(WLGEN_FIX) else "good"
            if kind not in ("good", "dtype", "never", "nohelds", "badkernel"):
                return self.reply(422, {"error": {"message": "fake server: bad wlgen " + kind}})
            body = envelope(wlgen_answer(kind))
            body["echo"] = "you sent " + str(auth)
            return self.reply(200, body)
        if scen.startswith("saxpy_"):
            kind = scen[len("saxpy_"):]
            if kind == "mix":
                kind = SAXPY_MIX[nth - 1] if nth <= len(SAXPY_MIX) else "good:1"
            elif kind == "500then":
                kind = "500" if nth % 2 == 1 else "good:8"
            status, body = saxpy_answer(kind)
            if isinstance(body, dict) and status == 200:
                # The key as the server saw it: kiln must mask it in its records.
                body["echo"] = "you sent " + str(auth)
            return self.reply(status, body)
        if scen == "good":
            if auth != "Bearer " + KEY:
                return self.reply(401, {"error": {"message": "Incorrect API key provided",
                                                  "type": "invalid_request_error"}})
            return self.reply(200, envelope(good))
        if scen == "nokey":
            if auth is not None:
                return self.reply(422, {"error": {"message": "fake server: unexpected key"}})
            return self.reply(200, envelope(good))
        if scen == "nousage":
            return self.reply(200, envelope(good, usage=None))
        if scen == "fenced":
            return self.reply(200, envelope("```json\n" + json.dumps(GOOD, indent=2) + "\n```\n"))
        if scen == "malformed":
            return self.reply(200, envelope('{"source": "x", "rationale": '))
        if scen == "missing":
            return self.reply(200, envelope(json.dumps({"source": "x", "rationale": "r"})))
        if scen == "garbage":
            return self.reply(200, "<html>gateway says hi</html>")
        if scen == "huge":
            return self.reply(200, '{"pad":"' + "x" * HUGE + '"}')
        if scen == "hugestream":
            return self.reply(200, '{"pad":"' + "x" * HUGE + '"}', length=False)
        if scen == "ratelimit":
            if nth == 1:
                return self.reply(429, {"error": {"message": "Rate limit reached"}},
                                  headers=[("Retry-After", "1")])
            return self.reply(200, envelope(good))
        if scen == "flaky":  # 503, 502, then success
            if nth <= 2:
                return self.reply(503 if nth == 1 else 502, {"error": {"message": "busy"}})
            return self.reply(200, envelope(good))
        if scen == "error500":
            return self.reply(500, {"error": {"message": "upstream exploded"}})
        if scen == "hang":
            time.sleep(LIFETIME_S)
            return None
        if scen == "noschema":
            if fmt == "json_schema":
                return self.reply(400, {"error": {"message": "json_schema is not supported"}})
            return self.reply(200, envelope(good))
        if scen == "badreq":
            return self.reply(400, {"error": "model does not exist"})  # Ollama's shape
        if scen == "length":
            return self.reply(200, envelope('{"source": "// kiln: laun', finish="length",
                                            usage=(120, 4096)))
        if scen == "refusal":
            return self.reply(200, envelope(None, refusal="I can't help with that."))
        if scen == "echo":
            d = envelope(good)
            d["echo"] = "you sent " + str(auth) + " and again " + str(auth)
            return self.reply(200, d)
        if scen in ("echoesc", "leak401"):
            # The key JSON-escaped: not in the raw body, but in what it decodes to.
            esc = KEY.replace("-", "\\u002d")
            if scen == "leak401":
                return self.reply(401, '{"error":{"message":"bad key ' + esc + '"}}')
            content = '{\\"source\\":\\"k\\",\\"rationale\\":\\"' + esc + \
                '\\",\\"language\\":\\"c\\"}'
            return self.reply(200, '{"choices":[{"message":{"content":"' + content + '"}}]}')
        if scen == "echoesc2":
            # Escaped twice inside the content (decoded once by the envelope,
            # again by the candidate parser), and escaped in an extra field.
            esc = KEY.replace("-", "\\u002d")
            esc2 = KEY.replace("-", "\\\\u002d")
            content = '{\\"source\\":\\"k\\",\\"rationale\\":\\"' + esc2 + \
                '\\",\\"language\\":\\"c\\"}'
            return self.reply(200, '{"echo":"' + esc + '","choices":[{"message":{"content":"' +
                              content + '"}}]}')
        if scen == "redirect":
            return self.reply(302, "", headers=[("Location", "http://example.invalid/v1")])
        return self.reply(422, {"error": {"message": "fake server: unknown scenario " + scen}})


def main():
    if len(sys.argv) != 2:
        print("usage: fake_server.py PORT_FILE", file=sys.stderr)
        return 2
    parent = os.getppid()
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    tmp = sys.argv[1] + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, sys.argv[1])

    def watchdog():
        deadline = time.monotonic() + LIFETIME_S
        while time.monotonic() < deadline and os.getppid() == parent:
            time.sleep(0.2)
        os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    server.serve_forever(poll_interval=0.2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
