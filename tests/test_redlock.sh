#!/usr/bin/env bash
# test_redlock.sh - v10 (redlock) through real HTTP, a real data Redis and three real lock
# masters: a grant on every master; the token from the data Redis; one master down (sales
# go on, released on the others, renewal by quorum keeps a long sale's lease); two down
# (503 lock_unavailable at once, not at the wait limit); masters back (sales resume);
# a master restarted empty lets a second holder in, one with AOF `always` does not; when
# the older token's write comes after the newer grant's read, it is refused.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

start_redis || exit 1
DATA=$REDIS_PORT
declare -a MP MPID
# start_master I [AOF]: master I on its port (drawn once), appendfsync always when AOF is set.
start_master() {
    local i=$1 aof=${2:-}
    [ -n "${MP[$i]:-}" ] || MP[$i]=$(free_port)
    mkdir -p "$T_TMP/m$i"
    redis-server --port "${MP[$i]}" --bind 127.0.0.1 --save '' --dir "$T_TMP/m$i" \
        $([ -n "$aof" ] && echo "--appendonly yes --appendfsync always" || echo "--appendonly no") \
        --daemonize no >>"$T_TMP/m$i.log" 2>&1 &
    MPID[$i]=$!
    T_PIDS="$T_PIDS ${MPID[$i]}"
    for _ in $(seq 100); do redis-cli -p "${MP[$i]}" ping >/dev/null 2>&1 && return 0; sleep 0.05; done
    echo "master $i did not start" >&2; return 1
}
# crash_master I: master I killed -9 (and reaped).
crash_master() { kill -9 "${MPID[$1]}" 2>/dev/null; wait "${MPID[$1]}" 2>/dev/null || true; }
m() { redis-cli -p "${MP[$1]}" "${@:2}"; }
for i in 1 2 3; do start_master $i || exit 1; done
MASTERS="127.0.0.1:${MP[1]},127.0.0.1:${MP[2]},127.0.0.1:${MP[3]}"
SALE_MAX_S=30   # sale's limit: a sale here may wait for a lock held 1.5 s

# --- flags ----------------------------------------------------------------------------
build/inventory-service --lock redlock --redis "127.0.0.1:$DATA" > "$T_TMP/bad" 2>&1; rc=$?
check_eq "redlock without --lock-redis: refused at start-up (bad usage)" 2 "$rc"
check "  with a reason" grep -q "wants its lock masters" "$T_TMP/bad"
build/inventory-service --lock v10 --lock-redis "nohost" > "$T_TMP/bad" 2>&1; rc=$?
check_eq "a bad --lock-redis: refused (bad usage)" 2 "$rc"
check "--help explains --lock-redis" sh -c "build/inventory-service --help | grep -q -- --lock-redis"

# --- all masters up ------------------------------------------------------------------------
item_set r 20 >/dev/null
start_service A --redis "127.0.0.1:$DATA" --lock v10 --lock-redis "$MASTERS" --ttl-ms 2000 \
    --wait-ms 5000 --faults --name rla || exit 1
# lock_holders: on how many masters lock:{r} is now; held_on_all: on all three.
lock_holders() { local i n=0; for i in 1 2 3; do [ "$(m $i exists "$(item_key lock r)")" = 1 ] && n=$((n+1)); done; echo "$n"; }
held_on_all() { [ "$(lock_holders)" = 3 ]; }
# A sale working 1.5 s inside its grant (the lease 2 s): the masters looked at while it
# works, until all three hold its lock or the sale has answered (on two busy cores the
# grant can take 300 ms, and the sale's curl as long to start).
sale "$A" r work_ms=1500 > "$T_TMP/held.code" &
hp=$!
check "a grant holds the lock on every master (3 of 3)" wait_until 10 "$hp" held_on_all
wait "$hp"
check_eq "  and sells" 200 "$(cat "$T_TMP/held.code")"
check_eq "  released on every master" 0 "$(lock_holders)"
for _ in 1 2 3 4; do sale "$A" r >/dev/null; done
check_eq "five sales: stock 15, sold 5, ledger 5" "15 5 5" "$(item_state r)"
check_eq "  each grant's token from fence:{I} on the data Redis" 5 "$(item_get fence r)"
tokens=$(rcli xrange "$(item_key orders r)" - + | awk 'prev == "token" { print } { prev = $0 }' | paste -sd' ' -)
check_eq "  tokens 1 to 5 in the ledger, in order" "1 2 3 4 5" "$tokens"

# --- a minority down: one master of three ----------------------------------------------------
crash_master 3
codes=""; for _ in 1 2 3 4 5; do codes="$codes$(sale "$A" r) "; done
check_eq "one master of three killed: sales go on" "200 200 200 200 200 " "$codes"
check_eq "  stock 10, sold 10, ledger 10" "10 10 10" "$(item_state r)"
check_eq "  released on the two that answered" "0 0" "$(m 1 exists "$(item_key lock r)") $(m 2 exists "$(item_key lock r)")"
start_service L --redis "127.0.0.1:$DATA" --lock v10 --lock-redis "$MASTERS" --ttl-ms 300 \
    --wait-ms 5000 --faults --name rll || exit 1
code=$(sale "$L" r work_ms=1200)
check_eq "  a sale 4x longer than its 300 ms lease, renewed by a quorum (2 of 3): 200" 200 "$code"
check_eq "  stock 9" 9 "$(item_get stock r)"

# --- a majority down: two of three -----------------------------------------------------------
crash_master 2
t0=$(date +%s%N)
code=$(curl -s -D "$T_TMP/headers" -o "$T_TMP/body" -w '%{http_code}' -m 30 "http://127.0.0.1:$A/inventory/sale?item=r")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check_eq "two masters of three killed: 503" 503 "$code"
check "  lock_unavailable" jq -e '.error == "lock_unavailable"' "$T_TMP/body"
check "  with Retry-After" grep -qi '^Retry-After:' "$T_TMP/headers"
check "  at once ($ms ms), far below the 5 s wait limit" test "$ms" -lt 1000
check_eq "  nothing sold" "9 11 11" "$(item_state r)"

# --- masters back ------------------------------------------------------------------------------
start_master 2 && start_master 3
check_eq "masters back: sales resume" 200 "$(sale "$A" r)"
check_eq "  stock 8, sold 12, ledger 12" "8 12 12" "$(item_state r)"

# --- a master restarted empty -------------------------------------------------------------------
# Master 3 is down while H takes the lock (on 1 and 2: a quorum). Master 3 comes back, and
# master 1 restarts: without AOF it has forgotten H's key, so a second sale wins 1 and 3, a quorum too:
# two holders at once (the probe counts the overlap; the fenced write still refuses the
# older token). With appendfsync always, master 1 comes back with the key: the second waits. H's
# lease (9 s) renews every 3 s: not while a master restarts, which would count as lost. H
# works 2.5 s; master 1 is killed once H's key is seen on masters 1 and 2 (on two busy cores a
# grant can take 300 ms, and two masters as long to start again).
held_on() {     # I J ITEM: ITEM's lock is on masters I and J
    [ "$(m "$1" exists "$(item_key lock "$3")")$(m "$2" exists "$(item_key lock "$3")")" = 11 ]
}
restarted() {   # AOF ("" or "aof") ITEM; sets OV to the overlaps seen (in this shell: the
                # masters it starts must stay on the cleanup list)
    local aof=$1 item=$2
    item_set "$item" 10 >/dev/null
    crash_master 1; crash_master 3
    start_master 1 "$aof" || return 1
    sale "$B" "$item" work_ms=2500 > "$T_TMP/h-$item" &
    local h=$!
    wait_until 5 "$h" held_on 1 2 "$item"
    crash_master 1
    start_master 1 "$aof" && start_master 3
    sale "$A" "$item" > "$T_TMP/b-$item"
    wait "$h"
    OV=$(item_get overlaps "$item")
}
start_service B --redis "127.0.0.1:$DATA" --lock v10 --lock-redis "$MASTERS" --ttl-ms 9000 \
    --wait-ms 5000 --faults --name rlb || exit 1
restarted "" empty 2>/dev/null
check "a master restarted empty (no AOF): a second holder while the first works (overlaps ${OV:-0})" test "${OV:-0}" -ge 1
check_eq "  nothing oversold: the fenced write refused the older token (sold + stock = 10)" 10 \
    $(( $(item_get stock empty) + $(item_get sold empty) ))
# The model's v10 restart, in the order the old fenced write let through: the older token
# writes after the newer grant has read the stock and before it writes. H is driven by hand
# with the scripts themselves (lock/scripts/v7_acquire.lua on masters 1 and 2 while 3 is
# down, its token from fence:{I}, its read; build/scripts/sale_write_fenced.lua, the script whole): a
# service cannot be held between its lease check and its write on cue. Master 1 then
# restarts empty and master 3 comes back; A, a real instance, wins 1 and 3, takes the next
# token and reads 10, and works; then H's write arrives. Nobody has written since A's
# grant, so only the last token issued can refuse it; had it landed, A's write on its read
# of 10 would land too: sold 2, stock 9.
item_set older 10 >/dev/null
crash_master 1; crash_master 3
start_master 1 || exit 1
check_eq "the older token: H takes masters 1 and 2 by hand (3 is down)" "1 1" \
    "$(m 1 --eval lock/scripts/v7_acquire.lua "$(item_key lock older)" , by-hand:1 10000) $(m 2 --eval lock/scripts/v7_acquire.lua "$(item_key lock older)" , by-hand:1 10000)"
h_token=$(rcli incr "$(item_key fence older)")
h_read=$(item_get stock older)
crash_master 1
start_master 1 && start_master 3 || exit 1
SALE_BODY="$T_TMP/newer.json" sale "$A" older work_ms=1500 > "$T_TMP/newer.code" &
ap=$!
a_has_read() { [ "$(item_get fence older)" = $((h_token + 1)) ] && [ "$(rcli scard "$(item_key probe older)")" = 1 ]; }
check "  master 1 restarts empty: A wins 1 and 3 too, takes token $((h_token + 1)) and reads" wait_until 5 "" a_has_read
h_write=$(rcli --eval build/scripts/sale_write_fenced.lua "$(item_key stock older)" "$(item_key sold older)" "$(item_key orders older)" \
          "$(item_key written older)" "$(item_key fence older)" , "$h_read" 1 by-hand by-hand:1 "$h_token" 1 older '' h-older 2>&1)
check_eq "  H's write arrives (stock read $h_read, token $h_token) while A works: refused" lease_lost "${h_write%% *}"
wait "$ap"
check_eq "  A's sale: 200" 200 "$(cat "$T_TMP/newer.code")"
check_eq "  nothing oversold: stock 9, sold 1, ledger 1" "9 1 1" "$(item_state older)"
restarted aof kept 2>/dev/null
check_eq "the same with appendfsync always: the key survives the restart, no second holder" "" "$OV"
check_eq "  both sold in turn" "200 200" "$(cat "$T_TMP/h-kept") $(cat "$T_TMP/b-kept")"

t_report
