#!/bin/bash
# profile.sh CASE [ATTACK] - `kiln optimize --profile` and the profile sandbox:
#   cpu      --profile on the cpu backend: one clear "not available" message,
#            recorded in run.json, and the run still succeeds (no GPU needed)
#   sandbox  the profile policy's widening stays contained: AF_INET reaches
#            only the sandbox's own loopback, the refused syscalls stay
#            refused, /dev/shm is /tmp (ATTACK: tests/sandbox's attack program)
#   gpu      (label gpu) kiln optimize saxpy --profile --max-iterations 2 on
#            the GPU: profile.json with metrics, OR the documented refusal
#            message (counters admin-only, ncu missing, sandbox refusal)
. "$(dirname "$0")/../pipeline_cli/lib.sh"
case_name=$1
RES=$T/results

case "$case_name" in
cpu)
    run_kiln "$T/out" "$T/err" optimize saxpy --backend cpu --profile --max-iterations 2 \
        --results "$RES" --quiet "${FAST[@]}"
    expect_rc 0 "kiln optimize --profile on the cpu backend"
    run=$RES/run-001
    msg="kiln: --profile: Nsight Compute profiles CUDA kernels and this run uses the cpu backend, which has no GPU counters; continuing without profile data"
    contains "$T/err" "$msg"
    [ "$(grep -cF -- "--profile" "$T/err")" = 1 ] || { cat "$T/err" >&2; fail "the message is not said exactly once"; }
    expect_json "$run/run.json" 'd["profile"]["requested"]' True
    expect_json "$run/run.json" 'd["profile"]["available"]' False
    expect_json "$run/run.json" 'd["profile"]["message"].startswith("Nsight Compute profiles CUDA kernels")' True
    expect_json "$run/history.json" 'len(d)' 2
    expect_json "$run/history.json" 'any("profile" in h for h in d)' False
    expect_json "$run/summary.json" 'd["best_candidate"]["held_out"]' pass
    ls "$run"/candidates/*/profile.json "$run"/reference/profile.json 2>/dev/null && fail "profile.json written without a profile"
    # Without --profile, run.json says so and nothing is said.
    run_kiln "$T/out" "$T/err" optimize saxpy --backend cpu --max-iterations 1 \
        --results "$RES" --quiet "${FAST[@]}"
    expect_rc 0 "kiln optimize without --profile"
    expect_json "$RES/run-002/run.json" 'd["profile"]' False
    not_contains "$T/err" "--profile"
    ;;
sandbox)
    ATTACK=${2:?the attack program}
    [ -x "$ATTACK" ] || fail "$ATTACK is not built"
    cp "$ATTACK" "$T/attack" && chmod 755 "$T" "$T/attack"
    sb() { "$KILN_BIN" sandbox --policy "$1" --image minimal --in "$T/attack:attack" "${@:2}" >"$T/out" 2>"$T/err"; rc=$?; }
    # AF_INET is allowed for ncu's loopback link, but the namespace has
    # nothing else: the host's listener and the outside stay unreachable.
    python3 -c 'import socket,time
s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(5)
print(s.getsockname()[1], flush=True); time.sleep(60)' >"$T/port" &
    _kiln_bg_pids+=($!)
    # Bounded (30 s): python3's start on a loaded host can take seconds.
    wait_for 30 test -s "$T/port"
    port=$(cat "$T/port")
    [ -n "$port" ] || fail "the host listener did not start"
    sb profile -- /in/attack connect "$port"
    expect_rc 0 "connect under the profile policy"
    printf 'connect 127.0.0.1: ECONNREFUSED\nconnect outside: ENETUNREACH\n' | cmp -s - "$T/out" \
        || { cat "$T/out" >&2; fail "AF_INET reached beyond the sandbox's loopback"; }
    for pair in ptrace:101 mount:165 bpf:321 perf_event_open:298 keyctl:250 unshare:272 \
        setns:308 io_uring_setup:425; do
        sb profile -- /in/attack syscall "${pair#*:}"
        expect_rc 159 "${pair%%:*} under the profile policy"
        contains "$T/err" "refused syscall ${pair%%:*} (${pair#*:}) under policy profile"
    done
    sb profile -- /in/attack userns
    expect_rc 159 "a user namespace through clone"
    # /dev/shm is the size-capped /tmp under profile, absent under gpu-run.
    sb profile -- /bin/sh -c 'echo shared >/dev/shm/kiln-x && cat /tmp/kiln-x && readlink /dev/shm'
    expect_rc 0 "/dev/shm under the profile policy"
    printf 'shared\n/tmp\n' | cmp -s - "$T/out" || { cat "$T/out" "$T/err" >&2; fail "/dev/shm is not /tmp"; }
    sb gpu-run -- /bin/sh -c '[ -e /dev/shm ] && echo present || echo absent'
    expect_rc 0 "/dev/shm under gpu-run"
    contains "$T/out" absent
    ;;
gpu)
    ls /proc/driver/nvidia/gpus/* >/dev/null 2>&1 || { echo "SKIP: no NVIDIA GPU (no /proc/driver/nvidia/gpus)"; exit 77; }
    [ -x "$(dirname "$KILN_BIN")/kiln-harness-cuda" ] || { echo "SKIP: kiln-harness-cuda not built (no CUDA toolkit at configure time)"; exit 77; }
    run_kiln "$T/out" "$T/err" optimize saxpy --profile --max-iterations 2 --results "$RES" \
        "${FAST[@]}"
    expect_rc 0 "kiln optimize saxpy --profile on the GPU"
    run=$RES/run-001
    expect_json "$run/run.json" 'd["backend"]' cuda
    if grep -qF "kiln: --profile:" "$T/err" && grep -qF "continuing without profile data" "$T/err"; then
        # The documented refusal: said once, recorded, the run succeeded.
        expect_json "$run/run.json" 'd["profile"]["available"]' False
        echo "profiling not available here (the documented refusal):"
        grep -F "kiln: --profile:" "$T/err"
        exit 0
    fi
    [ -s "$run/reference/profile.json" ] || { cat "$T/err" >&2; fail "no reference/profile.json and no refusal message"; }
    for f in "$run/reference/profile.json" "$run"/candidates/*/profile.json; do
        [ -f "$f" ] || continue
        expect_json "$f" 'd["status"]' ok
        expect_json "$f" 'any(k["name"] == "saxpy" for k in d["kernels"])' True
        expect_json "$f" 'all(k["metrics"]["gpu__time_duration.sum"]["value"] > 0 for k in d["kernels"])' True
        expect_json "$f" '"Nsight Compute on case" in d["summary"]' True
        echo "== $f"; jq_py "$f" 'd["summary"]'
    done
    expect_json "$run/history.json" 'all(h["profile"]["status"] == "ok" for h in d if h["improved"])' True
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
