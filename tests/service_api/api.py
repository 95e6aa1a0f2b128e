"""The API contract of kiln serve on the cpu backend: each route, each error,
auth failures, rate limit and quota, oversized and malformed bodies,
idempotency keys, server-sent events, the leaderboard and the hacked flag."""
import base64
import http.client
import json
import time

from servelib import Server, check, fail, run, submission, KERNEL_C

WRONG_C = KERNEL_C.replace("a * x[i] + y[i]", "a * x[i] - y[i]")


def err_code(doc):
    return doc["error"]["code"] if isinstance(doc, dict) and "error" in doc else None


def main(work, servers):
    s = Server(work).start()
    servers.append(s)
    alice = s.token("alice")
    admin = s.token("root", "--admin")
    slow = s.token("slow", "--rate", "0.001", "--burst", "2")
    # --json: the token and the limits as applied; the token from it works (quota below).
    tdoc = json.loads(s.token("tight", "--quota", "1", "--json"))
    check((tdoc["version"], tdoc["name"], tdoc["admin"], tdoc["rate"], tdoc["burst"],
           tdoc["quota"], tdoc["db"]) == (1, "tight", False, 1.0, 20.0, 1, s.db),
          "kiln token add --json: %r" % tdoc)
    tight = tdoc["token"]

    st, doc = s.request("GET", "/healthz")
    check(st == 200 and doc["status"] == "ok" and doc["backends"] == "cpu", "GET /healthz")

    # auth
    st, doc = s.request("POST", "/v1/submissions", submission())
    check(st == 401 and err_code(doc) == "unauthorized", "no token: 401")
    st, doc = s.request("POST", "/v1/submissions", submission(), token="kiln_nonsense")
    check(st == 401 and "malformed" in doc["error"]["message"], "malformed token: 401")
    forged = alice[:-1] + ("0" if alice[-1] != "0" else "1")
    st, doc = s.request("POST", "/v1/submissions", submission(), token=forged)
    check(st == 401 and "not valid" in doc["error"]["message"], "token with a wrong secret: 401")
    st, doc = s.request("POST", "/v1/submissions", submission(),
                        headers={"Authorization": "Basic " + alice})
    check(st == 401, "non-Bearer Authorization: 401")
    st, doc = s.request("GET", "/v1/submissions/0123456789abcdef")
    check(st == 401, "GET submission without a token: 401")

    # malformed and oversized bodies
    st, doc = s.request("POST", "/v1/submissions", "{", token=alice,
                        headers={"Content-Type": "application/json"})
    check(st == 400 and err_code(doc) == "bad_request", "malformed JSON: 400")
    st, doc = s.request("POST", "/v1/submissions", [1, 2], token=alice)
    check(st == 400, "JSON array body: 400")
    st, doc = s.request("POST", "/v1/submissions", {"workload": "saxpy"}, token=alice)
    check(st == 400 and "source" in doc["error"]["message"], "missing source: 400")
    st, doc = s.request("POST", "/v1/submissions", dict(submission(), extra=1), token=alice)
    check(st == 400 and "unknown key" in doc["error"]["message"], "unknown key: 400")
    st, doc = s.request("POST", "/v1/submissions", dict(submission(), workload="../etc"),
                        token=alice)
    check(st == 400, "workload name with a path: 400")
    st, doc = s.request("POST", "/v1/submissions", "[" * 100 + "]" * 100, token=alice,
                        headers={"Content-Type": "application/json"})
    check(st == 400 and "nests" in doc["error"]["message"], "deeply nested body: 400")
    st, doc = s.request("POST", "/v1/submissions", json.dumps(submission()), token=alice,
                        headers={"Content-Type": "text/plain"})
    check(st == 415, "wrong Content-Type: 415")
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as t:
        info = tarfile.TarInfo("candidate.c")
        info.size = len(KERNEL_C)
        t.addfile(info, io.BytesIO(KERNEL_C.encode()))
    st, doc = s.request("POST", "/v1/submissions", buf.getvalue(), token=alice,
                        headers={"Content-Type": "application/json"})
    check(st == 415 and "application/x-tar" in doc["error"]["message"],
          "a tarball sent as application/json is told to send it as x-tar: %s" % doc)
    st, doc = s.request("POST", "/v1/submissions", submission(source="x" * (128 * 1024 + 1)),
                        token=alice)
    check(st == 413 and err_code(doc) == "too_large", "source over 128 KiB: 413")
    st, doc = s.request("POST", "/v1/submissions", "x" * (300 * 1024), token=alice,
                        headers={"Content-Type": "application/json"})
    check(st == 413, "body over 256 KiB (Content-Length): 413")
    # A chunked body has no Content-Length: the cap applies while reading.
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=30)
    c.putrequest("POST", "/v1/submissions")
    c.putheader("Authorization", "Bearer " + alice)
    c.putheader("Content-Type", "application/json")
    c.putheader("Transfer-Encoding", "chunked")
    c.endheaders()
    chunk = b"x" * 65536
    for _ in range(5):
        c.send(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    c.send(b"0\r\n\r\n")
    r = c.getresponse()
    check(r.status == 413, "chunked body over 256 KiB: 413")
    c.close()
    st, doc = s.request("POST", "/v1/submissions", dict(submission(), workload="nosuch"),
                        token=alice)
    check(st == 422 and err_code(doc) == "unknown_workload", "unknown workload: 422")
    st, doc = s.request("POST", "/v1/submissions", submission(backend="cuda"), token=alice)
    check(st == 422 and err_code(doc) == "no_worker", "cuda submission to a cpu server: 422")
    st, doc = s.request("POST", "/v1/submissions", submission(), token=alice,
                        headers={"Idempotency-Key": "a b"})
    check(st == 400 and err_code(doc) == "bad_idempotency_key", "Idempotency-Key with a space: 400")

    # routes and methods
    st, doc = s.request("GET", "/v1/nothing")
    check(st == 404 and err_code(doc) == "not_found", "unknown route: 404 JSON")
    st, doc = s.request("DELETE", "/v1/queue")
    check(st == 405 and err_code(doc) == "method_not_allowed", "wrong method: 405")
    st, doc = s.request("GET", "/v1/submissions/0123456789abcdef", token=alice)
    check(st == 404, "unknown submission: 404")
    st, doc = s.request("GET", "/v1/submissions/..", token=alice)
    check(st == 404, "'..' as an id: 404")

    # a passing submission, with an idempotency key
    st, r, data = s.request("POST", "/v1/submissions", json.dumps(submission()), token=alice,
                            headers={"Idempotency-Key": "k1", "Content-Type": "application/json"},
                            raw=True)
    doc = json.loads(data)
    check(st == 202 and len(doc["id"]) == 16 and doc["replayed"] is False, "POST: 202 {id}")
    good = doc["id"]
    check(r.getheader("Location") == "/v1/submissions/" + good
          and doc["location"] == r.getheader("Location"), "202 carries Location")
    check(int(r.getheader("RateLimit-Limit")) == 20
          and 0 <= int(r.getheader("RateLimit-Remaining")) < 20
          and int(r.getheader("RateLimit-Reset")) >= 0, "202 carries RateLimit-* headers")
    check("script-src" not in r.getheader("Content-Security-Policy", "")
          and "default-src 'none'" in r.getheader("Content-Security-Policy", ""),
          "every response carries the CSP as a header")
    st, doc = s.request("POST", "/v1/submissions", submission(), token=alice,
                        headers={"Idempotency-Key": "k1"})
    check(st == 202 and doc["id"] == good and doc["replayed"] is True,
          "same Idempotency-Key and body: the same id")
    st, doc = s.request("POST", "/v1/submissions", submission(source=WRONG_C), token=alice,
                        headers={"Idempotency-Key": "k1"})
    check(st == 422 and err_code(doc) == "idempotency_key_reused",
          "same Idempotency-Key, another body: 422")
    st, doc = s.request("POST", "/v1/submissions", submission(source=WRONG_C), token=alice)
    check(st == 202, "a wrong candidate is accepted")
    wrong = doc["id"]
    st, doc = s.request("GET", "/v1/submissions/" + wrong, token=alice)
    check(st == 200 and doc["state"] in ("queued", "running", "done") and doc["user"] == "alice",
          "GET submission: its state")
    if doc["state"] == "queued":
        check(doc["position"] >= 0, "a queued submission has a queue position")
    st, doc = s.request("GET", "/v1/queue")
    check(st == 200 and doc["queued"] + doc["running"] >= 1, "GET /v1/queue lists pending jobs")

    # rate limit: burst 2, then 429 with Retry-After
    codes = []
    for _ in range(3):
        st, r, data = s.request("POST", "/v1/submissions", submission(), token=slow, raw=True)
        codes.append(st)
    check(codes[:2] == [202, 202] and codes[2] == 429 and int(r.getheader("Retry-After")) >= 1
          and json.loads(data)["error"]["code"] == "rate_limited",
          "token bucket: 429 with Retry-After after the burst")
    # quota: one pending submission at a time
    st1, _ = s.request("POST", "/v1/submissions", submission(), token=tight)
    st2, doc = s.request("POST", "/v1/submissions", submission(), token=tight)
    check(st1 == 202 and st2 == 429 and err_code(doc) == "quota_exceeded", "quota: 429")

    # events: a stream that ends after the verdict
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=180)
    c.request("GET", "/v1/submissions/%s/events" % good, headers={"Authorization": "Bearer " + alice})
    r = c.getresponse()
    check(r.status == 200 and r.getheader("Content-Type") == "text/event-stream", "SSE stream opens")
    text = r.read().decode()
    c.close()
    stages = [l[7:] for l in text.splitlines() if l.startswith("event: ")]
    check(stages[0] == "queued" and "claimed" in stages and "held_out" in stages
          and stages[-1] == "verdict", "SSE: stages queued .. held_out .. verdict: %s" % stages)
    last = [l[4:] for l in text.splitlines() if l.startswith("id: ")][-2]
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("GET", "/v1/submissions/%s/events" % good,
              headers={"Authorization": "Bearer " + alice, "Last-Event-ID": last})
    text2 = c.getresponse().read().decode()
    c.close()
    check([l for l in text2.splitlines() if l.startswith("event: ")] == ["event: verdict"],
          "SSE: Last-Event-ID resumes after that event")
    st, doc = s.request("GET", "/v1/submissions/%s/events" % "0123456789abcdef", token=alice)
    check(st == 404, "SSE of an unknown submission: 404")

    s.wait_done(alice, [good, wrong], 180)
    st, doc = s.request("GET", "/v1/submissions/" + good, token=alice)
    v = doc["verdict"]
    check(v["status"] == "pass" and v["verified"] is True and v["score_ms"] > 0
          and v["gpu_model"] == "cpu" and "secret_seed" not in v and "secret_seed" not in doc,
          "a pass is verified on a secret seed, which the API never shows")
    check(doc["visible_seed"].isdigit() and doc["leaderboard"] == "saxpy"
          and doc["timeline"]["run_started"] < doc["timeline"]["run_finished"],
          "GET submission: its visible seed, leaderboard and timeline")
    st, doc = s.request("GET", "/v1/submissions/" + wrong, token=alice)
    check(doc["verdict"]["status"] == "wrong_answer" and doc["verdict"]["verified"] is False,
          "a wrong candidate gets wrong_answer")
    # A cpu candidate runs inside the process that times it: judged, never ranked.
    # Claims take turns between tenants: the others' passes count too, once
    # the queue is empty (bounded).
    deadline = time.time() + 180
    while time.time() < deadline:
        st, q = s.request("GET", "/v1/queue")
        if q["queued"] + q["running"] == 0:
            break
        time.sleep(0.3)
    st, board = s.request("GET", "/v1/leaderboards/saxpy")
    passes = board["unranked"]["cpu"]["verified_passes"]
    check(st == 200 and board["gpus"] == {} and passes >= 1
          and "never ranked" in board["unranked"]["cpu"]["why"],
          "leaderboard: the verified cpu pass is counted, not ranked (%s)" % board)
    st, doc = s.request("GET", "/v1/leaderboards/nosuch")
    check(st == 404 and err_code(doc) == "not_found", "an unknown leaderboard: 404")

    # A newcomer's own verdict: /mine, opened with the token as the Basic
    # password (what a browser asks for), says why a cpu pass is not ranked;
    # / says the server ranks nothing and links to it.
    st, r, html = s.request("GET", "/mine", raw=True)
    check(st == 401 and r.getheader("WWW-Authenticate", "").startswith("Basic "),
          "/mine without a token: 401 asking a browser for Basic credentials")
    basic = "Basic " + base64.b64encode((":" + alice).encode()).decode()
    st, r, html = s.request("GET", "/mine", raw=True, headers={"Authorization": basic})
    html = html.decode()
    check(st == 200 and good in html and "judged, not ranked" in html and "cpu-only" in html
          and r.getheader("Content-Type").startswith("text/html"),
          "/mine with the token as the password: her verdicts, and why cpu is not ranked")
    st, r, html = s.request("GET", "/mine", raw=True, token=alice)
    check(st == 200 and good in html.decode(), "/mine takes the bearer token too")
    st, doc = s.request("GET", "/v1/submissions", headers={"Authorization": basic})
    check(st == 401, "Basic credentials open /mine only (a browser sends them by itself)")
    st, r, page = s.request("GET", "/", raw=True)
    page = page.decode()
    check('id="cpu-only"' in page and 'href="/mine"' in page and good not in page,
          "/ says this cpu-only server ranks nothing and links to /mine")

    # the hacked flag
    st, doc = s.request("POST", "/v1/submissions/%s/hacked" % good, {"reason": "x"}, token=alice)
    check(st == 403 and err_code(doc) == "forbidden", "hacked by a non-admin: 403")
    st, doc = s.request("POST", "/v1/submissions/0123456789abcdef/hacked", {}, token=admin)
    check(st == 404, "hacked of an unknown submission: 404")
    st, doc = s.request("POST", "/v1/submissions/%s/hacked" % good, {"reason": 5}, token=admin)
    check(st == 400, "hacked with a malformed body: 400")
    st, doc = s.request("POST", "/v1/submissions/%s/hacked" % good,
                        {"reason": "reads the reference"}, token=admin)
    check(st == 200 and doc["hacked"] is True, "admin flags an entry")
    st, board = s.request("GET", "/v1/leaderboards/saxpy")
    check(board["gpus"] == {} and board["unranked"]["cpu"]["verified_passes"] < passes,
          "a flagged entry leaves the leaderboard's counts")
    st, doc = s.request("GET", "/v1/submissions/" + good, token=alice)
    check(doc["hacked"] is True and doc["hacked_reason"] == "reads the reference"
          and doc["verdict"]["status"] == "pass", "the flagged entry keeps its verdict (evidence)")
    import os
    rec = os.path.join(work, "records", good)
    check("restarting it" not in s.stderr(), "no worker or compile worker died")
    check(os.path.isfile(os.path.join(rec, "verdict.json"))
          and os.path.isfile(os.path.join(rec, "candidate.c")), "the record is kept: " + rec)


run(main)
