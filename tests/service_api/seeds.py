"""The visible-input seed (issue #14): one per leaderboard, drawn on its first
submission and recorded in each submission, so submissions to a workload are
timed on the same inputs and a verdict can be reproduced with `kiln eval
--seed`; an admin rotates it; the held-out secret seed is never shown."""
import json
import os

from servelib import Server, check, run, submission


def main(work, servers):
    # --arch reaches every worker's command line (a worker that did not
    # take it would exit and judge nothing); cpu submissions ignore it.
    s = Server(work, extra=["--arch", "sm_80"]).start()
    servers.append(s)
    alice = s.token("alice", "--burst", "100", "--quota", "100")
    admin = s.token("root", "--admin")
    ids = []
    for i in range(2):
        st, doc = s.request("POST", "/v1/submissions",
                            submission(source=submission()["source"] + "\n/* %d */\n" % i),
                            token=alice)
        check(st == 202, "submission %d accepted" % i)
        ids.append(doc["id"])
    docs = [s.request("GET", "/v1/submissions/" + i, token=alice)[1] for i in ids]
    seeds = [d["visible_seed"] for d in docs]
    check(seeds[0].isdigit() and seeds[0] == seeds[1],
          "two submissions to one workload share its visible seed: %s" % seeds)

    st, doc = s.request("POST", "/v1/leaderboards/saxpy/rotate-seed", token=alice)
    check(st == 403, "rotating the seed needs an admin token")
    st, doc = s.request("POST", "/v1/leaderboards/saxpy/rotate-seed", token=admin)
    check(st == 200 and doc["leaderboard"] == "saxpy" and doc["visible_seed"] != seeds[0],
          "an admin rotates the visible seed")
    st, doc = s.request("POST", "/v1/submissions", submission(), token=alice)
    ids.append(doc["id"])
    st, doc = s.request("GET", "/v1/submissions/" + ids[2], token=alice)
    check(doc["visible_seed"] != seeds[0], "a later submission gets the new seed")
    st, doc = s.request("GET", "/v1/submissions/" + ids[0], token=alice)
    check(doc["visible_seed"] == seeds[0], "an earlier submission keeps its seed")

    s.wait_done(alice, ids, 240)
    for i in ids:
        st, doc = s.request("GET", "/v1/submissions/" + i, token=alice)
        rec = json.load(open(os.path.join(work, "records", i, "verdict.json")))
        check(doc["verdict"]["status"] == "pass" and rec["visible_seed"] == doc["visible_seed"],
              "%s was judged on its recorded visible seed" % i)
        check("secret_seed" not in json.dumps(doc), "%s: the API shows no secret seed" % i)
        check(rec["secret_seed"] and rec["secret_seed"] != doc["visible_seed"],
              "%s: the record (server-side) keeps the secret seed" % i)


run(main)
