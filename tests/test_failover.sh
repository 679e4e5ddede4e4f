#!/usr/bin/env bash
# test_failover.sh - The data Redis under real Sentinel (a master, two asynchronous
# replicas, three sentinels): an instance follows the sentinels' failover without a
# restart; a server that says it is a replica is never written, even where the sentinels
# name it; --replicas 1 makes a grant count only once a replica has it, so that after a
# failover the promoted replica still knows who holds the lock; a grant no replica can
# confirm is given back (503 lock_unavailable). The retired --redis-standby answers bad
# usage naming --sentinel. The failover lesson itself (two holders under v8) is the
# evolution's `failover` rows.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

SALE_MAX_S=20   # sale's limit: a sale here may wait out a failover

# --- flags ---------------------------------------------------------------------------------
for args in "--redis-standby 127.0.0.1:6380" "--redis-standby"; do
    timeout 5 build/inventory-service $args > /dev/null 2> "$T_TMP/bad"; rc=$?
    check_eq "the retired $args: exit 2" 2 "$rc"
    check "  saying what replaced it (--sentinel)" grep -q -- "--redis-standby is retired.*--sentinel" "$T_TMP/bad"
done
timeout 5 build/inventory-service --replicas 17 > /dev/null 2>&1; rc=$?
check_eq "--replicas 17: exit 2" 2 "$rc"
check "--help explains --replicas and --sentinel, no longer --redis-standby" \
    sh -c "build/inventory-service --help > $T_TMP/help && grep -q -- --replicas $T_TMP/help &&
           grep -q -- --sentinel-master $T_TMP/help && ! grep -q -- --redis-standby $T_TMP/help"

# --- a master, two replicas, three sentinels (quorum 2) ----------------------------------------
fast=(--repl-diskless-sync-delay 0)    # a (re)connecting replica is served at once
start_redis "${fast[@]}" || exit 1; M=$REDIS_PORT M_PID=$REDIS_PID
start_redis --replicaof 127.0.0.1 "$M" "${fast[@]}" || exit 1; R1=$REDIS_PORT
start_redis --replicaof 127.0.0.1 "$M" "${fast[@]}" || exit 1; R2=$REDIS_PORT
sentinels_up 4000 "$M" "$R1" "$R2"
# ready PORT: the sentinel knows both replicas and the two other sentinels.
ready() {
    redis-cli -p "$1" sentinel master shop 2>/dev/null | awk '
        prev == "num-slaves" { r = $0 } prev == "num-other-sentinels" { s = $0 } { prev = $0 }
        END { exit !(r == 2 && s == 2) }'
}
named() { redis-cli -p "$1" sentinel get-master-addr-by-name "${2:-shop}" 2>/dev/null | paste -sd: -; }
all_ready() { local p; for p in $SENTINEL_PORTS; do ready "$p" || return 1; done; }
check "three sentinels see the master, both replicas and each other" wait_until 15 "" all_ready
check "both replicas acknowledge writes" wait_until 10 "" replica_acks 127.0.0.1 "$M" 2

# --- never a server that says it is a replica ---------------------------------------------
# The sentinels are told to watch replica R1 as a master named "other": they name it, it
# says it is a replica (ROLE); the instance must refuse it, not write there.
for p in $SENTINEL_PORTS; do sentinel_cli "$p" sentinel monitor other 127.0.0.1 "$R1" 2 >/dev/null; done
check_eq "the sentinels name the replica R1 as master \"other\"" "127.0.0.1:$R1" "$(named "${SENTINEL_PORTS##* }" other)"
start_service K --sentinel "$SENTINELS" --sentinel-master other --lock v9 --name fo-replica || exit 1
item_set -p "$M" s 10 >/dev/null
check_eq "a master the sentinels name but that says it is a replica: 503" 503 "$(SALE_BODY=$T_TMP/k.json sale "$K" s)"
check "  redis_unavailable" jq -e '.error == "redis_unavailable"' "$T_TMP/k.json"
check "  a clear log line: it says it is a replica" grep -q "says it is a replica" "$T_TMP/svc-$K.log"
check "  no write reached it (no READONLY refusal in its stats)" \
    sh -c "! redis-cli -p $R1 info errorstats | grep -q READONLY"
for p in $SENTINEL_PORTS; do sentinel_cli "$p" sentinel remove other >/dev/null; done

# --- --replicas 1: a failover that keeps the holder ----------------------------------------
# R2 is cut off (pointed at a port where nothing answers) before A's grant: only R1 can
# acknowledge it, and R1 has more of the master's stream, so the sentinels promote R1.
# A holds (14 s of work on a 15 s lease, renewed: longer than a failover the sentinels must
# start twice, the second try 2 x failover-timeout after the first, and than their
# pointing R2 at R1 after it: A's write waits for a replica of R1 to have it, and R2 is
# the only one; beside the other lane on two busy cores, 9 s of work ended before R2 was
# R1's); the master dies; B's sale must wait for A, A's write lands, and B's token is
# greater than A's.
item_set -p "$M" w 20 >/dev/null
flags=(--sentinel "$SENTINELS" --sentinel-master shop --lock v9 --replicas 1 --ttl-ms 15000
       --wait-ms 20000 --faults)
start_service A "${flags[@]}" --name fo-a || exit 1
start_service B "${flags[@]}" --name fo-b || exit 1
check_eq "v9 --replicas 1 on Sentinel, both replicas linked: a sale" 200 "$(sale "$A" w)"
dead=$(free_port)
rcli -p "$R2" replicaof 127.0.0.1 "$dead" >/dev/null
a0=$(date +%s%N)
WORK_A=14000
curl -s -o "$T_TMP/a.json" "http://127.0.0.1:$A/inventory/sale?item=w&work_ms=$WORK_A" &
apid=$!
for _ in $(seq 100); do [ "$(rcli -p "$M" exists "$(item_key lock w)")" = 1 ] && break; sleep 0.02; done
sleep 0.4
check_eq "  A holds: its grant is on R1, not on the cut-off R2" "1 0" \
    "$(rcli -p "$R1" exists "$(item_key lock w)") $(rcli -p "$R2" exists "$(item_key lock w)")"
check "  the grants waited for a replica (WAIT in the master's command stats)" \
    sh -c "redis-cli -p $M info commandstats | grep -q '^cmdstat_wait:calls=[1-9]'"
kill -9 "$M_PID"; wait "$M_PID" 2>/dev/null
killed=$(date +%s%N)
all_name_r1() { local p; for p in $SENTINEL_PORTS; do [ "$(named "$p")" = "127.0.0.1:$R1" ] || return 1; done; }
check "  the master killed: the sentinels promote R1 (the replica that has the grant)" wait_until 20 "" all_name_r1
echo "    promoted $(( ($(date +%s%N) - killed) / 1000000 )) ms after the kill"
check_eq "  R1 says it is the master" master "$(rcli -p "$R1" role | head -n 1)"
code=$(SALE_MAX_S=25 SALE_BODY=$T_TMP/b.json sale "$B" w)
waited=$(( ($(date +%s%N) - a0) / 1000000 ))
wait "$apid"
echo "    A answered $(jq -c '{ok, error, lease_lost, token}' "$T_TMP/a.json" 2>/dev/null), B $code $(jq -c '{ok, error, token}' "$T_TMP/b.json" 2>/dev/null)"
check "  A's sale sold, its lease never lost" jq -e '.ok == true and (.lease_lost | not)' "$T_TMP/a.json"
check_eq "  B sold, on an instance that followed the failover (not restarted)" 200 "$code"
check "  B's sale ended ${waited} ms after A began its $((WORK_A / 1000)) s of work: the promoted replica knew A held the lock" \
    test "$waited" -ge "$WORK_A"
ta=$(jq -r .token "$T_TMP/a.json"); tb=$(jq -r .token "$T_TMP/b.json")
check "  B's token ($tb) greater than A's ($ta): the counter did not go back" test "$tb" -gt "$ta"
check_eq "  stock 17, sold 3, ledger 3 on the promoted replica" "17 3 3" "$(item_state -p "$R1" w)"

# --- --replicas 1, no replica to confirm: the grant does not count -------------------------
# R2 follows R1 once the failover reconfigured it; cut it off again: no replica left.
follows_r1() { rcli -p "$R2" role | sed -n 3p | grep -qx "$R1"; }
check "the other replica follows the new master (the sentinels reconfigured it)" wait_until 10 "" follows_r1
rcli -p "$R2" replicaof 127.0.0.1 "$dead" >/dev/null
code=$(curl -s -D "$T_TMP/h" -o "$T_TMP/c.json" -w '%{http_code}' "http://127.0.0.1:$B/inventory/sale?item=w")
check_eq "the replica cut off: 503" 503 "$code"
check "  lock_unavailable" jq -e '.error == "lock_unavailable"' "$T_TMP/c.json"
check "  with Retry-After" grep -qi '^Retry-After:' "$T_TMP/h"
check_eq "  nothing sold, the grant given back" "17 3 3 0" "$(item_state -p "$R1" w) $(rcli -p "$R1" exists "$(item_key lock w)")"

# --- a release the replicas never got: given back after the failover ------------------------
# A v8 sale holds the lock while both replicas follow (they get the grant); they are cut
# before its release, so the master's DEL never reaches them; the master is killed and a
# replica promoted, holding the lock in A's name for the rest of its lease although A let
# go and was told so. A gives it back once it reaches the new master (a connection dropped
# since marks the client's last answered releases as perhaps lost, whichever thread made
# them; its give-back thread or its next grant gives them back): B sells the item before
# that lease would have run out. A is stopped (SIGSTOP) while the sentinels promote, so
# that the promoted replica is seen holding the lock before A gives it back. Twice: with one combined
# worker (the thread that let g go sells next), and with a thread per connection (the
# thread that let g go ended with its connection; another gives g back).
lost_release() {   # lost_release LABEL FLAG...: the scenario on instance A started with FLAG...
    local label=$1; shift
    start_redis "${fast[@]}" || exit 1; M2=$REDIS_PORT M2_PID=$REDIS_PID
    start_redis --replicaof 127.0.0.1 "$M2" "${fast[@]}" || exit 1; S1=$REDIS_PORT
    start_redis --replicaof 127.0.0.1 "$M2" "${fast[@]}" || exit 1; S2=$REDIS_PORT
    sentinels_up 3000 "$M2" "$S1" "$S2"
    check "$label: master, two replicas, three sentinels" wait_until 15 "" all_ready
    check "  both replicas acknowledge writes" wait_until 10 "" replica_acks 127.0.0.1 "$M2" 2
    rcli -p "$M2" mset "$(item_key stock g)" 20 "$(item_key stock h)" 20 >/dev/null
    # A lease of 30 s: the promoted replica must still hold A's grant (over 3 s of it left)
    # after 4 s of work, the cut, the kill and the promotion, which on busy cores once took
    # over 11 s together. B's wait (20 s) ends before that lease would: a grant never
    # given back is B's 503, not a late 200.
    flags=(--sentinel "$SENTINELS" --sentinel-master shop --lock v8 --ttl-ms 30000 --wait-ms 20000 --faults)
    start_service C "${flags[@]}" "$@" --name "lost-a$label" || exit 1
    c_pid=$SVC_PID
    start_service D "${flags[@]}" --name "lost-b$label" || exit 1
    check_eq "  v8 on Sentinel: A sells g" 200 "$(sale "$C" g)"
    # Its work long enough for the cut to come first on two busy cores (with 1.5 s the
    # release once reached the replicas before they were cut); its lease longer still.
    curl -s -o "$T_TMP/lr.json" "http://127.0.0.1:$C/inventory/sale?item=g&work_ms=4000" &
    lrpid=$!
    on_both() { [ "$(rcli -p "$S1" exists "$(item_key lock g)") $(rcli -p "$S2" exists "$(item_key lock g)")" = "1 1" ]; }
    check "  A holds g, and both replicas have its lock" wait_until 5 "" on_both
    dead=$(free_port)
    rcli -p "$S1" replicaof 127.0.0.1 "$dead" >/dev/null; rcli -p "$S2" replicaof 127.0.0.1 "$dead" >/dev/null
    wait "$lrpid"
    check "  A sold and let go (200)" jq -e '.ok == true' "$T_TMP/lr.json"
    check_eq "  the master has no lock:{g}; the cut replicas still have it" "0 1 1" \
        "$(rcli -p "$M2" exists "$(item_key lock g)") $(rcli -p "$S1" exists "$(item_key lock g)") $(rcli -p "$S2" exists "$(item_key lock g)")"
    kill -STOP "$c_pid"
    kill -9 "$M2_PID"; wait "$M2_PID" 2>/dev/null
    another_named() { local n; n=$(named "${SENTINEL_PORTS##* }"); [ -n "$n" ] && [ "$n" != "127.0.0.1:$M2" ]; }
    check "  the master killed: the sentinels promote a replica" wait_until 20 "" another_named
    NEW=$(named "${SENTINEL_PORTS##* }"); NEW=${NEW##*:}
    left=$(rcli -p "$NEW" pttl "$(item_key lock g)"); t_left=$(date +%s%N)
    kill -CONT "$c_pid"
    check "  the promoted replica holds A's lock on g, which A let go (PTTL ${left} ms)" test "${left:-0}" -gt 3000
    # A sells h until it has followed the failover, then once more: its grants give g back.
    sold_h=0
    for _ in $(seq 50); do [ "$(sale "$C" h)" = 200 ] && { sold_h=1; break; }; sleep 0.1; done
    check_eq "  A sells h on the promoted replica" 1 "$sold_h"
    check_eq "  and again" 200 "$(sale "$C" h)"
    code=$(sale "$D" g); took=$(( ($(date +%s%N) - t_left) / 1000000 ))
    check_eq "  B sells g" 200 "$code"
    check "  ${took} ms after the promotion was seen, before the ${left} ms its lease had left" test "$took" -lt "$left"
    check "  A counts it among its locks given back" \
        sh -c "curl -s http://127.0.0.1:$C/metrics | grep -q '^inventory_lock_given_back_total [1-9]'"
}
lost_release " (one combined worker)" --combine 8 --workers 1
lost_release " (a thread per connection)"

t_report
