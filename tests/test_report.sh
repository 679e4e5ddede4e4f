#!/usr/bin/env bash
# test_report.sh - build/evolution-report on fixtures: the HTML, bad input, and the page in
# headless Chromium (tests/cdp.js): what it draws, its legends, and its text at 420 px.
# The fixture is made-up data shaped like results/evolution.json: every version of
# --list-versions but none, each with a load row, and the rows that show each flaw, with
# their "measure" and "measures"; one row as an older run wrote it (no "measures").
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

REPORT=${REPORT_BIN:-build/evolution-report}
CHROMIUM=${CHROMIUM:-chromium}
# The chart colours (loadtest/report_measures.c, report_timeline.c): oversold, sales/s,
# stock, sold, and a "NOT shown" verdict's background.
C_OVERSOLD=d62728 C_RPS=1f77b4 C_STOCK=2ca02c C_SOLD=ff7f0e C_MISS=ffd7d7

# row LOCK SCENARIO EXPECT MEASURE MEASURES [EXTRA]: one row of the lock's own flaws (the
# default); MEASURES: what its run measured (the other keys 0, lost and gap_ms null: not
# measured); EXTRA: its other fields. MEASURE "": it declares none.
row() {
    local extra=${6:-}
    jq -nc --arg lock "$1" --arg scenario "$2" --arg expect "$3" --arg measure "$4" \
        --argjson m "$5" --argjson extra "${extra:-{\}}" '
        ({oversold: 0, sold_short: 0, lost: null, overlaps: 0, stuck: 0, gap_ms: null,
          refused_409: 0, refused_503: 0} + $m) as $ms
        | {$lock, technique: "the technique of \($lock)", $scenario, $expect, fault: "lock",
           shown: true, observed: "\($lock) \($scenario) as expected",
           measure: (if $measure == "" then null else $measure end), measures: $ms,
           oversold: $ms.oversold, overlaps: $ms.overlaps, timeouts: $ms.stuck,
           stock: 300, connections: 40, duration_s: 3, sold: 300, remaining: 0,
           p99_ms: 40.2} + $extra'
}
# load_row LOCK SALES_PER_S SELL_MS: a version's load row.
# Its overlaps not measured (no probe under load), as a load row's are.
load_row() { row "$1" load safe "" '{"overlaps": null}' "{\"sales_per_s\": $2, \"sell_ms\": $3}"; }

# timeline [BACK]: [t_ms, stock, sold] every 200 ms for 3 s from a stock of 40, two sold a
# sample; from 2.6 s on, the stock BACK higher (a stale write put it back up).
timeline() {
    jq -nc --argjson back "${1:-0}" '[range(0; 3001; 200) as $t | ([$t / 100, 40] | min) as $sold
             | [$t, 40 - $sold + (if $t >= 2600 then $back else 0 end), $sold]]'
}

IN=$T_TMP/evolution.json
OUT=$T_TMP/report.html
{
    load_row v1 2600 115   # its 300 sales over in 115 ms: not a rate
    row v2 load flaw oversold '{"oversold": 162}' '{"sales_per_s": 2492, "sell_ms": 1200, "sold": 462}'
    load_row v3 2100 1400
    row v3 crash flaw stuck '{"stuck": 3}' '{"sold": 1, "remaining": 1999}'
    load_row v4 1823 1600
    row v4 long-work flaw oversold '{"oversold": 18, "overlaps": 44}' \
        "{\"stock\": 40, \"sold\": 45, \"remaining\": 13, \"elapsed_ms\": 3437, \"timeline\": $(timeline 7)}"
    # As an older run wrote it: no "measures" (its oversold, lock timeouts, 503s stand in).
    jq -nc '{lock: "v4", technique: "the technique of v4", scenario: "crash", expect: "safe",
             shown: true, observed: "sales resumed", oversold: 0, overlaps: 0, lock_timeouts: 0,
             unavailable: 2}'
    load_row v5 1251 1300
    row v5 release-gap flaw oversold '{"oversold": 1, "overlaps": 1}'   # a single unit
    load_row v6 2231 1100
    row v6 nested flaw stuck '{"stuck": 5}' '{"sold": 0}'
    load_row v7 2136 1200
    row v7 long-work flaw overlaps '{"overlaps": 10, "oversold": 1}'
    load_row v8 2048 1500
    row v8 pause flaw oversold '{"oversold": 1, "overlaps": 32}'
    row v8 long-work safe oversold '{}' "{\"stock\": 40, \"sold\": 30, \"remaining\": 10, \"timeline\": $(timeline)}"
    row v8 sentinel-partition flaw lost '{"lost": 14720, "gap_ms": 2100}' '{"fault": "redis"}'
    row v8 fairness flaw fairness '{"jain": 0.0837}'
    load_row v9 1541 1900
    row v9 pause safe refused '{"refused_409": 1, "overlaps": 33}' \
        '{"technique": "v8 + a token per grant; write only if token > last",
          "observed": "stale write refused: token 41 < 42 ('"'fenced'"')"}'
    load_row v10 821 3000
    row v10 quorum-lost safe refused '{"refused_503": 4}' '{"fault": "redis", "shown": false}'
    load_row v11 400 2900
    row v11 zk-leader-kill safe gap '{"gap_ms": 1800}' '{"fault": "zookeeper"}'
    row atomic sentinel-failover safe "" '{}' '{"fault": "redis"}'
} | jq -s '{generated: "2026-11-23T10:00:00Z", runs: 1, rows: .}' > "$IN"
# Two rows captured their moment (loadtest/moment.jq's shape): v4 long-work's overlap, its
# lanes as moment.jq sorts them (as strings: /11 before /2), and v9's refused write.
jq '.rows |= map(
      if .lock == "v4" and .scenario == "long-work" then . + {moment: {kind: "overlap",
          at_ms: 400, span_ms: 2000, lanes: [
            {name: "inventory-8081/11", bars: [[0, 1500, true]], marks: [[900, "lost"]]},
            {name: "inventory-8081/12", bars: [], marks: [[300, "deleted"]]},
            {name: "inventory-8081/2", bars: [[400, 700, true], [800, 1000, true]],
             marks: [[700, "released"]]},
            {name: "inventory-8082/1", bars: [[1600, 1800, false]], marks: []}],
          deleted: {by: "inventory-8081/12", of: "inventory-8081/11", at_ms: 300}}}
      elif .lock == "v9" and .scenario == "pause" then . + {moment: {kind: "fenced",
          at_ms: 400, span_ms: 2000,
          lanes: [{name: "inventory-8081/1", bars: [[100, 300, false]],
                   marks: [[150, "renewed"], [400, "fenced"]]}]}}
      else . end)' "$IN" > "$IN.tmp" && mv "$IN.tmp" "$IN"

# --- Usage and bad input ---
check "--help prints usage" bash -c "'$REPORT' --help | grep -q '^usage: evolution-report'"
"$REPORT" >/dev/null 2>&1; rc=$?
check_eq "no arguments: usage error" 2 "$rc"

echo '{"rows": [ {"lock": "v1",, ] }' > "$T_TMP/bad.json"
"$REPORT" "$T_TMP/bad.json" "$T_TMP/bad.html" 2>"$T_TMP/bad.err"; rc=$?
check "invalid JSON: non-zero exit" test "$rc" -ne 0
check_eq "invalid JSON: one line on stderr" 1 "$(wc -l < "$T_TMP/bad.err")"
check "invalid JSON: message names the file" grep -q "bad.json: line 1" "$T_TMP/bad.err"
check "invalid JSON: no page written" test ! -e "$T_TMP/bad.html"

"$REPORT" "$T_TMP/missing.json" "$T_TMP/x.html" 2>"$T_TMP/missing.err"; rc=$?
check "unreadable input: non-zero exit" test "$rc" -ne 0
check "unreadable input: says so" grep -q "missing.json" "$T_TMP/missing.err"

echo '{"rows": 3}' > "$T_TMP/shape.json"
"$REPORT" "$T_TMP/shape.json" "$T_TMP/x.html" 2>"$T_TMP/shape.err"; rc=$?
check "rows not an array: non-zero exit" test "$rc" -ne 0
check "rows not an array: says so" grep -q "invalid input" "$T_TMP/shape.err"

# --- loadtest/moment.jq on events: two holders found only where two sections overlap ---
# ev T LANE WHAT: one event as an instance publishes it (t in µs, th its lane).
ev() { printf '{"t":%s,"ev":"%s","th":%s,"instance":"i"}\n' "$1" "$3" "$2"; }
{ ev 1000 1 acquired; ev 1010 1 sale; ev 2000 2 acquired; ev 2010 2 sale; ev 2020 2 leave
  ev 3000 1 leave; } > "$T_TMP/ev-overlap.jsonl"
check_eq "moment.jq: a section that began inside another: an overlap, at the second grant" \
    "overlap 1" "$(jq -s -c -f loadtest/moment.jq "$T_TMP/ev-overlap.jsonl" |
                   jq -r '"\(.kind) \([.lanes[].bars[][2]] | map(select(.)) | length > 1 | if . then 1 else 0 end)"')"
# Lane 1's leave (and its release) dropped, as a busy instance drops events: its section
# ends at its sale, not at its next grant; lane 2's section, after it, overlaps nothing.
{ ev 1000 1 acquired; ev 1010 1 sale; ev 2000 2 acquired; ev 2010 2 sale; ev 2020 2 leave
  ev 5000 1 acquired; ev 5010 1 sale; ev 5020 1 leave; } > "$T_TMP/ev-dropped.jsonl"
check_eq "moment.jq: a section whose leave was dropped invents no second holder" \
    null "$(jq -s -c -f loadtest/moment.jq "$T_TMP/ev-dropped.jsonl")"

# --- Missing fields and empty arrays: a page that says "no data" ---
echo '{"rows": []}' > "$T_TMP/empty.json"
"$REPORT" "$T_TMP/empty.json" "$T_TMP/empty.html"; rc=$?
check_eq "empty rows: exit 0" 0 "$rc"
check "empty rows: says no data" grep -q 'no data' "$T_TMP/empty.html"
check "empty rows: no chart" bash -c "! grep -q '<svg' '$T_TMP/empty.html'"
check "empty rows: no moment, said so" grep -q 'no row captured the moment' "$T_TMP/empty.html"

cat > "$T_TMP/sparse.json" <<'JSON'
{"rows": [{"lock": "v1"}, {"scenario": "long-work", "timeline": []},
          {"lock": "v4", "scenario": "long-work", "timeline": [[0, 1], "x", [5, 2, 3]]},
          {"lock": "v2", "scenario": "load", "rps": "fast", "oversold": 4}]}
JSON
"$REPORT" "$T_TMP/sparse.json" "$T_TMP/sparse.html"; rc=$?
check_eq "missing fields: exit 0" 0 "$rc"
check_eq "missing fields: the seven measures' charts and sales/s, no timeline" "8 0" \
    "$(grep -c '<svg class="bars"' "$T_TMP/sparse.html") $(grep -c '<svg class="timeline"' "$T_TMP/sparse.html")"
check_eq "missing fields: no data for two timelines, the moments and the traces" 4 "$(grep -c 'no data' "$T_TMP/sparse.html")"
check "missing fields: dashes in the table" grep -q '<tr><td>v1</td><td>-</td><td>-</td>' "$T_TMP/sparse.html"
check "missing fields: the title names the versions" grep -q '<h1>Lock evolution: v1, v2, v4</h1>' "$T_TMP/sparse.html"
check "missing fields: v2's oversold 4 drawn (an older row)" grep -q 'class="m-oversold" data-line="v2"' "$T_TMP/sparse.html"
check_eq "missing fields: v1's load rate, v2's, v4's: none measured, none drawn" 3 \
    "$(awk '/data-measure="rate"/,/<\/svg>/' "$T_TMP/sparse.html" | grep -c 'class="m-nm"')"

# --- The fixture page ---
"$REPORT" "$IN" "$OUT"; rc=$?
check_eq "fixture: exit 0" 0 "$rc"
check_eq "table: one line per row" "$(jq '.rows | length' "$IN")" "$(grep -c '^<tr><td>' "$OUT")"
check "title: the versions of the rows, v1 to v11 and atomic" \
    grep -qF '<h1>Lock evolution: v1 to v11 (and atomic)</h1>' "$OUT"
check "title: the page's too" grep -qF '<title>Lock evolution report: v1 to v11 (and atomic)</title>' "$OUT"
check "table: v3 crash, its measure stuck 3" grep -qF \
    '<td>v3</td><td>the technique of v3</td><td>crash</td><td>flaw</td><td>v3 crash as expected</td><td class="own">stuck <b>3</b></td>' "$OUT"
check "table: v8 fairness, its measure Jain's index to two decimals" grep -qF \
    '<td>v8 fairness as expected</td><td class="own">fairness <b>0.08</b></td>' "$OUT"
check "table: v9 pause, its measure refused: one 409, no 503" grep -qF \
    '<td class="own">refused <b>1</b> (409), <b>0</b> (503)</td>' "$OUT"
check "table: a measure not measured is a dash, not 0 (v1 load's overlaps)" grep -qF \
    '<td>v1 load as expected</td><td class="own">-</td><td class="num">300</td><td class="num">0</td><td class="num nm" title="not measured">-</td><td class="num">0</td>' "$OUT"
check "table: an older row (no measures): its oversold, overlaps, lock timeouts" grep -qF \
    '<td>sales resumed</td><td class="own">-</td><td class="num">-</td><td class="num">0</td><td class="num">0</td><td class="num">0</td>' "$OUT"
check_eq "verdict: one NOT shown" 1 "$(grep -c 'NOT shown</td>' "$OUT")"
check "verdict: NOT shown on v10 quorum-lost, highlighted" grep -qE \
    '<td>v10</td>.*<td>quorum-lost <small.*<td class="verdict miss">NOT shown</td>' "$OUT"
check "escaped: > and < and ' in text" grep -qF \
    'token &gt; last</td><td>pause</td><td>safe</td><td>stale write refused: token 41 &lt; 42 (&#39;fenced&#39;)</td>' "$OUT"
check "escaped: no raw '> last'" bash -c "! grep -q 'token > last' '$OUT'"
check_eq "charts: 7 measures + sales/s + 2 timelines + 2 moments" "8 2 2" \
    "$(grep -c '<svg class="bars"' "$OUT") $(grep -c '<svg class="timeline"' "$OUT") $(grep -c 'class="moment"' "$OUT")"
# value MEASURE LINE GROUP [N]: the figure drawn for that line's first (or Nth) series in
# that chart.
value() {
    awk -v m="data-measure=\"$1\"" 'index($0, m) { on = 1 } on { print } on && /<\/svg>/ { exit }' "$OUT" |
        grep -oE "<text class=\"value[^\"]*\" data-line=\"$2\" data-group=\"$3\"[^>]*>[0-9.]+" |
        sed -n "${4:-1}p" | sed 's/.*>//'
}
check_eq "oversold: v2's 162, from its load row" 162 "$(value oversold v2 lock)"
check_eq "oversold: v5's single unit" 1 "$(value oversold v5 lock)"
check_eq "stuck: v3's stuck lock, 3 sales" 3 "$(value stuck v3 lock)"
check_eq "stuck: v6's nested acquire, 5" 5 "$(value stuck v6 lock)"
check_eq "lost: v8's partition, with the store failing underneath" 14720 "$(value lost v8 store)"
check_eq "gap: v11's leader killed, 1800 ms" 1800 "$(value gap v11 store)"
check_eq "refused: v4's 409s (its load row's) and the older row's 503s" "0 2" \
    "$(value refused v4 lock 1) $(value refused v4 lock 2)"
check "sales/s: the caption says how the load rows ran" grep -qF \
    'each version&#39;s load row only: stock 300, connections 40, for 3 s, the same for every version' "$OUT"
check "sales/s: v1's 115 ms is not a rate, said so" grep -qF \
    'too short to be a rate: 300 sold in 115 ms' "$OUT"
check "timeline: it ends at the table's figures" grep -qF \
    '45 sold, 13 left of 40, oversold 18' "$OUT"
check_eq "timeline: the stock going back up, marked where it did" 1 "$(grep -c 'class="m-rise"' "$OUT")"
check "timeline: and said" grep -qF \
    'At 2.6 s the stock went back up, from 16 to 21 while sales went on' "$OUT"
check "moments: a release that deleted another's lock, marked with a cross" grep -q 'class="m-deleted deleted".*<title>its DEL removed' "$OUT"
check "  and named in the caption" grep -q 'the release of inventory-8081/12 (its DEL, black cross) removed the lock of inventory-8081/11' "$OUT"
check "moments: the axis counts from the moment" grep -q '>+0 ms</text>' "$OUT"

# --- The lock's own flaws apart from the store failing underneath ("fault") ---
# A Redis partition's losses (v8 sentinel-partition, 14,720) must not be drawn beside the
# lock's flaws (v4's 17) as if v8 were the worst lock: its line is under the store's.
{
    row v2 load flaw oversold '{"oversold": 37}' '{"fault": null}' | jq -c 'del(.fault, .measures)'
    row v4 long-work flaw oversold '{"oversold": 17}'
    row v8 pause flaw oversold '{"oversold": 1}'
    row v8 sentinel-partition flaw lost '{"oversold": 14720}' '{"fault": "redis"}'
    row v9 failover safe oversold '{}' '{"fault": "redis"}'
    row v11 zk-leader-kill safe gap '{}' '{"fault": "zookeeper"}'
    row v14 db-crash-flush0 flaw lost '{"oversold": 269, "lost": 269}' '{"fault": "database"}'
} | jq -s '{generated: "2026-11-23T10:00:00Z", runs: 1, rows: .}' > "$T_TMP/fault.json"
"$REPORT" "$T_TMP/fault.json" "$T_TMP/fault.html"; rc=$?
check_eq "fault: written" 0 "$rc"
OUT_MAIN=$OUT OUT=$T_TMP/fault.html
check_eq "fault: the lock's own: v4's 17" 17 "$(value oversold v4 lock)"
check_eq "fault: the lock's own: v2 (a row with no fault field) 37" 37 "$(value oversold v2 lock)"
check_eq "fault: the lock's own: v8 at its pause's 1, not the partition's 14720" 1 "$(value oversold v8 lock)"
check_eq "fault: the store failing underneath: v8's 14720" 14720 "$(value oversold v8 store)"
check_eq "fault: the store failing underneath: v9 failover's 0, v11's 0" "0 0" \
    "$(value oversold v9 store) $(value oversold v11 store)"
check_eq "fault: no store line for v2, v4" "" "$(value oversold v2 store)$(value oversold v4 store)"
check "fault: under its heading" grep -q 'class="group" [^>]*>the store failing underneath</text>' "$OUT"
OUT=$OUT_MAIN
check "fault: without a store's row, no heading" bash -c "! grep -q 'class=\"group\"' '$T_TMP/sparse.html'"
check "fault: the table says which row Redis failed under" grep -qF \
    '<td>sentinel-partition <small class="fault">(Redis failed underneath)</small></td>' "$T_TMP/fault.html"
check_eq "fault: and only that one and v9 failover" 2 "$(grep -c 'Redis failed underneath)</small>' "$T_TMP/fault.html")"
check "fault: the table says which row ZooKeeper failed under" grep -qF \
    '<td>zk-leader-kill <small class="fault">(ZooKeeper failed underneath)</small></td>' "$T_TMP/fault.html"
check "fault: and which row MariaDB failed under" grep -qF \
    '<td>db-crash-flush0 <small class="fault">(MariaDB failed underneath)</small></td>' "$T_TMP/fault.html"
OUT=$T_TMP/fault.html
check_eq "fault: MariaDB's losses drawn with the store's (v14's 269), no line of the lock's" "269 " \
    "$(value lost v14 store) $(value lost v14 lock)"
OUT=$OUT_MAIN

# With model/check's results: each counterexample's diagram, beside the run's moment.
printf 'A: acquire ok\nA: works 4 ticks\nA%ss lease expires\nB: acquire ok\n=> mutex is broken here\n' "'" \
    > "$T_TMP/v4-long-work-mutex.txt"
model/diagram "$T_TMP/v4-long-work-mutex.txt" "v4 long-work: mutex broken" > "$T_TMP/v4-long-work-mutex.svg"
jq -n --arg d "$T_TMP" '[
    {version: "v4", fault: "long-work", property: "mutex", holds: false, trace: ($d + "/v4-long-work-mutex.txt")},
    {version: "v6", fault: "nested", property: "reentrant", holds: false, trace: ($d + "/v6-nested-reentrant.txt")},
    {version: "v8", fault: "long-work", property: "mutex", holds: true}]' > "$T_TMP/model.json"
"$REPORT" "$IN" "$T_TMP/traces.html" "$T_TMP/model.json"; rc=$?
check_eq "with MODEL.json: written" 0 "$rc"
check_eq "traces: the counterexample's diagram, inline" 1 "$(grep -c 'class="trace"' "$T_TMP/traces.html")"
check "traces: its arrows drawn (B's grant in red)" grep -q 'stroke="#d62728" stroke-width="1.5" marker-end' "$T_TMP/traces.html"
check "traces: beside it, the run that showed the same flaw" grep -q 'v4 long-work: <small>the same, for real' "$T_TMP/traces.html"
check "traces: a diagram missing is said" grep -q 'its diagram is missing' "$T_TMP/traces.html"
check_eq "traces: a property that holds has none" 0 "$(grep -c 'v8 long-work: <small>mutex' "$T_TMP/traces.html")"
check "without MODEL.json: said how to get them" grep -q 'make model writes results/model.json' "$OUT"
"$REPORT" "$IN" "$T_TMP/two.html" "$T_TMP/model.json" "$T_TMP/model.json" 2>"$T_TMP/two.err"; rc=$?
check "two model files: refused, saying why" sh -c "[ $rc = 1 ] && grep -q 'one of them twice' '$T_TMP/two.err'"
check "phone-sized: a viewport" grep -q 'name="viewport" content="width=device-width' "$OUT"
check "self-contained: no external src/href" bash -c \
    "! grep -Eiq '(src|href)[[:space:]]*=[[:space:]]*[\"'\'']?[[:space:]]*(https?:)?//' '$OUT'"
check "self-contained: no http(s) URL at all" bash -c "! grep -Eiq 'https?://' '$OUT'"
check "self-contained: no script" bash -c "! grep -qi '<script' '$OUT'"

# --- The page in a browser: what it draws, its legends, its text on a phone ---
if ! command -v "$CHROMIUM" >/dev/null 2>&1; then
    check "chromium installed (deploy/install-deps installs it): '$CHROMIUM' not found" false
elif ! command -v node >/dev/null; then
    check "node installed (deploy/install-deps installs it)" false
else
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$T_TMP/chrome" --window-size=1200,4800 \
        --screenshot="$T_TMP/shot.png" "file://$OUT" >"$T_TMP/chrome.log" 2>&1
    check "screenshot taken" test -s "$T_TMP/shot.png"
    [ -s "$T_TMP/shot.png" ] || tail -5 "$T_TMP/chrome.log"
    if [ -s "$T_TMP/shot.png" ]; then
        [ -n "${REPORT_SHOT:-}" ] && cp "$T_TMP/shot.png" "$REPORT_SHOT"
        "$PYTHON" tests/png_stats.py "$T_TMP/shot.png" $C_OVERSOLD $C_RPS $C_STOCK $C_SOLD $C_MISS \
            > "$T_TMP/stats" 2>&1
        cat "$T_TMP/stats"
        ge() { [ "${1:-0}" -ge "$2" ]; }
        check "screenshot: not a blank page" ge "$(px nonwhite "$T_TMP/stats")" 100000
        # v2's oversold bar alone is about 120 x 14 px; each rate bar over 1000 px.
        check "screenshot: oversold bars drawn" ge "$(px $C_OVERSOLD "$T_TMP/stats")" 3000
        check "screenshot: sales/s bars drawn" ge "$(px $C_RPS "$T_TMP/stats")" 10000
        # Two timelines; a line is 3 px wide and some 300 px long, anti-aliased.
        check "screenshot: stock line drawn" ge "$(px $C_STOCK "$T_TMP/stats")" 1000
        check "screenshot: sold line drawn" ge "$(px $C_SOLD "$T_TMP/stats")" 1000
        check "screenshot: NOT shown highlighted" ge "$(px $C_MISS "$T_TMP/stats")" 500
    fi
    # The counter must tell a page without charts apart: the empty page has none of the colours.
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$T_TMP/chrome" --window-size=1200,2400 \
        --screenshot="$T_TMP/empty.png" "file://$T_TMP/empty.html" >>"$T_TMP/chrome.log" 2>&1
    "$PYTHON" tests/png_stats.py "$T_TMP/empty.png" $C_OVERSOLD $C_RPS $C_STOCK $C_SOLD \
        > "$T_TMP/empty.stats" 2>&1
    check_eq "empty page screenshot: no chart colour at all" "0 0 0 0" \
        "$(awk 'NR > 2 { printf "%s%s", sep, $2; sep = " " }' "$T_TMP/empty.stats")"

    # The page on a 420 px screen, read by tests/report_page.js.
    CHROMIUM=$CHROMIUM CDP_EVAL=$(cat tests/report_page.js) \
        node tests/cdp.js "file://$OUT" 1 "$T_TMP/phone.json" "$T_TMP/phone.png" 420x900 2>"$T_TMP/phone.err"
    seen() { jq -r ".samples[-1].eval | fromjson | $1" "$T_TMP/phone.json" 2>/dev/null; }
    check "the page was read" test -n "$(seen .title)"
    [ -n "$(seen .title)" ] || tail -3 "$T_TMP/phone.err"
    check_eq "title: the versions present" "Lock evolution: v1 to v11 (and atomic)" "$(seen .title)"
    # Every version of the service with a row: named on the page, a line in each chart.
    listed=$(build/inventory-service --list-versions 2>/dev/null | cut -f1)
    check "the service lists its versions" test -n "$listed"
    for v in $listed; do
        jq -e --arg v "$v" 'any(.rows[]; .lock == $v)' "$IN" >/dev/null || continue
        check "version $v (it has a row): named on the page and a line of every measure" jq -e \
            --arg v "$v" '.samples[-1].eval | fromjson | (.versions | split(", ") | map(sub("^.*: "; ""))
                          | index($v)) != null and all(.labels[]; index($v) != null)' "$T_TMP/phone.json"
    done
    check_eq "a chart per measure, and sales/s" "oversold lost overlaps stuck gap refused fairness rate" \
        "$(seen '.charts | join(" ")')"
    check "oversold: v5's single unit drawn (at least 5 px wide)" \
        test "$(seen '.bar["oversold v5 lock"] // 0 | floor')" -ge 5
    check "stuck: v3's stuck lock drawn as stuck sales" test "$(seen '.bar["stuck v3 lock"] // 0 | floor')" -ge 5
    check "fairness: v8's Jain 0.08 drawn, on its own linear scale (at least 5 px wide)" \
        test "$(seen '.bar["fairness v8 lock"] // 0 | floor')" -ge 5
    check "stuck: v6's nested acquire too" test "$(seen '.bar["stuck v6 lock"] // 0 | floor')" -ge 5
    check "lost, gap, refused: a bar each for v8, v11, v9" test "$(seen '[.bar["lost v8 store"],
        .bar["gap v11 store"], .bar["refused v9 lock"]] | map(. // 0) | min | floor')" -ge 5
    check_eq "declared measures outlined: v3's stuck, v5's oversold, v8's lost..." true \
        "$(seen '.declared as $d | ["stuck v3 lock", "oversold v5 lock", "lost v8 store"]
                 | all(. as $k | $d | index($k) != null)')"
    check_eq "a null measure: v1's lost says not measured, no bar" "1 null" \
        "$(seen '"\(.nm["lost v1 lock"]) \(.bar["lost v1 lock"])"')"
    check_eq "sales/s: only v1 (115 ms) too short to be a rate; atomic has no load row" "v1" \
        "$(seen '.short | join(" ")')"
    check_eq "sales/s: every other version's rate drawn" 10 "$(seen '[.bar | keys[] | select(startswith("rate "))] | length')"
    check_eq "the moments draw every kind of mark (the fixture's)" \
        "deleted fenced held lost moment overlap released renewed" "$(seen '.moment_marks | join(" ")')"
    check "the charts draw their marks: 20 kinds or more" test "$(seen '.marks | length')" -ge 20
    check_eq "every mark in the charts has its legend entry" "" "$(seen '.unlegended | join("; ")')"
    check_eq "moment: lanes in numeric order (/2 before /11)" "8081/2 8081/11 8081/12 8082/1" \
        "$(seen '.lanes[0] | join(" ")')"
    font=$(seen '.font.px'); echo "       smallest text at 420 px: ${font:-?} px ($(seen .font.at))"
    check "at 420 px, the smallest text is 10 px or more" awk -v px="${font:-0}" 'BEGIN { exit !(px >= 10) }'
    check "at 420 px, the page is no wider than the screen" test "$(seen .page_w)" -le 420
    check "at 420 px, a moment fits (<= 410 px)" test "$(seen .moment_w)" -le 410
fi

t_report
