"""Helpers for the service tests: a kiln serve started by the test itself on
127.0.0.1 with a port the kernel picks, always stopped; HTTP without
third-party modules; every wait bounded in time."""
import contextlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

KILN = os.environ.get("KILN_BIN", "build/kiln")
SRC = os.environ.get("KILN_SOURCE_DIR", ".")
WORKLOADS = os.path.join(SRC, "tests/service_api/workloads")
KERNEL_C = open(os.path.join(SRC, "workloads/saxpy/kernel.c")).read()


SLURM_UP = os.path.join(SRC, "tests/pipeline_slurm/slurm-up.sh")
SLURM_DOWN = os.path.join(SRC, "tests/pipeline_slurm/slurm-down.sh")


def slurm_or_skip():
    """Exits 77 (skipped) where the one-node Slurm cannot run."""
    for p in ("sbatch", "slurmctld", "slurmd", "munged", "mungekey"):
        if not shutil.which(p):
            print("SKIP: %s is not installed (apt-get install slurm-wlm munge; scripts/setup does)" % p)
            sys.exit(77)
    if os.getuid() != 0:
        print("SKIP: the one-node Slurm runs its daemons as root")
        sys.exit(77)


@contextlib.contextmanager
def slurm_cluster(work, salt=0):
    """A one-node Slurm under WORK/cluster for the with-block, SLURM_CONF
    pointing at it; stopped however the block ends. The ports wished for
    come from the pid (plus salt); slurm-up.sh swaps one in use for a free one."""
    env = dict(os.environ, R=os.path.join(work, "cluster"),
               CTLD_PORT=str(20000 + (os.getpid() + salt) % 20000),
               SLURMD_PORT=str(40000 + (os.getpid() + salt) % 20000))
    up = subprocess.run(["bash", SLURM_UP], env=env, capture_output=True, text=True, timeout=120)
    try:
        if up.returncode != 0:
            fail("the one-node Slurm did not start: %s %s" % (up.stdout[-2000:], up.stderr[-2000:]))
        os.environ["SLURM_CONF"] = os.path.join(env["R"], "etc/slurm.conf")
        yield
    finally:
        subprocess.run(["bash", SLURM_DOWN], env=env, capture_output=True, timeout=60)


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg, flush=True)


class Server:
    """One kiln serve process; start() waits for its 'listening' line."""

    def __init__(self, work, db=None, extra=(), defaults=False):
        self.work = work
        self.db = db or os.path.join(work, "kiln.db")
        self.extra = list(extra)
        self.proc = None
        self.port = None
        self.log = os.path.join(work, "server.log")
        # Tests time few fixed runs; a server with defaults times adaptively.
        self.timing = [] if defaults else ["--warmups", "1", "--iterations", "3",
                                           "--until-rse", "off"]

    def start(self, expect_ok=True, timeout=30):
        out = open(os.path.join(self.work, "server.out"), "w+")
        err = open(self.log, "a")
        self.proc = subprocess.Popen(
            [KILN, "serve", "--listen", "127.0.0.1:0", "--db", self.db, "--data", self.work,
             "--workloads", WORKLOADS] + self.timing + self.extra,
            stdout=out, stderr=err, start_new_session=True)
        deadline = time.time() + timeout
        while time.time() < deadline:
            out.seek(0)
            m = re.search(r"listening on http://127\.0\.0\.1:(\d+)", out.read())
            if m:
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                if expect_ok:
                    fail("kiln serve exited %d: %s" % (self.proc.returncode, self.stderr_tail()))
                return self
            time.sleep(0.05)
        fail("kiln serve did not start within %ds" % timeout)

    def stderr(self):
        """The server's whole log: a line a test looks for can be long past
        (every request adds a line, and wait_done asks every 0.3 s)."""
        with open(self.log) as f:
            return f.read()

    def stderr_tail(self):
        """The end of the log, for failure messages."""
        return self.stderr()[-3000:]

    def kill9(self):
        """kill -9 of the server alone; its workers die of PR_SET_PDEATHSIG."""
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
        # The process group (workers, sandboxes) must be gone before a restart.
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                os.killpg(self.proc.pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)
        fail("the workers outlived the killed server by 10 s")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(10)
        if self.proc:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def request(self, method, path, body=None, headers=None, token=None, raw=False, timeout=30):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        if body is not None and not isinstance(body, (bytes, str)):
            body = json.dumps(body)
            h.setdefault("Content-Type", "application/json")
        t0 = time.time()
        c.request(method, path, body=body, headers=h)
        r = c.getresponse()
        data = r.read()
        self.last_ms = (time.time() - t0) * 1000
        c.close()
        if raw:
            return r.status, r, data
        try:
            doc = json.loads(data) if data else None
        except ValueError:
            doc = data
        return r.status, doc

    def worker_pid(self):
        """The pid of the judging worker (worker 0), once it is ready."""
        deadline = time.time() + 60
        while time.time() < deadline and "worker 0 (cpu, cpu) ready" not in self.stderr():
            time.sleep(0.1)
        p = subprocess.run(["pgrep", "-f", "-P", str(self.proc.pid), "serve --worker 0 "],
                           capture_output=True, text=True)
        pids = [int(x) for x in p.stdout.split()]
        if len(pids) != 1:
            fail("cannot find the worker among the server's children: %s" % p.stdout)
        return pids[0]

    def token(self, name, *args):
        p = subprocess.run([KILN, "token", "add", name, "--db", self.db] + list(args),
                           capture_output=True, text=True, timeout=30)
        if p.returncode != 0:
            fail("kiln token add %s: %s" % (name, p.stderr))
        return p.stdout.strip()

    def wait_done(self, token, ids, timeout):
        deadline = time.time() + timeout
        pending = set(ids)
        while pending and time.time() < deadline:
            for i in list(pending):
                st, doc = self.request("GET", "/v1/submissions/" + i, token=token)
                if st == 200 and doc["state"] == "done":
                    pending.discard(i)
            time.sleep(0.3)
        if pending:
            fail("%d submission(s) not done after %ds: %s\n%s" %
                 (len(pending), timeout, sorted(pending), self.stderr_tail()))


def open_stream(port, sid, token):
    """A raw events request: (socket, status line and headers, what came after them)."""
    c = socket.create_connection(("127.0.0.1", port), timeout=30)
    c.sendall(("GET /v1/submissions/%s/events HTTP/1.1\r\nHost: kiln\r\n"
               "Authorization: Bearer %s\r\nConnection: close\r\n\r\n" % (sid, token)).encode())
    got = b""
    while b"\r\n\r\n" not in got:
        d = c.recv(4096)
        if not d:
            break
        got += d
    head, _, body = got.partition(b"\r\n\r\n")
    return c, head.decode(errors="replace"), body


def submission(source=KERNEL_C, workload="saxpy", backend="cpu"):
    return {"workload": workload, "backend": backend, "source": source}


def run(main):
    work = tempfile.mkdtemp(prefix="kiln-serve-test-")
    servers = []
    try:
        main(work, servers)
    finally:
        for s in servers:
            s.stop()
        shutil.rmtree(work, ignore_errors=True)
