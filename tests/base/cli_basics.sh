#!/bin/sh
# The CLI's contract: help and version succeed; unknown commands, unknown
# options and missing arguments print one line and exit 2.
set -u
k=${KILN_BIN:?KILN_BIN not set}
fail=0
expect() { # expect STATUS LINES-MAX CMD...
    want=$1 maxlines=$2; shift 2
    out=$("$@" 2>&1); got=$?
    lines=$(printf '%s\n' "$out" | wc -l)
    if [ "$got" -ne "$want" ]; then echo "FAIL: '$*' exited $got, want $want: $out"; fail=1; fi
    if [ "$maxlines" -gt 0 ] && [ "$lines" -gt "$maxlines" ]; then
        echo "FAIL: '$*' printed $lines lines, want at most $maxlines"; fail=1; fi
}
expect 0 0 "$k" --help
expect 0 0 "$k" --version
"$k" --version | grep -Eq '^kiln [0-9]+\.[0-9]+\.[0-9]+ \(git [^)]+, built with CUDA [^)]+\)$' \
    || { echo "FAIL: --version format"; fail=1; }
expect 2 1 "$k"
expect 2 1 "$k" frobnicate
expect 2 1 "$k" --frobnicate
for cmd in $("$k" --help | awk '/^commands:/{on=1;next} on&&/^  [a-z]/{print $1} /^$/{if(on)exit}'); do
    expect 0 0 "$k" "$cmd" --help
    "$k" "$cmd" --help | grep -q '^example' || { echo "FAIL: $cmd --help has no example"; fail=1; }
    expect 2 1 "$k" "$cmd" --no-such-option
    # `kiln help CMD` is the command's help, not the list (issue 26 item 13).
    if [ "$("$k" help "$cmd" 2>&1)" != "$("$k" "$cmd" --help 2>&1)" ]; then
        echo "FAIL: 'kiln help $cmd' differs from 'kiln $cmd --help'"; fail=1
    fi
done
expect 0 0 "$k" help
suggests_help=$("$k" help optimise 2>&1); got=$?
case "$got:$suggests_help" in
2:*"unknown command 'optimise'; did you mean 'optimize'?"*) ;;
*) echo "FAIL: 'kiln help optimise' exited $got: $suggests_help"; fail=1 ;;
esac
# "Did you mean": one line naming the closest command or flag; nothing
# offered when nothing is close; getopt's own message never printed.
suggests() { # suggests WANT-FRAGMENT CMD...
    want=$1; shift
    out=$("$@" 2>&1); got=$?
    lines=$(printf '%s\n' "$out" | wc -l)
    if [ "$got" -ne 2 ] || [ "$lines" -ne 1 ]; then
        echo "FAIL: '$*' exited $got with $lines lines, want 2 and 1: $out"; fail=1; fi
    case "$out" in *"$want"*) ;; *) echo "FAIL: '$*' said '$out', want '$want'"; fail=1 ;; esac
}
suggests "unknown command 'optimise'; did you mean 'optimize'?" "$k" optimise
suggests "unknown command 'evla'; did you mean 'eval'?" "$k" evla
suggests "unknown option '--verison'; did you mean '--version'?" "$k" --verison
suggests "kiln optimize: unknown option '--max-iteration'; did you mean '--max-iterations'?" \
    "$k" optimize --max-iteration 3 saxpy
suggests "unknown option '--max-iter=3'; did you mean '--max-iterations'?" \
    "$k" optimize --max-iter=3 saxpy
suggests "kiln eval: unknown option '--bakend'; did you mean '--backend'?" \
    "$k" eval --bakend cpu saxpy x.c
out=$("$k" frobnicate 2>&1)
case "$out" in *"did you mean"*) echo "FAIL: a far-off command got a suggestion: $out"; fail=1 ;; esac
# README's command table: one row per command (optimize has two forms, a
# workload and --description), and the best kernel's name on both backends
# (issue 26 item 13).
readme=${KILN_SOURCE_DIR:?KILN_SOURCE_DIR not set}/README.md
for cmd in $("$k" --help | awk '/^commands:/{on=1;next} on&&/^  [a-z]/{print $1} /^$/{if(on)exit}'); do
    rows=$(grep -c "^| \`kiln $cmd[ \`]" "$readme")
    max=1; [ "$cmd" = optimize ] && max=2
    [ "$rows" -le "$max" ] || { echo "FAIL: README's table lists kiln $cmd $rows times"; fail=1; }
done
grep -q 'best\.c`' "$readme" || { echo "FAIL: README names best.cu only (cpu runs write best.c)"; fail=1; }
# A local OpenAI-compatible server is documented in README, not only in
# orchestrator/propose/LLM.md (issue 35 item 12): an example per server,
# and that no key is needed.
for want in "--base-url http://127.0.0.1:8080/v1" "--base-url http://127.0.0.1:11434/v1" \
    "vllm serve" "no API key is needed"; do
    grep -qF -- "$want" "$readme" || { echo "FAIL: README does not document a local model server ($want)"; fail=1; }
done
[ $fail -eq 0 ] && echo "cli_basics: all checks passed"
exit $fail
