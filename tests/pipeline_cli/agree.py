#!/usr/bin/env python3
"""agree.py RUN_DIR TABLE - the starting kernel, the best and every ratio
agree across the printed table (kiln optimize's stdout), summary.json, each
candidate's verdict.json and report.html: one statistic for every row (the
geomean over the performance cases of each case's median), from one timing
session: a resumed run's compared candidates were timed in its last
session (timing_session), the others show no figure anywhere.

Printed figures are compared with a tolerance for their printing precision
only; JSON figures with 1e-9 (they are the same numbers)."""
import html
import json
import math
import os
import re
import sys

run, table_path = sys.argv[1], sys.argv[2]
summary = json.load(open(os.path.join(run, "summary.json"), encoding="utf-8"))
problems = []


def check(ok, what):
    if not ok:
        problems.append(what)


def close(a, b, rel=1e-9):
    return a is not None and b is not None and abs(a - b) <= rel * max(abs(a), abs(b))


def printed(text, value):
    """`text` is `value` printed with text's number of decimals."""
    decimals = len(text.split(".")[1]) if "." in text else 0
    return abs(float(text) - value) <= 0.5 * 10**-decimals * (1 + 1e-9) + 1e-12


# summary.json: the start's figure is the geomean of its own per-case medians.
start = summary["reference_geomean_ms"]
cases = summary["perf_cases"]
check(len(cases) >= 2, "the workload should have two performance cases: %r" % cases)
geo = math.exp(sum(math.log(summary["reference_ms"][c]) for c in cases) / len(cases))
check(close(start, geo, 1e-9),
      "summary.json: reference_geomean_ms %r != geomean of reference_ms %r" % (start, geo))
passing = [c for c in summary["candidates"] if c["status"] == "pass" and c["compared"]]
check(passing, "no candidate passed")
session = summary["timing_session"]
for c in summary["candidates"]:
    if c["status"] == "pass" and not c["compared"]:
        check(c["timing_session"] < session and c["geomean_ms"] is None and c["case_ms"] is None
              and c["speedup_vs_reference"] is None,
              "summary.json: %s is not compared but has figures or this session: %r" % (c["id"], c))
    elif c["status"] == "pass":
        check(c["timing_session"] == session,
              "summary.json: %s compared but timed in session %r, not %r" %
              (c["id"], c["timing_session"], session))
for c in passing:
    g, sp = c["geomean_ms"], c["speedup_vs_reference"]
    check(close(sp, start / g, 1e-9),
          "summary.json: candidate %s speedup_vs_reference %r != start %r / geomean %r = %r" %
          (c["id"], sp, start, g, start / g))
    cg = math.exp(sum(math.log(c["case_ms"][k]) for k in cases) / len(cases))
    check(close(g, cg, 1e-9), "summary.json: candidate %s geomean_ms %r != geomean of case_ms %r" %
          (c["id"], g, cg))
    v = json.load(open(os.path.join(run, "candidates", c["id"], "verdict.json")))
    check(close(v["score_ms"], g), "verdict.json %s score_ms %r != %r" % (c["id"], v["score_ms"], g))
    check(v["timing_session"] == session, "verdict.json %s timing_session %r" %
          (c["id"], v["timing_session"]))
    for vc in v["cases"]:
        if vc["scored"] and vc["timing"]:
            check(close(vc["ref_median"], summary["reference_ms"][vc["case"]]),
                  "verdict.json %s case %s: ref_median %r is not this session's start %r" %
                  (c["id"], vc["case"], vc["ref_median"], summary["reference_ms"][vc["case"]]))
    check(close(v["speedup_ref"], sp),
          "verdict.json %s speedup_ref %r != %r" % (c["id"], v["speedup_ref"], sp))
best = summary["best"]
if best["candidate"] == "start":
    check(close(best["geomean_ms"], start), "best (start) geomean %r != %r" % (best["geomean_ms"], start))
    check(best["speedup_vs_reference"] == 1.0, "best (start) speedup %r" % best["speedup_vs_reference"])
else:
    b = next(c for c in summary["candidates"] if c["id"] == best["candidate"])
    check(close(best["geomean_ms"], b["geomean_ms"]), "best geomean differs from its candidate's")
    check(close(best["speedup_vs_reference"], start / b["geomean_ms"]), "best speedup")

# The table: "  ID STATUS STAGE GEOMEAN VS-START RANK [BEST] note"; RANK
# "2=" is a tie within noise with the one ranked above (summary's "tie").
rows = {}
for line in open(table_path, encoding="utf-8"):
    f = line.split()
    if len(f) >= 6 and (f[0] == "ref" or re.fullmatch(r"\d{3}", f[0])):
        rows[f[0]] = f
check("ref" in rows, "the table has no ref row")
if "ref" in rows:
    check(printed(rows["ref"][3], start), "table: ref %s, summary %r" % (rows["ref"][3], start))
    check(rows["ref"][4] == "1.00x", "table: ref %s" % rows["ref"][4])
    check(("BEST" in rows["ref"][6:7]) == (best["candidate"] == "start"), "table: ref BEST mark")
places = {e["candidate"]: "%d%s" % (e["place"], "=" if e["tie"] else "") if e["place"] else "-"
          for e in summary["ranking"]}
for c in summary["candidates"]:
    r = rows.get(c["id"])
    check(r is not None, "table: no row for %s" % c["id"])
    if r and c in passing:
        check(printed(r[3], c["geomean_ms"]), "table: %s geomean %s, summary %r" %
              (c["id"], r[3], c["geomean_ms"]))
        check(printed(r[4].rstrip("x"), c["speedup_vs_reference"]),
              "table: %s vs start %s, summary %r" % (c["id"], r[4], c["speedup_vs_reference"]))
        check(("BEST" in r[6:7]) == (best["candidate"] == c["id"]), "table: %s BEST mark" % c["id"])
    elif r and c["status"] == "pass":
        check(r[3] == "-" and r[4] == "-" and "not compared" in " ".join(r),
              "table: %s is not compared but shows %r" % (c["id"], r))
    if r:
        check(r[5] == places[c["id"]], "table: %s rank %s, summary's ranking %s" %
              (c["id"], r[5], places[c["id"]]))
# The line under the table says why: its ratio is the table's.
why = next((l for l in open(table_path, encoding="utf-8") if l.startswith("  why: ")), "")
m = re.search(r"(\d{3}): ([0-9.]+)x the starting kernel|the top-ranked.*?, (\d{3}), was ([0-9.]+)x",
              why)
if m and m.group(1):
    check(rows.get(m.group(1), [""] * 5)[4] == m.group(2) + "x", "why %r vs the table" % why)
elif m:
    check(rows.get(m.group(3), [""] * 5)[4] == m.group(4) + "x", "why %r vs the table" % why)

# report.html: the best section and the ranking rows.
page = open(os.path.join(run, "report.html"), encoding="utf-8").read()


def ms_of(text):
    """rpt_ms's "28.6 µs" / "1.42 ms" / "2.1 s" in ms, and its decimals."""
    m = re.fullmatch(r"([0-9.]+) (µs|ms|s)", html.unescape(text).strip())
    scale = {"µs": 1e-3, "ms": 1.0, "s": 1e3}[m.group(2)]
    return float(m.group(1)) * scale, scale, m.group(1)


def ms_printed(text, value):
    """%.3g: three significant digits."""
    v, scale, digits = ms_of(text)
    return abs(v - value) <= 0.5 * 10 ** (math.floor(math.log10(abs(value / scale))) - 2) * scale * 1.0001


m = re.search(r"<th>geomean latency</th><td[^>]*>([^<]*)</td>", page)
check(m and ms_printed(m.group(1), best["geomean_ms"]), "report.html: best geomean %r vs %r" %
      (m and m.group(1), best["geomean_ms"]))
m = re.search(r"<th>speedup vs start</th><td[^>]*>([0-9.]+)x \(starting kernel ([^)]*)\)", page)
check(m and printed(m.group(1), best["speedup_vs_reference"]) and ms_printed(m.group(2), start),
      "report.html: speedup vs start %r" % (m and m.group(0)))
for row in re.findall(r'<tr class="rank">(.*?)</tr>', page, re.S):
    cells = [re.sub(r"<[^>]*>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
    cid = cells[1].split()[0]
    c = next((x for x in passing if x["id"] == cid), None)
    if c is None:
        continue
    check(ms_printed(cells[3], c["geomean_ms"]), "report.html: %s geomean %s vs %r" %
          (cid, cells[3], c["geomean_ms"]))
    check(printed(cells[4].rstrip("x"), c["speedup_vs_reference"]),
          "report.html: %s vs start %s vs %r" % (cid, cells[4], c["speedup_vs_reference"]))

# nvbench's columns for the best (issue 26 item 10): how it was compiled and
# timed, and per case its samples and noise from its own verdict.json.
check(re.search(r"<th>compiled with</th><td[^>]*>cc -std=c11 [^<]*</td>", page) is not None,
      "report.html: the compile flags")
timed = json.load(open(os.path.join(run, "run.json")))["timed_runs"]
check(re.search(r"<th>timing</th><td[^>]*>fixed: %d runs a case after %d warmups</td>" %
                (timed["iterations"], timed["warmups"]), page) is not None,
      "report.html: the timing rule")
check("no baseline time for every case" not in page or summary["baseline"]["status"] != "ok",
      "report.html: the baseline was timed, but the best shows none")
# The heatmap: a compared candidate's cells are this session's start over its
# case times; one not compared says so, with no ratio.
svg = open(os.path.join(run, "heatmap.svg"), encoding="utf-8").read()
for c in summary["candidates"]:
    if c["status"] == "pass" and c["compared"]:
        for k in cases:
            s = summary["reference_ms"][k] / c["case_ms"][k]
            cell = ("%.2fx" if s < 10 else "%.1fx" if s < 100 else "%.0fx") % s
            check(">%s<" % cell in svg, "heatmap.svg: no cell %s for %s %s" % (cell, c["id"], k))
    elif c["status"] == "pass":
        check(">not compared<" in svg, "heatmap.svg: %s not compared is not said" % c["id"])
rows = re.findall(r"<tr><td[^>]*>(%s)</td><td[^>]*>(\d+)</td><td[^>]*>(\d+)</td>" % "|".join(cases),
                  page.split('id="best-cases"')[1].split("</table>")[0]) if 'id="best-cases"' in page else []
# (A kept starting kernel has no verdict.json of its own: no case table.)
if best["candidate"] != "start":
    check(rows and all(int(n) >= 1 for _, _, n in rows),
          "report.html: the best's cases with their sample counts: %r" % rows)

if problems:
    print("\n".join(problems))
    sys.exit(1)
