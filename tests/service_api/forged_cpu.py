"""No timing a candidate's own process can write reaches a leaderboard (cpu
backend): a correct saxpy whose destructor rewrites /out/timings.json to
1e-06 ms per sample (the audit saw it ranked first over an honest 1.97 ms)
is judged like any other, and neither it nor the honest one is ranked: the
board counts cpu passes and says why it does not rank them. The server
runs with its default timing rule: adaptive, each case until the RSE of its
mean is under 0.5% (recorded in the submission's record)."""
import json
import os

from servelib import Server, check, run, submission, KERNEL_C

# Runs after the harness wrote its timings, in the harness's own process.
FORGER_C = KERNEL_C + r"""
#include <stdio.h>
#include <string.h>
static char kiln_in[1 << 20], kiln_out[1 << 21];
__attribute__((destructor)) static void kiln_forge(void)
{
    FILE *f = fopen("/out/timings.json", "r");
    if (!f)
        return;
    size_t n = fread(kiln_in, 1, sizeof(kiln_in) - 1, f);
    fclose(f);
    kiln_in[n] = 0;
    char *p = kiln_in, *o = kiln_out;
    for (;;) {
        char *m = strstr(p, "\"samples_ms\"");
        char *lb = m ? strchr(m, '[') : NULL, *rb = lb ? strchr(lb, ']') : NULL;
        if (!rb) {
            strcpy(o, p);
            break;
        }
        memcpy(o, p, (size_t)(lb + 1 - p));
        o += lb + 1 - p;
        int k = 0;
        for (char *q = lb + 1; q < rb; q++)
            k += *q == ',';
        for (int i = 0; i <= k; i++)
            o += sprintf(o, "%s1e-06", i ? ", " : "");
        p = rb;
    }
    f = fopen("/out/timings.json", "w");
    if (f) {
        fputs(kiln_out, f);
        fclose(f);
    }
}
"""


def main(work, servers):
    # The service's default timing (no --until-rse): few runs, adaptively.
    s = Server(work, defaults=True, extra=["--warmups", "1", "--iterations", "3"]).start()
    servers.append(s)
    honest = s.token("honest")
    mallory = s.token("mallory")
    st, doc = s.request("POST", "/v1/submissions", submission(), token=honest)
    check(st == 202, "an honest cpu submission")
    h = doc["id"]
    st, doc = s.request("POST", "/v1/submissions", submission(source=FORGER_C), token=mallory)
    check(st == 202, "a cpu submission that rewrites its own timings")
    m = doc["id"]
    s.wait_done(honest, [h], 300)
    s.wait_done(mallory, [m], 300)
    st, hv = s.request("GET", "/v1/submissions/" + h, token=honest)
    st, mv = s.request("GET", "/v1/submissions/" + m, token=mallory)
    print("note: honest %s %s ms; forger %s %s ms" % (hv["verdict"]["status"],
          hv["verdict"]["score_ms"], mv["verdict"]["status"], mv["verdict"]["score_ms"]))
    check(hv["verdict"]["status"] == "pass" and hv["verdict"]["verified"] is True,
          "the honest one passes, verified")
    st, board = s.request("GET", "/v1/leaderboards/saxpy")
    passes = sum(v["verdict"]["status"] == "pass" and v["verdict"]["verified"] for v in (hv, mv))
    check(st == 200 and board["gpus"] == {}, "no cpu entry is ranked, the forger's least of all")
    check(board["unranked"]["cpu"]["verified_passes"] == passes
          and "runs inside the process that times it" in board["unranked"]["cpu"]["why"],
          "the board counts the cpu passes and says why they are not ranked")
    st, r, page = s.request("GET", "/", raw=True)
    check("never ranked" in page.decode(), "the page says so too")
    rec = json.load(open(os.path.join(work, "records", h, "verdict.json")))
    check(rec["timing_rule"]["rule"] == "adaptive" and rec["timing_rule"]["target_rse"] == 0.005
          and rec["timing_rule"]["iterations"] == 3
          and all(c["timing"]["n"] >= 1 for c in rec["cases"] if c.get("timing")),
          "the service times adaptively by default, and the record says so: %s" % rec["timing_rule"])


run(main)
