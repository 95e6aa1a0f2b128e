"""A second kiln serve on the same database is refused with a clear error,
while the first keeps serving; after the first stops, a new one starts."""
import os
import subprocess
import time

from servelib import KILN, WORKLOADS, Server, check, run


def main(work, servers):
    # Default options (no --iterations, --compile-workers): the workers start.
    a = Server(work, defaults=True).start()
    servers.append(a)
    deadline = time.time() + 20
    while time.time() < deadline and not ("worker 0 (cpu, cpu) ready" in a.stderr()
                                          and "compile worker 0 ready" in a.stderr()):
        time.sleep(0.1)
    time.sleep(1)
    check("ready" in a.stderr() and "restarting" not in a.stderr(),
          "with default options the worker and the compile worker start and stay up")
    other = os.path.join(work, "other")
    os.mkdir(other)
    p = subprocess.run([KILN, "serve", "--listen", "127.0.0.1:0", "--db", a.db, "--data", other,
                        "--workloads", WORKLOADS], capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and "another kiln serve (pid %d)" % a.proc.pid in p.stderr
          and "--db" in p.stderr, "the second server is refused, naming the first: %s" % p.stderr.strip())
    st, doc = a.request("GET", "/healthz")
    check(st == 200, "the first server still answers")
    a.stop()
    b = Server(work, db=a.db).start()
    servers.append(b)
    st, doc = b.request("GET", "/healthz")
    check(st == 200, "a server starts on the database once the first stopped")


run(main)
