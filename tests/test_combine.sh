#!/usr/bin/env bash
# test_combine.sh - Waiting and combining through real HTTP and a real redis-server:
# --wait and --combine flags, a batch sold under one grant (409 beyond the stock, one
# ledger entry per 200), a waiting sale that never waits past --wait-ms, --list-versions.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

BIN=${SERVICE_BIN:-build/inventory-service}
start_redis || exit 1

# --- flags ---------------------------------------------------------------------------
"$BIN" --lock v1 --wait notify > "$T_TMP/bad" 2>&1; rc=$?
check_eq "v1 with --wait notify: refused at start-up (bad usage)" 2 "$rc"
check "  with a reason" grep -q "v1 waits only by local" "$T_TMP/bad"
"$BIN" --wait sometimes > "$T_TMP/bad" 2>&1; rc=$?
check_eq "--wait sometimes: bad usage" 2 "$rc"
"$BIN" --combine 0 > "$T_TMP/bad" 2>&1; rc=$?
check_eq "--combine 0: bad usage" 2 "$rc"
"$BIN" --workers 0 > "$T_TMP/bad" 2>&1; rc=$?
check_eq "--workers 0: bad usage" 2 "$rc"
"$BIN" --help > "$T_TMP/help"
for f in --wait --combine --workers --list-versions; do check "--help explains $f" grep -q -- "$f" "$T_TMP/help"; done
"$BIN" --list-versions > "$T_TMP/versions"
check_eq "--list-versions: v1-v15, none and atomic" 17 "$(wc -l < "$T_TMP/versions")"
check_eq "  four tab-separated fields each" 17 "$(awk -F'\t' 'NF == 4' "$T_TMP/versions" | wc -l)"
check_eq "  v8's row" "v8	watchdog" "$(awk -F'\t' '$1 == "v8" { print $1 "\t" $2 }' "$T_TMP/versions")"

# --- a batch under one grant ----------------------------------------------------------
# The first sale holds the lock for 300 ms (work_ms); the 19 that arrive meanwhile wait
# in the process and are served together by the next grant: 5 in stock, so 5 x 200 in
# all and 15 x 409, every 200 with its ledger entry, in at most a few critical sections.
item_set batch 5 >/dev/null
start_service P --redis "127.0.0.1:$REDIS_PORT" --lock v8 --combine 32 --faults --name comb || exit 1
URL="http://127.0.0.1:$P/inventory/sale?item=batch&work_ms=300"
# (One curl sends all 20, each on its own connection: twenty curls started one after
# another on two busy cores came over more than the first sale's 300 ms.)
urls=()
for i in $(seq 20); do urls+=(-o "$T_TMP/body-$i" "$URL"); done
curl -s --no-progress-meter -m 30 -Z --parallel-immediate --parallel-max 20 -w '%{http_code}\n' \
    "${urls[@]}" > "$T_TMP/c1"
codes=$(cat "$T_TMP"/c* | sort | uniq -c | awk '{ printf "%s x %s ", $2, $1 }')
check_eq "20 sales of stock 5, combined: five 200s, fifteen 409s" "200 x 5 409 x 15 " "$codes"
check_eq "  sold 5" 5 "$(item_get sold batch)"
check_eq "  stock 0" 0 "$(item_get stock batch)"
check_eq "  one ledger entry per sale" 5 "$(rcli xlen "$(item_key orders batch)")"
remaining=$( cat "$T_TMP"/body-* | jq -r 'select(.ok) | .remaining' | sort -n | paste -sd, -)
check_eq "  each 200 has its own remaining" "0,1,2,3,4" "$remaining"
metrics=$(curl -s "http://127.0.0.1:$P/metrics")
batches=$(echo "$metrics" | awk '$1 == "inventory_sale_batches_total" { print $2 }')
batched=$(echo "$metrics" | awk '$1 == "inventory_sale_batched_total" { print $2 }')
check_eq "  all 20 went through critical sections" 20 "$batched"
check "  in at most 4 of them (they were combined: $batches)" test "${batches:-99}" -le 4
check_eq "  the lock is given back" 0 "$(rcli exists "$(item_key lock batch)")"

# A batch that finds the stock gone: every one of its sales answers 409, none 200.
item_set last 1 >/dev/null
URL="http://127.0.0.1:$P/inventory/sale?item=last&work_ms=300"
for i in $(seq 20); do curl -s -m 30 -o /dev/null -w '%{http_code}\n' "$URL" > "$T_TMP/l$i" & done
wait_all
codes=$(cat "$T_TMP"/l* | sort | uniq -c | awk '{ printf "%s x %s ", $2, $1 }')
check_eq "20 sales of stock 1, combined: one 200, nineteen 409s" "200 x 1 409 x 19 " "$codes"
check_eq "  sold 1, ledger 1" "1 1" "$(item_get sold last) $(rcli xlen "$(item_key orders last)")"

# --- batch after batch under one grant ----------------------------------------------------
# A holder keeps the lock for 800 ms (work_ms) while 20 sales queue; --combine 4 serves
# them 4 at a time, and while more wait the next grant keeps the lock for the next batch
# (one acquire, several writes) instead of giving it back and taking it again.
item_set hold 100 >/dev/null
start_service H --redis "127.0.0.1:$REDIS_PORT" --lock v8 --combine 4 --faults --name hold || exit 1
curl -s -m 30 -o /dev/null "http://127.0.0.1:$H/inventory/sale?item=hold&work_ms=800" & holder=$!
sleep 0.1
for i in $(seq 20); do curl -s -m 30 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$H/inventory/sale?item=hold" > "$T_TMP/tenure-$i" & done
wait_all
codes=$(cat "$T_TMP"/tenure-* | sort | uniq -c | awk '{ printf "%s x %s ", $2, $1 }')
check_eq "21 sales of stock 100 in batches of at most 4: all 200" "200 x 20 " "$codes"
check_eq "  sold 21, ledger 21, stock 79" "21 21 79" "$(item_get sold hold) $(rcli xlen "$(item_key orders hold)") $(item_get stock hold)"
metrics=$(curl -s "http://127.0.0.1:$H/metrics")
grants=$(echo "$metrics" | awk '$1 == "inventory_lock_acquisitions_total" { print $2 }')
batches=$(echo "$metrics" | awk '$1 == "inventory_sale_batches_total" { print $2 }')
check "  at least 6 batches of at most 4 ($batches)" test "${batches:-0}" -ge 6
check "  served under fewer grants than batches ($grants grants): a grant served several" \
    test "${grants:-99}" -lt "${batches:-0}"
check_eq "  the lock is given back" 0 "$(rcli exists "$(item_key lock hold)")"

# --- a lone sale: its write rides with the release -----------------------------------------
# One sale of an item whose sales come far apart: the grant does not linger for a next
# batch that will not come, so the sale costs two round trips to Redis (acquire with the
# stock read; write with the release), not three (the write alone, a wait, the release).
# Counted by Redis itself: total_reads_processed around the sale, less an idle pair's.
item_set lone 100 >/dev/null
start_service L --redis "127.0.0.1:$REDIS_PORT" --lock v8 --combine 4 --no-events --name lone || exit 1
reads() { rcli info stats | awk -F: '$1 == "total_reads_processed" { print $2 + 0 }'; }
curl -s -m 10 -o /dev/null "http://127.0.0.1:$L/inventory/sale?item=lone"   # scripts loaded
lone_min=99
for _ in 1 2 3; do
    sleep 0.2
    r0=$(reads); r1=$(reads)
    curl -s -m 10 -o /dev/null "http://127.0.0.1:$L/inventory/sale?item=lone"
    r2=$(reads)
    lone=$(( (r2 - r1) - (r1 - r0) ))
    [ "$lone" -lt "$lone_min" ] && lone_min=$lone
done
check_eq "a lone sale: two round trips to Redis (fewest of 3 tries)" 2 "$lone_min"
check_eq "  sold 4, ledger 4" "4 4" "$(item_get sold lone) $(rcli xlen "$(item_key orders lone)")"
check_eq "  the lock is given back" 0 "$(rcli exists "$(item_key lock lone)")"

# --- a waiting sale never waits past --wait-ms ------------------------------------------
item_set slow 50 >/dev/null
start_service Q --redis "127.0.0.1:$REDIS_PORT" --lock v8 --combine 32 --faults --wait-ms 400 --name slow || exit 1
curl -s -m 30 -o /dev/null "http://127.0.0.1:$Q/inventory/sale?item=slow&work_ms=2000" & holder=$!
sleep 0.3
t0=$(date +%s%N)
code=$(curl -s -m 30 -o "$T_TMP/slow" -w '%{http_code}' "http://127.0.0.1:$Q/inventory/sale?item=slow")
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check_eq "behind a 2 s holder, a sale with --wait-ms 400 answers 503" 503 "$code"
check "  lock_timeout" jq -e '.error == "lock_timeout"' "$T_TMP/slow"
check "  within the wait limit plus a second ($ms ms), not after the holder" test "$ms" -lt 1400
wait "$holder"
check_eq "  the holder's sale went through" 49 "$(item_get stock slow)"

# --- atomic, combined (always: it takes no --combine) -------------------------------------
item_set atom 7 >/dev/null
start_service A --redis "127.0.0.1:$REDIS_PORT" --lock atomic --name atom || exit 1
for i in $(seq 20); do curl -s -m 30 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$A/inventory/sale?item=atom" > "$T_TMP/a$i" & done
wait_all
codes=$(cat "$T_TMP"/a* | sort | uniq -c | awk '{ printf "%s x %s ", $2, $1 }')
check_eq "atomic: 20 sales of stock 7: seven 200s, thirteen 409s" "200 x 7 409 x 13 " "$codes"
check_eq "  sold 7, ledger 7" "7 7" "$(item_get sold atom) $(rcli xlen "$(item_key orders atom)")"
item_set atom 3 >/dev/null
rcli script flush >/dev/null
code=$(curl -s -m 30 -o "$T_TMP/atom" -w '%{http_code}' "http://127.0.0.1:$A/inventory/sale?item=atom")
check_eq "atomic: after SCRIPT FLUSH the pipeline loads the script again and sells" 200 "$code"
check "  remaining 2" jq -e '.remaining == 2' "$T_TMP/atom"

# --- Redis forgets the write script in a later batch of one grant ------------------------
# A works 300 ms alone in the grant's first batch; B, C and D arrive meanwhile and form
# the second batch (B's 600 ms of work for all three), whose write rides with the
# release. SCRIPT FLUSH during B's work: that write finds no script and nothing of it
# runs; the batch in hand, all three, is sold again under a new grant: four 200s.
item_set fl 10 >/dev/null
start_service F --redis "127.0.0.1:$REDIS_PORT" --lock v8 --combine 4 --faults --name flush || exit 1
FURL="http://127.0.0.1:$F/inventory/sale?item=fl"
curl -s -m 20 -o /dev/null -w '%{http_code}\n' "$FURL&work_ms=300" > "$T_TMP/fl-a" &
sleep 0.1
curl -s -m 20 -o /dev/null -w '%{http_code}\n' "$FURL&work_ms=600" > "$T_TMP/fl-b" &
sleep 0.05
for x in c d; do curl -s -m 20 -o /dev/null -w '%{http_code}\n' "$FURL" > "$T_TMP/fl-$x" & done
sleep 0.45
rcli script flush >/dev/null
wait_all
check_eq "SCRIPT FLUSH in a later batch of one grant: all four answered 200" "200 200 200 200" \
    "$(cat "$T_TMP"/fl-a "$T_TMP"/fl-b "$T_TMP"/fl-c "$T_TMP"/fl-d | paste -sd' ' -)"
check_eq "  sold 4, stock 6, ledger 4" "4 6 4" \
    "$(item_get sold fl) $(item_get stock fl) $(rcli xlen "$(item_key orders fl)")"
check "  the instance still serves" curl -sf -o /dev/null "$FURL"

# --- a bounded number of workers ---------------------------------------------------------
# --workers 2: ten items sold at once share two worker threads (before, each item had a
# thread of its own); every item's sales are still served, each item's stock exact.
start_service W --redis "127.0.0.1:$REDIS_PORT" --lock v8 --combine 8 --workers 2 --name work || exit 1
W_PID=$SVC_PID
for i in $(seq 10); do item_set "w$i" 3 >/dev/null; done
curl -s -o /dev/null "http://127.0.0.1:$W/inventory/sale?item=w1"
threads_one=$(ls "/proc/$W_PID/task" | wc -l)
for i in $(seq 10); do for _ in 1 2 3 4; do
    curl -s -m 20 -o /dev/null -w '%{http_code}\n' "http://127.0.0.1:$W/inventory/sale?item=w$i" >> "$T_TMP/w-codes" &
done; done
wait_all
threads_ten=$(ls "/proc/$W_PID/task" | wc -l)
check "--workers 2: ten items add at most one thread to the one item's ($threads_one -> $threads_ten)" \
    test "$threads_ten" -le $((threads_one + 1))
check_eq "  40 sales of 10 items (stock 3 each, one of w1 sold before): 29 x 200, 11 x 409" "200 x 29 409 x 11 " \
    "$(sort "$T_TMP/w-codes" | uniq -c | awk '{ printf "%s x %s ", $2, $1 }')"
sold_all=$(for i in $(seq 10); do item_get sold "w$i"; done | paste -sd' ' -)
check_eq "  each item sold exactly its stock" "3 3 3 3 3 3 3 3 3 3" "$sold_all"

# While one worker waits for an item's lock (held by another owner for 2 s), another item
# is served by another worker at once: no item waits behind another's lock while a worker
# is free.
item_set held 5 >/dev/null; item_set free 5 >/dev/null
rcli hset "$(item_key lock held)" someone-else:1 1 >/dev/null; rcli pexpire "$(item_key lock held)" 2000 >/dev/null
curl -s -m 20 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$W/inventory/sale?item=held" > "$T_TMP/held-code" &
sleep 0.2
free_ms=$(curl -s -m 20 -o /dev/null -w '%{time_total}' "http://127.0.0.1:$W/inventory/sale?item=free" |
          awk '{ printf "%d", $1 * 1000 }')
check "  a free item's sale is served while another item waits for its lock (${free_ms} ms)" \
    test "$free_ms" -lt 1000
wait_all
check_eq "  the held item's sale is served once the other owner's lease runs out" 200 "$(cat "$T_TMP/held-code")"

t_report
