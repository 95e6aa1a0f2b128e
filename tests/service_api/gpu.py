"""kiln serve --gpus 0 on a GPU machine: a CUDA submission is judged on the
GPU, verified on a secret seed and ranked under the GPU's model name.
Exits 77 (skipped) where there is no NVIDIA GPU."""
import os
import sys

from servelib import SRC, Server, check, run, submission

if not os.path.exists("/dev/nvidia0") or not os.path.isdir("/proc/driver/nvidia/gpus"):
    print("SKIP: no NVIDIA GPU here (/dev/nvidia0, /proc/driver/nvidia/gpus); run on a GPU machine")
    sys.exit(77)

KERNEL_CU = open(os.path.join(SRC, "workloads/saxpy/kernel.cu")).read()


def main(work, servers):
    s = Server(work, extra=["--gpus", "0"]).start()
    servers.append(s)
    tok = s.token("alice")
    st, doc = s.request("POST", "/v1/submissions", submission(source=KERNEL_CU, backend="cuda"),
                        token=tok)
    check(st == 202, "a CUDA submission is accepted")
    sid = doc["id"]
    st, doc = s.request("POST", "/v1/submissions", submission(), token=tok)
    check(st == 422 and doc["error"]["code"] == "no_worker", "a cpu submission to a GPU server: 422")
    s.wait_done(tok, [sid], 300)
    st, doc = s.request("GET", "/v1/submissions/" + sid, token=tok)
    v = doc["verdict"]
    check(v["status"] == "pass" and v["verified"] and "NVIDIA" in v["gpu_model"],
          "judged on the GPU and verified: %s" % v)
    # The entry names its submission to its owner only (tenancy, issue #25).
    st, board = s.request("GET", "/v1/leaderboards/saxpy", token=tok)
    check([e.get("submission") for e in board["gpus"].get(v["gpu_model"], [])] == [sid],
          "ranked under the GPU's model (a CUDA verdict is ranked, a cpu one never)")
    st, public = s.request("GET", "/v1/leaderboards/saxpy")
    check(len(public["gpus"].get(v["gpu_model"], [])) == 1
          and "submission" not in public["gpus"][v["gpu_model"]][0],
          "the public board shows the entry without its submission id")


run(main)
