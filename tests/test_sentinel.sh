#!/usr/bin/env bash
# test_sentinel.sh - Redis Sentinel: a master, a replica and three
# real sentinels (quorum 2, short timeouts); an instance started with --sentinel finds
# the master by asking them, sells, and after the master is killed (-9) and the sentinels
# promote the replica, sells on the new master without being restarted. Bad input: no
# sentinel answering, a master name they do not know, a named master that says it is a
# replica, sentinels that disagree (two masters named): a clear log line, 503
# redis_unavailable, nothing written, and sales again once the sentinels agree; the flags
# refuse a mix of --redis and --sentinel.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

BIN=${SERVICE_BIN:-build/inventory-service}

# --- flags --------------------------------------------------------------------------
"$BIN" --sentinel 127.0.0.1:1 > "$T_TMP/bad" 2>&1; rc=$?
check_eq "--sentinel without --sentinel-master: bad usage" 2 "$rc"
check "  with a reason" grep -q -- "--sentinel wants --sentinel-master NAME" "$T_TMP/bad"
"$BIN" --sentinel 127.0.0.1:1 --sentinel-master m --redis 127.0.0.1:6379 > "$T_TMP/bad" 2>&1; rc=$?
check_eq "--sentinel with --redis: bad usage" 2 "$rc"
"$BIN" --sentinel nocolon --sentinel-master m > "$T_TMP/bad" 2>&1; rc=$?
check_eq "--sentinel without HOST:PORT: bad usage" 2 "$rc"
check "--help explains --sentinel" sh -c "$BIN --help | grep -q -- --sentinel-master"

# --- a master, a replica, three sentinels -----------------------------------------------
start_redis || exit 1
MASTER=$REDIS_PORT MASTER_PID=$REDIS_PID
start_redis --replicaof 127.0.0.1 "$MASTER" || exit 1
REPLICA=$REDIS_PORT
sentinels_up 3000 "$MASTER" "$REPLICA"
sentinel_master() { redis-cli -p "$SENTINEL_PORT" sentinel get-master-addr-by-name shop 2>/dev/null | paste -sd: -; }
check "the sentinels know the master" wait_until 10 "" sh -c "[ \"\$(redis-cli -p $SENTINEL_PORT sentinel get-master-addr-by-name shop | paste -sd: -)\" = 127.0.0.1:$MASTER ]"
replica_synced() { [ "$(redis-cli -p "$REPLICA" info replication | tr -d '\r' | awk -F: '$1 == "master_link_status" { print $2 }')" = up ]; }
check "the replica is in sync" wait_until 10 "" replica_synced
item_set -p "$MASTER" s 10 >/dev/null

start_service S --sentinel "$SENTINELS" --sentinel-master shop --lock v8 --ttl-ms 2000 --name sent || exit 1
check_eq "an instance on --sentinel sells" "200 200 200" "$(sale "$S" s) $(sale "$S" s) $(sale "$S" s)"
check_eq "  on the master" 7 "$(item_get -p "$MASTER" stock s)"
check "  it says how it found Redis" grep -q "redis sentinel master shop" "$T_TMP/svc-$S.log"
check "  /health answers" curl -sf -o /dev/null "http://127.0.0.1:$S/health"

# --- the master dies; the sentinels promote the replica -----------------------------------
replica_has() { [ "$(item_get -p "$REPLICA" stock s)" = 7 ]; }
check "the replica has the sales" wait_until 5 "" replica_has
kill -9 "$MASTER_PID"
killed_at=$(date +%s%N)
replica_named() { [ "$(sentinel_master)" = "127.0.0.1:$REPLICA" ]; }
check "the sentinels promote the replica" wait_until 20 "" replica_named
promoted_at=$(date +%s%N)
first_sale=""
for _ in $(seq 100); do
    if [ "$(sale "$S" s)" = 200 ]; then first_sale=$(date +%s%N); break; fi
    sleep 0.1
done
check "the instance sells on the promoted replica, not restarted" test -n "$first_sale"
after_ms=$(( (${first_sale:-$promoted_at} - promoted_at) / 1000000 ))
echo "    first sale ${after_ms} ms after the promotion was seen ($(( (promoted_at - killed_at) / 1000000 )) ms after the kill)"
check "  within 3 s of the promotion" test "$after_ms" -lt 3000
check_eq "  the new master has it" 6 "$(item_get -p "$REPLICA" stock s)"

# --- bad input -------------------------------------------------------------------------
start_service U --sentinel "$SENTINELS" --sentinel-master nosuch --lock v8 --name unknown || exit 1
check_eq "a master name no sentinel knows: 503" 503 "$(sale "$U" s)"
check "  a clear log line" grep -q "no sentinel knows a master named nosuch" "$T_TMP/svc-$U.log"
dead=$(free_port)
start_service D --sentinel "127.0.0.1:$dead" --sentinel-master shop --lock v8 --name nosentinel || exit 1
check_eq "no sentinel answering: 503" 503 "$(sale "$D" s)"
check "  a clear log line" grep -q "no sentinel of 1 answered for master shop" "$T_TMP/svc-$D.log"
check "  the body says redis_unavailable" sh -c "curl -s http://127.0.0.1:$D/inventory/sale?item=s | grep -q redis_unavailable"

# A sentinel of our own beside the three (a real one, quorum 1), told a wrong master.
# rogue_sentinel NAME HOST PORT [EPOCH]: starts it monitoring NAME at HOST:PORT; sets ROGUE
# (its port) and adds its pid to ROGUE_PIDS.
rogue_sentinel() {
    local port
    port=$(free_port)
    mkdir -p "$T_TMP/rogue-$port"
    printf 'port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor %s %s %s 1\nsentinel down-after-milliseconds %s 60000\n' \
        "$port" "$T_TMP/rogue-$port" "$1" "$2" "$3" "$1" > "$T_TMP/rogue-$port/sentinel.conf"
    [ -z "${4:-}" ] || echo "sentinel config-epoch $1 $4" >> "$T_TMP/rogue-$port/sentinel.conf"
    case $2 in *[!0-9.]*)   # a hostname: kept as spelt, and named so
        printf 'sentinel resolve-hostnames yes\nsentinel announce-hostnames yes\n' >> "$T_TMP/rogue-$port/sentinel.conf" ;;
    esac
    redis-server "$T_TMP/rogue-$port/sentinel.conf" --sentinel > "$T_TMP/rogue-$port.log" 2>&1 &
    T_PIDS="$T_PIDS $!"
    ROGUE=$port ROGUE_PIDS="${ROGUE_PIDS:-} $!"
    wait_until 10 "" sh -c "redis-cli -p $port sentinel get-master-addr-by-name $1 | grep -q $3"
}
# remonitor SENTINEL NAME PORT: tells the sentinel on SENTINEL that NAME is at PORT now.
remonitor() {
    redis-cli -p "$1" sentinel remove "$2" >/dev/null
    redis-cli -p "$1" sentinel monitor "$2" 127.0.0.1 "$3" 1 >/dev/null
}
sells_within() { wait_until "$2" "" sh -c "[ \"\$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://127.0.0.1:$1/inventory/sale?item=s)\" = 200 ]"; }
NEW_MASTER=$REPLICA

# A master address that says it is a replica: never written to.
start_redis --replicaof 127.0.0.1 "$NEW_MASTER" || exit 1
LAGGARD=$REDIS_PORT
rogue_sentinel lag 127.0.0.1 "$LAGGARD"
start_service L --sentinel "127.0.0.1:$ROGUE" --sentinel-master lag --lock v8 --name laggard || exit 1
before=$(item_get -p "$NEW_MASTER" stock s)
check_eq "the sentinel names a replica as master: 503" 503 "$(sale "$L" s)"
check "  a clear log line" grep -q "named master by the sentinels, says it is a replica" "$T_TMP/svc-$L.log"
check_eq "  nothing written" "$before" "$(item_get -p "$NEW_MASTER" stock s)"
remonitor "$ROGUE" lag "$NEW_MASTER"
check "  once the sentinel names the master: it sells" sells_within "$L" 10

# Sentinels that disagree, both named servers masters under the same configuration
# epoch (two masters at once), with no majority for either: neither is written to until
# they agree.
start_redis || exit 1
STRANGER=$REDIS_PORT
item_set -p "$STRANGER" s 50 >/dev/null
config_epoch() { redis-cli -p "$1" sentinel master shop | awk 'p { print; exit } $0 == "config-epoch" { p = 1 }'; }
EPOCH=$(config_epoch "$SENTINEL_PORT")
check "the sentinels' configuration epoch moved with the failover" test "${EPOCH:-0}" -ge 1
rogue_sentinel shop 127.0.0.1 "$STRANGER" "$EPOCH"
start_service G --sentinel "127.0.0.1:$SENTINEL_PORT,127.0.0.1:$ROGUE" --sentinel-master shop --lock v8 --name disagree || exit 1
before=$(item_get -p "$NEW_MASTER" stock s)
check_eq "one sentinel names one master, another another, same epoch: 503" 503 "$(sale "$G" s)"
check "  a clear log line" grep -q "the sentinels disagree: .* both say they are master shop" "$T_TMP/svc-$G.log"
check_eq "  nothing written to either" "$before 50" \
    "$(item_get -p "$NEW_MASTER" stock s) $(item_get -p "$STRANGER" stock s)"
remonitor "$ROGUE" shop "$NEW_MASTER"
check "  once they agree: it sells, on the master they name" sells_within "$G" 10
check_eq "  the stranger untouched" 50 "$(item_get -p "$STRANGER" stock s)"
item_set -p "$NEW_MASTER" s 100 >/dev/null

# Three sentinels name one master and a fourth another under the same epoch: the three
# are a majority of the four, and the asking ends on their answer.
rogue_sentinel shop 127.0.0.1 "$STRANGER" "$EPOCH"
start_service M --sentinel "$SENTINELS,127.0.0.1:$ROGUE" --sentinel-master shop --lock v8 --name majority || exit 1
check_eq "three sentinels of four name one master, the fourth another: sold on the three's" \
    "200 99 50" "$(sale "$M" s) $(item_get -p "$NEW_MASTER" stock s) $(item_get -p "$STRANGER" stock s)"

# A sentinel that names another master under an older epoch (one on a minority side, or
# one that missed the failover): the master named under the highest epoch is used.
rogue_sentinel shop 127.0.0.1 "$STRANGER" 0
start_service O --sentinel "127.0.0.1:$ROGUE,$SENTINELS" --sentinel-master shop --lock v8 --name older || exit 1
before=$(item_get -p "$NEW_MASTER" stock s)
check_eq "a fourth sentinel names another master under epoch 0: sold" 200 "$(sale "$O" s)"
check_eq "  on the master named under epoch $EPOCH" "$((before - 1)) 50" \
    "$(item_get -p "$NEW_MASTER" stock s) $(item_get -p "$STRANGER" stock s)"

# The same master under two spellings (localhost and 127.0.0.1) is one master, not two.
rogue_sentinel shop localhost "$NEW_MASTER" "$EPOCH"
start_service D --sentinel "127.0.0.1:$SENTINEL_PORT,127.0.0.1:$ROGUE" --sentinel-master shop --lock v8 --name spelt || exit 1
check_eq "  the fourth names it as localhost" localhost "$(redis-cli -p "$ROGUE" sentinel get-master-addr-by-name shop | head -n 1)"
check_eq "one sentinel names the master as localhost, the other as 127.0.0.1: sold" 200 "$(sale "$D" s)"
# The rogue sentinels go (they share the name "shop" with the sentinels started below:
# left running, they join those sentinels' view of it).
kill $ROGUE_PIDS 2>/dev/null

# One of three sentinels not answering (stopped: it accepts a connection, as a host behind
# a partition does not, but never answers): the sentinels are asked at once and two that
# agree are a majority, so a new instance finds the master about as fast as with all
# three (asked one after another, the silent one cost a whole timeout).
first_sale_ms() {   # a new instance's start and first sale, in ms, into FIRST_MS (not
    local t0          # in a subshell: the instance's pid must reach T_PIDS, to be stopped)
    FIRST_MS=""
    t0=$(date +%s%N)
    start_service FS --sentinel "$SENTINELS" --sentinel-master shop --lock v8 --name "$1" || return 1
    [ "$(sale "$FS" s)" = 200 ] || return 1
    FIRST_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
}
SILENT_PID=$(redis-cli -p "${SENTINEL_PORTS%% *}" info server | tr -d '\r' | awk -F: '$1 == "process_id" { print $2 }')
first_sale_ms all3; all_ms=$FIRST_MS
kill -STOP "$SILENT_PID"
first_sale_ms silent1; silent_ms=$FIRST_MS
kill -CONT "$SILENT_PID"
echo "    a new instance's start and first sale: ${all_ms:-?} ms with three sentinels answering, ${silent_ms:-?} ms with one silent"
check "  one silent sentinel of three costs under 500 ms (a connect timeout is 1 s)" \
    test "${silent_ms:-99999}" -lt $(( ${all_ms:-0} + 500 ))

# A master that stops answering without a reset (frozen: SIGSTOP; as behind a partition)
# while a sale works 1 s inside its lock: its write and release, sent on the connection
# it holds, wait for an answer that never comes. They fail as soon as the sentinels
# announce the new master (the instance cuts its connections to the old one), not at the
# 5 s command timeout (the build before: 6.2 s); the next sale goes to the new master.
start_redis || exit 1
F_MASTER=$REDIS_PORT F_PID=$REDIS_PID
start_redis --replicaof 127.0.0.1 "$F_MASTER" || exit 1
F_REPLICA=$REDIS_PORT
sentinels_up 3000 "$F_MASTER" "$F_REPLICA"
F_SENTINEL=$SENTINEL_PORT
f_names() { [ "$(redis-cli -p "$F_SENTINEL" sentinel get-master-addr-by-name shop 2>/dev/null | paste -sd: -)" = "127.0.0.1:$1" ]; }
f_synced() { [ "$(item_get -p "$F_REPLICA" stock f)" = 100 ]; }
item_set -p "$F_MASTER" f 100 >/dev/null
f_ready() { wait_until 10 '' f_names "$F_MASTER" && wait_until 10 '' f_synced; }
check "frozen master: the sentinels know it, the replica has the stock" f_ready
start_service F --sentinel "$SENTINELS" --sentinel-master shop --lock v8 --ttl-ms 2000 --faults --name frozen || exit 1
check_eq "  a sale before" 200 "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$F/inventory/sale?item=f")"
sent=$(date +%s%N)
curl -s -m 20 -o "$T_TMP/frozen.json" -w '%{http_code}' "http://127.0.0.1:$F/inventory/sale?item=f&work_ms=1000" > "$T_TMP/frozen.code" &
curl_pid=$!
sleep 0.3
kill -STOP "$F_PID"
wait_until 20 "" f_names "$F_REPLICA"; promoted=$(date +%s%N)
wait "$curl_pid"; answered=$(date +%s%N)
echo "    promoted $(( (promoted - sent) / 1000000 )) ms after the sale was sent; it answered $(cat "$T_TMP/frozen.code") $(jq -r .error "$T_TMP/frozen.json") $(( (answered - sent) / 1000000 )) ms after it was sent"
check_eq "  the sale whose write went unanswered: 503 outcome_unknown" "503 outcome_unknown" "$(cat "$T_TMP/frozen.code") $(jq -r .error "$T_TMP/frozen.json")"
check "  the sale waiting on the frozen master answered before the 5 s command timeout" \
    test $(( (answered - sent) / 1000000 )) -lt 4500
check "  within 1.5 s of the promotion" test $(( (answered - promoted) / 1000000 )) -lt 1500
# (What the promoted replica has: the sale before may not have reached it when the master froze.)
before=$(item_get -p "$F_REPLICA" stock f)
check_eq "  the next sale: 200, on the new master" "200 $((before - 1))" \
    "$(curl -s -m 10 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$F/inventory/sale?item=f") $(item_get -p "$F_REPLICA" stock f)"
kill -CONT "$F_PID"

t_report
