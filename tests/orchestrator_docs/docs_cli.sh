#!/bin/bash
# docs_cli.sh CASE - `kiln docs search` and `kiln optimize --docs` driven
# through the built binary (docs.db next to it). Cases: search, json,
# hostile, user, usage, optimize_llm (the fake model server, cpu backend).
. "$KILN_SOURCE_DIR/tests/pipeline_cli/lib.sh"
export KILN_DOCS_CACHE="$T/cache"
RES=$T/results

# hostile_dir NAME: a corpus directory with one good and one hostile file.
hostile_dir()
{
    local d=$T/hostile-$1
    mkdir -p "$d"
    printf '## Fine\nSource: ours\n\nA fine passage.\n' >"$d/a-fine.md"
    case $1 in
    utf8) printf '## Bad bytes\n\nLatin-1 caf\xe9 here.\n' >"$d/latin1.md" ;;
    escape) printf '## Colours\n\nred \033[31mtext\033[0m here\n' >"$d/escape.md" ;;
    oversize) head -c 70000 /dev/zero | tr '\0' 'a' | sed '1s/^/## Big\n/' >"$d/big.md" ;;
    esac
    echo "$d"
}

case $1 in
search)
    run_kiln "$T/out" "$T/err" docs search uncoalesced global loads --limit 3
    expect_rc 0 "kiln docs search"
    head -1 "$T/out" | grep -qF "1. Uncoalesced and strided access patterns  [coalescing/uncoalesced-and-strided-access-patterns]" ||
        fail "the coalescing passage is not first: $(head -1 "$T/out")"
    contains "$T/out" "source: CUDA C++ Best Practices Guide"
    [ "$(grep -c '^[0-9]\. ' "$T/out")" = 3 ] || fail "--limit 3 did not print 3 passages"
    run_kiln "$T/out" "$T/err" docs search bank conflicts
    expect_rc 0 "kiln docs search bank conflicts"
    head -1 "$T/out" | grep -qF "[shared-memory/bank-conflicts]" || fail "bank conflicts: $(head -1 "$T/out")"
    run_kiln "$T/out" "$T/err" docs search the of and
    expect_rc 1 "a query of stop words"
    contains "$T/err" "no passage matches"
    # kiln doctor says whether the index is there, and how to build it.
    run_kiln "$T/out" "$T/err" doctor --json
    expect_json "$T/out" '[c["state"] for c in d["checks"] if c["check"] == "docs index"]' '["OK"]'
    expect_json "$T/out" 'd["version"]' 1
    KILN_DOCS_DB=$T/none.db run_kiln "$T/out" "$T/err" doctor --json
    expect_json "$T/out" '[c["fix"] for c in d["checks"] if c["check"] == "docs index"]' \
        '["cmake --build build --target kiln_docs_db (or set KILN_DOCS_DB)"]'
    ;;
json)
    run_kiln "$T/out" "$T/err" docs search softmax overflow --limit 2 --json
    expect_rc 0 "kiln docs search --json"
    expect_json "$T/out" 'd["passages"][0]["id"]' numerics/stable-softmax-subtract-the-row-maximum
    expect_json "$T/out" 'len(d["passages"])' 2
    expect_json "$T/out" 'all(p["source"] and p["title"] and p["excerpt"] for p in d["passages"])' True
    expect_json "$T/out" 'd["indexed_passages"] >= 30' True
    expect_json "$T/out" 'len(d["index"])' 64
    expect_json "$T/out" 'd["version"]' 1
    # --quiet: nothing on stdout, the exit status says whether a passage matched (grep -q).
    run_kiln "$T/out" "$T/err" docs search softmax overflow --quiet
    expect_rc 0 "kiln docs search --quiet"
    [ ! -s "$T/out" ] || fail "--quiet printed: $(cat "$T/out")"
    run_kiln "$T/out" "$T/err" docs search the of and --quiet
    expect_rc 1 "kiln docs search --quiet with no match"
    [ ! -s "$T/out" ] || fail "--quiet printed: $(cat "$T/out")"
    run_kiln "$T/out" "$T/err" docs search softmax --quiet --json
    expect_rc 2 "kiln docs search --quiet --json"
    contains "$T/err" "--quiet and --json exclude each other"
    ;;
hostile)
    for k in utf8 escape oversize; do
        d=$(hostile_dir $k)
        run_kiln "$T/out" "$T/err" docs search fine --docs-dir "$d"
        expect_rc 1 "kiln docs search --docs-dir with a hostile file ($k)"
        case $k in
        utf8) contains "$T/err" "latin1.md:3: invalid UTF-8"; contains "$T/err" "save the file as UTF-8" ;;
        escape) contains "$T/err" "escape.md:3: byte 0x1b"; contains "$T/err" "remove it" ;;
        oversize) contains "$T/err" "big.md is over the 65536-byte limit"; contains "$T/err" "split it" ;;
        esac
        if grep -q $'\033' "$T/out" "$T/err"; then fail "an escape character reached the terminal"; fi
    done
    [ ! -d "$KILN_DOCS_CACHE" ] || [ -z "$(ls -A "$KILN_DOCS_CACHE")" ] ||
        fail "a refused corpus was indexed"
    # kiln optimize refuses it before a run directory exists.
    run_kiln "$T/out" "$T/err" optimize saxpy --backend cpu --proposer llm --model m \
        --base-url http://127.0.0.1:9/v1 --docs 2 --docs-dir "$(hostile_dir escape)" --results "$RES"
    expect_rc 1 "kiln optimize --docs-dir with a hostile file"
    contains "$T/err" "--docs: in $T/hostile-escape: escape.md:3"
    [ ! -e "$RES/run-001" ] || fail "a run started with a refused corpus"
    ;;
user)
    mkdir -p "$T/mine"
    printf '# Ours\n\n## Zebra tiling\nSource: team wiki, page 7\n\nStripe the zebra tiles across warps.\n' \
        >"$T/mine/house.md"
    run_kiln "$T/out" "$T/err" docs search zebra tiles --docs-dir "$T/mine" --json
    expect_rc 0 "kiln docs search --docs-dir"
    expect_json "$T/out" 'd["passages"][0]["id"]' user/house/zebra-tiling
    expect_json "$T/out" 'd["passages"][0]["source"]' "team wiki, page 7"
    [ "$(ls "$KILN_DOCS_CACHE"/*.db | wc -l)" = 1 ] || fail "no cached index"
    db=$(ls "$KILN_DOCS_CACHE"/*.db)
    before=$(stat -c %i "$db")
    run_kiln "$T/out" "$T/err" docs search bank conflicts --docs-dir "$T/mine"
    expect_rc 0 "kiln docs search --docs-dir, cached"
    head -1 "$T/out" | grep -qF "[shared-memory/bank-conflicts]" || fail "kiln's passages are not searched with --docs-dir"
    [ "$(stat -c %i "$db")" = "$before" ] || fail "the cached index was rebuilt for the same content"
    [ "$(ls "$KILN_DOCS_CACHE"/*.db | wc -l)" = 1 ] || fail "the same content was indexed twice"
    ;;
usage)
    run_kiln "$T/out" "$T/err" docs
    expect_rc 2 "kiln docs"
    run_kiln "$T/out" "$T/err" docs search
    expect_rc 2 "kiln docs search without a query"
    run_kiln "$T/out" "$T/err" docs search x --limit 0
    expect_rc 2 "--limit 0"
    run_kiln "$T/out" "$T/err" docs --help
    expect_rc 0 "kiln docs --help"
    contains "$T/out" "kiln docs search uncoalesced global loads"
    KILN_DOCS_DB=$T/none.db run_kiln "$T/out" "$T/err" docs search bank
    expect_rc 2 "a missing docs.db"
    contains "$T/err" "KILN_DOCS_DB=$T/none.db"
    run_kiln "$T/out" "$T/err" optimize saxpy --docs 2
    expect_rc 2 "--docs with the tuner"
    contains "$T/err" "--docs needs --proposer llm"
    run_kiln "$T/out" "$T/err" optimize saxpy --proposer llm --model m --docs 9
    expect_rc 2 "--docs 9"
    contains "$T/err" "--docs needs 1..8 passages"
    run_kiln "$T/out" "$T/err" optimize saxpy --proposer llm --model m --docs-dir "$T"
    expect_rc 2 "--docs-dir without --docs"
    contains "$T/err" "--docs-dir needs --docs K"
    ;;
optimize_llm)
    python3 "$KILN_SOURCE_DIR/tests/orchestrator_llm/fake_server.py" "$T/port" &
    _kiln_bg_pids+=($!)
    wait_for 10 test -s "$T/port" || fail "the fake server did not start"
    url="http://127.0.0.1:$(cat "$T/port")/v1"
    mkdir -p "$T/mine"
    printf '## Saxpy house rule\nSource: team wiki\n\nFor saxpy use float4 loads and a grid-stride loop.\n' \
        >"$T/mine/rules.md"
    KILN_API_KEY=sk-test-docs run_kiln "$T/out" "$T/err" optimize saxpy --backend cpu \
        --proposer llm --model saxpy_mix --base-url "$url" --max-iterations 1 --docs 3 \
        --docs-dir "$T/mine" --results "$RES" "${FAST[@]}"
    expect_rc 0 "kiln optimize --proposer llm --docs 3"
    run=$RES/run-001
    ex=$run/candidates/001/exchange.json
    expect_json "$run/run.json" 'd["docs"]' '{"dir": "'"$T/mine"'", "k": 3}'
    expect_json "$ex" 'len(d["docs"]["passages"])' 3
    expect_json "$ex" 'len(d["docs"]["index"])' 64
    expect_json "$ex" 'all(p["id"] and p["title"] and p["source"] for p in d["docs"]["passages"])' True
    expect_json "$ex" '"saxpy" in d["docs"]["query"].lower()' True
    # the request sent to the model carries every recorded passage
    python3 - "$ex" <<'PY' || fail "the prompt does not carry the recorded passages"
import json, sys
d = json.load(open(sys.argv[1]))
prompt = json.loads(d["request"])["messages"][-1]["content"]
assert "Reference notes" in prompt, "no docs block"
for p in d["docs"]["passages"]:
    assert p["title"] in prompt and p["id"] in prompt, p["id"]
PY
    expect_json "$run/history.json" '[h["status"] for h in d]' '["pass"]'
    # kiln resume searches the same way: it re-reads --docs-dir (checked again).
    printf '## Evil\n\n\033[2J\n' >"$T/mine/evil.md"
    run_kiln "$T/out" "$T/err" resume "$run"
    expect_rc 1 "kiln resume with a corpus now refused"
    contains "$T/err" "evil.md:3: byte 0x1b"
    rm "$T/mine/evil.md"
    # The key goes only to a server named on resume's command line.
    KILN_API_KEY=sk-test-docs run_kiln "$T/out" "$T/err" resume "$run" \
        --base-url "$(jq_py "$run/run.json" 'd["base_url"]')"
    expect_rc 0 "kiln resume of a finished --docs run"
    ;;
*)
    fail "unknown case $1"
    ;;
esac
