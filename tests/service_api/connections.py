"""kiln serve is not locked out by slow or numerous clients (service/conn.c):
clients dripping their headers are cut by the request deadline while a
normal client of their address is served; half-open connections from other
addresses do not keep a normal client out of a full server; behind a
trusted proxy the forwarded client's requests in flight are capped with a
429 while another client is served; a token's event streams are capped
with a 429; an over-long URL and over-large headers get kiln's JSON errors.
Loopback only (127.0.0.2-5 are loopback addresses on Linux)."""
import http.client
import json
import os
import select
import signal
import socket
import subprocess
import time

from servelib import KILN, Server, check, fail, open_stream, run, submission

PARTIAL = b"GET /healthz HTTP/1.1\r\nHost: kiln\r\nX-Slow: "


class Attack:
    """Half-open requests that drip a header byte a second; records which
    the server closed (EOF or reset)."""

    def __init__(self, port, sources, per_source):
        self.port = port
        self.socks = {}
        self.closed = {}
        for src in sources:
            for _ in range(per_source):
                self._open(src)

    def _open(self, src):
        s = socket.socket()
        s.bind((src, 0))
        s.settimeout(10)
        s.connect(("127.0.0.1", self.port))
        s.setblocking(False)
        self.socks[s] = src
        self._send(s, PARTIAL)

    def _send(self, s, data):
        try:
            s.send(data)
        except OSError:
            self._close(s)

    def _close(self, s):
        if s in self.socks:
            self.closed[s] = self.socks.pop(s)
            s.close()

    def pump(self, seconds, reconnect=False):
        """Drips and watches for `seconds` (or until all are closed); with
        reconnect, each one closed is replaced at once (the attack goes on)."""
        end = time.time() + seconds
        while self.socks and time.time() < end:
            r, _, _ = select.select(list(self.socks), [], [], min(1.0, max(0.0, end - time.time())))
            for s in r:
                try:
                    data = s.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    src = self.socks[s]
                    self._close(s)
                    if reconnect:
                        self._open(src)
            for s in list(self.socks):
                self._send(s, b"a")

    def open_count(self):
        return len(self.socks)

    def close_all(self):
        for s in list(self.socks):
            self._close(s)


def get(port, path="/healthz", headers=None, source="127.0.0.1", timeout=20):
    """One request on its own connection: (status, headers, parsed JSON or raw bytes)."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        c.request("GET", path, headers=headers or {})
        r = c.getresponse()
        body = r.read()
    except OSError as e:
        return None, {}, "no answer: %r" % e
    finally:
        c.close()
    try:
        doc = json.loads(body)
    except ValueError:
        doc = body
    return r.status, r, doc


def code_of(doc):
    return doc.get("error", {}).get("code") if isinstance(doc, dict) else None


def slow_headers(work, servers):
    """(a) per-address: drip attackers from 127.0.0.1 are cut; a normal client is served."""
    s = Server(os.path.join(work, "a"), extra=["--per-ip", "8", "--request-timeout", "3"]).start()
    servers.append(s)
    # 12 attackers, each replaced as soon as it is cut: the address is full
    # all along, whatever the timing.
    attack = Attack(s.port, ["127.0.0.1"], 12)
    for i in range(3):
        attack.pump(1, reconnect=True)
        st, _, doc = get(s.port)
        check(st == 200 and doc["status"] == "ok",
              "a normal client of the attacked address is served during the attack, %d/3 "
              "(got %s %s)" % (i + 1, st, doc))
    # They drip a byte a second, so the idle timeout never ends them: only
    # the total deadline does. 60 s is far past --request-timeout 3.
    attack.pump(60)
    check(attack.open_count() == 0,
          "every dripping client was cut (%d of 12 still open after 60 s)" % attack.open_count())
    deadline = time.time() + 10
    while time.time() < deadline and "cut past --request-timeout" not in s.stderr():
        time.sleep(0.2)
    check("cut past --request-timeout" in s.stderr(), "the server logged the cuts")
    attack.close_all()
    return s


def sizes(s):
    """(e) kiln's JSON errors for an over-long URL and over-large headers."""
    st, r, doc = get(s.port, "/healthz?q=" + "a" * 10240)
    check(st == 414 and code_of(doc) == "uri_too_long" and
          r.getheader("Content-Type") == "application/json",
          "a 10 KiB URL gets 414 uri_too_long as JSON (got %s %s)" % (st, str(doc)[:200]))
    st, r, doc = get(s.port, "/" + "a" * 10240)
    check(st == 414 and code_of(doc) == "uri_too_long", "a 10 KiB path gets 414 uri_too_long")
    big = {"X-Pad-%d" % i: "b" * 1000 for i in range(40)}
    st, r, doc = get(s.port, headers=big)
    check(st == 431 and code_of(doc) == "headers_too_large" and
          r.getheader("Content-Type") == "application/json",
          "40 KiB of headers get 431 headers_too_large as JSON (got %s %s)" % (st, str(doc)[:200]))
    st, _, doc = get(s.port, headers={"X-Pad": "c" * 16000})
    check(st == 200, "16 KiB of headers are still served")


def many_addresses(work, servers):
    """(b) global: half-open connections from 127.0.0.2-5 fill a small server."""
    s = Server(os.path.join(work, "b"),
               extra=["--max-connections", "8", "--request-timeout", "60"]).start()
    servers.append(s)
    attack = Attack(s.port, ["127.0.0.%d" % i for i in range(2, 6)], 4)
    # The server keeps fewer than 8 of the 16: wait (bounded) until it has
    # taken them all in, evicting as it goes.
    deadline = time.time() + 10
    while time.time() < deadline and attack.open_count() > 7:
        attack.pump(0.5)
    st, _, doc = get(s.port, timeout=10)
    check(st == 200 and doc["status"] == "ok",
          "a normal client is served while 16 half-open connections from 127.0.0.2-5 hold a "
          "server of --max-connections 8 (got %s %s)" % (st, doc))
    check(attack.open_count() < 16, "the oldest half-open connections were evicted (%d of 16 open)"
          % attack.open_count())
    attack.close_all()


def hold(port, xff, token):
    """A proxied POST whose headers are in (the server sent 100 Continue: its
    token is checked before the body) and whose body never comes: a request
    in flight for xff."""
    c = socket.create_connection(("127.0.0.1", port), timeout=20)
    c.sendall(("POST /v1/submissions HTTP/1.1\r\nHost: kiln\r\nX-Forwarded-For: %s\r\n"
               "Authorization: Bearer %s\r\n"
               "Content-Type: application/json\r\nContent-Length: 100\r\n"
               "Expect: 100-continue\r\n\r\n" % (xff, token)).encode())
    got = b""
    while b"\r\n\r\n" not in got:
        d = c.recv(4096)
        if not d:
            fail("the held request was closed: %r" % got)
        got += d
    if b" 100 " not in got.split(b"\r\n")[0]:
        fail("expected 100 Continue for the held request, got %r" % got[:200])
    return c


def still_open(c):
    r, _, _ = select.select([c], [], [], 0)
    if not r:
        return True
    try:
        return c.recv(1, socket.MSG_PEEK) != b""
    except OSError:
        return False


def proxy(work, servers):
    """(c) behind --trusted-proxy: requests in flight per forwarded client."""
    s = Server(os.path.join(work, "c"), extra=["--trusted-proxy", "127.0.0.1", "--per-ip", "2",
                                               "--request-timeout", "60"]).start()
    servers.append(s)
    tok = s.token("proxied")
    held = [hold(s.port, "203.0.113.9, 198.51.100.7", tok) for _ in range(2)]
    st, r, doc = get(s.port, headers={"X-Forwarded-For": "198.51.100.7"})
    check(st == 429 and code_of(doc) == "too_many_requests" and r.getheader("Retry-After"),
          "a third request in flight for forwarded 198.51.100.7 gets 429 JSON with Retry-After "
          "(got %s %s)" % (st, doc))
    st, _, doc = get(s.port, headers={"X-Forwarded-For": "198.51.100.7, 198.51.100.8"})
    check(st == 200, "another forwarded client (the last X-Forwarded-For address) is served "
          "(got %s %s)" % (st, doc))
    st, _, doc = get(s.port, headers={"X-Forwarded-For": "not an address"})
    check(st == 200, "a malformed X-Forwarded-For counts as the proxy itself, which is served")
    check(all(still_open(c) for c in held),
          "the proxy's own connections are not capped per address (--per-ip 2, 5 open)")
    # One held request ends (its body arrives, not JSON: 400): the client
    # has room again.
    held[0].sendall(b"x" * 100)
    held[0].settimeout(20)
    resp = held[0].recv(4096)
    check(resp.startswith(b"HTTP/1.1 400"), "the held request was answered when its body came")
    st, _, doc = get(s.port, headers={"X-Forwarded-For": "198.51.100.7"})
    check(st == 200, "a finished request frees its client's place (got %s %s)" % (st, doc))
    for c in held:
        c.close()
    deadline = time.time() + 10
    while time.time() < deadline and "198.51.100.7 GET /healthz 200" not in s.stderr():
        time.sleep(0.2)
    check("198.51.100.7 GET /healthz 200" in s.stderr(),
          "the request log names the forwarded client")


def header(head, name):
    for line in head.split("\r\n")[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == name.lower():
            return v.strip()
    return None


def streams(work, servers):
    """(d) a token's event streams are capped."""
    s = Server(os.path.join(work, "d"), extra=["--max-streams", "2",
                                               "--compile-workers", "0"]).start()
    servers.append(s)
    alice, bob = s.token("alice"), s.token("bob")
    # The worker stopped, the submissions stay queued and their streams open.
    worker = s.worker_pid()
    os.kill(worker, signal.SIGSTOP)
    try:
        ids = {}
        for name, tok in (("alice", alice), ("bob", bob)):
            st, doc = s.request("POST", "/v1/submissions", submission(), token=tok)
            check(st == 202, "%s submitted" % name)
            ids[name] = doc["id"]
        opened = [open_stream(s.port, ids["alice"], alice) for _ in range(2)]
        check(all(" 200 " in h.split("\r\n")[0] and "text/event-stream" in h
                  for _, h, _ in opened), "alice opens --max-streams 2 event streams")
        c, h, body = open_stream(s.port, ids["alice"], alice)
        # Read as far as the headers: a stream served here would not end.
        if " 429 " not in h.split("\r\n")[0]:
            fail("her third stream was not refused: %s" % h.split("\r\n")[0])
        n = int(header(h, "Content-Length") or 0)
        while len(body) < n:
            d = c.recv(4096)
            if not d:
                break
            body += d
        c.close()
        doc = json.loads(body)
        check(code_of(doc) == "too_many_streams" and header(h, "Retry-After") and
              header(h, "Content-Type") == "application/json",
              "her third gets 429 too_many_streams JSON with Retry-After (got %s)" % doc)
        c, h, _ = open_stream(s.port, ids["bob"], bob)
        check(" 200 " in h.split("\r\n")[0], "bob's stream is served meanwhile")
        c.close()
    finally:
        os.kill(worker, signal.SIGCONT)
    s.wait_done(alice, [ids["alice"]], 300)
    # Her streams end after the verdict, and give their places back.
    for c, _, _ in opened:
        c.settimeout(30)
        while c.recv(65536):
            pass
        c.close()
    deadline = time.time() + 20
    st = None
    while time.time() < deadline and st != 200:
        st, _, _ = s.request("GET", "/v1/submissions/%s/events" % ids["alice"], token=alice,
                             raw=True)
        time.sleep(0.2)
    check(st == 200, "after her streams ended she may open another")


def bad_proxy(work):
    p = subprocess.run([KILN, "serve", "--listen", "127.0.0.1:0", "--data", work,
                        "--trusted-proxy", "localhost"], capture_output=True, text=True, timeout=60)
    check(p.returncode == 2 and "--trusted-proxy 'localhost' must be" in p.stderr,
          "--trusted-proxy takes an IPv4 address only (got %d: %s)"
          % (p.returncode, p.stderr[-300:]))


def main(work, servers):
    for d in "abcde":
        os.mkdir(os.path.join(work, d))
    bad_proxy(os.path.join(work, "e"))
    s = slow_headers(work, servers)
    sizes(s)
    many_addresses(work, servers)
    proxy(work, servers)
    streams(work, servers)


if __name__ == "__main__":
    run(main)
