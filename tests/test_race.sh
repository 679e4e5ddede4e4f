#!/usr/bin/env bash
# test_race.sh - Two service instances on one Redis, each hit by 20 concurrent clients.
# v2 (a mutex per process) must oversell; v3-v9 must never: sold + stock == initial and
# every 200 has its ledger entry. work_ms widens the read-modify-write window so that a
# broken lock is certain to show, not hoped to.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

ITEM=race
STOCK=60
CLIENTS=20        # per instance
PER_CLIENT=6      # requests per client: 2 x 20 x 6 = 240 requests for 60 items

# hammer PORT QUERY: CLIENTS curl processes in parallel, each PER_CLIENT sequential sales
# on one keep-alive connection; prints one status code per request.
hammer() {
    local port=$1 query=$2 args=() i
    for i in $(seq "$PER_CLIENT"); do
        args+=(-o /dev/null "http://127.0.0.1:$port/inventory/sale?$query")
    done
    for i in $(seq "$CLIENTS"); do curl -s -m 60 -w '%{http_code}\n' "${args[@]}" & done
    wait
}

# race VERSION WORK_MS: sets SOLD STOCK_LEFT LEDGER OK TOTAL. Runs in this shell (not a
# subshell), so the services it starts are on the cleanup list even when it fails.
race() {
    local version=$1 work=$2 a b pid_a pid_b h1 h2 out="$T_TMP/race-$1.codes"
    SOLD="" STOCK_LEFT="" LEDGER="" OK="" TOTAL=""
    rcli del "$(item_key stock "$ITEM")" "$(item_key sold "$ITEM")" "$(item_key orders "$ITEM")" "$(item_key lock "$ITEM")" >/dev/null
    item_set "$ITEM" "$STOCK" >/dev/null
    start_service a --redis "127.0.0.1:$REDIS_PORT" --lock "$version" --faults --name race-a || return 1
    pid_a=$SVC_PID
    start_service b --redis "127.0.0.1:$REDIS_PORT" --lock "$version" --faults --name race-b || return 1
    pid_b=$SVC_PID
    # Wait for the two hammers by pid: a bare `wait` would also wait for the services.
    hammer "$a" "item=$ITEM&work_ms=$work" > "$out.a" & h1=$!
    hammer "$b" "item=$ITEM&work_ms=$work" > "$out.b" & h2=$!
    wait "$h1" "$h2"
    cat "$out.a" "$out.b" > "$out"
    kill "$pid_a" "$pid_b"; wait "$pid_a" "$pid_b" 2>/dev/null
    SOLD=$(item_get sold "$ITEM") STOCK_LEFT=$(item_get stock "$ITEM")
    LEDGER=$(rcli xlen "$(item_key orders "$ITEM")") OK=$(grep -c '^200$' "$out") TOTAL=$(wc -l < "$out")
}

start_redis || exit 1

race v2 20
echo "v2: sold=$SOLD stock=$STOCK_LEFT ledger=$LEDGER 200s=$OK answers=$TOTAL"
check_eq "v2: every request was answered" 240 "$TOTAL"
check "v2 (flaw): two processes, two mutexes: oversold > 0" test "$((SOLD - (STOCK - STOCK_LEFT)))" -gt 0
check_eq "v2: still, every 200 has a ledger entry" "$OK" "$LEDGER"

for v in v3 v4 v5 v6 v7 v8 v9; do
    race "$v" 2
    echo "$v: sold=$SOLD stock=$STOCK_LEFT ledger=$LEDGER 200s=$OK answers=$TOTAL"
    check_eq "$v: every request was answered" 240 "$TOTAL"
    check_eq "$v: no oversell: sold + stock == $STOCK" "$STOCK" "$((${SOLD:-0} + ${STOCK_LEFT:-0}))"
    check_eq "$v: sold out exactly" 0 "$STOCK_LEFT"
    check_eq "$v: every 200 has a ledger entry" "$OK" "$LEDGER"
done
t_report
