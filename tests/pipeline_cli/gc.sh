#!/bin/bash
# gc.sh CASE - `kiln gc` on a results directory of made-up runs (no
# optimize needed: gc reads only names, times, locks and sizes):
#   keep_last    --keep-last 2 removes the older runs, whole, and the bytes;
#                --quiet prints nothing
#   older_than   --older-than 10 removes only the runs modified 10+ days ago
#   in_progress  a run whose work/lock is held is kept; kiln resume of it is
#                refused the same way
#   symlink      a run-NNN link is skipped and a link inside a run is removed
#                as a link: what it points to is untouched
#   dry_run      --dry-run removes nothing and says what would go
#   inputs_only  --inputs-only removes work/ only; other names are never touched
. "$(dirname "$0")/lib.sh"
case_name=$1
RES=$T/results

# make_run N DAYS: results/run-N with a record and 1 MiB of work/inputs,
# last modified DAYS days ago.
make_run()
{
    local r=$RES/run-$1
    mkdir -p "$r/work/inputs/abc/big-1/in" "$r/candidates/001" || fail "mkdir $r"
    echo '{}' >"$r/run.json"
    head -c 1048576 /dev/zero >"$r/work/inputs/abc/big-1/in/x.npy"
    : >"$r/work/lock"
    touch -d "$2 days ago" "$r"
}

# lock_held FILE: another process holds FILE's flock.
lock_held()
{
    flock -n "$1" true
    [ $? = 1 ]
}

gc()
{
    run_kiln "$T/out" "$T/err" gc --results "$RES" "$@"
}

mkdir -p "$RES"
case "$case_name" in
keep_last)
    for n in 001 002 003 004; do make_run "$n" 1; done
    gc --keep-last 2
    expect_rc 0 "kiln gc --keep-last 2"
    [ ! -e "$RES/run-001" ] && [ ! -e "$RES/run-002" ] || fail "old runs kept: $(ls "$RES")"
    [ -d "$RES/run-003" ] && [ -d "$RES/run-004" ] || fail "the last two were removed"
    contains "$T/out" "removed run-001 ("
    contains "$T/out" "kept run-004: among the last 2"
    contains "$T/out" "freed "
    # --quiet: the same work, nothing on stdout; --json with it is refused.
    gc --keep-last 1 --quiet --json
    expect_rc 2 "kiln gc --quiet --json"
    contains "$T/err" "exclude each other"
    make_run 005 1
    gc --keep-last 2 --quiet
    expect_rc 0 "kiln gc --keep-last 2 --quiet"
    [ ! -s "$T/out" ] || fail "kiln gc --quiet printed: $(cat "$T/out")"
    [ ! -e "$RES/run-003" ] || fail "kiln gc --quiet kept run-003"
    gc --keep-last 0 --json
    expect_rc 0 "kiln gc --keep-last 0 --json"
    expect_json "$T/out" '[r["run"] for r in d["removed"]]' '["run-004", "run-005"]'
    expect_json "$T/out" 'd["bytes_freed"] >= 2 * 1048576' True
    [ -z "$(ls "$RES")" ] || fail "runs left: $(ls "$RES")"
    ;;
older_than)
    make_run 001 40
    make_run 002 3
    make_run 003 12
    gc --older-than 10
    expect_rc 0 "kiln gc --older-than 10"
    [ ! -e "$RES/run-001" ] && [ ! -e "$RES/run-003" ] || fail "old runs kept: $(ls "$RES")"
    [ -d "$RES/run-002" ] || fail "a 3-day-old run was removed"
    contains "$T/out" "kept run-002: modified 3.0 days ago (newer than --older-than 10)"
    ;;
in_progress)
    make_run 001 30
    make_run 002 30
    # One process holds it (as kiln does): killing it releases the lock.
    python3 -c 'import fcntl, sys, time
f = open(sys.argv[1])
fcntl.flock(f, fcntl.LOCK_EX)
time.sleep(300)' "$RES/run-001/work/lock" >/dev/null 2>&1 &
    holder=$!
    _kiln_bg_pids+=("$holder")
    wait_for 10 lock_held "$RES/run-001/work/lock" || fail "the lock was not taken"
    gc --keep-last 0
    expect_rc 0 "kiln gc with a run in progress"
    [ -d "$RES/run-001/work/inputs" ] || fail "the run in progress was removed"
    [ ! -e "$RES/run-002" ] || fail "the finished run was kept"
    contains "$T/out" "kept run-001: in progress: kiln optimize or kiln resume holds its lock"
    run_kiln "$T/out" "$T/err" resume "$RES/run-001"
    expect_rc 2 "kiln resume of a run in progress"
    contains "$T/err" "run-001 is in progress: another kiln optimize or kiln resume holds its lock"
    kill "$holder"
    wait "$holder" 2>/dev/null
    gc --keep-last 0
    expect_rc 0 "kiln gc once the run stopped"
    [ ! -e "$RES/run-001" ] || fail "the stopped run was kept"
    ;;
symlink)
    mkdir -p "$T/outside/keep"
    echo precious >"$T/outside/keep/file"
    make_run 001 30
    ln -s "$T/outside" "$RES/run-002"
    ln -s "$T/outside/keep" "$RES/run-001/candidates/001/planted"
    ln -s "$T/outside/keep" "$RES/run-001/work/inputs/abc/big-1/in/link"
    before=$(cd "$T/outside" && find . -exec stat -c '%i %Y %s %n' {} + | sort)
    gc --keep-last 0
    expect_rc 0 "kiln gc with links"
    contains "$T/out" "skipped run-002: a symbolic link (not followed)"
    [ -L "$RES/run-002" ] || fail "the run-002 link was removed"
    [ ! -e "$RES/run-001" ] || fail "run-001 was not removed"
    after=$(cd "$T/outside" && find . -exec stat -c '%i %Y %s %n' {} + | sort)
    [ "$before" = "$after" ] || fail "kiln gc changed what a link points to: $(diff <(echo "$before") <(echo "$after"))"
    ;;
dry_run)
    make_run 001 30
    make_run 002 30
    before=$(cd "$RES" && find . -exec stat -c '%i %Y %s %n' {} + | sort)
    gc --keep-last 0 --dry-run
    expect_rc 0 "kiln gc --dry-run"
    contains "$T/out" "would remove run-001 ("
    contains "$T/out" "--dry-run: nothing was removed"
    after=$(cd "$RES" && find . -exec stat -c '%i %Y %s %n' {} + | sort)
    [ "$before" = "$after" ] || fail "--dry-run changed the results: $(diff <(echo "$before") <(echo "$after"))"
    gc --keep-last 0 --dry-run --json
    expect_json "$T/out" '[d["dry_run"], len(d["removed"]), d["bytes_freed"] >= 2 * 1048576]' \
        '[true, 2, true]'
    # --dry-run alone (issue 35 item 12): not a usage error; every run and
    # its size, nothing removed, and how to choose.
    gc --dry-run
    expect_rc 0 "kiln gc --dry-run alone"
    contains "$T/out" "run-001 ("
    contains "$T/out" "run-002 ("
    contains "$T/out" "2 runs, "
    contains "$T/out" "nothing would be removed. Choose the runs with --keep-last N, --older-than DAYS"
    not_contains "$T/out" "would remove"
    gc --dry-run --json
    expect_rc 0 "kiln gc --dry-run --json alone"
    expect_json "$T/out" '[d["dry_run"], d["removed"], len(d["runs"]), d["bytes_freed"], d["rule"]]' \
        '[true, [], 2, 0, null]'
    after=$(cd "$RES" && find . -exec stat -c '%i %Y %s %n' {} + | sort)
    [ "$before" = "$after" ] || fail "--dry-run alone changed the results: $(diff <(echo "$before") <(echo "$after"))"
    # Without --dry-run a rule is still needed.
    gc
    expect_rc 2 "kiln gc with no rule"
    contains "$T/err" "--dry-run alone lists the runs"
    ;;
inputs_only)
    make_run 001 30
    make_run 002 30
    rm -rf "$RES/run-002/work"
    mkdir -p "$RES/notes" "$RES/run-1x"
    echo mine >"$RES/notes/a"
    gc --keep-last 0 --inputs-only
    expect_rc 0 "kiln gc --inputs-only"
    [ -s "$RES/run-001/run.json" ] && [ ! -e "$RES/run-001/work" ] ||
        fail "--inputs-only: $(find "$RES/run-001")"
    contains "$T/out" "removed run-001/work ("
    contains "$T/out" "kept run-002: has no work/ to remove"
    [ -s "$RES/notes/a" ] && [ -d "$RES/run-1x" ] || fail "gc touched what is not a run"
    gc
    expect_rc 2 "kiln gc without a rule"
    contains "$T/err" "--keep-last N, --older-than DAYS, or both"
    ;;
*)
    fail "unknown case $case_name"
    ;;
esac
echo "ok: gc $case_name"
