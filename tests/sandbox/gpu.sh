#!/bin/sh
# gpu.sh PROBE - the sandbox with a GPU (CTest label gpu; skips without one).
# gpu-run --gpu 0: one device, alloc + launch + copy back correct; /dev holds
# no nvidia-uvm-tools, no nvidia-caps, no other GPU's node; without --gpu the
# same program fails cleanly with no device.
set -u
K=${KILN_BIN:?}
PROBE=$1
ls /proc/driver/nvidia/gpus/* >/dev/null 2>&1 || { echo "SKIP: no NVIDIA GPU (no /proc/driver/nvidia/gpus)"; exit 77; }
[ -x "$PROBE" ] || { echo "SKIP: gpu_probe not built (no CUDA toolkit at configure time)"; exit 77; }
T=$(mktemp -d /tmp/kiln-gpu-XXXXXX)
chmod 755 "$T"
trap 'rm -rf "$T"' EXIT
cp "$PROBE" "$T/probe" && chmod 755 "$T/probe"
fail() { echo "FAIL: $*"; echo "--- stdout"; cat "$T/out"; echo "--- stderr"; cat "$T/err"; exit 1; }

"$K" sandbox --policy gpu-run --gpu 0 --in "$T/probe:probe" -- /in/probe >"$T/out" 2>"$T/err"
RC=$?
[ "$RC" = 0 ] || fail "probe under --gpu 0 exited $RC"
printf 'devices 1\nok\n' | cmp -s - "$T/out" || fail "probe output differs"

"$K" sandbox --policy gpu-run --gpu 0 -- /bin/ls /dev >"$T/out" 2>"$T/err" || fail "ls /dev failed"
MINOR=$(grep -h "Device Minor" /proc/driver/nvidia/gpus/*/information | sort | head -1 | awk '{print $3}')
for n in nvidia-uvm-tools nvidia-caps nvidia-modeset; do
    grep -qx "$n" "$T/out" && fail "/dev/$n is visible"
done
NODES=$(grep -E '^nvidia[0-9]+$' "$T/out" | tr '\n' ' ')
[ "$NODES" = "nvidia$MINOR " ] || fail "GPU nodes in /dev: '$NODES', expected only nvidia$MINOR"
grep -qx nvidiactl "$T/out" && grep -qx nvidia-uvm "$T/out" || fail "nvidiactl or nvidia-uvm missing"

"$K" sandbox --policy gpu-run --in "$T/probe:probe" -- /in/probe >"$T/out" 2>"$T/err"
RC=$?
[ "$RC" = 3 ] || fail "without --gpu the probe exited $RC, expected 3 (no device)"
grep -q '^no device: ' "$T/out" || fail "without --gpu the probe did not report 'no device'"
echo PASS
