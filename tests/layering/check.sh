#!/bin/sh
# The direction rule as a test (orchestrator/README.md): a folder may include
# headers only from the folders below it.
#   base/                   nothing else
#   formats/                base/: the codecs both sides of the sandbox use
#   harness/                formats/, base/: the code beside a hostile kernel
#   sandbox/, evaluator/    formats/, base/ (and themselves); evaluator/ never
#                           harness/ (the judge shares no code with what it judges
#                           but the formats)
#   pipeline/               base/, formats/, sandbox/, evaluator/
#   orchestrator/, service/ anything above but harness/
# A header is attributed to the folder that holds it; an include that names
# a header of a folder above the includer fails the test, naming both.
set -eu
src=${KILN_SOURCE_DIR:?KILN_SOURCE_DIR is not set}
cd "$src"

owner() { # header name -> the folders holding a file of that name
    for d in base formats harness sandbox evaluator pipeline orchestrator service; do
        [ -d "$d" ] || continue
        find "$d" -name "$1" -type f | grep -q . && printf '%s ' "$d"
    done
}
forbidden_for() {
    case "$1" in
    base) echo "formats harness sandbox evaluator pipeline orchestrator service" ;;
    formats) echo "harness sandbox evaluator pipeline orchestrator service" ;;
    harness) echo "sandbox evaluator pipeline orchestrator service" ;;
    sandbox | evaluator) echo "harness pipeline orchestrator service" ;;
    pipeline) echo "harness orchestrator service" ;;
    *) echo "harness" ;;
    esac
}

bad=0
for layer in base formats harness sandbox evaluator pipeline orchestrator service; do
    forbidden=$(forbidden_for "$layer")
    for f in $(find "$layer" -name '*.[ch]' -o -name '*.cu' | sort); do
        for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
            h=$(basename "$h")
            # A header of the includer's own folder (or base/) wins over a
            # same-named one above it.
            [ -n "$(find "$layer" base -name "$h" -type f 2>/dev/null)" ] && continue
            for o in $(owner "$h"); do
                for x in $forbidden; do
                    if [ "$o" = "$x" ]; then
                        echo "layering: $f includes $h from $o/, which $layer/ must not use" >&2
                        bad=1
                    fi
                done
            done
        done
    done
done
[ "$bad" -eq 0 ] || { echo "layering: move the code down a layer or pass the value in from the caller" >&2; exit 1; }
echo "layering: base < formats < harness | sandbox, evaluator < pipeline < orchestrator, service: ok"

# orchestrator/'s parts (orchestrator/README.md), each using only the ones
# below it: records < profile < propose < wlgen < optimize < cli.
order="records profile propose wlgen optimize cli"
rank() { i=0; for p in $order; do [ "$p" = "$1" ] && { echo $i; return; }; i=$((i + 1)); done; echo 99; }
for part in $order; do
    mine=$(rank "$part")
    for f in $(find "orchestrator/$part" -name '*.[ch]' | sort); do
        for h in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f"); do
            h=$(basename "$h")
            [ -f "orchestrator/$part/$h" ] && continue
            for o in $order; do
                if [ -f "orchestrator/$o/$h" ] && [ "$(rank "$o")" -gt "$mine" ]; then
                    echo "layering: $f includes $h from orchestrator/$o/, which orchestrator/$part/ must not use" >&2
                    bad=1
                fi
            done
        done
    done
done
[ "$bad" -eq 0 ] || { echo "layering: orchestrator/'s parts: records < profile < propose < wlgen < optimize < cli" >&2; exit 1; }
echo "layering: orchestrator: records < profile < propose < wlgen < optimize < cli: ok"
