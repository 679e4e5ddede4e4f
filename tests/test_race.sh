#!/usr/bin/env bash
# test_race.sh - Two service instances on one Redis, each hit by 20 concurrent clients.
# v2 (a mutex per process) must oversell; v3-v8 must never: sold + stock == initial and
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

# race VERSION WORK_MS: prints "sold stock ledger ok_answers".
race() {
    local version=$1 work=$2 a b out="$T_TMP/race-$1.codes"
    rcli del "stock:{$ITEM}" "sold:{$ITEM}" "orders:{$ITEM}" "lock:{$ITEM}" >/dev/null
    rcli set "stock:{$ITEM}" "$STOCK" >/dev/null
    start_service a --redis "127.0.0.1:$REDIS_PORT" --lock "$version" --faults --name race-a || return 1
    local pid_a=$SVC_PID
    start_service b --redis "127.0.0.1:$REDIS_PORT" --lock "$version" --faults --name race-b || return 1
    local pid_b=$SVC_PID
    # Wait for the two hammers by pid: a bare `wait` would also wait for the services.
    local h1 h2
    hammer "$a" "item=$ITEM&work_ms=$work" > "$out.a" & h1=$!
    hammer "$b" "item=$ITEM&work_ms=$work" > "$out.b" & h2=$!
    wait "$h1" "$h2"
    cat "$out.a" "$out.b" > "$out"
    kill "$pid_a" "$pid_b"; wait "$pid_a" "$pid_b" 2>/dev/null
    echo "$(rcli get "sold:{$ITEM}") $(rcli get "stock:{$ITEM}") $(rcli xlen "orders:{$ITEM}") $(grep -c '^200$' "$out") $(wc -l < "$out")"
}

start_redis || exit 1

read -r sold stock ledger ok total < <(race v2 20)
echo "v2: sold=$sold stock=$stock ledger=$ledger 200s=$ok answers=$total"
check_eq "v2: every request was answered" 240 "$total"
check "v2 (flaw): two processes, two mutexes: oversold > 0" test "$((sold - (STOCK - stock)))" -gt 0
check_eq "v2: still, every 200 has a ledger entry" "$ok" "$ledger"

for v in v3 v4 v5 v6 v7 v8; do
    read -r sold stock ledger ok total < <(race "$v" 2)
    echo "$v: sold=$sold stock=$stock ledger=$ledger 200s=$ok answers=$total"
    check_eq "$v: every request was answered" 240 "$total"
    check_eq "$v: no oversell: sold + stock == $STOCK" "$STOCK" "$((sold + stock))"
    check_eq "$v: sold out exactly" 0 "$stock"
    check_eq "$v: every 200 has a ledger entry" "$ok" "$ledger"
done
t_report
