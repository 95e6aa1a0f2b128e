"""A worker that stops heartbeating (SIGSTOP) loses its lease: the server's
reaper queues the job again, the stale run's verdict is dropped when the
worker resumes, and the job is judged again: one committed verdict."""
import os
import signal
import sqlite3
import time

from servelib import Server, check, run, submission


def job(db):
    with sqlite3.connect(db, timeout=10) as c:
        return c.execute("SELECT state, attempts, verdicts FROM jobs").fetchone()


def main(work, servers):
    s = Server(work, extra=["--lease", "2", "--compile-workers", "0"]).start()
    servers.append(s)
    tok = s.token("alice")
    st, doc = s.request("POST", "/v1/submissions", submission(), token=tok)
    check(st == 202, "submitted")
    sid = doc["id"]
    deadline = time.time() + 60
    while time.time() < deadline and (job(s.db) or ("",))[0] != "running":
        time.sleep(0.05)
    worker = s.worker_pid()
    os.kill(worker, signal.SIGSTOP)
    try:
        deadline = time.time() + 30
        while time.time() < deadline and job(s.db)[0] != "queued":
            time.sleep(0.2)
        check(job(s.db)[0] == "queued" and "stale lease(s) reaped" in s.stderr(),
              "the stopped worker's lease was reaped and the job queued again")
    finally:
        os.kill(worker, signal.SIGCONT)
    s.wait_done(tok, [sid], 180)
    state, attempts, verdicts = job(s.db)
    check(verdicts == 1 and attempts >= 2, "one committed verdict after %d claims" % attempts)
    with sqlite3.connect(s.db) as c:
        n = c.execute("SELECT COUNT(*) FROM events WHERE stage='verdict'").fetchone()[0]
    check(n == 1, "one verdict event")
    check("lost the lease of " + sid in s.stderr(), "the stale run's verdict was dropped")


run(main)
