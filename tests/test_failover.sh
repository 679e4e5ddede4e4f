#!/usr/bin/env bash
# test_failover.sh - The data Redis with a real asynchronous replica: instances follow a
# failover to the promoted replica (--redis-standby) and skip a server that says it is a
# replica; --replicas 1 makes a grant count only once the replica has it, so that after
# a failover the promoted replica still knows who holds the lock; a grant the replica
# cannot confirm is given back (503 lock_unavailable). The failover lesson itself (two
# holders under v8) is the evolution's `failover` rows.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

counts() { cat "$@" | sort | uniq -c | awk '{ printf "%s x %s ", $2, $1 }'; }
on() { local p=$1; shift; redis-cli -p "$p" "$@"; }
state() { echo "$(on "$1" get "stock:{$2}") $(on "$1" get "sold:{$2}") $(on "$1" xlen "orders:{$2}")"; }
# replica_of PORT MASTER: makes the Redis on PORT a replica of MASTER, waits for the link.
replica_of() {
    on "$2" config set repl-diskless-sync-delay 0 >/dev/null
    on "$1" replicaof 127.0.0.1 "$2" >/dev/null
    for _ in $(seq 100); do replica_acks 127.0.0.1 "$2" && return 0; sleep 0.05; done
    return 1
}
tokens() { on "$1" xrange "orders:{$2}" - + | awk 'prev == "token" { print } { prev = $0 }' | paste -sd' ' -; }

# --- flags ---------------------------------------------------------------------------------
timeout 5 build/inventory-service --redis-standby nocolon > /dev/null 2> "$T_TMP/bad"; rc=$?
check_eq "--redis-standby without HOST:PORT: exit 2" 2 "$rc"
check "  with a reason" grep -q -- "--redis-standby wants HOST:PORT" "$T_TMP/bad"
timeout 5 build/inventory-service --replicas 17 > /dev/null 2>&1; rc=$?
check_eq "--replicas 17: exit 2" 2 "$rc"
check "--help explains --redis-standby and --replicas" \
    sh -c "build/inventory-service --help | grep -q -- --redis-standby && build/inventory-service --help | grep -q -- --replicas"

start_redis || exit 1; M=$REDIS_PORT; M_PID=$REDIS_PID
start_redis || exit 1; R=$REDIS_PORT
replica_of "$R" "$M" || { echo "the replica did not link"; exit 1; }

# --- following the master ------------------------------------------------------------------
on "$M" set 'stock:{s}' 10 >/dev/null
dead=$(free_port)
start_service D --redis "127.0.0.1:$dead" --redis-standby "127.0.0.1:$M" --lock v9 --name fo-dead || exit 1
check_eq "--redis down, the standby a master: the sale goes to the standby" 200 \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$D/inventory/sale?item=s")"
check_eq "  stock 9 there" 9 "$(on "$M" get 'stock:{s}')"
start_service K --redis "127.0.0.1:$R" --redis-standby "127.0.0.1:$M" --lock v9 --name fo-skip || exit 1
check_eq "--redis a replica (ROLE), the standby the master: the sale goes to the master" 200 \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$K/inventory/sale?item=s")"
check_eq "  stock 8 there" 8 "$(on "$M" get 'stock:{s}')"

# --- --replicas 1: a failover that keeps the holder ----------------------------------------
# A holds (3 s of work on a 2 s lease, renewed); the master dies; the replica is promoted
# and a new replica attached (the old master's part); B's sale must wait for A, A's write
# lands, and B's token is greater than A's.
on "$M" set 'stock:{w}' 20 >/dev/null
flags=(--redis "127.0.0.1:$M" --redis-standby "127.0.0.1:$R" --lock v9 --replicas 1 --ttl-ms 2000
       --wait-ms 10000 --faults)
start_service A "${flags[@]}" --name fo-a || exit 1
start_service B "${flags[@]}" --name fo-b || exit 1
check_eq "v9 --replicas 1, the replica linked: a sale" 200 \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$A/inventory/sale?item=w")"
a0=$(date +%s%N)
curl -s -o "$T_TMP/a.json" "http://127.0.0.1:$A/inventory/sale?item=w&work_ms=3000" &
apid=$!
for _ in $(seq 100); do [ "$(on "$M" exists 'lock:{w}')" = 1 ] && break; sleep 0.02; done
sleep 0.4
check_eq "  A holds: its grant is on the replica" 1 "$(on "$R" exists 'lock:{w}')"
check "  the grants waited for it (WAIT in the master's command stats)" \
    sh -c "redis-cli -p $M info commandstats | grep -q '^cmdstat_wait:calls=[1-9]'"
kill -9 "$M_PID"; wait "$M_PID" 2>/dev/null
on "$R" replicaof no one >/dev/null
start_redis || exit 1; N=$REDIS_PORT
replica_of "$N" "$R" || echo "the new replica did not link"
code=$(curl -s -o "$T_TMP/b.json" -w '%{http_code}' "http://127.0.0.1:$B/inventory/sale?item=w")
waited=$(( ($(date +%s%N) - a0) / 1000000 ))
wait "$apid"
check "  master killed, replica promoted: A's sale sold, its lease never lost" \
    jq -e '.ok == true and (.lease_lost | not)' "$T_TMP/a.json"
check_eq "  B sold" 200 "$code"
check "  B's sale ended ${waited} ms after A began its 3 s of work: the promoted replica knew A held the lock" \
    test "$waited" -ge 3000
ta=$(jq -r .token "$T_TMP/a.json"); tb=$(jq -r .token "$T_TMP/b.json")
check "  B's token ($tb) greater than A's ($ta): the counter did not go back" test "$tb" -gt "$ta"
check_eq "  stock 17, sold 3, ledger 3 on the promoted replica" "17 3 3" "$(state "$R" w)"

# --- --replicas 1, the replica cut off: the grant does not count ---------------------------
on "$N" replicaof 127.0.0.1 "$dead" >/dev/null
code=$(curl -s -D "$T_TMP/h" -o "$T_TMP/c.json" -w '%{http_code}' "http://127.0.0.1:$B/inventory/sale?item=w")
check_eq "the replica cut off: 503" 503 "$code"
check "  lock_unavailable" jq -e '.error == "lock_unavailable"' "$T_TMP/c.json"
check "  with Retry-After" grep -qi '^Retry-After:' "$T_TMP/h"
check_eq "  nothing sold, the grant given back" "17 3 3 0" "$(state "$R" w) $(on "$R" exists 'lock:{w}')"

t_report
