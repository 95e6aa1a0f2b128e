"""report.html in headless Chromium. A real `kiln optimize saxpy --backend
cpu` run (fixtures/saxpy_passed_over.c: its fastest candidate is passed
over at the held-out check), and a copy of its record made hostile (markup
and very long text in the workload, case, tunable, note and reason
strings, a failed candidate), each regenerated with `kiln report`: the
sections exist, the heatmap has one row per candidate and a legend, the
progress chart rings the result and each candidate passed over, nothing
from the record became an element, no text spills out of its box at 1280
px, and scripts/report-screenshot makes a full-page PNG of the expected
size. One Chromium per page loads a copy with overflow.js for the DOM, the
spills and the height; one more makes the screenshot (and for the real
page one measures it, as report-screenshot does without a height).

usage: report_browser.py [RUN_DIR]: RUN_DIR (or KILN_REPORT_RUN=DIR) is an
existing cpu run of that kernel to use instead of a new one (ctest passes
the one orchestrator_report_reverified made); KILN_REPORT_KEEP=1 keeps the
pages and screenshots."""
import html.parser
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

KILN = os.environ.get("KILN_BIN", "build/kiln")
SRC = os.environ.get("KILN_SOURCE_DIR", ".")
HERE = os.path.dirname(os.path.abspath(__file__))
SECTIONS = ["header", "notices", "best", "ranking", "heatmap", "heatmap-svg", "heatmap-legend",
            "latency", "progress", "progress-svg", "baseline", "environment", "kernel"]
EVIL_WL = "<script>document.title='pwned'</script>"
EVIL_CASE = "<b>big</b>_" + "x" * 90
EVIL_KEY = "<i>TILE</i>"
EVIL_REASON = "<img src=x onerror=alert(1)> " + "very long reason " * 60
EVIL_ARG = "--note=<script>alert(2)</script>"

chromium = shutil.which("chromium") or shutil.which("chromium-browser")
if not chromium:
    print("SKIP: no chromium on PATH (apt-get install chromium, or run scripts/setup)")
    sys.exit(77)


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg, flush=True)


class Dom(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data):
        self.text.append(data)

    def count(self, tag, cls):
        return sum(1 for t, a in self.tags if t == tag and cls in (a.get("class") or "").split())


def browse(work, url, width=1280, height=1200):
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
           "--user-data-dir=" + os.path.join(work, "chromium-profile"),
           "--window-size=%d,%d" % (width, height), "--dump-dom", url]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
    if p.returncode != 0:
        fail("chromium --dump-dom %s: %s" % (url, p.stderr[-2000:]))
    return p.stdout


def probe(work, page, name):
    """One Chromium on a copy of `page` with overflow.js appended: the DOM
    as loaded (the checker's script removes itself; its result is taken
    out), what spills, and the page's height in px."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(HERE, "overflow.js")) as f:
        js = f.read()
    path = os.path.join(work, name + "-check.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", "<script>" + js + "</script></body>"))
    dom = browse(work, "file://" + path)
    m = re.search(r'<pre id="overflow-result" data-height="(\d+)">(.*?)</pre>', dom, re.S)
    if not m:
        fail("overflow.js gave no result for " + name)
    try:
        spills = json.loads(html.unescape(m.group(2)))
    except ValueError:
        fail("overflow.js result for %s is not JSON: %r" % (name, m.group(2)[:500]))
    return dom[:m.start()] + dom[m.end():], spills, int(m.group(1))


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n":
        fail(path + " is not a PNG")
    return struct.unpack(">II", head[16:24])


def optimize(work):
    given = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("KILN_REPORT_RUN")
    if given:
        run = os.path.join(work, "real", "run-001")
        shutil.copytree(given, run, symlinks=True, ignore=shutil.ignore_patterns("work"))
        return run
    res = os.path.join(work, "real")
    # Few timing runs: the page is checked, not the times.
    p = subprocess.run([KILN, "optimize", "saxpy", "--backend", "cpu", "--initial-kernel",
                        os.path.join(HERE, "fixtures", "saxpy_passed_over.c"),
                        "--max-iterations", "4", "--warmups", "2", "--iterations", "30",
                        "--seed", "1", "--results", res], capture_output=True, text=True,
                       timeout=1000, cwd=SRC)
    if p.returncode != 0:
        fail("kiln optimize: rc %d: %s" % (p.returncode, p.stderr[-3000:]))
    return os.path.join(res, "run-001")


def load(path):
    with open(path) as f:
        return json.load(f)


def save(path, doc):
    with open(path, "w") as f:
        json.dump(doc, f)


def make_hostile(real, work):
    """A copy of the record with markup and overlong text everywhere the
    page shows record strings, and one more candidate that failed."""
    run = os.path.join(work, "hostile", "run-001")
    shutil.copytree(real, run, symlinks=True, ignore=shutil.ignore_patterns("work"))
    s = load(os.path.join(run, "summary.json"))
    old = s["perf_cases"][-1]

    def rename(d):
        if isinstance(d, dict) and old in d:
            d[EVIL_CASE] = d.pop(old)

    s["workload"] = EVIL_WL
    s["perf_cases"][-1] = EVIL_CASE
    rename(s["reference_ms"])
    rename(s["baseline"]["ms"])
    for c in s["candidates"]:
        rename(c["case_ms"])
    s["candidates"].append({"id": "099", "status": "wrong_answer", "stage": "verify",
                            "reason": EVIL_REASON, "geomean_ms": 0, "speedup_vs_reference": 0,
                            "case_ms": {}, "speedup_vs_baseline": None})
    s["ranking"].append({"candidate": "099", "place": 0, "status": "wrong_answer",
                         "reason": EVIL_REASON})
    save(os.path.join(run, "summary.json"), s)
    first = s["candidates"][0]["id"]
    vpath = os.path.join(run, "candidates", first, "verdict.json")
    v = load(vpath)
    v["config"][EVIL_KEY] = "y" * 300
    v["note"] = EVIL_REASON
    for c in v["cases"]:
        if c["case"] == old:
            c["case"] = EVIL_CASE
    save(vpath, v)
    r = load(os.path.join(run, "run.json"))
    r["command"].append(EVIL_ARG)
    save(os.path.join(run, "run.json"), r)
    h = load(os.path.join(run, "history.json"))
    h.append({"iteration": len(h) + 1, "candidate": "099", "note": EVIL_REASON,
              "status": "wrong_answer", "stage": "verify", "reason": EVIL_REASON})
    save(os.path.join(run, "history.json"), h)
    return run, len(s["candidates"]), len(s["perf_cases"])


def check_report(work, run, name, ncand, ncases, hostile):
    p = subprocess.run([KILN, "report", run], capture_output=True, text=True, timeout=120)
    check(p.returncode == 0, "%s: kiln report (%s)" % (name, p.stderr.strip()[-500:]))
    page = os.path.join(run, "report.html")
    with open(page, encoding="utf-8") as f:
        source = f.read()
    check("<script" not in source.lower() and not re.search(r"<[a-zA-Z]+[^>]*\s(src|href)=",
                                                             source) and
          "http://" not in source.replace("http://www.w3.org/2000/svg", ""),
          "%s: no script and no external resource in report.html" % name)
    dom, spills, height = probe(work, page, name)
    d = Dom()
    d.feed(dom)
    ids = {a.get("id") for _, a in d.tags}
    check(all(x in ids for x in SECTIONS), "%s: sections %s" % (name, [x for x in SECTIONS
                                                                        if x not in ids]))
    check(d.count("g", "row") == ncand, "%s: %d heatmap rows for %d candidates" %
          (name, d.count("g", "row"), ncand))
    check(d.count("svg", "case-chart") == ncases, "%s: one latency chart per case (%d)" %
          (name, d.count("svg", "case-chart")))
    check(d.count("tr", "rank") == ncand, "%s: a ranking row per candidate" % name)
    best = load(os.path.join(run, "summary.json"))["best"]
    rings = sum(1 for t, a in d.tags if t == "circle" and a.get("class") == "chosen")
    passed = sum(1 for t, a in d.tags if t == "circle" and a.get("class") == "passed")
    check(rings == 1 and passed == len(best["passed_over"]) and d.count("li", "passed-over") ==
          len(best["passed_over"]), "%s: the result ringed, %d passed over ringed and listed" %
          (name, passed))
    tags = {t for t, _ in d.tags}
    check(not tags & {"script", "img", "b", "i"}, "%s: no element from record text: %s" %
          (name, sorted(tags)))
    text = "".join(d.text)
    check("kiln optimize" in text and "before timing" in text, "%s: the environment block" % name)
    if hostile:
        check(EVIL_WL in text and EVIL_ARG in text and EVIL_KEY in text and
              EVIL_REASON[:40] in text and EVIL_CASE[:20] in text,
              "%s: hostile strings shown as text" % name)
        title = dom.split("<title>")[1].split("</title>")[0]
        check(title.startswith("kiln run-001: ") and "\u2026" in text,
              "%s: no script ran (title %r); long text cut with an ellipsis" % (name, title[:60]))
    check(not spills, "%s: nothing spills at 1280 px: %s" % (name, spills[:10]))
    # The real page's screenshot measures the page itself; the hostile one
    # is given the height the probe measured.
    shot = os.path.join(work, name + ".png")
    p = subprocess.run([os.path.join(SRC, "scripts", "report-screenshot"), run, shot] +
                       (["1280", str(height)] if hostile else []),
                       capture_output=True, text=True, timeout=300)
    check(p.returncode == 0, "%s: scripts/report-screenshot (%s)" % (name, p.stderr[-500:]))
    w, h = png_size(shot)
    check(w == 1280 and 1500 <= h <= 16000 and h == min(height, 16000) and
          os.path.getsize(shot) > 50000,
          "%s: screenshot %dx%d (page %d px), %d bytes" % (name, w, h, height,
                                                          os.path.getsize(shot)))


def checker_can_fail(work):
    """overflow.js flags a text that runs out of its cell and a spilling
    table cell: the checks above are not vacuous."""
    page = os.path.join(work, "spill.html")
    with open(page, "w") as f:
        f.write("<!DOCTYPE html><html><body><div style=\"width:50px;overflow:hidden;"
                "white-space:nowrap\">" + "x" * 80 + "</div><svg viewBox=\"0 0 100 40\" "
                "width=\"100\" height=\"40\"><g class=\"cell\"><rect x=\"0\" y=\"0\" width=\"30\""
                " height=\"20\"/><text x=\"2\" y=\"14\">much too long</text></g></svg>"
                "</body></html>")
    _, spills, _ = probe(work, page, "spill")
    check(len(spills) >= 2, "overflow.js finds a spilling box and a text out of its cell: %s"
          % spills)


def main(work):
    checker_can_fail(work)
    real = optimize(work)
    s = load(os.path.join(real, "summary.json"))
    check_report(work, real, "real", len(s["candidates"]), len(s["perf_cases"]), False)
    run, ncand, ncases = make_hostile(real, work)
    check_report(work, run, "hostile", ncand, ncases, True)


work = tempfile.mkdtemp(prefix="kiln-report-test-")
try:
    main(work)
finally:
    if os.environ.get("KILN_REPORT_KEEP"):  # to look at the pages and screenshots
        print("kept " + work)
    else:
        shutil.rmtree(work, ignore_errors=True)
