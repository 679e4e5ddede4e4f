#!/usr/bin/env bash
# test_report.sh - build/evolution-report on a fixture: the HTML, bad input, and a Chromium screenshot.
# The fixture is made-up data shaped like results/evolution.json (v1..v8 plus "fenced");
# the screenshot is decoded by tests/png_stats.py to prove the charts are really drawn.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

REPORT=${REPORT_BIN:-build/evolution-report}
CHROMIUM=${CHROMIUM:-chromium}
# The chart colours of loadtest/report.c (REPORT_COLOUR_*).
C_OVERSOLD=d62728 C_RPS=1f77b4 C_STOCK=2ca02c C_SOLD=ff7f0e C_MISS=ffd7d7

# timeline STOCK STEP EXTRA: [t_ms, stock, sold] every 100 ms for 3 s; STEP sold per
# sample; EXTRA sold beyond the stock (an oversell) spread over the second half.
timeline() {
    jq -nc --argjson stock "$1" --argjson step "$2" --argjson extra "$3" '
        [range(0; 3001; 100) as $t
         | ([$t / 100 * $step, $stock] | min) as $sold
         | (if $t > 1500 then $sold + ($extra * ($t - 1500) / 1500 | floor) else $sold end) as $sold
         | [$t, ([$stock - $sold, 0] | max), $sold]]'
}

# row LOCK TECHNIQUE SCENARIO EXPECT SHOWN OBSERVED OVERSOLD OVERLAPS TIMEOUTS RPS [TIMELINE]
row() {
    jq -nc --arg lock "$1" --arg technique "$2" --arg scenario "$3" --arg expect "$4" \
        --argjson shown "$5" --arg observed "$6" --argjson oversold "$7" --argjson overlaps "$8" \
        --argjson timeouts "$9" --argjson rps "${10}" --argjson timeline "${11:-null}" '
        {$lock, $technique, $scenario, $expect, $shown, $observed, $oversold, $overlaps,
         $timeouts, foreign_deletes: 0, requests: 240, ok: 60, sold_out: 180, errors: 0,
         sold: 60, remaining: 0, $rps, p50_ms: 3.1, p99_ms: 40.2}
        + if $timeline then {$timeline} else {} end'
}

IN=$T_TMP/evolution.json
OUT=$T_TMP/report.html
{
    row v1 "pthread mutex in the process" load safe true "sold 60 of 60, oversold 0" 0 0 0 1480.5
    row v2 "pthread mutex, two instances behind nginx" load flaw true "sold 97 of 60, oversold 37" 37 41 0 1622.0
    row v3 "SETNX lock id, spin with sleep; DEL" load safe true "sold 60 of 60" 0 0 0 905.3
    row v3 "SETNX lock id, spin with sleep; DEL" crash flaw true "holder killed; 118 sales timed out" 0 0 118 0
    row v4 "SET lock id NX PX ttl; DEL" load safe true "sold 60 of 60" 0 0 0 932.7
    row v4 "SET lock id NX PX ttl; DEL" crash safe true "holder killed; sales resumed after 500 ms" 0 0 0 0
    row v4 "SET lock id NX PX ttl; DEL" long-work flaw true \
        "one sale worked 1500 ms with a 500 ms lease; overlaps 3" 12 3 0 0 "$(timeline 200 9 12)"
    row v5 "SET NX PX; GET, compare, then DEL (two commands)" load safe true "sold 60 of 60" 0 0 0 871.9
    row v5 "SET NX PX; GET, compare, then DEL (two commands)" release-gap flaw false \
        "the GET/DEL gap was not hit in 20 tries" 0 0 0 0
    row v6 "SET NX PX; Lua compare-and-delete" load safe true "sold 60 of 60" 0 0 0 910.2
    row v6 "SET NX PX; Lua compare-and-delete" nested flaw true "nested call waited on itself: 20 timeouts" 0 0 20 0
    row v7 "Lua hash {owner: count}, HINCRBY + PEXPIRE; Lua release" load safe true "sold 60 of 60" 0 0 0 845.0
    row v7 "Lua hash {owner: count}, HINCRBY + PEXPIRE; Lua release" long-work flaw true \
        "lease ran out mid-work; overlaps 2" 5 2 0 0 "$(timeline 200 8 5)"
    row v8 "v7 + watchdog renewal every ttl/3 while held" load safe true "sold 60 of 60" 0 0 0 830.4
    row v8 "v7 + watchdog renewal every ttl/3 while held" long-work safe true \
        "lease renewed 9 times; overlaps 0" 0 0 0 0 "$(timeline 200 7 0)"
    row v8 "v7 + watchdog renewal every ttl/3 while held" pause flaw true "SIGSTOP 1500 ms: stale write, oversold 1" 1 1 0 0
    row fenced "SET NX PX + token; write only if token > last" pause safe true \
        "stale write refused: token 41 < 42 ('fenced')" 0 0 0 0
} | jq -s '{generated: "2026-11-23T10:00:00Z", runs: 1, rows: .}' > "$IN"
# Two rows captured their moment (loadtest/moment.jq's shape): v4 long-work's overlap and
# fenced's refused write.
jq '.rows |= map(
      if .lock == "v4" and .scenario == "long-work" then . + {moment: {kind: "overlap",
          at_ms: 400, span_ms: 2000, lanes: [
            {name: "inventory-8081/1", bars: [[0, 1500, true]], marks: [[900, "lost"]]},
            {name: "inventory-8082/2", bars: [[400, 700, true], [800, 1000, true]],
             marks: [[700, "released"]]},
            {name: "inventory-8083/1", bars: [], marks: [[300, "deleted"]]}],
          deleted: {by: "inventory-8083/1", of: "inventory-8081/1", at_ms: 300}}}
      elif .lock == "fenced" then . + {moment: {kind: "fenced", at_ms: 400, span_ms: 2000,
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

cat > "$T_TMP/sparse.json" <<'EOF'
{"rows": [{"lock": "v1"}, {"scenario": "long-work", "timeline": []},
          {"lock": "v4", "scenario": "long-work", "timeline": [[0, 1], "x", [5, 2, 3]]},
          {"lock": "v2", "scenario": "load", "rps": "fast", "oversold": 4}]}
EOF
"$REPORT" "$T_TMP/sparse.json" "$T_TMP/sparse.html"; rc=$?
check_eq "missing fields: exit 0" 0 "$rc"
check_eq "missing fields: one chart (oversold), no line chart" 1 "$(grep -c '<svg' "$T_TMP/sparse.html")"
check_eq "missing fields: no data for rps, the store's failures, two timelines, the moments and the traces" 6 "$(grep -c 'no data' "$T_TMP/sparse.html")"
check "missing fields: dashes in the table" grep -q '<tr><td>v1</td><td>-</td><td>-</td>' "$T_TMP/sparse.html"

# --- The fixture page ---
"$REPORT" "$IN" "$OUT"; rc=$?
check_eq "fixture: exit 0" 0 "$rc"
check_eq "table: one line per row" 17 "$(grep -c '^<tr><td>' "$OUT")"
check "table: v2 load row with its oversold" grep -qF \
    '<tr><td>v2</td><td>pthread mutex, two instances behind nginx</td><td>load</td><td>flaw</td><td>sold 97 of 60, oversold 37</td><td class="num">37</td><td class="num">41</td><td class="num">0</td><td class="verdict">shown</td></tr>' "$OUT"
check "table: v4 long-work row" grep -qF \
    '<tr><td>v4</td><td>SET lock id NX PX ttl; DEL</td><td>long-work</td><td>flaw</td><td>one sale worked 1500 ms' "$OUT"
check "table: v8 pause row" grep -qF '<td>v8</td><td>v7 + watchdog renewal every ttl/3 while held</td><td>pause</td>' "$OUT"
check_eq "verdict: one NOT shown" 1 "$(grep -c 'NOT shown</td>' "$OUT")"
check "verdict: NOT shown on v5 release-gap, highlighted" grep -qE \
    '<td>v5</td>.*<td>release-gap</td>.*<td class="verdict miss">NOT shown</td>' "$OUT"
check "escaped: > and < and ' in text" grep -qF \
    'token &gt; last</td><td>pause</td><td>safe</td><td>stale write refused: token 41 &lt; 42 (&#39;fenced&#39;)</td>' "$OUT"
check "escaped: no raw '> last'" bash -c "! grep -q 'token > last' '$OUT'"
check_eq "charts: 2 bar charts + 3 timelines + 2 moments" 7 "$(grep -c '<svg' "$OUT")"
check "oversold chart: bar labelled v2 with 37" grep -qE \
    'class="value" text-anchor="middle">37</text><text [^>]*class="label" text-anchor="middle">v2</text>' "$OUT"
check "sales/s chart: v1 bar at 1480.5" grep -qE \
    'class="value" text-anchor="middle">1480.5</text><text [^>]*class="label" text-anchor="middle">v1</text>' "$OUT"
check_eq "sales/s chart: a bar per version with a load row" 8 "$(grep -v 'height="12"' "$OUT" | grep -c "fill=\"#$C_RPS\"")"
check_eq "timelines: stock and sold lines per long-work row" 6 "$(grep -c '<polyline' "$OUT")"
check_eq "timelines: a legend each" 3 "$(grep -c '>stock</text>' "$OUT")"
check_eq "moments: one frozen timeline per row that captured one" 2 "$(grep -c 'class="moment"' "$OUT")"
check_eq "moments: the overlapping sections in red" 3 "$(grep -c 'height="12" fill="#d62728"' "$OUT")"
check_eq "moments: a section alone in blue" 1 "$(grep -c 'height="12" fill="#1f77b4"' "$OUT")"
check "moments: the refused write marked" grep -q 'fill="#9467bd"><title>write refused by the fence' "$OUT"
check "moments: the lost lease marked" grep -q 'fill="#ff7f0e"><title>lease lost' "$OUT"
check "moments: the axis counts from the moment" grep -q '>+0 ms</text>' "$OUT"
check "moments: a release that deleted another's lock, marked with a cross" grep -q 'class="deleted".*<title>its DEL removed' "$OUT"
check "  and named in the caption" grep -q 'the release of inventory-8083/1 (its DEL, black cross) removed the lock of inventory-8081/1' "$OUT"
# --- The lock's own flaws apart from the store failing underneath ("fault") ---
# A Redis partition's losses (v8 sentinel-partition, 14,720) must not be drawn beside the
# lock's flaws (v4's 17) as if v8 were the worst lock: each in its own chart.
{
    row v2 "pthread mutex, two instances behind nginx" load flaw true "sold 97 of 60" 37 41 0 1622.0
    row v4 "SET lock id NX PX ttl; DEL" long-work flaw true "overlaps 3" 17 3 0 0 | jq -c '. + {fault: "lock"}'
    row v8 "v7 + watchdog renewal every ttl/3 while held" pause flaw true "oversold 1" 1 1 0 0 | jq -c '. + {fault: "lock"}'
    row v8 "v7 + watchdog renewal every ttl/3 while held" sentinel-partition flaw true \
        "acknowledged sales lost 14720" 14720 0 0 0 | jq -c '. + {fault: "redis"}'
    row v9 "v8 + a fencing token per grant" failover safe true "oversold 0" 0 0 0 0 | jq -c '. + {fault: "redis"}'
    row v11 "a sequential node of ZooKeeper, the write fenced by it" zk-leader-kill safe true "oversold 0" 0 0 0 0 |
        jq -c '. + {fault: "zookeeper"}'
} | jq -s '{generated: "2026-11-23T10:00:00Z", runs: 1, rows: .}' > "$T_TMP/fault.json"
"$REPORT" "$T_TMP/fault.json" "$T_TMP/fault.html"; rc=$?
check_eq "fault: written" 0 "$rc"
# chart LABEL: the one SVG whose aria-label starts with LABEL.
chart() { awk -v l="aria-label=\"$1" 'index($0, l) { on = 1 } on { print } on && /<\/svg>/ { exit }' "$T_TMP/fault.html"; }
lock_chart=$(chart "oversold per version, the lock&#39;s own flaws")
redis_chart=$(chart "oversold per version, the store failing underneath")
bar() { grep -qE "class=\"value\" text-anchor=\"middle\">$1</text><text [^>]*class=\"label\" text-anchor=\"middle\">$2</text>"; }
check "fault: the lock's chart is drawn" test -n "$lock_chart"
check "fault: the store's chart is drawn, apart" test -n "$redis_chart"
check "fault: the lock's chart: v4 long-work's 17" bar 17 v4 <<< "$lock_chart"
check "fault: the lock's chart: v2 (a row with no fault field counts as the lock's) 37" bar 37 v2 <<< "$lock_chart"
check "fault: the lock's chart: v8 at its pause's 1, not the partition's 14720" bar 1 v8 <<< "$lock_chart"
check "fault: the lock's chart has no 14720 at all" bash -c "! grep -q '>14720<' <<< \"\$1\"" _ "$lock_chart"
check "fault: the store's chart: v8 sentinel-partition's 14720" bar 14720 v8 <<< "$redis_chart"
check "fault: the store's chart: v9 failover's 0" bar 0 v9 <<< "$redis_chart"
check "fault: the store's chart has no bar of the lock's rows (v2, v4)" \
    bash -c "! grep -qE '>(v2|v4)</text>' <<< \"\$1\"" _ "$redis_chart"
check "fault: the store's bars in their own colour, none in the lock's chart" bash -c \
    "grep -q 'fill=\"#8c564b\"' <<< \"\$1\" && ! grep -q 'fill=\"#8c564b\"' <<< \"\$2\"" _ "$redis_chart" "$lock_chart"
check "fault: the table says which row Redis failed under" grep -qF \
    '<td>sentinel-partition <small class="fault">(Redis failed underneath)</small></td>' "$T_TMP/fault.html"
check_eq "fault: and only that one and v9 failover" 2 "$(grep -c 'Redis failed underneath)</small>' "$T_TMP/fault.html")"
check "fault: the table says which row ZooKeeper failed under" grep -qF \
    '<td>zk-leader-kill <small class="fault">(ZooKeeper failed underneath)</small></td>' "$T_TMP/fault.html"
check "fault: the store's chart: v11 zk-leader-kill's 0, beside Redis's" bar 0 v11 <<< "$redis_chart"
check "fault: without a store's row, the store's chart says no data" grep -q 'no data: no row of the store failing underneath' "$OUT"

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

# --- The page in a browser: the charts must really be drawn ---
if ! command -v "$CHROMIUM" >/dev/null 2>&1; then
    check "chromium installed (deploy/install-deps installs it): '$CHROMIUM' not found" false
else
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$T_TMP/chrome" --window-size=1200,2400 \
        --screenshot="$T_TMP/shot.png" "file://$OUT" >"$T_TMP/chrome.log" 2>&1
    check "screenshot taken" test -s "$T_TMP/shot.png"
    [ -s "$T_TMP/shot.png" ] || tail -5 "$T_TMP/chrome.log"
    if [ -s "$T_TMP/shot.png" ]; then
        [ -n "${REPORT_SHOT:-}" ] && cp "$T_TMP/shot.png" "$REPORT_SHOT"
        python3 tests/png_stats.py "$T_TMP/shot.png" $C_OVERSOLD $C_RPS $C_STOCK $C_SOLD $C_MISS \
            > "$T_TMP/stats" 2>&1
        cat "$T_TMP/stats"
        ge() { [ "${1:-0}" -ge "$2" ]; }
        check_eq "screenshot: 1200x2400" "1200 2400" "$(px size "$T_TMP/stats") $(awk '$1 == "size" { print $3 }' "$T_TMP/stats")"
        check "screenshot: not a blank page" ge "$(px nonwhite "$T_TMP/stats")" 100000
        # The v2 bar alone is about 40 x 220 px; every rps bar is over 100 px tall.
        check "screenshot: oversold bars drawn" ge "$(px $C_OVERSOLD "$T_TMP/stats")" 5000
        check "screenshot: sales/s bars drawn" ge "$(px $C_RPS "$T_TMP/stats")" 20000
        # Legends are 3 x 196 px; the lines themselves add well over 1000 px each colour.
        check "screenshot: stock lines drawn" ge "$(px $C_STOCK "$T_TMP/stats")" 2000
        check "screenshot: sold lines drawn" ge "$(px $C_SOLD "$T_TMP/stats")" 2000
        check "screenshot: NOT shown highlighted" ge "$(px $C_MISS "$T_TMP/stats")" 500
    fi
    # The counter must tell a page without charts apart: the empty page has none of the colours.
    timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$T_TMP/chrome" --window-size=1200,2400 \
        --screenshot="$T_TMP/empty.png" "file://$T_TMP/empty.html" >>"$T_TMP/chrome.log" 2>&1
    python3 tests/png_stats.py "$T_TMP/empty.png" $C_OVERSOLD $C_RPS $C_STOCK $C_SOLD \
        > "$T_TMP/empty.stats" 2>&1
    check_eq "empty page screenshot: no chart colour at all" "0 0 0 0" \
        "$(awk 'NR > 2 { printf "%s%s", sep, $2; sep = " " }' "$T_TMP/empty.stats")"
    # On a phone-sized screen (390 px wide): nothing wider than the screen but the table's
    # own scroll box; the frozen timelines scale down to fit.
    if command -v node >/dev/null; then
        CHROMIUM=$CHROMIUM CDP_EVAL='JSON.stringify([document.documentElement.scrollWidth, Math.round(document.querySelector("svg.moment").getBoundingClientRect().width), Math.round(document.querySelector(".scroll").getBoundingClientRect().width)])' \
            node tests/cdp.js "file://$OUT" 2 "$T_TMP/phone.json" "$T_TMP/phone.png" 390x800 2>"$T_TMP/phone.err"
        read -r page_w svg_w table_w <<< "$(jq -r '.samples[-1].eval | fromjson | map(tostring) | join(" ")' "$T_TMP/phone.json" 2>/dev/null)"
        echo "       phone: page ${page_w:-?} px, a moment ${svg_w:-?} px, the table's box ${table_w:-?} px wide"
        check "phone-sized: the page is no wider than the screen" test "${page_w:-9999}" -le 390
        check "phone-sized: a frozen timeline fits (<= 380 px)" test "${svg_w:-9999}" -le 380
        check "phone-sized: the table scrolls in its own box" test "${table_w:-9999}" -le 390
    else
        check "node installed (deploy/install-deps installs it)" false
    fi
fi

t_report
