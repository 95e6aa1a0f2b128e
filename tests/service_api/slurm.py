"""kiln serve --executor slurm on a one-node Slurm that this test starts and
stops itself (tests/pipeline_slurm's slurm-up.sh / slurm-down.sh): the
workers' harness runs are Slurm jobs, several workers judge at once, and a
few submissions (a pass, a wrong answer, a crash) reach the same verdicts as
on a local server. Skips (77) where slurm-wlm is not installed or the test
is not root (the throwaway cluster runs its daemons as root)."""
import json
import os

from servelib import SRC, Server, slurm_cluster, slurm_or_skip, check, fail, run, submission, KERNEL_C

FIX = os.path.join(SRC, "tests/pipeline_cli/fixtures")

slurm_or_skip()

CANDIDATES = {
    "pass": KERNEL_C,
    "wrong": KERNEL_C.replace("a * x[i] + y[i]", "a * x[i] - y[i]"),
    "crash": open(os.path.join(FIX, "saxpy_segv.c")).read(),
}


def verdicts(s, tok):
    ids = {}
    for name, src in CANDIDATES.items():
        st, doc = s.request("POST", "/v1/submissions", submission(source=src), token=tok)
        if st != 202:
            fail("%s: %d %s" % (name, st, doc))
        ids[name] = doc["id"]
    s.wait_done(tok, list(ids.values()), 400)
    out = {}
    for name, i in ids.items():
        st, doc = s.request("GET", "/v1/submissions/" + i, token=tok)
        out[name] = (doc["verdict"]["status"], doc["verdict"]["verified"], i)
    return out


def main(work, servers):
    os.chmod(work, 0o755)  # the sandbox on the node reads the spool as another uid
    with slurm_cluster(work):
        local_dir = os.path.join(work, "local")
        os.mkdir(local_dir)
        loc = Server(local_dir).start()
        servers.append(loc)
        want = verdicts(loc, loc.token("alice", "--burst", "100", "--quota", "100"))
        loc.stop()
        check([want[k][0] for k in ("pass", "wrong")] == ["pass", "wrong_answer"]
              and want["crash"][0] not in ("pass", "error"), "local verdicts: %s" % want)

        spool = os.path.join(work, "spool")
        os.mkdir(spool)
        os.chmod(spool, 0o755)
        sl_dir = os.path.join(work, "slurm")
        os.mkdir(sl_dir)
        s = Server(sl_dir, extra=["--executor", "slurm", "--spool", spool,
                                  "--slurm-workers", "3", "--compile-workers", "1"]).start()
        servers.append(s)
        st, doc = s.request("GET", "/healthz")
        check(doc["backends"] == "cuda,cpu", "through Slurm the server takes both backends")
        got = verdicts(s, s.token("alice", "--burst", "100", "--quota", "100"))
        for k in CANDIDATES:
            check(got[k][:2] == want[k][:2], "%s: the same verdict through Slurm: %s (local %s)"
                  % (k, got[k][:2], want[k][:2]))
            rec = json.load(open(os.path.join(sl_dir, "records", got[k][2], "verdict.json")))
            check(rec["executor"] == "slurm", "%s: the record says it ran through Slurm" % k)
            ran = rec["ran_on"]
            check(ran and "slurm job" in ran["where"],
                  "%s: the record says where the run was: %s" % (k, ran))
        log = open(s.log).read()
        check("slurm job" in log, "the workers submitted Slurm jobs")
        ready = [l for l in log.splitlines() if "ready" in l and "slurm:" in l]
        check(len(ready) == 3, "three Slurm workers: %s" % ready)
        s.stop()


run(main)
