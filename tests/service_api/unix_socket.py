"""kiln serve --socket PATH: the API on a unix socket (mode 0660), removed
when the server stops; --listen and --socket together are refused."""
import os
import socket
import stat
import subprocess
import time

from servelib import KILN, WORKLOADS, check, fail, run


def get(path, sock):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock)
    s.sendall(b"GET " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    data = b""
    while True:
        b = s.recv(65536)
        if not b:
            break
        data += b
    s.close()
    return data.decode(errors="replace")


def main(work, servers):
    sock = os.path.join(work, "kiln.sock")
    p = subprocess.run([KILN, "serve", "--socket", sock, "--listen", "127.0.0.1:0"],
                       capture_output=True, text=True, timeout=30)
    check(p.returncode == 2 and "exclude" in p.stderr, "--listen with --socket is refused")
    proc = subprocess.Popen([KILN, "serve", "--socket", sock, "--data", work, "--workloads",
                             WORKLOADS, "--compile-workers", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        deadline = time.time() + 30
        while not os.path.exists(sock) and time.time() < deadline:
            time.sleep(0.05)
        if not os.path.exists(sock):
            fail("no socket after 30 s")
        check(stat.S_IMODE(os.stat(sock).st_mode) == 0o660, "the socket is mode 0660")
        r = get("/healthz", sock)
        check(r.startswith("HTTP/1.1 200") and '"status":"ok"' in r, "GET /healthz over the socket")
        r = get("/v1/nope", sock)
        check(r.startswith("HTTP/1.1 404"), "unknown route over the socket: 404")
    finally:
        proc.terminate()
        proc.wait(30)
    check(not os.path.exists(sock), "the socket is removed when the server stops")


run(main)
