"""The HTML page at / in headless Chromium: it renders the queue and the
leaderboard, and hostile text from the database (a user name holding a
script, a workload name holding markup) shows as text, never as elements.
It shows no submission id (a tenant's handle) and says why cpu passes are
not ranked; its CSP is a response header."""
import html.parser
import os
import shutil
import sqlite3
import subprocess
import sys
import time

from servelib import Server, check, run, submission

chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("SKIP: no chromium on PATH (apt-get install chromium, or run scripts/setup)")
    sys.exit(77)

EVIL_USER = "<script>document.title='pwned'</script>"
EVIL_WL = "<img src=x onerror=alert(1)>"


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text, self.stack, self.cells = [], [], [], {}

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self.stack.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass

    def handle_data(self, data):
        self.text.append(data)
        if self.stack and self.stack[-1][0] == "td":
            self.cells.setdefault(self.stack[-1][1].get("class", ""), []).append(data)


def browse(url, work):
    profile = os.path.join(work, "chromium-profile")
    base = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--user-data-dir=" + profile]
    p = subprocess.run(base + ["--dump-dom", url], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        print(p.stderr[-2000:])
    shot = os.path.join(work, "page.png")
    q = subprocess.run(base + ["--window-size=1000,700", "--screenshot=" + shot, url],
                       capture_output=True, text=True, timeout=120)
    return p.stdout, shot if q.returncode == 0 else None


def main(work, servers):
    # Token names on the page (the operator's choice): the hostile name below
    # must render as text.
    s = Server(work, extra=["--public-names"]).start()
    servers.append(s)
    tok = s.token("alice")
    st, doc = s.request("POST", "/v1/submissions", submission(), token=tok)
    check(st == 202, "a submission for the board")
    sid = doc["id"]
    s.wait_done(tok, [sid], 180)
    # Hostile values as they would be if a name check ever let them through.
    with sqlite3.connect(s.db, timeout=10) as c:
        c.execute("INSERT INTO jobs(id, token_id, user, body_sha, workload, backend, source, state,"
                  " submitted) VALUES('evil0000evil0000', 't', ?, 'x', ?, 'cuda', 'x', 'queued', ?)",
                  (EVIL_USER, EVIL_WL, time.time()))
        c.execute("INSERT INTO jobs(id, token_id, user, body_sha, workload, backend, source, state,"
                  " submitted, status, verified, score_ms, gpu_model) VALUES('evil1111evil1111', 't',"
                  " ?, 'y', 'saxpy', 'cuda', 'x', 'done', ?, 'pass', 1, 0.5, ?)",
                  (EVIL_USER, time.time(), "<b>gpu</b>"))
    dom, shot = browse("http://127.0.0.1:%d/" % s.port, work)
    d = Dom()
    d.feed(dom)
    tags = [t for t, _ in d.tags]
    text = "".join(d.text)
    check("table" in tags and any(a.get("id") == "queue" for _, a in d.tags), "the queue table renders")
    check(EVIL_USER in d.cells.get("user", []), "the leaderboard lists the GPU entry's user")
    check("1 verified cpu submission(s), judged but not ranked" in text and "never ranked" in text,
          "alice's cpu pass is counted and the page says why it is not ranked")
    check(sid not in dom and "evil1111evil1111" not in dom,
          "no submission id on the public page")
    st, r, _ = s.request("GET", "/", raw=True)
    check("default-src 'none'" in (r.getheader("Content-Security-Policy") or ""),
          "the page's CSP is a header")
    check("script" not in tags and "img" not in tags and "b" not in tags,
          "no element from hostile text (script, img, b): %s" % sorted(set(tags)))
    check(EVIL_USER in text and EVIL_WL in text and "<b>gpu</b>" in text,
          "hostile text is shown as text: %s" % [x for x in (EVIL_USER, EVIL_WL, "<b>gpu</b>") if x not in text])
    check("pwned" not in dom.split("<title>")[1].split("</title>")[0], "no script ran")
    check(shot and os.path.getsize(shot) > 1000, "a screenshot was taken (%s)" % shot)


run(main)
