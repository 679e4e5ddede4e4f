#!/usr/bin/env bash
# test_replicas.sh - --replicas N covers the sale's own write, not only the grant: WAIT N
# goes right after the write on the same connection (before the release, for a locked
# sale), and a write fewer than N replicas acknowledged answers 503 outcome_unknown,
# never 200 (the write is on the master, not on a replica: a failover could lose it). A
# sold-out sale wrote nothing and stays 409. A real master and one real replica; the
# replica is frozen (SIGSTOP) to fall behind, never mocked. WAIT waits a tenth of the TTL
# (--ttl-ms 30000: 3 s): room for a freeze placed by what the instance says, which on two
# busy cores comes a few hundred ms after the event it waits for.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

BIN=${SERVICE_BIN:-build/inventory-service}
error_of() { jq -r '.error // "none"' "$1" 2>/dev/null; }

# --- flags -----------------------------------------------------------------------------
"$BIN" --help | tr -s ' \n' ' ' > "$T_TMP/help"    # one line: phrases may wrap
check "--help: a grant and a sale count only once N replicas have them" \
    grep -q -- "--replicas N a grant and a sale count only once N replicas" "$T_TMP/help"
check "--help: a sale whose WAIT falls short answers outcome_unknown" \
    grep -q -- "a sale whose WAIT falls short answers outcome_unknown" "$T_TMP/help"
deploy/up --help | tr -s ' \n' ' ' > "$T_TMP/up-help"
check "deploy/up --help says the same of its --replicas" \
    grep -q -- "--replicas N a grant and a sale count only once N replicas have them (the service's WAIT N); a sale whose WAIT falls short answers outcome_unknown" "$T_TMP/up-help"

# --- a master and one replica ------------------------------------------------------------
start_redis --repl-diskless-sync-delay 0 || exit 1; M=$REDIS_PORT
start_redis --replicaof 127.0.0.1 "$M" || exit 1; R=$REDIS_PORT R_PID=$REDIS_PID
check "the replica acknowledges writes" wait_until 10 "" replica_acks 127.0.0.1 "$M" 1
rcli -p "$M" mset "$(item_key stock v)" 10 "$(item_key stock a)" 10 "$(item_key stock z)" 0 "$(item_key stock c)" 10 "$(item_key stock p)" 10 >/dev/null
common=(--redis "127.0.0.1:$M" --replicas 1 --ttl-ms 30000 --wait-ms 8000)
start_service V "${common[@]}" --lock v8 --faults --name rp-v8 || exit 1
start_service T "${common[@]}" --lock atomic --name rp-atomic || exit 1
start_service C "${common[@]}" --lock v8 --wait notify --combine 4 --faults --name rp-combine || exit 1
wait_calls() { rcli -p "$M" info commandstats | sed -n 's/^cmdstat_wait:calls=\([0-9]*\),.*/\1/p'; }
grants() { metric "$1" inventory_lock_acquisitions_total; }
# granted PORT N: the instance on PORT has confirmed N grants or more.
granted() { [ "$(grants "$1")" -ge "$2" ]; }
# sales_waiting PORT N: N sales or more are in the instance on PORT, not yet answered.
sales_waiting() { [ "$(metric "$1" inventory_sales_in_flight)" -ge "$2" ] 2>/dev/null; }
# replica_get KEY: the replica's value, when it answers within 0.2 s (not while frozen).
# Asked by the shell itself (a connection of its own, RESP's inline GET): no process to
# start, which on two busy cores took longer than the 0.2 s (an answer seen as none).
replica_get() {
    local fd line
    { exec {fd}<>"/dev/tcp/127.0.0.1/$R"; } 2>/dev/null || return 1
    printf 'GET %s\r\n' "$1" >&"$fd"
    if read -r -t 0.2 line <&"$fd" && [ "${line:0:1}" = '$' ] && [ "${line:1:1}" != - ]; then
        read -r -t 0.2 line <&"$fd" && printf '%s\n' "${line%$'\r'}"
    fi
    exec {fd}>&-
}
# blip SECONDS: the replica frozen now, thawed SECONDS later in the background (BLIP).
blip() { kill -STOP "$R_PID"; ( sleep "$1"; kill -CONT "$R_PID" ) & BLIP=$!; }

# --- (1) the replica a moment behind: the sale answers once it has the write ------------
# The replica is frozen just after the grant (v8: 1 s of work in the lock, the freeze 2 s)
# or just before the sale (atomic, 1.5 s), and thawed before WAIT's 3 s are up: the answer
# waits for it, so the replica has the new stock the moment the answer comes. Without
# WAIT the answer comes while the replica is still frozen.
g0=$(grants "$V")
curl -s -m 10 -o "$T_TMP/v1.json" -w '%{http_code}' \
    "http://127.0.0.1:$V/inventory/sale?item=v&work_ms=1000" > "$T_TMP/v1.code" &
vpid=$!
check "v8, --replicas 1: the grant is confirmed (the replica is up)" \
    wait_until 5 "" granted "$V" $((g0 + 1))
blip 2.0
wait "$vpid"
check_eq "v8 sale, replica frozen 2 s from just after the grant, then thawed: 200" 200 "$(cat "$T_TMP/v1.code")"
check_eq "  the replica has the new stock as the answer comes" 9 "$(replica_get "$(item_key stock v)")"
wait "$BLIP"
blip 1.5
check_eq "atomic sale, replica frozen 1.5 s: 200" 200 "$(SALE_BODY="$T_TMP/a1.json" sale "$T" a)"
check_eq "  the replica has the new stock as the answer comes" 9 "$(replica_get "$(item_key stock a)")"
wait "$BLIP"
w0=$(wait_calls)
check_eq "atomic sale, replica up: 200" 200 "$(SALE_BODY="$T_TMP/a1.json" sale "$T" a)"
check_eq "  one WAIT went with it (the master's command stats)" $((w0 + 1)) "$(wait_calls)"
check_eq "  the replica has the new stock" 8 "$(replica_get "$(item_key stock a)")"

# --- --replicas 0: not one WAIT ----------------------------------------------------------
start_service Z0 --redis "127.0.0.1:$M" --lock v8 --name rp-zero || exit 1
start_service A0 --redis "127.0.0.1:$M" --lock atomic --name rp-zero-atomic || exit 1
w0=$(wait_calls)
check_eq "--replicas 0: a v8 sale, 200" 200 "$(SALE_BODY="$T_TMP/p.json" sale "$Z0" p)"
check_eq "--replicas 0: an atomic sale, 200" 200 "$(SALE_BODY="$T_TMP/p.json" sale "$A0" p)"
check_eq "  no WAIT sent for either" "$w0" "$(wait_calls)"

# --- (2) and (3) the replica frozen: outcome_unknown, and 409 for a sold-out sale ---------
# v8: both grants (v: stock 9, z: stock 0) are confirmed before the freeze, the work (1.5
# s) runs into it: v's write is on the master only; z writes nothing. Atomic: a is sold,
# then z; a WAIT on that connection falls short for both.
g0=$(grants "$V")
for it in v z; do
    curl -s -m 10 -o "$T_TMP/v2-$it.json" -w '%{http_code}' \
        "http://127.0.0.1:$V/inventory/sale?item=$it&work_ms=1500" > "$T_TMP/v2-$it.code" &
done
check "v8: both grants confirmed before the freeze" wait_until 5 "" granted "$V" $((g0 + 2))
kill -STOP "$R_PID"
for it in a z; do SALE_BODY="$T_TMP/a2-$it.json" sale "$T" "$it" > "$T_TMP/a2-$it.code" & done
wait_all
check_eq "v8 sale, replica frozen: 503" 503 "$(cat "$T_TMP/v2-v.code")"
check_eq "  outcome_unknown" outcome_unknown "$(error_of "$T_TMP/v2-v.json")"
check "  its message says why: the replicas fell short, a failover may undo it" \
    jq -e '.message | test("fewer replicas than --replicas asks.*a failover may undo it")' "$T_TMP/v2-v.json"
check_eq "  the write is on the master (stock 9 -> 8)" 8 "$(item_get -p "$M" stock v)"
check_eq "atomic sale, replica frozen: 503" 503 "$(cat "$T_TMP/a2-a.code")"
check_eq "  outcome_unknown" outcome_unknown "$(error_of "$T_TMP/a2-a.json")"
check_eq "  the write is on the master (stock 8 -> 7)" 7 "$(item_get -p "$M" stock a)"
check_eq "v8 sale of stock 0, replica frozen: 409, not 503" 409 "$(cat "$T_TMP/v2-z.code")"
check_eq "  sold_out" sold_out "$(error_of "$T_TMP/v2-z.json")"
check_eq "atomic sale of stock 0, replica frozen (its WAIT fell short too): 409, not 503" 409 \
    "$(cat "$T_TMP/a2-z.code")"
check_eq "  sold_out" sold_out "$(error_of "$T_TMP/a2-z.json")"
check_eq "inventory_sale_unreplicated_total counts the v8 sale (not the sold-out one)" 1 \
    "$(metric "$V" inventory_sale_unreplicated_total)"
check_eq "  and the atomic sale" 1 "$(metric "$T" inventory_sale_unreplicated_total)"
check_eq "  outcome_unknown in inventory_sales_total too" "1 1" \
    "$(metric "$V" 'inventory_sales_total{result="outcome_unknown"}') $(metric "$T" 'inventory_sales_total{result="outcome_unknown"}')"
check "  the metric has its HELP line" \
    sh -c "curl -s http://127.0.0.1:$V/metrics | grep -q '^# HELP inventory_sale_unreplicated_total '"
kill -CONT "$R_PID"
check "the replica thawed catches up" wait_until 10 "" replica_acks 127.0.0.1 "$M" 1

# --- (4) combined sales, replica frozen: every one outcome_unknown, none 200 --------------
# Another owner holds lock:{c} until the four sales are all in the instance (its
# inventory_sales_in_flight; at most 5 s), so they queue and one grant serves them in one
# batch (--combine 4); the grant is confirmed, then the replica frozen while the batch
# works (1.5 s); the batch's write is not replicated. (A fixed 300 ms hold let two of the
# four come after the grant on two busy cores: a second grant, refused with the replica
# frozen.)
rcli -p "$M" hset "$(item_key lock c)" outsider 1 >/dev/null
rcli -p "$M" pexpire "$(item_key lock c)" 5000 >/dev/null
g0=$(grants "$C")
for i in 1 2 3 4; do
    curl -s -m 10 -o "$T_TMP/c-$i.json" -w '%{http_code}' \
        "http://127.0.0.1:$C/inventory/sale?item=c&work_ms=1500" > "$T_TMP/c-$i.code" &
done
check "combine: the four sales wait in the instance" wait_until 5 "" sales_waiting "$C" 4
rcli -p "$M" del "$(item_key lock c)" >/dev/null
check "combine: the grant is confirmed" wait_until 5 "" granted "$C" $((g0 + 1))
kill -STOP "$R_PID"
wait_all
kill -CONT "$R_PID"
check_eq "four combined sales, replica frozen: 503 each" "503 503 503 503" "$(for i in 1 2 3 4; do cat "$T_TMP/c-$i.code"; echo; done | paste -sd' ' -)"
check_eq "  outcome_unknown each" "outcome_unknown outcome_unknown outcome_unknown outcome_unknown" \
    "$(for i in 1 2 3 4; do error_of "$T_TMP/c-$i.json"; done | paste -sd' ' -)"
check_eq "  in one batch" 1 "$(metric "$C" inventory_sale_batches_total)"
check_eq "  written on the master (stock 10 -> 6)" 6 "$(item_get -p "$M" stock c)"
check_eq "  counted: inventory_sale_unreplicated_total 4" 4 "$(metric "$C" inventory_sale_unreplicated_total)"
check_eq "  no log line per request (one WARN at most a second)" "1 0" \
    "$(grep -c 'acknowledged by' "$T_TMP/svc-$C.log") $(grep -c '^.* request .*outcome_unknown' "$T_TMP/svc-$C.log")"
check_eq "  the lock is given back" 0 "$(rcli -p "$M" exists "$(item_key lock c)")"
check "the replica thawed catches up" wait_until 10 "" replica_acks 127.0.0.1 "$M" 1

# --- min-replicas-to-write: Redis refuses the write itself -------------------------------
# A master with min-replicas-to-write 1 and no replica: the lock's try and the atomic sale
# are refused at their first write (NOREPLICAS): 503 redis_unavailable, saying why, and
# nothing written (was 500 "error" with Redis's message).
start_redis --min-replicas-to-write 1 || exit 1; N=$REDIS_PORT
rcli -p "$N" config set min-replicas-to-write 0 >/dev/null
item_set -p "$N" n 10 >/dev/null
rcli -p "$N" config set min-replicas-to-write 1 >/dev/null
for lock in v8 v9 atomic; do
    start_service X --redis "127.0.0.1:$N" --lock "$lock" --name "norepl-$lock" || exit 1
    check_eq "min-replicas-to-write 1, no replica, $lock: 503 redis_unavailable" "503 redis_unavailable" \
        "$(SALE_BODY="$T_TMP/n.json" sale "$X" n) $(error_of "$T_TMP/n.json")"
    check "  it says why" grep -q 'too few replicas (min-replicas-to-write); nothing was written' "$T_TMP/n.json"
    check_eq "  nothing written" 10 "$(item_get -p "$N" stock n)"
done

t_report
