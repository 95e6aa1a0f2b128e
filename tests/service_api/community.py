"""Community workload tarballs (POST /v1/submissions, Content-Type:
application/x-tar): an accepted tarball is checked like `kiln workload check`
in the worker and then judged; its leaderboard is NAME@SHA256 (the full
hash: a short form is refused), apart from the built-in workload and from
another community workload of the same name; a workload that fails its check gets a
bad_workload verdict naming the problem; malformed, oversized,
path-traversal, symlink, pax and incomplete tarballs are refused with a 4xx
JSON error that names the entry, file or field. A check's outcome is
remembered by the tarball's SHA-256: after a restart, the same tarball
(passing or refused) is not checked again and gets the same verdict; a
tarball one byte apart is checked. A workload without a starting kernel
(kernel.c/kernel.cu are optional) is accepted and judged."""
import http.client
import io
import json
import os
import socket
import tarfile

from servelib import Server, WORKLOADS, check, run, submission, KERNEL_C

WL = os.path.join(WORKLOADS, "saxpy")


def files(**over):
    f = {"workload/" + n: open(os.path.join(WL, n), "rb").read()
         for n in ("workload.json", "inputs.py", "reference.py", "kernel.c", "kernel.cu")}
    f["candidate.c"] = KERNEL_C.encode()
    for k, v in over.items():
        k = k.replace("__", "/").replace("_dot_", ".")
        if v is None:
            f.pop(k, None)
        else:
            f[k] = v
    return f


def tarball(entries, fmt=tarfile.USTAR_FORMAT, links=()):
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w", format=fmt) as t:
        for name, data in entries.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
        for name, target in links:
            ti = tarfile.TarInfo(name)
            ti.type = tarfile.SYMTYPE
            ti.linkname = target
            t.addfile(ti)
    return b.getvalue()


def events(s, tok, sid):
    """The submission's event stream (it ends after the verdict), as text."""
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=60)
    c.request("GET", "/v1/submissions/%s/events" % sid, headers={"Authorization": "Bearer " + tok})
    text = c.getresponse().read().decode()
    c.close()
    return text


def check_of(work, sid):
    return json.load(open(os.path.join(work, "records", sid, "verdict.json")))["community_check"]


def main(work, servers):
    s = Server(work).start()
    servers.append(s)
    tok = s.token("alice", "--burst", "100", "--quota", "100")
    tar_h = {"Content-Type": "application/x-tar"}

    def post(body):
        return s.request("POST", "/v1/submissions", body, token=tok, headers=tar_h)

    def refused(body, status, code, words, what):
        st, doc = post(body)
        msg = doc["error"]["message"] if isinstance(doc, dict) and "error" in doc else ""
        check(st == status and doc["error"]["code"] == code and all(w in msg for w in words),
              "%s: %d %s (%s)" % (what, st, code, msg))

    refused(b"\x00not a tar at all" * 64, 400, "bad_tarball", ["tarball"], "garbage")
    # Refused from Content-Length before the body is read (so none is sent).
    c = socket.create_connection(("127.0.0.1", s.port), timeout=30)
    c.sendall(b"POST /v1/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
              b"Content-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n"
              % (tok.encode(), 1024 * 1024 + 1))
    head = c.recv(4096).decode(errors="replace")
    c.close()
    check(head.startswith("HTTP/1.1 413") and "too_large" in head and "1048576" in head,
          "a tarball over 1 MiB: 413 naming the cap")
    st, doc = post(b"x" * (512 * 1024))
    check(st == 400, "a 512 KiB body is read as a tarball (over the JSON cap, under the tar one)")
    f = files()
    f["workload/../candidate.c"] = b"int x;"
    refused(tarball(f), 400, "bad_tarball", ["workload/../candidate.c"], "path traversal")
    f = files()
    f["../../etc/passwd"] = b"x"
    refused(tarball(f), 400, "bad_tarball", ["../../etc/passwd"], "parent directory entry")
    refused(tarball(files(candidate_dot_c=None), links=[("candidate.c", "/etc/passwd")]), 400,
            "bad_tarball", ["candidate.c"], "a symlink entry")
    f = files()
    f["workload/" + "x" * 120 + ".py"] = b"y"
    refused(tarball(f, fmt=tarfile.PAX_FORMAT), 400, "bad_tarball", [], "a pax tarball")
    refused(tarball(files(workload__inputs_dot_py=None)), 422, "bad_workload",
            ["workload/inputs.py"], "no inputs.py")
    refused(tarball(files(candidate_dot_c=None)), 422, "bad_workload", ["candidate"],
            "no candidate")
    refused(tarball(files(**{"candidate_dot_cu": b"__global__ void k() {}"})), 422,
            "bad_workload", ["exactly one"], "two candidates")
    wj = open(os.path.join(WL, "workload.json")).read().replace('"atol": 1e-05', '"atol": -1')
    refused(tarball(files(workload__workload_dot_json=wj.encode())), 422, "bad_workload",
            ["workload/workload.json", "atol"], "a bad field in workload.json")

    # accepted: a community "saxpy" next to the built-in one
    st, doc = post(tarball(files()))
    check(st == 202, "a community tarball is accepted: %d %s" % (st, doc))
    com = doc["id"]
    st, doc = s.request("POST", "/v1/submissions", submission(), token=tok)
    builtin = doc["id"]
    # its inputs.py fails: the check, not the candidate, decides
    bad_inputs = b"raise SystemExit('inputs.py is broken on purpose')\n"
    st, doc = post(tarball(files(workload__inputs_dot_py=bad_inputs)))
    check(st == 202, "a tarball whose scripts fail is accepted (the worker checks it)")
    broken = doc["id"]
    s.wait_done(tok, [com, builtin, broken], 300)

    st, c = s.request("GET", "/v1/submissions/" + com, token=tok)
    board = c["leaderboard"]
    check(c["workload"] == "saxpy" and board.startswith("saxpy@") and len(board) == len("saxpy@") + 64,
          "the community workload's leaderboard is NAME@SHA256: %s" % board)
    check(c["verdict"]["status"] == "pass" and c["verdict"]["verified"] is True,
          "the community submission was checked and judged: %s" % c["verdict"])
    st, b = s.request("GET", "/v1/submissions/" + builtin, token=tok)
    check(b["leaderboard"] == "saxpy" and b["verdict"]["status"] == "pass", "the built-in one passes")
    # cpu passes are counted, never ranked (SECURITY.md): one on each board.
    st, lb = s.request("GET", "/v1/leaderboards/saxpy")
    check(lb["unranked"]["cpu"]["verified_passes"] == 1,
          "the built-in leaderboard holds the built-in submission only")
    st, lc = s.request("GET", "/v1/leaderboards/" + board)
    check(st == 200 and lc["unranked"]["cpu"]["verified_passes"] == 1
          and lc["display"] == board[:len("saxpy@") + 16],
          "the community leaderboard holds the community submission only (shown as NAME@ and 16 "
          "hex digits)")
    st, short = s.request("GET", "/v1/leaderboards/" + lc["display"])
    check(st == 404 and "full SHA-256" in short["error"]["message"],
          "the short form is for display: looking it up is 404 naming the full form")
    check(c["visible_seed"] != b["visible_seed"], "each leaderboard has its own visible seed")
    st, x = s.request("GET", "/v1/submissions/" + broken, token=tok)
    v = x["verdict"]
    check(v["status"] == "bad_workload" and v["stage"] == "workload_check"
          and "inputs" in v["detail"] and x["leaderboard"] != board,
          "a workload failing its check: bad_workload naming the problem: %s" % v["detail"][:200])
    stored = [d for d in os.listdir(os.path.join(work, "community")) if not d.startswith(".")]
    check(any(d.startswith(board.split("@")[1]) for d in stored) and len(stored) == 2,
          "the community workloads are stored by content hash: %s" % stored)
    # A workload a stopped server was still writing is removed on start.
    s.stop()
    left = os.path.join(work, "community", ".tmp-cutoff")
    os.makedirs(left)
    open(os.path.join(left, "workload.json"), "w").write("{")
    s.start()
    check(not os.path.exists(left) and len(os.listdir(os.path.join(work, "community"))) == 2,
          "a half-written community workload is removed when the server starts")

    # The check's outcome is remembered by content, across the restart above.
    ran = "checking the community workload"
    check(check_of(work, com) == "ran" and check_of(work, broken) == "ran"
          and ran in events(s, tok, com), "the first submission of each tarball ran the check")
    again = {}
    for name, tb in (("pass", tarball(files())),
                     ("refused", tarball(files(workload__inputs_dot_py=bad_inputs))),
                     ("one byte apart", tarball(files(candidate_dot_c=KERNEL_C.encode() + b" ")))):
        st, doc = post(tb)
        check(st == 202, "%s: resubmitted" % name)
        again[name] = doc["id"]
    s.wait_done(tok, list(again.values()), 300)
    st, p = s.request("GET", "/v1/submissions/" + again["pass"], token=tok)
    ev = events(s, tok, again["pass"])
    check(check_of(work, again["pass"]) == "cached" and ran not in ev and "cached" in ev,
          "the same tarball again: its check is not run, the outcome is reused")
    check(p["verdict"]["status"] == "pass" and p["leaderboard"] == board,
          "the same tarball again: judged as before: %s" % p["verdict"])
    st, r = s.request("GET", "/v1/submissions/" + again["refused"], token=tok)
    check(check_of(work, again["refused"]) == "cached" and ran not in events(s, tok, again["refused"])
          and r["verdict"]["status"] == "bad_workload" and r["verdict"]["detail"] == v["detail"],
          "the refused tarball again: the same refusal, the same message, no check run")
    st, o = s.request("GET", "/v1/submissions/" + again["one byte apart"], token=tok)
    check(check_of(work, again["one byte apart"]) == "ran"
          and ran in events(s, tok, again["one byte apart"]) and o["verdict"]["status"] == "pass",
          "a tarball one byte apart is checked")

    # No starting kernel (optional, issue 29): accepted, checked and judged
    # against the reference like any other.
    st, doc = post(tarball(files(workload__kernel_dot_c=None, workload__kernel_dot_cu=None)))
    check(st == 202, "a tarball without workload/kernel.c|cu is accepted: %d %s" % (st, doc))
    nok = doc["id"]
    s.wait_done(tok, [nok], 300)
    st, n = s.request("GET", "/v1/submissions/" + nok, token=tok)
    check(n["verdict"]["status"] == "pass" and n["verdict"]["verified"] is True
          and n["leaderboard"] not in (board, "saxpy"),
          "a workload without a starting kernel: checked, judged, its own board: %s" % n["verdict"])


run(main)
