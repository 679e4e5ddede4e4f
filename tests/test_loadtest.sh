#!/usr/bin/env bash
# test_loadtest.sh - short loadtest/run runs on private stacks: v2 oversells (work_ms widens
# the race window so that it is certain), v8 never does; the JSON line has every field;
# a run that cannot be done fails; no run leaves a process behind.
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh

# leftovers DIR: live processes started for the run kept in DIR (by the ports in its logs).
leftovers() {
    local d args f pats=("$1/nginx")
    for f in "$1"/instance-*.log; do [ -f "$f" ] && { f=${f##*instance-}; pats+=("--port ${f%.log} "); }; done
    for d in /proc/[0-9]*; do
        mapfile -d '' args 2>/dev/null < "$d/cmdline" || continue
        for f in "${pats[@]}"; do
            case "${args[*]} " in *"$f"*) running "${d#/proc/}" && echo "${d#/proc/}" ;; esac
        done
    done
    [ -z "$(ls "$1"/*.pid 2>/dev/null)" ] || echo "pid files"
}

# lt NAME ARGS...: loadtest/run with its run directory kept under $T_TMP/NAME; sets json, rc.
lt() {
    local name=$1; shift
    LOADTEST_RUN_DIR=$T_TMP/$name loadtest/run "$@" >"$T_TMP/$name.out" 2>"$T_TMP/$name.err"
    rc=$?
    json=$(tail -n 1 "$T_TMP/$name.out")
    sed 's/^/    /' "$T_TMP/$name.out"
    [ "$rc" = 0 ] || tail -n 3 "$T_TMP/$name.err" | sed 's/^/    /'
}

# v2: a mutex per process, two processes; 20 ms of work between read and write.
lt v2 --lock v2 --stock 40 -c 20 -d 2 --item lt2 --query work_ms=20
check_eq "v2 run: done (exit 0, oversell is a result)" 0 "$rc"
check "v2 (flaw): oversold > 0" test "$(field oversold)" -gt 0
check_eq "v2: oversold == sold - (stock - remaining)" "$(field oversold)" \
    "$(( $(field sold) - (40 - $(field remaining)) ))"
check_eq "v2: invariant reported broken" false "$(field invariant_ok)"
check_eq "v2: the JSON says the flaw showed" true "$(field flaw)"
check_eq "v2: still one ledger entry per sale" true "$(field ledger_ok)"
check_eq "v2: two instances" 2 "$(field instances)"
check "v2: a progress line each second on stderr" grep -qE '^ +[0-9]+s +stock ' "$T_TMP/v2.err"
check_eq "v2: nothing left running" "" "$(leftovers "$T_TMP/v2")"

# v8: the watchdog lock; the same load, no work: sells exactly the stock.
lt v8 --lock v8 --stock 200 -c 20 -d 2 --item lt8
check_eq "v8 run: done" 0 "$rc"
check_eq "v8: oversold 0" 0 "$(field oversold)"
check_eq "v8: sold exactly the stock" "200 0" "$(field sold) $(field remaining)"
check_eq "v8: invariant holds" true "$(field invariant_ok)"
check_eq "v8: the JSON says no flaw showed" false "$(field flaw)"
check_eq "v8: every 200 has a ledger entry" true "$(field ledger_ok)"
check_eq "v8: ledger length == sold" 200 "$(field ledger)"
check "v8: 200 answers <= sold" test "$(field ok)" -le 200
check_eq "v8: nothing left running" "" "$(leftovers "$T_TMP/v8")"
for k in lock instances scenario stock requests ok sold_out errors sold remaining oversold \
         rps p50_ms p99_ms ledger lock_timeouts overlaps; do
    check "JSON line has \"$k\"" jq -e --arg k "$k" 'has($k)' <<<"$json"
done
check "JSON: strings, numbers and booleans where they belong; overlaps null without --faults" jq -e '
    ([.lock, .scenario, .item, .observed] | all(type == "string"))
    and ([.instances, .stock, .connections, .duration_s, .requests, .ok, .sold_out, .unavailable,
          .errors, .sold, .remaining, .oversold, .ledger, .lock_timeouts, .foreign_deletes,
          .rps, .p50_ms, .p99_ms, .sales_per_s, .sell_ms, .elapsed_ms] | all(type == "number"))
    and ([.invariant_ok, .ledger_ok, .settled, .flaw] | all(type == "boolean"))
    and .overlaps == null' <<<"$json"
check_eq "JSON: lock and scenario" "v8 load" "$(field lock) $(field scenario)"
check "JSON: p99_ms >= p50_ms > 0" awk -v a="$(field p50_ms)" -v b="$(field p99_ms)" \
    'BEGIN { exit !(a > 0 && b >= a) }'
check "the summary comes before the JSON line" grep -q 'no oversell' "$T_TMP/v8.out"

# --faults with a plain load: overlaps are counted (none under v8).
lt v8f --lock v8 --stock 50 -c 10 -d 1 --item lt8f --faults
check_eq "v8 --faults: overlaps 0" 0 "$(field overlaps)"

# --history FILE: sale-load drives the load and records every sale; the history is checked
# against the stock left. v8: possible; v2 (a mutex per process): a unit sold twice, seen
# from the answers alone.
lt h8 --lock v8 --stock 100 -c 8 -d 1 --item lth8 --history "$T_TMP/h8.jsonl"
check_eq "--history, v8: the history is possible" possible "$(field history)"
check_eq "  one line per request" "$(field requests)" "$(wc -l < "$T_TMP/h8.jsonl" | tr -d ' ')"
lt h2 --lock v2 --stock 100 -c 16 -d 1 --item lth2 --history "$T_TMP/h2.jsonl"
json_has() { jq -e "$1" <<<"$json"; }
check "--history, v2: the checker finds a unit sold twice, and the run the flaw" \
    json_has '(.history | test("^impossible: .*sold twice")) and .flaw == true and .oversold > 0'

# Runs that cannot be done.
lt bad --lock no-such-version -d 1
check_eq "an unknown version: the run fails (exit 1)" 1 "$rc"
check "an unknown version: says why" grep -q "unknown lock version" "$T_TMP/bad.err"
check_eq "an unknown version: nothing left running" "" "$(leftovers "$T_TMP/bad")"
loadtest/run -d 1 >/dev/null 2>&1; rc=$?
check_eq "no --lock: bad usage (exit 2)" 2 "$rc"

# --- many items: every check per item ---------------------------------------------------
lt v2items --lock v2 --stock 20 -c 20 -d 2 --items 4 --query work_ms=10
check_eq "v2 on 4 items: done" 0 "$rc"
check "  items oversold counted (> 0), of 4 checked" \
    test "$(field items_oversold)" -gt 0 -a "$(field items_checked)" = 4
check "  oversold is the units sold beyond each item's stock, summed (> 0)" test "$(field oversold)" -gt 0
check_eq "  the invariant reported broken, the flaw shown" "false true" "$(field invariant_ok) $(field flaw)"
check "  the summary names an item off" grep -q 'off: item000[1-4] (stock' "$T_TMP/v2items.out"
lt v8items --lock v8 --stock 100000 -c 16 -d 2 --items 30 --zipf 1.1 --history "$T_TMP/v8items.jsonl"
check_eq "v8 on 30 items, Zipf 1.1, with a history: done, nothing oversold, every item's counts right" \
    "0 0 0 true true" "$rc $(field oversold) $(field items_oversold) $(field invariant_ok) $(field ledger_ok)"
check_eq "  items and zipf in the JSON line" "30 1.1" "$(field items) $(field zipf)"
check_eq "  the history checked per item (--final-file): possible" possible "$(field history)"
check "  the load was Zipf-skewed: item0001 sold most" sh -c "jq -r 'select(.status == 200) | .item' $T_TMP/v8items.jsonl | sort | uniq -c | sort -rn | head -n 1 | grep -q ' item0001$'"
loadtest/run --lock v8 --zipf 1.1 -d 1 >/dev/null 2>&1; rc=$?
check_eq "--zipf without --items: bad usage" 2 "$rc"
loadtest/run --lock v8 --cluster 2 -d 1 >/dev/null 2>&1; rc=$?
check_eq "--cluster 2: bad usage" 2 "$rc"

# --- Redis Cluster: the scenarios, short ----------------------------------------------------
lt reshard --lock v8 --scenario cluster-reshard --items 200 -d 10
check_eq "cluster-reshard (v8, 200 items, 10 s): played, nothing oversold or lost, history possible" \
    "0 false 0" "$rc $(field flaw) $(field oversold)"
check "  the hot items' slots and 2,000 others moved there and back, while selling" \
    grep -qE 'all back, in [0-9]+ ms \([0-9]{4} slot moves' "$T_TMP/reshard.out"
check "  the instances followed them (MOVED or ASK counted)" \
    grep -qE 'followed MOVED ([1-9][0-9]*), ASK [0-9]+|followed MOVED [0-9]+, ASK [1-9]' "$T_TMP/reshard.out"
lt failover --lock atomic --scenario cluster-failover --items 200 -d 10
check_eq "cluster-failover (atomic, 200 items, 10 s): played, the instances followed within a second" \
    "0 false" "$rc $(field flaw)"
check "  a replica promoted, and the dead master's items sold again after it" \
    grep -qE 'said master [0-9]+ ms later; the first sale of those items answered [0-9]+ ms after that' "$T_TMP/failover.out"
check "  its measure, the longest time those items had no sale, a figure (the evolution's gap)" \
    test "$(jq '.measures.gap_ms | numbers | . >= 0' <<< "$json" 2>/dev/null)" = true
check_eq "  nothing left running" "" "$(leftovers "$T_TMP/failover")"

t_report
