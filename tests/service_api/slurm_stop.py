"""kiln serve --executor slurm stopped while a submission runs as a Slurm
job, on the one-node Slurm this test starts itself (as service_slurm does):
(a) SIGTERM: the server stops cleanly, its worker scancels the job (none of
its jobs stays in squeue) and the submission is queued again; after a
restart it reaches exactly one verdict. (b) kill -9: the worker dies with
the server and cannot scancel; the restarted server cancels the job left
running on the cluster before judging again (the orphan is gone from squeue
at once, long before it would have ended), and the submission reaches
exactly one verdict and one leaderboard entry. Skips (77) where slurm-wlm is
not installed or the test is not root."""
import os
import sqlite3
import subprocess
import time

from servelib import Server, slurm_cluster, slurm_or_skip, check, fail, run, submission, KERNEL_C

slurm_or_skip()

# Sleeps 3 s per call: its harness job runs for about half a minute (every
# case, warm-up and timed iteration calls it; 1 s per call made a 10 s job,
# which ended on its own before the restart's check), so a job cut off and
# not cancelled is still in squeue well after the restart.
SLOW_C = "#include <time.h>\n" + KERNEL_C.replace(
    "{\n    long long i = 0;",
    "{\n    struct timespec ts = {3, 0};\n    nanosleep(&ts, 0);\n    long long i = 0;")


def jobs():
    """The cluster's pending and running jobs, {id: name}; only this test
    submits to it."""
    p = subprocess.run(["squeue", "-h", "-o", "%i %j"], capture_output=True, text=True,
                       timeout=30)
    if p.returncode != 0:
        fail("squeue: %s" % p.stderr)
    return dict(l.split(None, 1) for l in p.stdout.splitlines() if l.strip())


def wait_for(what, cond, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    fail("%s: not within %d s" % (what, timeout))


def one_verdict(s, sid, what):
    with sqlite3.connect(s.db) as c:
        state, verdicts, status = c.execute(
            "SELECT state, verdicts, status FROM jobs WHERE id=?", (sid,)).fetchone()
        events = c.execute("SELECT COUNT(*) FROM events WHERE job=? AND stage='verdict'",
                           (sid,)).fetchone()[0]
    check(state == "done" and verdicts == 1 and events == 1 and status == "pass",
          "%s: exactly one verdict (state %s, %d commit(s), %d verdict event(s), %s)"
          % (what, state, verdicts, events, status))
    recs = [d for d in os.listdir(os.path.join(s.work, "records")) if sid in d]
    check(recs == [sid], "%s: one record, the committed one: %s" % (what, recs))


def start_job(s, tok, src):
    """Submits src and waits until its harness run is a running Slurm job."""
    before = set(jobs())
    st, doc = s.request("POST", "/v1/submissions", submission(source=src), token=tok)
    if st != 202:
        fail("submission: %d %s" % (st, doc))
    sid = doc["id"]
    new = wait_for("the submission's harness run is submitted to Slurm",
                   lambda: [j for j in jobs() if j not in before], 240)
    time.sleep(2)  # well inside the job's run
    check(len(new) == 1 and new[0] in jobs(), "submission %s runs as Slurm job %s (%s)"
          % (sid, new[0], jobs().get(new[0], "").strip()))
    return sid, new[0]


def main(work, servers):
    os.chmod(work, 0o755)  # the sandbox on the node reads the spool as another uid
    with slurm_cluster(work, 7):
        spool = os.path.join(work, "spool")
        os.mkdir(spool)
        os.chmod(spool, 0o755)
        sdir = os.path.join(work, "serve")
        os.mkdir(sdir)
        s = Server(sdir, extra=["--executor", "slurm", "--spool", spool, "--slurm-workers", "1",
                                "--compile-workers", "0"]).start()
        servers.append(s)
        tok = s.token("alice", "--burst", "100", "--quota", "100")

        # (a) SIGTERM mid-job
        sid, job = start_job(s, tok, SLOW_C)
        t0 = time.time()
        s.proc.terminate()
        try:
            rc = s.proc.wait(30)
        except subprocess.TimeoutExpired:
            fail("SIGTERM: the server did not stop within 30 s")
        check(rc == 0, "SIGTERM: the server stopped cleanly (exit %d, %.1f s)"
              % (rc, time.time() - t0))
        # Cancelled jobs stay listed while Slurm completes them (state CG):
        # "left" is one still there after a bounded wait.
        wait_for("SIGTERM: no job of the server's is left in squeue (%s)" % jobs(),
                 lambda: jobs() == {}, 15)
        check(True, "SIGTERM: no job of the server's is left in squeue")
        check("queued again" in s.stderr(), "SIGTERM: the submission was queued again")
        with sqlite3.connect(s.db) as c:
            state = c.execute("SELECT state FROM jobs WHERE id=?", (sid,)).fetchone()[0]
        check(state == "queued", "SIGTERM: the cut-off submission waits in the queue (%s)" % state)
        s.start()
        s.wait_done(tok, [sid], 400)
        one_verdict(s, sid, "SIGTERM then restart")

        # (b) kill -9 mid-job
        sid2, job2 = start_job(s, tok, SLOW_C + "\n/* second */\n")
        s.kill9()
        check(job2 in jobs(), "kill -9: the dead server's job %s still runs on the cluster" % job2)
        t0 = time.time()
        s.start()
        wait_for("kill -9: the restarted server cancels the orphan job %s" % job2,
                 lambda: job2 not in jobs(), 10)
        check(True, "kill -9: the orphan job %s is gone from squeue %.1f s after the restart"
              % (job2, time.time() - t0))
        s.wait_done(tok, [sid2], 400)
        one_verdict(s, sid2, "kill -9 then restart")
        st, lb = s.request("GET", "/v1/leaderboards/saxpy")
        # cpu passes are counted, never ranked (SECURITY.md): the two
        # submissions once each, whatever the orphan job did.
        check(lb["gpus"] == {} and lb["unranked"]["cpu"]["verified_passes"] == 2,
              "each verdict counted once on the board, no duplicate: %s" % lb)
        s.stop()
        check(jobs() == {}, "no job left in squeue at the end: %s" % jobs())


run(main)
