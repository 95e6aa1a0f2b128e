"""Host events are kiln's failures, never a candidate's verdict (cpu
backend): a harness killed by a SIGKILL kiln did not send (as the host's
OOM killer or an operator would) is judged again, and the verdict is the
candidate's own (pass, attempt 2); a worker killed mid-job gives its job
back at once: with a 600 s lease, the job is judged again long before the
lease could have run out. A running submission that is cancelled stops its
worker (it can commit nothing), which the server restarts for the next."""
import os
import signal
import sqlite3
import time

from servelib import Server, check, fail, run, submission, KERNEL_C

# The candidate names its harness process and sleeps in a constructor, so
# the test can find it (comm "kilnslow") and kill it while it runs.
SLOW_C = KERNEL_C + r"""
#include <sys/prctl.h>
#include <time.h>
__attribute__((constructor)) static void kiln_test_slow(void)
{
    prctl(PR_SET_NAME, "kilnslow", 0, 0, 0);
    struct timespec ts = {.tv_sec = 3};
    while (nanosleep(&ts, &ts) != 0)
        ;
}
"""


def job(db, sid):
    with sqlite3.connect(db, timeout=10) as c:
        return c.execute("SELECT state, attempts, status FROM jobs WHERE id=?", (sid,)).fetchone()


def stages(db, sid):
    with sqlite3.connect(db, timeout=10) as c:
        return [r[0] for r in c.execute("SELECT stage FROM events WHERE job=? ORDER BY n", (sid,))]


def parent_of(pid):
    """The parent pid from /proc/PID/stat (the comm in parentheses may hold spaces)."""
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[1])


def descends_from(pid, root):
    """True when `root` is an ancestor of `pid`; host pids, so a sandbox's
    own PID namespace does not hide the chain."""
    try:
        while pid > 1:
            pid = parent_of(pid)
            if pid == root:
                return True
    except (OSError, ValueError, IndexError):
        pass
    return False


def find_comm(name, timeout, root):
    """The pid of a process under `root` (our server) whose comm is `name`,
    waited for (bounded). Only our server's descendants: another run of this
    test on the same machine has its own `kilnslow` harness, which is not
    ours to kill."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        for p in os.listdir("/proc"):
            if not p.isdigit():
                continue
            try:
                with open("/proc/%s/comm" % p) as f:
                    if f.read().strip() == name and descends_from(int(p), root):
                        return int(p)
            except OSError:
                pass
        time.sleep(0.05)
    fail("no process named %s under the server (pid %d) within %ds" % (name, root, timeout))


def main(work, servers):
    s = Server(work, extra=["--compile-workers", "0", "--lease", "600"]).start()
    servers.append(s)
    tok = s.token("alice", "--burst", "100", "--quota", "100")

    # 1. The harness is SIGKILLed from outside while the candidate runs.
    st, doc = s.request("POST", "/v1/submissions", submission(source=SLOW_C), token=tok)
    check(st == 202, "a slow (but correct) candidate is accepted")
    sid = doc["id"]
    pid = find_comm("kilnslow", 120, s.proc.pid)
    os.kill(pid, signal.SIGKILL)
    print("killed the harness (pid %d) with SIGKILL" % pid, flush=True)
    s.wait_done(tok, [sid], 300)
    state, attempts, status = job(s.db, sid)
    ev = stages(s.db, sid)
    check(status == "pass" and attempts == 2 and "retry" in ev and ev.count("verdict") == 1,
          "the killed harness was kiln's failure: judged again, the verdict is the candidate's "
          "(%s, attempt %d, events %s)" % (status, attempts, ev))

    # 2. The worker is killed mid-job: its job is queued again at once.
    st, doc = s.request("POST", "/v1/submissions", submission(source=SLOW_C + "\n/* 2 */\n"),
                        token=tok)
    sid2 = doc["id"]
    find_comm("kilnslow", 120, s.proc.pid)  # the worker is judging it now
    worker = s.worker_pid()
    os.kill(worker, signal.SIGKILL)
    print("killed the worker (pid %d) with SIGKILL" % worker, flush=True)
    # The lease is 600 s: done well within this bound only if requeued at once.
    s.wait_done(tok, [sid2], 240)
    state, attempts, status = job(s.db, sid2)
    ev = stages(s.db, sid2)
    with sqlite3.connect(s.db, timeout=10) as c:
        why = c.execute("SELECT detail FROM events WHERE job=? AND stage='requeued'",
                        (sid2,)).fetchone()
    check(status == "pass" and attempts == 2 and "requeued" in ev
          and why and "(signal 9): queued again" in why[0],
          "the killed worker's job was queued again at once and judged (%s, attempt %d, %s)"
          % (status, attempts, ev))


    # 3. A running submission is cancelled: its worker stops, the next is judged.
    st, doc = s.request("POST", "/v1/submissions", submission(source=SLOW_C + "\n/* 3 */\n"),
                        token=tok)
    sid3 = doc["id"]
    find_comm("kilnslow", 120, s.proc.pid)
    st, doc = s.request("DELETE", "/v1/submissions/" + sid3, token=tok)
    check(st == 200 and doc["was"] == "running", "a running submission is cancelled: %s" % doc)
    st, doc = s.request("POST", "/v1/submissions", submission(), token=tok)
    nxt = doc["id"]
    s.wait_done(tok, [nxt], 240)
    state, attempts, status = job(s.db, sid3)
    check(status == "cancelled" and job(s.db, nxt)[2] == "pass"
          and "lost the lease of " + sid3 in open(s.log).read()
          and not os.path.exists(os.path.join(work, "records", sid3)),
          "the cancelled run committed nothing; its worker stopped and the next was judged")


run(main)
