"""kiln serve against its own tenants, on the cpu backend: two tenants (one
with 1 submission, one with 6) see only their own submissions, events and
lists (404 for the other's, the same answer as for none); the public routes
(/, /v1/queue, /v1/leaderboards, /metrics) carry no submission id and no
source or diagnostic; admins see everything; DELETE cancels a queued
submission (the quota frees) and is 404 to another tenant; GET
/v1/submissions pages newest first by cursor; /metrics parses as the
Prometheus text format; tokens are listed, revoked and expire (kiln token
list|revoke, --expires); the database and every record are 0600 in 0700
directories."""
import json
import os
import re
import sqlite3
import stat
import subprocess

from servelib import KILN, Server, check, fail, run, submission, KERNEL_C

# A compile error quotes the source: the diagnostic must reach its tenant only.
SECRET = "bobs_secret_identifier_7f3a"
BROKEN_C = KERNEL_C + "\nint %s = this_does_not_compile;\n" % SECRET


def err_code(doc):
    return doc["error"]["code"] if isinstance(doc, dict) and "error" in doc else None


def prom_parse(text):
    """Prometheus text format 0.0.4: # HELP / # TYPE lines and samples."""
    samples, types = {}, {}
    for line in text.splitlines():
        if not line:
            continue
        m = re.fullmatch(r"# (HELP|TYPE) ([a-zA-Z_:][a-zA-Z0-9_:]*) (.+)", line)
        if m:
            if m.group(1) == "TYPE":
                check(m.group(3) in ("counter", "gauge", "histogram", "summary", "untyped"),
                      "metric type of %s" % m.group(2))
                types[m.group(2)] = m.group(3)
            continue
        m = re.fullmatch(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[a-zA-Z_]+="[^"]*"(,[a-zA-Z_]+="[^"]*")*\})?'
                         r' (-?[0-9.eE+-]+|\+Inf|NaN)', line)
        if not m:
            fail("not a Prometheus sample line: %r" % line)
        samples[m.group(1) + (m.group(2) or "")] = float(m.group(4))
    return samples, types


def token_cli(db, *args):
    return subprocess.run([KILN, "token"] + list(args) + ["--db", db], capture_output=True,
                          text=True, timeout=30)


def main(work, servers):
    # --compile-workers 0 and the worker held back: submissions stay queued
    # until the test lets them run (no wall-clock race in the checks below).
    s = Server(work, extra=["--compile-workers", "0"]).start()
    servers.append(s)
    alice = s.token("alice")
    bob = s.token("bob", "--burst", "100", "--quota", "100")
    admin = s.token("root", "--scope", "admin")

    st, doc = s.request("POST", "/v1/submissions", submission(), token=alice)
    check(st == 202, "alice submits once")
    a_id = doc["id"]
    b_ids = []
    for i in range(6):
        src = BROKEN_C if i == 0 else KERNEL_C + "\n/* %d */\n" % i
        st, doc = s.request("POST", "/v1/submissions", submission(source=src), token=bob)
        if st != 202:
            fail("bob's submission %d: %d %s" % (i, st, doc))
        b_ids.append(doc["id"])

    # Public routes name tenants by handles, never by token names (no
    # --public-names): the queue, the page, the per-tenant queue depth.
    st, q = s.request("GET", "/v1/queue")
    st2, _, page = s.request("GET", "/", raw=True)
    st3, _, met = s.request("GET", "/metrics", raw=True)
    users = {j["user"] for j in q["jobs"]}
    texts = (json.dumps(q), page.decode(), met.decode())
    check(users and all(re.fullmatch(r"tenant-[0-9a-f]{10}", u) for u in users)
          and not any(n in t for n in ("alice", "bob") for t in texts)
          and "kiln_tenant_queue_depth{tenant=\"tenant-" in texts[2],
          "the public routes show tenants' handles, not their token names: %s" % sorted(users))

    # Cancel: a queued one (bob's last), by its owner; others get 404.
    st, doc = s.request("DELETE", "/v1/submissions/" + b_ids[-1], token=alice)
    check(st == 404, "alice cannot cancel bob's submission (404, not 403)")
    st, doc = s.request("DELETE", "/v1/submissions/" + b_ids[-1], token=bob)
    check(st == 200 and doc["status"] == "cancelled", "bob cancels his own queued submission")
    st, doc = s.request("DELETE", "/v1/submissions/" + b_ids[-1], token=bob)
    check(st == 409 and err_code(doc) == "already_finished", "cancelling it again: 409")

    s.wait_done(admin, [a_id] + b_ids, 300)

    # Each tenant reads its own, and nothing of the other's.
    st, doc = s.request("GET", "/v1/submissions/" + a_id, token=alice)
    check(st == 200 and doc["id"] == a_id, "alice reads her submission")
    for sid in b_ids:
        st, doc = s.request("GET", "/v1/submissions/" + sid, token=alice)
        if st != 404 or SECRET in json.dumps(doc):
            fail("alice read bob's %s: %d %s" % (sid, st, doc))
        st, doc = s.request("GET", "/v1/submissions/%s/events" % sid, token=alice)
        if st != 404:
            fail("alice read bob's events of %s: %d" % (sid, st))
    st, unknown = s.request("GET", "/v1/submissions/0123456789abcdef", token=alice)
    st2, other = s.request("GET", "/v1/submissions/" + b_ids[0], token=alice)
    check(st == st2 == 404 and unknown["error"]["message"].replace("0123456789abcdef", "X")
          == other["error"]["message"].replace(b_ids[0], "X"),
          "another tenant's submission and no submission get the same 404")
    st, doc = s.request("GET", "/v1/submissions/" + a_id, token=bob)
    check(st == 404, "bob cannot read alice's submission")
    st, doc = s.request("GET", "/v1/submissions/" + b_ids[0], token=bob)
    check(st == 200 and doc["verdict"]["status"] == "compile_error"
          and SECRET in doc["verdict"]["detail"], "bob reads his own compile error (it quotes his source)")
    st, doc = s.request("GET", "/v1/submissions/" + b_ids[0], token=admin)
    check(st == 200, "an admin reads any submission")

    # Lists: own only, newest first, by cursor.
    st, doc = s.request("GET", "/v1/submissions?limit=4", token=bob)
    page1 = [x["id"] for x in doc["submissions"]]
    check(st == 200 and page1 == b_ids[::-1][:4] and doc["next_cursor"],
          "bob's list: newest first, 4 of 6, with a cursor")
    check(doc["next_cursor"] in b_ids and not re.search(r"^\d+$", doc["next_cursor"]),
          "the cursor is one of bob's own ids: it counts nobody's submissions")
    st, doc = s.request("GET", "/v1/submissions?limit=4&cursor=" + doc["next_cursor"], token=bob)
    check(st == 200 and [x["id"] for x in doc["submissions"]] == b_ids[::-1][4:]
          and doc["next_cursor"] is None, "the next page holds the rest and ends")
    st, doc = s.request("GET", "/v1/submissions", token=alice)
    check([x["id"] for x in doc["submissions"]] == [a_id], "alice's list is hers alone")
    st, doc = s.request("GET", "/v1/submissions?all=true", token=alice)
    check(st == 403, "all=true needs an admin")
    st, doc = s.request("GET", "/v1/submissions?all=true&limit=500", token=admin)
    check(st == 200 and len(doc["submissions"]) == 7, "an admin lists everyone's")
    st, doc = s.request("GET", "/v1/submissions?limit=0", token=alice)
    check(st == 400, "a bad limit: 400")

    # Public surfaces: no ids, no sources, no diagnostics.
    public = []
    for path in ("/", "/v1/queue", "/v1/leaderboards/saxpy", "/metrics", "/healthz"):
        st, r, data = s.request("GET", path, raw=True)
        check(st == 200, "GET %s is public" % path)
        public.append(data.decode())
    leaked = [i for i in [a_id] + b_ids if any(i in p for p in public)]
    check(not leaked and not any(SECRET in p for p in public),
          "no submission id, source or diagnostic on a public route (%s)" % leaked)

    # /metrics: Prometheus text, consistent with what happened.
    samples, types = prom_parse(public[3])
    check(types.get("kiln_judge_seconds") == "histogram"
          and types.get("kiln_verdicts_total") == "counter"
          and samples.get('kiln_verdicts_total{status="cancelled"}') == 1
          and samples.get('kiln_verdicts_total{status="compile_error"}') == 1
          and samples.get('kiln_judge_seconds_count') == 6
          and samples.get('kiln_judge_seconds_bucket{le="+Inf"}') == 6
          and samples.get('kiln_queue_depth{backend="cpu"}') == 0
          and samples.get("kiln_workers") == 1, "/metrics parses and counts: %s" % samples)

    # Tokens: list, revoke, expiry.
    p = token_cli(s.db, "list", "--json")
    toks = {t["name"]: t for t in json.loads(p.stdout)["tokens"]}
    check(p.returncode == 0 and toks["root"]["scope"] == "admin" and toks["bob"]["scope"] == "submit"
          and toks["bob"]["submissions"] == 6 and "hash" not in toks["bob"]
          and toks["bob"]["handle"] in users
          and not any(t["id"] in alice + bob for n, t in toks.items() if n not in ("alice", "bob")),
          "kiln token list --json: names, scopes, counts, no secrets")
    p = token_cli(s.db, "revoke", "alice")
    check(p.returncode == 0, "kiln token revoke alice")
    st, doc = s.request("GET", "/v1/submissions", token=alice)
    check(st == 401 and "revoked" in doc["error"]["message"], "a revoked token: 401 naming why")
    p = token_cli(s.db, "revoke", "alice")
    check(p.returncode == 2 and "no active token" in p.stderr, "revoking it twice: exit 2")
    p = token_cli(s.db, "add", "carol", "--expires", "30d")
    carol = p.stdout.strip()
    st, doc = s.request("GET", "/v1/submissions", token=carol)
    check(p.returncode == 0 and st == 200, "a token with --expires 30d works now")
    with sqlite3.connect(s.db, timeout=10) as c:
        c.execute("UPDATE tokens SET expires=1 WHERE name='carol'")
    st, doc = s.request("GET", "/v1/submissions", token=carol)
    check(st == 401 and "expired" in doc["error"]["message"], "an expired token: 401 naming why")
    p = token_cli(s.db, "list")
    check(re.search(r"^alice .* revoked ", p.stdout, re.M) and re.search(r"^carol .* expired ",
                                                                          p.stdout, re.M),
          "kiln token list shows revoked and expired:\n" + p.stdout)
    for bad in ("0d", "tomorrow", "2001-01-01"):
        p = token_cli(s.db, "add", "dave", "--expires", bad)
        if p.returncode != 2 or "--expires" not in p.stderr:
            fail("--expires %s: %d %s" % (bad, p.returncode, p.stderr))
    check(True, "bad --expires values are usage errors")

    # Files: the database and the records are the server's alone.
    mode = lambda p: stat.S_IMODE(os.stat(p).st_mode)
    rec = os.path.join(work, "records")
    check(mode(s.db) == 0o600 and all(mode(s.db + x) == 0o600 for x in ("-wal", "-shm")
                                      if os.path.exists(s.db + x)), "kiln.db (and -wal, -shm) 0600")
    check(mode(rec) == 0o700 and mode(work) == 0o711, "records/ 0700, the data directory 0711")
    bad = []
    for d in os.listdir(rec):
        if mode(os.path.join(rec, d)) != 0o700:
            bad.append(d)
        for f in os.listdir(os.path.join(rec, d)):
            if mode(os.path.join(rec, d, f)) != 0o600:
                bad.append(d + "/" + f)
    check(len(os.listdir(rec)) == 6 and not bad, "every record 0700, its files 0600 (%s)" % bad)


run(main)
