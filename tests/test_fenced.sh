#!/usr/bin/env bash
# test_fenced.sh - v9 through real HTTP and a real redis-server: each grant's token in the
# ledger, greater than the last; a write with a stale token refused at Redis (409
# lease_lost, nothing sold), a combined batch as a whole; a holder told that its lease
# is lost stops before writing.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

start_redis || exit 1
wait_all() { local p; for p in $(jobs -p); do case " $T_PIDS " in *" $p "*) ;; *) wait "$p" ;; esac; done; }
counts() { cat "$@" | sort | uniq -c | awk '{ printf "%s x %s ", $2, $1 }'; }
state() { echo "$(rcli get "stock:{$1}") $(rcli get "sold:{$1}") $(rcli xlen "orders:{$1}")"; }

# --- tokens in order ------------------------------------------------------------------
rcli set 'stock:{f}' 10 >/dev/null
start_service P --redis "127.0.0.1:$REDIS_PORT" --lock fenced --name fen || exit 1
for i in 1 2 3; do
    curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$P/inventory/sale?item=f" > "$T_TMP/t$i"
done
check_eq "v9 (fenced): three sales, three 200s" "200 x 3 " "$(counts "$T_TMP"/t*)"
tokens=$(rcli xrange 'orders:{f}' - + | awk 'prev == "token" { print } { prev = $0 }' | paste -sd' ' -)
check_eq "  three grants, three tokens in the ledger, each greater than the last" \
    "$(echo "$tokens" | tr ' ' '\n' | sort -nu | paste -sd' ' -)" "$tokens"
check_eq "  three of them" 3 "$(echo "$tokens" | wc -w)"
check_eq "  the last writer's token is kept with the stock (written:{I})" \
    "$(rcli get 'fence:{f}')" "$(rcli hget 'written:{f}' token)"

# --- a stale token is refused where the stock is written ------------------------------
rcli hset 'written:{f}' token 1000 batch 1 >/dev/null
code=$(curl -s -o "$T_TMP/stale" -w '%{http_code}' "http://127.0.0.1:$P/inventory/sale?item=f")
check_eq "a grant whose token is older than the last writer's: 409" 409 "$code"
check "  lease_lost" jq -e '.ok == false and .error == "lease_lost"' "$T_TMP/stale"
check_eq "  nothing sold: stock 7, sold 3, ledger 3" "7 3 3" "$(state f)"
check_eq "  the lock is given back" 0 "$(rcli exists 'lock:{f}')"
check "  counted in /metrics" sh -c "curl -s http://127.0.0.1:$P/metrics | grep -q 'inventory_sales_total{result=\"lease_lost\"} 1'"

# --- a combined batch is refused as a whole ---------------------------------------------
rcli set 'stock:{fb}' 50 >/dev/null
rcli hset 'written:{fb}' token 1000 batch 1 >/dev/null
start_service Q --redis "127.0.0.1:$REDIS_PORT" --lock v9 --combine 32 --faults --name fenb || exit 1
# The first sale works 3 s under its grant; the other 20 must all be waiting in the line
# before it ends (on a busy machine 20 curls take a while to start), so that the next
# grant serves them as one batch.
curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$Q/inventory/sale?item=fb&work_ms=3000" > "$T_TMP/b0" &
sleep 0.1
for i in $(seq 20); do
    curl -s -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$Q/inventory/sale?item=fb" > "$T_TMP/b$i" &
done
check "  the 20 wait in the line while the first works" wait_until 2.5 "" \
    sh -c "curl -s http://127.0.0.1:$Q/metrics | grep -qx 'inventory_sales_in_flight 21'"
wait_all
check_eq "21 sales under a stale token, combined: all 409" "409 x 21 " "$(counts "$T_TMP"/b*)"
check_eq "  nothing sold: stock 50, sold none, ledger 0" "50  0" "$(state fb)"
batches=$(curl -s "http://127.0.0.1:$Q/metrics" | awk '$1 == "inventory_sale_batches_total" { print $2 }')
check "  in batches, refused each as a whole ($batches for 21 sales)" test "${batches:-99}" -le 6

# --- a lost lease is never silent: the holder stops before writing ---------------------
# Someone takes the key while the sale works: the watchdog's renewal is refused, the lock
# tells the sale, and the sale writes nothing.
rcli set 'stock:{fl}' 5 >/dev/null
start_service L --redis "127.0.0.1:$REDIS_PORT" --lock v9 --ttl-ms 300 --faults --name fenl || exit 1
curl -s -o "$T_TMP/lost" -w '%{http_code}' "http://127.0.0.1:$L/inventory/sale?item=fl&work_ms=1000" > "$T_TMP/lost.code" &
sleep 0.3
rcli del 'lock:{fl}' >/dev/null
rcli hset 'lock:{fl}' someone-else:1 1 >/dev/null
wait_all
check_eq "a v9 sale whose lease was taken while it worked: 409" 409 "$(cat "$T_TMP/lost.code")"
check "  lease_lost" jq -e '.error == "lease_lost"' "$T_TMP/lost"
check_eq "  nothing written: stock 5, no sale, no writer" "5  0 0" "$(state fl) $(rcli exists 'written:{fl}')"
rcli del 'lock:{fl}' >/dev/null

t_report
