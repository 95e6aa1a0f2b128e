"""After the held-out re-verification at the end of a run, every place that
shows the result names the same candidate with the same reasons: the
printed table (BEST, why:, passed over:, best:), summary.json (best,
best_candidate, candidates), candidates/NNN/verdict.json, and report.html
(best section, passed-over list, ranking, the progress chart's rings).

`kiln optimize saxpy --backend cpu` from fixtures/saxpy_passed_over.c: its
fastest configuration passes the visible cases and fails the held-out
check, so it is passed over at finalize. The run is left in OUT_DIR/run-001
for orchestrator_report_browser (usage: reverified.py OUT_DIR)."""
import html.parser
import json
import os
import shutil
import subprocess
import sys

KILN = os.environ.get("KILN_BIN", "build/kiln")
SRC = os.environ.get("KILN_SOURCE_DIR", ".")
HERE = os.path.dirname(os.path.abspath(__file__))


def fail(msg):
    print("FAIL: " + msg, flush=True)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)
    print("ok: " + msg, flush=True)


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


class Page(html.parser.HTMLParser):
    """The text of every element, by tag, class and id; SVG titles by the
    element they describe."""

    def __init__(self):
        super().__init__()
        self.stack, self.done = [], []

    def handle_starttag(self, tag, attrs):
        self.stack.append({"tag": tag, "attrs": dict(attrs), "text": ""})

    def handle_endtag(self, tag):
        while self.stack:  # closes void elements (meta, col) on the way
            e = self.stack.pop()
            self.done.append(e)
            if self.stack:
                parent = self.stack[-1]
                parent["text"] += e["text"]
                if e["tag"] == "title":
                    parent["title"] = e["text"]
                if e["tag"] in ("td", "th"):
                    parent.setdefault("cells", []).append(e["text"])
            if e["tag"] == tag:
                break

    def handle_data(self, data):
        if self.stack:
            self.stack[-1]["text"] += data

    def find(self, tag, cls=None, id_=None):
        return [e for e in self.done if e["tag"] == tag and
                (cls is None or cls in (e["attrs"].get("class") or "").split()) and
                (id_ is None or e["attrs"].get("id") == id_)]


def main(out):
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    kernel = os.path.join(HERE, "fixtures", "saxpy_passed_over.c")
    typed = ["optimize", "saxpy", "--backend", "cpu", "--initial-kernel", kernel,
             "--max-iterations", "4", "--warmups", "2", "--iterations", "30", "--seed", "1",
             "--results", out]
    p = subprocess.run([KILN] + typed, capture_output=True, text=True, timeout=1000, cwd=SRC)
    check(p.returncode == 0, "kiln optimize (rc %d): %s" % (p.returncode, p.stderr[-3000:]))
    printed = p.stdout.splitlines()
    run = os.path.join(out, "run-001")
    s = load(os.path.join(run, "summary.json"))
    best, verified = s["best"], s["best_candidate"]
    check(isinstance(best, dict), "a result: %s" % best)
    chosen = best["candidate"]

    # The held-out check failed the fastest configuration (UNROLL=8).
    failed = [c for c in s["candidates"] if c["stage"] == "held_out"]
    check(len(failed) == 1 and failed[0]["status"] == "wrong_answer",
          "one candidate failed the held-out check: %s" % [c["id"] for c in failed])
    x = failed[0]["id"]
    check(any(e["candidate"] == x and "held-out check" in e["reason"]
              for e in best["passed_over"]),
          "%s is passed over, with the held-out failure: %s" % (x, best["passed_over"]))

    check(failed[0]["geomean_ms"] is None and failed[0]["speedup_vs_reference"] is None and
          failed[0]["speedup_vs_baseline"] is None,
          "summary.json claims no time or speedup for %s" % x)

    # verdict.json says what summary.json says, after the check.
    for c in s["candidates"]:
        v = load(os.path.join(run, "candidates", c["id"], "verdict.json"))
        check(v["status"] == c["status"] and v["stage"] == c["stage"] and
              v["summary"].startswith(c["status"]),
              "candidates/%s/verdict.json: %s at %s (%r), as summary.json" %
              (c["id"], v["status"], v["stage"], v["summary"][:40]))
    if verified:
        v = load(os.path.join(run, "candidates", verified["candidate"], "verdict.json"))
        check(v["reverified"] is True and v["summary"] == verified["summary"],
              "best_candidate %s: verdict.json says re-verified, with summary.json's summary"
              % verified["candidate"])
    if chosen != "start":
        check(verified and verified["candidate"] == chosen and best["summary"] ==
              verified["summary"], "best and best_candidate agree on %s" % chosen)

    # The printed table: BEST on the result's row, why, passed over, best:.
    rows = [ln.split()[0] for ln in printed if " BEST " in ln or ln.endswith(" BEST")]
    check(rows == ["ref" if chosen == "start" else chosen],
          "BEST printed on the row of %s: %s" % (chosen, rows))
    check("  why: " + best["why"] in printed, "the printed why: is best.why")
    po = [ln[len("  passed over: "):] for ln in printed if ln.startswith("  passed over: ")]
    check(po == [e["reason"] for e in best["passed_over"]],
          "the printed passed over: lines are best.passed_over")
    last = [ln for ln in printed if ln.startswith("best: ")]
    want = "best: the starting kernel, kept" if chosen == "start" else \
        "best: candidate %s, %s;" % (chosen, best["summary"])
    check(len(last) == 1 and last[0].startswith(want), "printed %r, want %r" % (last, want))
    xrow = [ln for ln in printed if ln.split()[:3] == [x, "wrong_answer", "held_out"]]
    check(len(xrow) == 1, "the table shows %s failed at held_out" % x)

    # report.html: the same candidate, the same reasons.
    with open(os.path.join(run, "report.html"), encoding="utf-8") as f:
        page = Page()
        page.feed(f.read())
    rows = {tr["text"] for tr in page.find("tr")}
    # The environment block: the command line as typed (getopt permutes the
    # vector it parses), the compiler the cpu backend used.
    check(load(os.path.join(run, "run.json"))["command"] == typed,
          "run.json records the command line as typed")
    check("backendcpu, compiler cc, proposer tune" in rows,
          "report: the cpu backend's compiler is cc: %s" % [r for r in rows
                                                             if r.startswith("backend")])
    want = "start: the starting kernel, kept" if chosen == "start" else chosen
    check("candidate" + want in rows, "report: best section names %s" % want)
    check("why this one" + best["why"] in rows, "report: best section's why is best.why")
    li = [e["text"] for e in page.find("li", "passed-over")]
    check(li == [e["reason"] for e in best["passed_over"]],
          "report: the passed-over list is best.passed_over")
    rings = page.find("circle", "chosen")
    check(len(rings) == 1 and rings[0].get("title", "").endswith(": " + best["why"]),
          "report: one ring on the result, with why: %s" % [r.get("title") for r in rings])
    passed = sorted(r.get("title", "").split(":")[1].strip() for r in page.find("circle", "passed"))
    check(passed == sorted(e["candidate"] for e in best["passed_over"]),
          "report: a passed-over ring per best.passed_over entry: %s" % passed)
    marks = [e for e in page.find("text") if e.get("title", "").startswith(x + " ")]
    check(len(marks) == 1 and "wrong_answer held-out check" in marks[0]["title"],
          "report: %s drawn as a failure in the progress chart" % x)
    # Ranking cells: place, candidate, status, geomean, vs start, vs vendor,
    # roofline, held-out, reason.
    ranking = {tr["cells"][1].split()[0]: tr["cells"] for tr in page.find("tr", "rank")}
    check(ranking[x][0] == "-" and ranking[x][2] == "wrong_answer" and ranking[x][3:7] ==
          ["-"] * 4 and
          ranking[x][7] == "wrong_answer" and "held-out check" in ranking[x][8],
          "report: ranking shows %s unranked, failed at the held-out check: %s" % (x, ranking[x]))
    if verified:
        check(ranking[verified["candidate"]][7] == "pass",
              "report: best_candidate %s passed the held-out check: %s" %
              (verified["candidate"], ranking[verified["candidate"]]))


if len(sys.argv) != 2:
    sys.exit("usage: reverified.py OUT_DIR")
main(sys.argv[1])
