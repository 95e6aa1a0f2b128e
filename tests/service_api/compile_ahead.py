"""Compile-ahead, asserted on the order of recorded events, not on durations:
the compile pool compiles submission k+1 while the worker runs submission k.
Submission k is a real candidate whose run is slow (it sleeps in every call),
so the worker is busy with it; each submission's timeline (CLOCK_MONOTONIC
stamps of compile start/finish and run start/finish, kept in the database)
must show k+1's compile finishing before k's run finished (and before its
own run), and k+1's record says it was compiled ahead."""
import json
import os
import sys

from servelib import Server, check, run, submission, KERNEL_C

# Sleeps 0.6 s per call: the run of this candidate takes about 16 s (every
# case, warm-up and timed iteration calls it), far longer than compiling C
# even on a loaded host (8 s seen with other builds running).
SLOW_C = "#include <time.h>\n" + KERNEL_C.replace(
    "{\n    long long i = 0;",
    "{\n    struct timespec ts = {0, 600000000L};\n    nanosleep(&ts, 0);\n    long long i = 0;")


def main(work, servers):
    pool = sys.argv[1] if len(sys.argv) > 1 else "1"
    s = Server(work, extra=["--compile-workers", pool]).start()
    servers.append(s)
    tok = s.token("alice", "--burst", "100", "--quota", "100")
    ids = []
    for src in (SLOW_C, KERNEL_C + "\n/* next */\n"):
        st, doc = s.request("POST", "/v1/submissions", submission(source=src), token=tok)
        check(st == 202, "submission accepted")
        ids.append(doc["id"])
    s.wait_done(tok, ids, 300)
    t = [s.request("GET", "/v1/submissions/" + i, token=tok)[1] for i in ids]
    for d in t:
        print("%s: %s %s" % (d["id"], d["verdict"]["status"], d["timeline"]), flush=True)
    k, k1 = t[0]["timeline"], t[1]["timeline"]
    check(t[0]["verdict"]["status"] == "pass" and t[1]["verdict"]["status"] == "pass",
          "both submissions pass")
    check(k["run_started"] is not None and k["run_finished"] is not None
          and k1["compile_finished"] is not None, "the timelines are recorded")
    # The pool may start (or even finish) k+1 while the worker still prepares
    # k's inputs; what matters is that k+1 did not wait for k's run to end.
    check(k1["compile_finished"] < k["run_finished"],
          "submission k+1 was compiled before submission k's run finished")
    check(k1["compile_finished"] < k1["run_started"], "k+1 was compiled before its own run")
    check(k["run_finished"] <= k1["run_started"], "the worker ran them one after another")
    rec = json.load(open(os.path.join(work, "records", ids[1], "verdict.json")))
    check(rec["compiled_ahead"] is True, "k+1's record: compiled ahead")


run(main)
