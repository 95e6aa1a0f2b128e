#!/usr/bin/env python3
"""fatbin_archs.py [--expect|--has "75 80 ..."] FILE...

Lists the GPU code a fatbin holds (an nvcc -fatbin output, or a program
that embeds one, such as kiln-harness-cuda): one line per image, "elf 90"
(SASS for sm_90) or "ptx 75" (PTX for compute_75). CI has no cuobjdump;
the layout read here is the fatbin container's: a 16-byte header (magic
0xBA55ED50, version, header size, payload size), then entries of a 64+ byte
header (kind 1 PTX / 2 ELF, ..., sm version at byte 28) and their payload.

With --expect, checks that each FILE holds an ELF for every listed
architecture and PTX for the lowest, and that the list itself covers the
architectures GPU MODE's runners use (T4 sm_75, A100 sm_80, sm_86, L4 sm_89,
H100 sm_90, B200 sm_100, sm_120): exit 1 naming what is missing. --has
checks the ELF images alone (a fatbin built for some of them).
"""
import struct
import sys

MAGIC = 0xBA55ED50
RUNNERS = [75, 80, 86, 89, 90, 100, 120]


def images(data):
    """Every (kind, sm) of every fatbin container in data."""
    out = []
    at = 0
    while True:
        at = data.find(struct.pack("<I", MAGIC), at)
        if at < 0 or at + 16 > len(data):
            return out
        _, version, hsize, size = struct.unpack_from("<IHHQ", data, at)
        if version != 1 or hsize != 16 or at + hsize + size > len(data):
            at += 4
            continue
        off, end = at + hsize, at + hsize + size
        while off + 32 <= end:
            kind, _, ehs, psz = struct.unpack_from("<HHIQ", data, off)
            sm = struct.unpack_from("<I", data, off + 28)[0]
            if kind not in (1, 2) or ehs < 32 or off + ehs + psz > end:
                break
            out.append(("ptx" if kind == 1 else "elf", sm))
            off += ehs + psz
        at = end


def main(argv):
    expect = None
    whole = False
    if len(argv) > 2 and argv[1] in ("--expect", "--has"):
        expect = sorted(int(a) for a in argv[2].split())
        whole = argv[1] == "--expect"
        argv = argv[2:]
    if len(argv) < 2:
        print(__doc__.strip().splitlines()[0], file=sys.stderr)
        return 2
    bad = 0
    if whole:
        short = [a for a in RUNNERS if a not in expect]
        if short:
            print("the toolkit's list lacks " + ", ".join("sm_%d" % a for a in short), file=sys.stderr)
            bad = 1
    for path in argv[1:]:
        with open(path, "rb") as f:
            found = images(f.read())
        if expect is None:
            for kind, sm in found:
                print("%s %d" % (kind, sm))
            continue
        elf = {sm for kind, sm in found if kind == "elf"}
        ptx = {sm for kind, sm in found if kind == "ptx"}
        missing = ["sm_%d" % a for a in expect if a not in elf]
        if whole and expect and expect[0] not in ptx:
            missing.append("PTX compute_%d" % expect[0])
        if missing:
            print("%s: no code for %s (has %s)" % (path, ", ".join(missing),
                  ", ".join("%s %d" % k for k in found) or "none"), file=sys.stderr)
            bad = 1
        else:
            print("%s: sm_%s%s" % (path, " sm_".join(str(a) for a in expect),
                                   " and PTX compute_%d" % expect[0] if whole else ""))
    return bad


if __name__ == "__main__":
    sys.exit(main(sys.argv))
