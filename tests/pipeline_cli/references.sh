#!/bin/bash
# references.sh - every built-in reference.py against a plain-loop oracle
# (references.py says how), run by a python3 that has numpy, found in
# base/pyfind.h's order.
. "$(dirname "$0")/lib.sh"
py=
for p in ${KILN_PYTHON:-} $(type -ap python3) /usr/bin/python3; do
    if "$p" -c 'import numpy' 2>/dev/null; then
        py=$p
        break
    fi
done
[ -n "$py" ] || fail "no python3 with numpy (set KILN_PYTHON)"
"$py" "$KILN_SOURCE_DIR/tests/pipeline_cli/references.py" "$KILN_SOURCE_DIR/workloads" ||
    fail "a reference differs from its loop oracle"
