#!/bin/bash
# progress.sh - kiln optimize's status line on a terminal (issue 17): run
# under a pseudo-terminal, the screen it leaves has no row where the status
# line ("[2/3] evaluate best: ...") and a log line ("kiln: ...") meet, and
# the count never goes backwards, with --jobs 2 finishing out of order.
. "$(dirname "$0")/lib.sh"

python3 - "$KILN_BIN" "$T" "${FAST[@]}" <<'PY' || fail "the status line on a terminal"
import os, pty, re, sys
kiln, tmp, fast = sys.argv[1], sys.argv[2], sys.argv[3:]
argv = [kiln, "optimize", "saxpy", "--backend", "cpu", "--proposer", "tune",
        "--max-iterations", "4", "--jobs", "2", "--results", tmp + "/res"] + fast
pid, fd = pty.fork()
if pid == 0:
    os.execv(kiln, argv)
out = b""
while True:
    try:
        d = os.read(fd, 65536)
    except OSError:
        break
    if not d:
        break
    out += d
_, status = os.waitpid(pid, 0)
assert os.WEXITSTATUS(status) == 0, out[-2000:]
text = out.decode(errors="replace").replace("\r\n", "\n")
# What a terminal shows: "\r" (and "\r\x1b[K") restarts the row, "\n" ends it.
rows, cur = [], ""
for piece in re.split(r"(\r\x1b\[K|\r|\n)", text):
    if piece in ("\r\x1b[K", "\r"):
        cur = ""
    elif piece == "\n":
        rows.append(cur)
        cur = ""
    else:
        cur += piece
rows.append(cur)
status_rows = [r for r in rows if re.search(r"\[\d+/4\]", r)]
assert status_rows, "no status line was drawn: " + repr(text[-500:])
bad = [r for r in rows if re.search(r"\[\d+/4\]", r) and "kiln:" in r]
assert not bad, "a status line and a log line share a row: %r" % bad[:3]
counts = [int(m) for m in re.findall(r"\[(\d+)/4\]", text)]
assert counts == sorted(counts), "the count went backwards: %r" % counts
print("ok: %d rows, %d status draws, counts %s" % (len(rows), len(counts), counts[-1]))
PY
echo "ok: progress"
