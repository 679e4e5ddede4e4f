#!/usr/bin/env bash
# test_bench.sh - loadtest/bench --quick: every mode runs through nginx and sells
# correctly (nothing oversold, every 200 in the ledger). It asserts no speed: timing
# goals live in the benchmark's own numbers, not in a test.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

out=$T_TMP/bench.json
loadtest/bench --quick --out "$out" > "$T_TMP/bench.out" 2>&1; rc=$?
tail -n 9 "$T_TMP/bench.out"
check_eq "loadtest/bench --quick ran every mode" 0 "$rc"
check_eq "  four modes in bench.json" \
    "atomic v8-notify v8-notify-combine v8-poll" \
    "$(jq -r '[.modes[].mode] | sort | join(" ")' "$out" 2>/dev/null)"
check_eq "  no mode oversold" 0 "$(jq '[.modes[] | select(.oversold != 0)] | length' "$out" 2>/dev/null)"
check_eq "  every 200 has its ledger entry, in every mode" true "$(jq '[.modes[].ledger_ok] | all' "$out" 2>/dev/null)"
check_eq "  every mode sold something" true "$(jq '[.rows[] | .ok > 0 and .sold >= .ok] | all' "$out" 2>/dev/null)"
check_eq "  atomic's ratio to itself is 1" 1 "$(jq '.modes[] | select(.mode == "atomic") | .ratio_to_atomic' "$out" 2>/dev/null)"
check "  it recorded the machine, Redis, nginx and wrk" \
    jq -e '.machine.cores > 0 and (.machine.redis | length) > 0 and (.machine.nginx | length) > 0 and (.machine.wrk | length) > 0' "$out"
check "  RSS of each instance was sampled" jq -e '[.rows[].rss_mb | length == 2] | all' "$out"
echo '{"rows":[{"lock":"v8","scenario":"load","oversold":0,"sales_per_s":5}]}' > "$T_TMP/evo.json"
build/evolution-report "$T_TMP/evo.json" "$T_TMP/page.html" "$out"
check "the report page takes bench.json: its section" grep -q "Speed under contention" "$T_TMP/page.html"
check "  a bar per mode" test "$(grep -o 'fill="#9467bd"' "$T_TMP/page.html" | wc -l)" -eq 4
check "  and v8-notify-combine's row" grep -q "<td>v8-notify-combine</td>" "$T_TMP/page.html"
loadtest/bench --modes nonsense > /dev/null 2>&1; rc=$?
check_eq "an unknown mode: bad usage" 2 "$rc"
check "nothing left running" test -z "$(pgrep -f 'bench\.[A-Za-z0-9]+/run' || true)"
t_report
