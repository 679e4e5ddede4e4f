#!/usr/bin/env bash
# test_compare.sh - loadtest/compare: a real short run (--quick: atomic and v8, 1 s loads,
# v8's pause and crash) gives every design's row, each figure a number or null with its
# reason; with MariaDB, a run of v15 (1 s loads, no failure) measures a database's row;
# the page's table is what its JSON gives, for the run's page and for the committed
# docs/choosing.md against docs/choosing.json; a figure edited by hand in the page fails the
# check. It asserts no speed: the figures are the machine's.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh
. deploy/up-mysql.sh   # mysql_check

# shape FILE: every design of --list is a row of FILE, in order; every figure (4 of speed,
# 3 per failure) is a number, or null with a reason; prints what is off, fails then.
shape() {
    jq -r --arg ids "$(loadtest/compare --list | awk '/^[^ ]/ { print $1 }' | paste -sd' ' -)" '
        def fig($where): if (.value | type) == "number" then empty
            elif .value == null and (.why | type) == "string" and (.why | length) > 0 then empty
            else "\($where): neither a number nor null with a reason: \(tojson)" end;
        (if ([.designs[].id] | join(" ")) == $ids then empty
         else "the rows \([.designs[].id] | join(" ")), not \($ids)" end),
        (.failures as $f | .designs[] | .id as $id
         | (.speed | (.hot_sales_per_s, .items_sales_per_s, .p99_saturated_ms, .p99_rate_ms)
            | fig("\($id) speed")),
           ($f[] as $k | .faults[$k] | if . == null then "\($id) has no \($k) cell"
            else (.oversold, .lost, .gap_ms) | fig("\($id) \($k)") end))' "$1"
}

out=$T_TMP/compare.json page=$T_TMP/choosing.md
cp docs/choosing.md "$page"
t0=$SECONDS
loadtest/compare --quick --out "$out" --page "$page" > "$T_TMP/compare.out" 2>&1; rc=$?
took=$((SECONDS - t0))
cat "$T_TMP/compare.out"
check_eq "loadtest/compare --quick ran (in $took s)" 0 "$rc"
check_eq "  every line it printed fits in 100 columns" 0 \
    "$(awk 'length > 100' "$T_TMP/compare.out" | wc -l)"
check_eq "  every design a row, every figure a number or null with its reason" "" \
    "$(shape "$out" 2>&1 | head -n 5)"
check "  atomic and v8 measured: sales/s on 1 and 1,000 items, both p99s" jq -e '
    [.designs[] | select(.id == "atomic" or .id == "v8") | .speed
     | .hot_sales_per_s.value > 0 and .items_sales_per_s.value > 0
       and .p99_saturated_ms.value > 0 and .p99_rate_ms.value > 0] | length == 2 and all' "$out"
check "  the moderate rate held (sale-load --rate: 0.9 of it or more)" jq -e '
    [.designs[] | select(.speed.rate_held != null) | .speed.rate_held >= 0.9] | length == 2 and all' "$out"
check "  v8's pause and crash played, their oversold a figure" jq -e '
    .designs[] | select(.id == "v8") | [.faults.pause, .faults.crash]
    | all(.ran and (.oversold.value | type) == "number")' "$out"
check "  a figure the scenario does not measure is null, not 0 (v8 pause: sales lost)" jq -e '
    .designs[] | select(.id == "v8") | .faults.pause.lost | .value == null and (.why | test("not measured"))' "$out"
check "  a design --quick leaves out says so" jq -e '
    .designs[] | select(.id == "v9") | .speed.hot_sales_per_s.why | test("--quick")' "$out"
check "  a failure a design has no scenario for says why (atomic: pause)" jq -e '
    .designs[] | select(.id == "atomic") | .faults.pause | .scenarios == [] and (.oversold.why | length) > 0' "$out"
check "  the page's JSON written beside it" cmp "$out" "$T_TMP/choosing.json"
check "  the page's table is what the JSON gives" loadtest/compare --check "$page"
check "  the prose outside the markers kept" cmp <(sed '/^<!-- compare:begin/,/^<!-- compare:end/d' docs/choosing.md) \
    <(sed '/^<!-- compare:begin/,/^<!-- compare:end/d' "$page")
check "  the run's table names this machine's cores" grep -q "$(nproc) cores (\`nproc\`)" "$page"

# A database's row (v15 on MariaDB): its speed measured as the others'; its failures not
# played here (--failures none), each null with the reason.
if why=$(mysql_check); then
    dbout=$T_TMP/compare-db.json
    t0=$SECONDS
    loadtest/compare --designs v15 --failures none -d 1 --out "$dbout" > "$T_TMP/compare-db.out" 2>&1; rc=$?
    grep -E '^\[[0-9]+/[0-9]+] v15 |^wrote' "$T_TMP/compare-db.out"
    check_eq "loadtest/compare --designs v15 -d 1 ran (in $((SECONDS - t0)) s)" 0 "$rc"
    check_eq "  every design a row, every figure a number or null with its reason" "" \
        "$(shape "$dbout" 2>&1 | head -n 5)"
    check "  v15 on MariaDB measured: sales/s on 1 and 1,000 items, both p99s, only 200s" jq -e '
        .designs[] | select(.id == "v15") | (.stack | test("--mysql")) and (.speed
        | .hot_sales_per_s.value > 0 and .items_sales_per_s.value > 0
          and .p99_saturated_ms.value > 0 and .p99_rate_ms.value > 0
          and ([.answers[] | keys[]] | unique) == ["200"])' "$dbout"
    check "  its failures unplayed (--failures none), null with reasons; pause.sh, crash.sh; one server" jq -e '
        .designs[] | select(.id == "v15") | .faults
        | ([.[] | .oversold | .value == null and (.why | length) > 0] | length == 5 and all)
          and .pause.scenarios == ["pause"] and .crash.scenarios == ["crash"]
          and (.failover.oversold.why | test("one server"))' "$dbout"
    check "  the designs not asked for: not run" jq -e '
        .designs[] | select(.id == "db-atomic") | .speed.hot_sales_per_s.why | test("not in --designs")' "$dbout"
else
    skip "a database's row measured (loadtest/compare --designs v15)" "$why"
fi

# The committed page and the JSON it was made from.
check_eq "docs/choosing.json: every design a row, every figure a number or null with its reason" "" \
    "$(shape docs/choosing.json 2>&1 | head -n 5)"
check "  made by a full run (every design and failure)" jq -e '.command == "loadtest/compare"' docs/choosing.json
check "docs/choosing.md's table is what docs/choosing.json gives" loadtest/compare --check docs/choosing.md
# A figure typed by hand: the first figure of the v8 row's sales/s, one more.
cp docs/choosing.md "$T_TMP/edited.md"; cp docs/choosing.json "$T_TMP/edited.json"
awk 'done == 0 && /^\| v8 watchdog \| [0-9]/ { split($0, f, " \\| "); n = f[2] + 1
     sub("\\| " f[2] " \\|", "| " n " |"); done = 1 } { print }' docs/choosing.md > "$T_TMP/edited.md"
check "  (a figure of the table changed in a copy)" sh -c "! cmp -s docs/choosing.md '$T_TMP/edited.md'"
loadtest/compare --check "$T_TMP/edited.md" > /dev/null 2> "$T_TMP/check.err"; rc=$?
check_eq "  the copy with a figure edited by hand fails the check" 1 "$rc"
check "  and the check shows the line" grep -q '^-| v8 watchdog' "$T_TMP/check.err"
loadtest/compare --from docs/choosing.json --page "$T_TMP/edited.md" > /dev/null; rc=$?
check_eq "  --from rewrites it" 0 "$rc"
check "  as the JSON gives" cmp docs/choosing.md "$T_TMP/edited.md"

loadtest/compare --designs nonsense > /dev/null 2>&1; rc=$?
check_eq "an unknown design: bad usage" 2 "$rc"
loadtest/compare --failures pause,fire > /dev/null 2>&1; rc=$?
check_eq "an unknown failure: bad usage" 2 "$rc"
build/sale-load --url http://127.0.0.1:1/ -c 1 -d 1 --rate 0 > /dev/null 2>&1; rc=$?
check_eq "sale-load --rate 0: bad usage" 2 "$rc"
check_eq "--help and --list fit in 100 columns" 0 \
    "$({ loadtest/compare --help; loadtest/compare --list; } | awk 'length > 100' | wc -l)"
check "nothing left running (instances, nginx, Redis, mariadbd)" \
    test -z "$(pgrep -f 'compare\.[A-Za-z0-9]+/' || true)"
t_report
