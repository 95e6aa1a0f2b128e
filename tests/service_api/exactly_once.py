"""kill -9 of kiln serve while it judges, several times, then a restart:
every accepted submission finishes exactly once (one committed verdict, one
verdict event, one record), none is lost, and an interrupted one ran again."""
import json
import os
import random
import sqlite3
import time

from servelib import Server, check, fail, run, submission

N = 5


def running(db):
    with sqlite3.connect(db, timeout=10) as c:
        return c.execute("SELECT COUNT(*) FROM jobs WHERE state='running'").fetchone()[0]


def main(work, servers):
    s = Server(work).start()
    servers.append(s)
    tok = s.token("alice", "--burst", "100", "--quota", "100")
    ids = []
    for i in range(N):
        # Distinct sources: nothing could be shared between the jobs.
        st, doc = s.request("POST", "/v1/submissions",
                            submission(source=submission()["source"] + "\n/* %d */\n" % i),
                            token=tok)
        if st != 202:
            fail("submission %d: %d %s" % (i, st, doc))
        ids.append(doc["id"])
    rnd = random.Random(1234)
    kills_mid_job = 0
    for round_ in range(3):
        # Wait (bounded) until a job is being judged, then a random moment more.
        deadline = time.time() + 60
        while running(s.db) == 0 and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(rnd.uniform(0.0, 2.5))
        kills_mid_job += running(s.db) > 0
        s.kill9()
        print("round %d: killed the server" % round_, flush=True)
        s.start()
    s.wait_done(tok, ids, 300)
    s.stop()
    with sqlite3.connect(s.db) as c:
        rows = c.execute("SELECT id, state, verdicts, attempts, status FROM jobs ORDER BY seq").fetchall()
        events = dict(c.execute("SELECT job, COUNT(*) FROM events WHERE stage='verdict' GROUP BY job"))
    check([r[0] for r in rows] == ids, "every accepted submission is in the queue, none lost")
    check(all(r[1] == "done" for r in rows), "every submission finished")
    check(all(r[2] == 1 for r in rows), "each verdict was committed exactly once: %s" %
          [(r[0], r[2]) for r in rows])
    check(all(events.get(i) == 1 for i in ids), "one verdict event per submission")
    with sqlite3.connect(s.db) as c:
        detail = c.execute("SELECT status, stage, detail FROM jobs WHERE status != 'pass'").fetchall()
    check(all(r[4] == "pass" for r in rows), "each finished with its own verdict (pass) %s" % detail)
    check(kills_mid_job >= 1 and max(r[3] for r in rows) >= 2,
          "a kill landed mid-job and that job ran again (attempts %s)" % [r[3] for r in rows])
    recs = sorted(os.listdir(os.path.join(work, "records")))
    attempts = {r[0]: r[3] for r in rows}
    check(all(json.load(open(os.path.join(work, "records", i, "verdict.json")))["attempt"]
              == attempts[i] for i in ids), "each record is the committed run's (same attempt)")
    ahead = [json.load(open(os.path.join(work, "records", i, "verdict.json")))["compiled_ahead"]
             for i in ids]
    # Whether the pool gets ahead depends on timing (each kill -9 restarts it,
    # and a quiet worker may claim a job first): reported, not asserted. The
    # run failed this on 1 of 3 full runs; exactly-once does not depend on it.
    # service_compile_ahead asserts compile-ahead from the recorded timelines.
    print("note: compiled ahead of the worker: %s" % ahead)
    check(sorted(ids) == [r for r in recs if not r.startswith(".tmp-")],
          "one record per submission")


run(main)
