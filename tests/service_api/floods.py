"""kiln serve under connection floods that the audit of issue 34 ran, on
loopback addresses only (127.0.0.2-5 are loopback on Linux), each bounded:

(a) readers that pipeline thousands of requests and never read, from four
    addresses: closed for pipelining over unread answers, while a normal
    client is served within a bound;
(b) readers that never read large answers (under the pipelining cap): a
    server full of them still serves a newcomer (they are evicted first),
    and without pressure the write deadline cuts them;
(c) a slow honest upload (900 KB at about 150 KB/s, with a token) completes
    while half-open connections from its own and four other addresses flood
    a small server; the half-open ones are the ones cut;
(d) 200 unauthenticated 1 040 000-byte bodies: every one gets a 401 without
    its body being read, the server's RSS stays within a bound, and
    /metrics counts the unauthenticated connections and their memory."""
import json
import os
import re
import select
import signal
import socket
import threading
import time

from servelib import Server, check, fail, run, submission

SOURCES = ["127.0.0.%d" % i for i in range(2, 6)]


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))


def metrics(s):
    st, _, data = s.request("GET", "/metrics", raw=True, timeout=20)
    if st != 200:
        fail("GET /metrics: %d" % st)
    out = {}
    for line in data.decode().splitlines():
        m = re.fullmatch(r"([a-z_]+(?:\{[^}]*\})?) (\S+)", line)
        if m:
            out[m.group(1)] = float(m.group(2))
    return out


def closed_by(s, reason):
    return metrics(s).get('kiln_connections_closed_total{reason="%s"}' % reason, 0)


def probe(port, path="/healthz", timeout=10):
    """One GET on its own connection from 127.0.0.1: (status or None, seconds)."""
    t0 = time.time()
    try:
        c = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        c.sendall(("GET %s HTTP/1.1\r\nHost: kiln\r\nConnection: close\r\n\r\n" % path).encode())
        got = b""
        while True:
            d = c.recv(65536)
            if not d:
                break
            got += d
        c.close()
        m = re.match(rb"HTTP/1\.1 (\d+)", got)
        return (int(m.group(1)) if m else None), time.time() - t0
    except OSError:
        return None, time.time() - t0


def non_reader(port, src, data):
    """A connection from src with a 4 KiB receive buffer that sends `data`
    (as much as the server takes) and never reads."""
    c = socket.socket()
    c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    c.bind((src, 0))
    c.settimeout(10)
    c.connect(("127.0.0.1", port))
    c.setblocking(False)
    try:
        c.send(data)
    except OSError:
        pass
    return c


def is_closed(c):
    """Whether the server ended c: an error, or EOF after what it had sent.
    (Reads what waits, so call it only when done not reading.)"""
    try:
        while True:
            r, _, _ = select.select([c], [], [], 0)
            if not r:
                return False
            if not c.recv(1 << 20):
                return True
    except OSError:
        return True


def wait_closed(socks, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if all(is_closed(c) for c in socks):
            return True
        time.sleep(0.2)
    return False


def stop_worker(s):
    """SIGSTOPs the server's judging worker: submissions stay queued."""
    pid = s.worker_pid()
    os.kill(pid, signal.SIGSTOP)
    return pid


def pipelined(work, servers):
    """(a) 32 connections from 4 addresses pipeline 2000 GET /healthz each."""
    s = Server(os.path.join(work, "a"),
               extra=["--max-connections", "32", "--per-ip", "8", "--write-timeout", "3"]).start()
    servers.append(s)
    reqs = b"GET /healthz HTTP/1.1\r\nHost: kiln\r\n\r\n" * 2000
    attack = [non_reader(s.port, src, reqs) for src in SOURCES for _ in range(8)]
    worst = 0
    for _ in range(8):
        st, took = probe(s.port)
        if st != 200:
            fail("a normal client was not served during the flood (got %s after %.1f s)\n%s"
                 % (st, took, s.stderr_tail()))
        worst = max(worst, took)
        time.sleep(0.5)
    check(worst < 10, "a normal client is served within 10 s all along (worst %.2f s)" % worst)
    check(wait_closed(attack, 30), "every pipelining non-reader was closed")
    n = closed_by(s, "pipelined")
    check(n >= len(attack) / 2,
          "closed for pipelining over unread answers: %d of %d" % (n, len(attack)))
    for c in attack:
        c.close()


def large_answers(work, servers):
    """(b) non-readers of large answers, pipelining fewer than the cap."""
    s = Server(os.path.join(work, "b"),
               extra=["--max-connections", "16", "--per-ip", "16", "--write-timeout", "8",
                      "--compile-workers", "0"]).start()
    servers.append(s)
    worker = stop_worker(s)
    try:
        tok = s.token("filler", "--burst", "1000", "--quota", "1000", "--rate", "1000")
        for i in range(300):
            st, _ = s.request("POST", "/v1/submissions",
                              submission(source="/* %d */ int x;" % i), token=tok)
            if st != 202:
                fail("filling the queue: %d" % st)
        st, _, q = s.request("GET", "/v1/queue", raw=True)
        check(len(q) > 40000, "GET /v1/queue is a large answer (%d bytes)" % len(q))
        # 6 answers of 40+ KB each: more than the socket buffers hold, so the
        # server is left sending to a reader that does not read.
        reqs = b"GET /v1/queue HTTP/1.1\r\nHost: kiln\r\n\r\n" * 6
        attack = [non_reader(s.port, src, reqs) for src in SOURCES for _ in range(4)]
        time.sleep(2)  # older than the newcomers' grace, their answers stuck
        st, took = probe(s.port)
        check(st == 200, "a server full of readers that do not read serves a newcomer "
              "(got %s in %.1f s)" % (st, took))
        check(closed_by(s, "evicted") >= 1, "a stuck reader was evicted for it")
        check(wait_closed(attack, 20),
              "the write deadline cut the rest (--write-timeout 8, within 20 s)")
        check(closed_by(s, "write_timeout") >= 1, "/metrics counts them as write_timeout")
        for c in attack:
            c.close()
    finally:
        os.kill(worker, signal.SIGCONT)


class HalfOpen:
    """Half-open requests from `sources`, each replaced as soon as it is cut."""

    def __init__(self, port, sources, per_source):
        self.port, self.socks, self.cut = port, {}, 0
        for src in sources:
            for _ in range(per_source):
                self.open(src)

    def open(self, src):
        c = socket.socket()
        c.bind((src, 0))
        c.setblocking(False)
        try:
            c.connect(("127.0.0.1", self.port))
        except BlockingIOError:
            pass
        self.socks[c] = [src, False]

    def pump(self):
        r, w, _ = select.select(list(self.socks), [c for c, v in self.socks.items() if not v[1]],
                                [], 0.05)
        for c in w:
            try:
                c.send(b"GET /healthz HTTP/1.1\r\nHost: kiln\r\nX-Slow: ")
                self.socks[c][1] = True
            except OSError:
                pass
        for c in r:
            try:
                d = c.recv(4096)
            except OSError:
                d = b""
            if not d:
                src = self.socks.pop(c)[0]
                c.close()
                self.cut += 1
                self.open(src)

    def close(self):
        for c in self.socks:
            c.close()


def slow_upload(work, servers):
    """(c) a slow honest upload under a half-open flood."""
    s = Server(os.path.join(work, "c"),
               extra=["--max-connections", "64", "--per-ip", "16", "--request-timeout", "60"]).start()
    servers.append(s)
    tok = s.token("uploader")
    body = bytes(900 * 1024)  # not a tarball: answered 400 once all of it is read
    up = socket.socket()
    up.bind(("127.0.0.1", 0))
    up.settimeout(30)
    up.connect(("127.0.0.1", s.port))
    up.sendall(("POST /v1/submissions HTTP/1.1\r\nHost: kiln\r\nAuthorization: Bearer %s\r\n"
                "Content-Type: application/x-tar\r\nContent-Length: %d\r\n\r\n"
                % (tok, len(body))).encode())
    flood = HalfOpen(s.port, ["127.0.0.1"], 20)
    flood2 = HalfOpen(s.port, SOURCES, 15)
    t0, sent, err = time.time(), 0, None
    while sent < len(body):
        # 15 KB every 0.1 s: about 150 KB/s
        try:
            up.sendall(body[sent:sent + 15 * 1024])
        except OSError as e:
            err = e
            break
        sent += 15 * 1024
        end = time.time() + 0.1
        while time.time() < end:
            flood.pump()
            flood2.pump()
    answer = b""
    if err is None:
        try:
            while b"\r\n\r\n" not in answer or len(answer.split(b"\r\n\r\n", 1)[1]) < int(
                    re.search(rb"Content-Length: (\d+)", answer).group(1)):
                d = up.recv(4096)
                if not d:
                    break
                answer += d
        except (OSError, AttributeError) as e:
            err = e
    took = time.time() - t0
    flood.close()
    flood2.close()
    up.close()
    # Zero bytes are an empty tarball: refused for what it lacks, which the
    # server can say only once it has read all of it.
    check(err is None and answer.startswith(b"HTTP/1.1 422") and b"bad_workload" in answer,
          "the slow upload was read to its end and answered (%s, %.1f s): %r"
          % (err, took, answer[-200:]))
    check(flood.cut + flood2.cut > 0 and closed_by(s, "evicted") > 0,
          "half-open connections were evicted instead (%d cut)" % (flood.cut + flood2.cut))


def unauthenticated_bodies(work, servers):
    """(d) 200 connections send 1 040 000-byte bodies without a token."""
    s = Server(os.path.join(work, "d"), extra=["--per-ip", "64"]).start()
    servers.append(s)
    for _ in range(3):
        probe(s.port)
    base = rss_kib(s.proc.pid)
    peak = [base]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            peak[0] = max(peak[0], rss_kib(s.proc.pid))
            stop.wait(0.02)

    th = threading.Thread(target=sample)
    th.start()
    n, size = 200, 1040000
    head = ("POST /v1/submissions HTTP/1.1\r\nHost: kiln\r\nContent-Type: application/x-tar\r\n"
            "Content-Length: %d\r\n\r\n" % size).encode()
    chunk = bytes(64 * 1024)
    conns, done = {}, []
    for i in range(n):
        c = socket.socket()
        c.bind(("127.0.0.%d" % (1 + i % 4), 0))
        c.settimeout(10)
        c.connect(("127.0.0.1", s.port))
        c.setblocking(False)
        conns[c] = [head, 0, b""]  # still to send of the head, body bytes sent, answer
    # All connected, none authenticated yet: what /metrics says of them.
    mid = metrics(s)
    deadline = time.time() + 60
    while conns and time.time() < deadline:
        want_w = [c for c, v in conns.items() if v[1] < size]
        r, w, _ = select.select(list(conns), want_w, [], 0.5)
        for c in w:
            v = conns[c]
            try:
                data = v[0] or chunk[:size - v[1]]
                k = c.send(data)
                if v[0]:
                    v[0] = v[0][k:]
                else:
                    v[1] += k
            except OSError:
                v[1] = size  # the server closed its side: stop sending
        for c in r:
            try:
                d = c.recv(65536)
            except OSError:
                d = b""  # reset after the answer: what was read is kept
            conns[c][2] += d
            if not d:
                conns[c].append("done")
        for c in [c for c, v in conns.items() if len(v) > 3]:
            v = conns.pop(c)
            c.close()
            if not v[2].startswith(b"HTTP/1.1 401"):
                fail("an unauthenticated body got %r, not 401" % v[2][:80])
            done.append(v)
    stop.set()
    th.join()
    check(not conns, "all %d were answered within 60 s" % n)
    check(len(done) == n, "every one of the %d got 401" % n)
    grew = (peak[0] - base) / 1024
    check(grew < 48, "the server's RSS grew by %.1f MiB (bound 48 MiB; the bodies alone are "
          "%.0f MiB)" % (grew, n * size / 2**20))
    m = mid
    check(m.get("kiln_unauthenticated_connections", 0) >= n and
          0 <= m.get("kiln_unauthenticated_memory_bytes", -1) <= 256 * 128 * 1024,
          "/metrics counts the unauthenticated connections (%s) and their memory (%s bytes)"
          % (m.get("kiln_unauthenticated_connections"), m.get("kiln_unauthenticated_memory_bytes")))



def main(work, servers):
    for d in "abcd":
        os.mkdir(os.path.join(work, d))
    scenarios = {"pipelined": pipelined, "large_answers": large_answers,
                 "slow_upload": slow_upload, "unauthenticated_bodies": unauthenticated_bodies}
    only = os.environ.get("KILN_FLOODS")  # one scenario, by name, when debugging
    for name, f in scenarios.items():
        if not only or only == name:
            f(work, servers)


if __name__ == "__main__":
    run(main)
