#!/usr/bin/env bash
# test_fenced.sh - v9 through real HTTP and a real redis-server: each grant's token in the
# ledger, greater than the last; a write with a stale token refused at Redis (409
# lease_lost, nothing sold), a combined batch as a whole; an Idempotency-Key honoured; a
# holder told that its lease is lost stops before writing; a holder paused after its
# lease check, whose write arrives after the next grant's read and before its write,
# refused (the model's late-pause).
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

start_redis || exit 1
counts() { cat "$@" | sort | uniq -c | awk '{ printf "%s x %s ", $2, $1 }'; }

# --- tokens in order ------------------------------------------------------------------
item_set f 10 >/dev/null
start_service P --redis "127.0.0.1:$REDIS_PORT" --lock fenced --name fen || exit 1
for i in 1 2 3; do
    curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$P/inventory/sale?item=f" > "$T_TMP/t$i"
done
check_eq "v9 (fenced): three sales, three 200s" "200 x 3 " "$(counts "$T_TMP"/t*)"
tokens=$(rcli xrange "$(item_key orders f)" - + | awk 'prev == "token" { print } { prev = $0 }' | paste -sd' ' -)
check_eq "  three grants, three tokens in the ledger, each greater than the last" \
    "$(echo "$tokens" | tr ' ' '\n' | sort -nu | paste -sd' ' -)" "$tokens"
check_eq "  three of them" 3 "$(echo "$tokens" | wc -w)"
check_eq "  the last writer's token is kept with the stock (written:{I})" \
    "$(item_get fence f)" "$(rcli hget "$(item_key written f)" token)"

# --- a stale token is refused where the stock is written ------------------------------
rcli hset "$(item_key written f)" token 1000 batch 1 >/dev/null
code=$(curl -s -o "$T_TMP/stale" -w '%{http_code}' "http://127.0.0.1:$P/inventory/sale?item=f")
check_eq "a grant whose token is older than the last writer's: 409" 409 "$code"
check "  lease_lost" jq -e '.ok == false and .error == "lease_lost"' "$T_TMP/stale"
check "  the answer says Redis refused it" jq -e '.message == "Redis refused the write: its fencing token is not the newest for f"' "$T_TMP/stale"
check_eq "  nothing sold: stock 7, sold 3, ledger 3" "7 3 3" "$(item_state f)"
check_eq "  the lock is given back" 0 "$(rcli exists "$(item_key lock f)")"
check "  counted in /metrics" sh -c "curl -s http://127.0.0.1:$P/metrics | grep -q 'inventory_sales_total{result=\"lease_lost\"} 1'"

# --- an Idempotency-Key under a fenced grant: sold once, the first answer again --------
# The fenced script with a key takes seven keys (fence:{I} fifth, the key's two last).
item_set fk 5 >/dev/null
keyed() { curl -s -o "$T_TMP/$1" -w '%{http_code}' -H "Idempotency-Key: $2" "http://127.0.0.1:$P/inventory/sale?item=$3"; }
check_eq "a fenced sale with an Idempotency-Key: 200" 200 "$(keyed k1 fk-1 fk)"
check_eq "  the same key again: 200, the first answer, replayed" "200 4 true" \
    "$(keyed k2 fk-1 fk) $(jq -r '"\(.remaining) \(.replayed)"' "$T_TMP/k2")"
check_eq "  sold once: stock 4, sold 1, ledger 1" "4 1 1" "$(item_state fk)"
check_eq "  the same key for another item: 422" 422 "$(keyed k3 fk-1 f)"

# --- a combined batch is refused as a whole ---------------------------------------------
item_set fb 50 >/dev/null
rcli hset "$(item_key written fb)" token 1000 batch 1 >/dev/null
start_service Q --redis "127.0.0.1:$REDIS_PORT" --lock v9 --combine 32 --faults --name fenb || exit 1
# The first sale works 3 s under its grant; the other 20 must all be waiting in the line
# before it ends, so that the next grant serves them as one batch: one curl sends them,
# each on a connection of its own (20 curls, one a sale, took longer than the 3 s to
# start beside the other lane on two busy cores).
curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$Q/inventory/sale?item=fb&work_ms=3000" > "$T_TMP/b0" &
sleep 0.1
urls=()
for _ in $(seq 20); do urls+=(-o /dev/null "http://127.0.0.1:$Q/inventory/sale?item=fb"); done
curl -s --no-progress-meter -Z --parallel-immediate --parallel-max 20 -w '%{http_code}\n' "${urls[@]}" > "$T_TMP/b1" &
check "  the 20 wait in the line while the first works" wait_until 2.5 "" \
    sh -c "curl -s http://127.0.0.1:$Q/metrics | grep -qx 'inventory_sales_in_flight 21'"
wait_all
check_eq "21 sales under a stale token, combined: all 409" "409 x 21 " "$(counts "$T_TMP"/b*)"
check_eq "  nothing sold: stock 50, sold none, ledger 0" "50  0" "$(item_state fb)"
batches=$(curl -s "http://127.0.0.1:$Q/metrics" | awk '$1 == "inventory_sale_batches_total" { print $2 }')
check "  in batches, refused each as a whole ($batches for 21 sales)" test "${batches:-99}" -le 6

# --- a lost lease is never silent: the holder stops before writing ---------------------
# Someone takes the key while the sale works: the watchdog's renewal is refused, the lock
# tells the sale, and the sale writes nothing.
item_set fl 5 >/dev/null
start_service L --redis "127.0.0.1:$REDIS_PORT" --lock v9 --ttl-ms 300 --faults --name fenl || exit 1
curl -s -o "$T_TMP/lost" -w '%{http_code}' "http://127.0.0.1:$L/inventory/sale?item=fl&work_ms=1000" > "$T_TMP/lost.code" &
sleep 0.3
rcli del "$(item_key lock fl)" >/dev/null
rcli hset "$(item_key lock fl)" someone-else:1 1 >/dev/null
wait_all
check_eq "a v9 sale whose lease was taken while it worked: 409" 409 "$(cat "$T_TMP/lost.code")"
check "  lease_lost" jq -e '.error == "lease_lost"' "$T_TMP/lost"
check "  the answer says nothing was sent" jq -e '.message == "the lease was lost before the write: nothing was sent"' "$T_TMP/lost"
check_eq "  nothing written: stock 5, no sale, no writer" "5  0 0" "$(item_state fl) $(rcli exists "$(item_key written fl)")"
rcli del "$(item_key lock fl)" >/dev/null


# --- late pause: a write older than the last grant is refused --------------------------
# The model's late-pause (model/v9_fenced.pml), staged in order: A takes the lock with a
# 300 ms lease and token 1, reads stock 10 and passes its lease check, then stops before
# its write is sent. A is driven by hand with the scripts themselves (lock/scripts/
# v9_acquire.lua, build/scripts/sale_write_fenced.lua, the script whole): a service cannot be stopped
# between its check and its write on cue. A's lease runs out; B, a real instance, takes
# the lock (token 2), reads stock 10 and works. Only then does A's write arrive. Nobody
# has written since A's grant, so only the token B was issued (fence:{I}) can refuse it;
# had it landed, B's write on its read of 10 would land too: sold 2, stock 9.
item_set lp 10 >/dev/null
check_eq "late pause: A takes the lock by hand (lease 300 ms): held once, token 1" "1 1" \
    "$(rcli --eval lock/scripts/v9_acquire.lua "$(item_key lock lp)" "$(item_key fence lp)" , paused-a:1 300 | paste -sd' ' -)"
a_read=$(item_get stock lp)
start_service S --redis "127.0.0.1:$REDIS_PORT" --lock v9 --faults --name fenp || exit 1
curl -s -o "$T_TMP/late" -w '%{http_code}' "http://127.0.0.1:$S/inventory/sale?item=lp&work_ms=1500" > "$T_TMP/late.code" &
b_has_read() { [ "$(rcli hget "$(item_key lock lp)" :token)" = 2 ] && [ "$(rcli scard "$(item_key probe lp)")" = 1 ]; }
check "  A's lease runs out; B takes the lock (token 2) and reads the stock" wait_until 3 "" b_has_read
a_write=$(rcli --eval build/scripts/sale_write_fenced.lua "$(item_key stock lp)" "$(item_key sold lp)" "$(item_key orders lp)" \
          "$(item_key written lp)" "$(item_key fence lp)" , "$a_read" 1 by-hand paused-a:1 1 1 lp '' late-a 2>&1)
check_eq "  A's write arrives (stock read $a_read, token 1) while B works: refused" lease_lost "${a_write%% *}"
wait_all
check_eq "  B's sale: 200" 200 "$(cat "$T_TMP/late.code")"
check "  remaining 9, under token 2" jq -e '.ok and .remaining == 9' "$T_TMP/late"
check_eq "  nothing oversold: stock 9, sold 1, ledger 1" "9 1 1" "$(item_state lp)"
check_eq "  the one ledger entry is B's, token 2" 2 \
    "$(rcli xrange "$(item_key orders lp)" - + | awk 'prev == "token" { print } { prev = $0 }' | paste -sd' ' -)"

t_report
