# lib.sh - shared helpers of the pipeline tests (sourced by bash scripts).
#
# Each test gets its own temporary directory $T, removed on exit (also when
# the test fails), and the helpers below, which fail the test with a message
# naming what differed. KILN_BIN and KILN_SOURCE_DIR come from CTest.

set -u
: "${KILN_BIN:?KILN_BIN is not set (run through ctest)}"
: "${KILN_SOURCE_DIR:?KILN_SOURCE_DIR is not set (run through ctest)}"
FIX="$KILN_SOURCE_DIR/tests/pipeline_cli/fixtures"
# Timing runs are kept short: the tests judge outcomes, not speed. Seed 1:
# the tests share inputs generated once (kiln's default is a fresh seed).
FAST=(--warmups 1 --iterations 5 --seed 1)
export KILN_DATA_DIR="$KILN_SOURCE_DIR"
unset KILN_API_KEY OPENAI_API_KEY https_proxy http_proxy HTTPS_PROXY HTTP_PROXY

T=$(mktemp -d "${TMPDIR:-/tmp}/kiln-pipeline.XXXXXX") || exit 1
_kiln_bg_pids=()
cleanup()
{
    local p
    for p in "${_kiln_bg_pids[@]}"; do
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    rm -rf "$T"
}
trap cleanup EXIT

fail()
{
    echo "FAIL: $*" >&2
    exit 1
}

# run_kiln OUT ERR ARGS...: runs kiln; its exit status is in $rc.
run_kiln()
{
    local out=$1 err=$2
    shift 2
    "$KILN_BIN" "$@" >"$out" 2>"$err"
    rc=$?
}

# expect_rc WANT WHAT: fails unless the last run_kiln exited WANT.
expect_rc()
{
    if [ "$rc" != "$1" ]; then
        echo "--- stdout" >&2
        tail -n 40 "$T/out" >&2 2>/dev/null
        echo "--- stderr" >&2
        tail -n 40 "$T/err" >&2 2>/dev/null
        fail "$2: exit status $rc, expected $1"
    fi
}

# contains FILE FRAGMENT: the fixed string FRAGMENT is in FILE.
contains()
{
    grep -qF -- "$2" "$1" || {
        tail -n 40 "$1" >&2
        fail "$1 does not contain '$2'"
    }
}

not_contains()
{
    if grep -qF -- "$2" "$1"; then
        fail "$1 contains '$2'"
    fi
}

# jq_py FILE EXPR: prints the Python expression EXPR over the JSON document
# `d` loaded from FILE (no jq on the build machines).
jq_py()
{
    python3 - "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2], {"d": d, "len": len, "sorted": sorted, "set": set})
print(v if not isinstance(v, (list, dict)) else json.dumps(v, sort_keys=True))
PY
}

# expect_json FILE EXPR WANT: EXPR over FILE prints exactly WANT.
expect_json()
{
    local got
    got=$(jq_py "$1" "$2") || fail "$1: cannot evaluate $2"
    [ "$got" = "$3" ] || fail "$1: $2 is '$got', expected '$3'"
}

# sigint_default PROGRAM ARGS...: runs PROGRAM with SIGINT at its default
# action. A background job of a script starts with SIGINT ignored, and kiln
# keeps an ignored signal ignored (cli_catch_stop): this starts it as a
# terminal would, for tests that interrupt it. Only as a background job
# (`sigint_default ... &`): it execs, so $! is kiln's own pid.
sigint_default()
{
    exec python3 -c 'import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); os.execv(sys.argv[1], sys.argv[1:])' "$@"
}

# wait_for SECONDS COMMAND...: polls COMMAND every 0.2 s until it succeeds.
wait_for()
{
    local deadline=$((SECONDS + $1))
    shift
    until "$@"; do
        [ $SECONDS -lt $deadline ] || return 1
        sleep 0.2
    done
}
