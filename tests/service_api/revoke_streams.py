"""A token that is revoked or expires loses its open event streams within a
few seconds (issue 34: they used to run on for up to the 15-minute cap): each
stream sends a last event saying why (token_revoked, token_expired) and
ends, while another token's stream stays open. The worker is stopped, so the
submissions stay queued and their streams would otherwise never end."""
import os
import select
import signal
import socket
import subprocess
import time

from servelib import KILN, Server, check, fail, open_stream, run, submission
from floods import stop_worker


def open_ok(port, sid, token):
    """An open event stream of sid: its socket, and what came after its headers."""
    c, head, body = open_stream(port, sid, token)
    if not head.startswith("HTTP/1.1 200"):
        fail("the stream of %s: %r" % (sid, head[:200]))
    return c, body


def read_until_end(stream, seconds):
    """Everything the stream sends until it ends, and when it ended (None:
    still open after `seconds`)."""
    c, text = stream
    end = time.time() + seconds
    while time.time() < end:
        r, _, _ = select.select([c], [], [], max(0.0, end - time.time()))
        if not r:
            break
        d = c.recv(65536)
        if not d:
            return text.decode(errors="replace"), time.time()
        text += d
    return text.decode(errors="replace"), None


def last_event(text):
    events = [l[7:] for l in text.splitlines() if l.startswith("event: ")]
    return events[-1] if events else None


def main(work, servers):
    s = Server(work, extra=["--compile-workers", "0"]).start()
    servers.append(s)
    worker = stop_worker(s)
    try:
        carol, erin = s.token("carol"), s.token("erin")
        dave = s.token("dave", "--expires", "10s")
        expires_at = time.time() + 10
        ids = {}
        for name, tok in (("carol", carol), ("dave", dave), ("erin", erin)):
            st, doc = s.request("POST", "/v1/submissions", submission(), token=tok)
            if st != 202:
                fail("%s's submission: %d %s" % (name, st, doc))
            ids[name] = doc["id"]
        streams = {n: open_ok(s.port, ids[n], t)
                   for n, t in (("carol", carol), ("dave", dave), ("erin", erin))}
        p = subprocess.run([KILN, "token", "revoke", "carol", "--db", s.db], capture_output=True,
                           text=True, timeout=30)
        revoked_at = time.time()
        check(p.returncode == 0, "kiln token revoke carol")
        text, ended = read_until_end(streams["carol"], 20)
        check(ended is not None and ended - revoked_at < 10,
              "carol's open stream ended within 10 s of the revocation (%s)"
              % ("%.1f s" % (ended - revoked_at) if ended else "still open after 20 s"))
        check(last_event(text) == "token_revoked" and "was revoked" in text,
              "its last event says why: %r" % text[-300:])
        text, ended = read_until_end(streams["dave"], expires_at + 20 - time.time())
        check(ended is not None and ended - expires_at < 10,
              "dave's open stream ended within 10 s of his token's expiry (%s)"
              % ("%.1f s" % (ended - expires_at) if ended else "still open"))
        check(last_event(text) == "token_expired" and "expired" in text,
              "its last event says why: %r" % text[-300:])
        erin_sock = streams["erin"][0]
        r, _, _ = select.select([erin_sock], [], [], 0)
        still = not r or erin_sock.recv(1, socket.MSG_PEEK) != b""
        check(still, "erin's stream (a valid token) is still open")
        st, doc = s.request("GET", "/v1/submissions/" + ids["carol"], token=carol)
        check(st == 401 and "revoked" in doc["error"]["message"],
              "and carol's new requests get 401")
        for c, _ in streams.values():
            c.close()
    finally:
        os.kill(worker, signal.SIGCONT)


if __name__ == "__main__":
    run(main)
