#!/usr/bin/env bash
# test_history.sh - loadtest/check-history on hand-written histories (tests/histories/):
# one possible history, one for each kind of violation (fork.jsonl: a Redis that forked,
# caught by the store's own counters), and input it cannot read.
# Needs no build and no server: the checker is a pure function of its inputs.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

CHECK=${CHECK_HISTORY:-loadtest/check-history}
H=tests/histories
OUT=$T_TMP/out ERR=$T_TMP/err

# hist ARG...: runs the checker, stdout in $OUT and stderr in $ERR; prints its exit code.
hist() { "$CHECK" "$@" >"$OUT" 2>"$ERR"; echo $?; }
# names LINE...: the violation printed every one of these request lines.
names() { local l; for l in "$@"; do grep -q "^  line $l: {" "$OUT" || return 1; done; }

# --- a possible history: replays, unknowns, others, sold_out after the last sale, two items ---
check_eq "valid: possible (exit 0)" 0 "$(hist $H/valid.jsonl --stock 5)"
check_eq "valid: one summary line per item" 2 "$(wc -l <"$OUT")"
check_eq "valid: a replay is one sale, status 0 then outcome_unknown of one key one unknown" \
    "inventory001: 14 requests, 5 200 (4 sales), 2 sold_out, 4 unknown (2 operations), 3 other: possible" \
    "$(head -1 "$OUT")"
check "valid: the second item, named by its item field" grep -q '^item0002: 3 requests, 2 200 (2 sales),.*: possible$' "$OUT"
echo '{"inventory001": 0, "item0002": 3}' >"$T_TMP/finals.json"
check_eq "valid, --final-file right for both items: exit 0" 0 \
    "$(hist $H/valid.jsonl --stock 5 --final-file "$T_TMP/finals.json")"
check "valid, --final-file: each item's bounds in its summary" \
    sh -c "grep -q 'inventory001: .*final 0 in \[0, 0\]' $OUT && grep -q 'item0002: .*final 3 in \[3, 3\]' $OUT"
check_eq "a larger stock is possible too (remaining need not reach 0)" 0 "$(hist $H/valid.jsonl --stock 9)"

# --- each kind of violation: exit 1, the first violation and the requests involved ---
check_eq "duplicate remaining: exit 1" 1 "$(hist $H/duplicate.jsonl --stock 5)"
check "duplicate remaining: says a unit was sold twice" grep -q 'VIOLATION inventory001: two sales answered remaining 3: a unit of stock sold twice' "$OUT"
check "duplicate remaining: names both sales (lines 2 and 3)" names 2 3
check_eq "duplicate remaining: the requests involved only" 3 "$(wc -l <"$OUT")"

check_eq "one key answered two different remaining: exit 1" 1 "$(hist $H/replay.jsonl --stock 5)"
check "one key answered two different remaining: names the key and both answers" \
    sh -c "grep -q 'key k1 answered 200 with remaining 4 and 3' $OUT"
check "one key answered two different remaining: lines 1 and 2" names 1 2

check_eq "remaining out of range (5 with S 5): exit 1" 1 "$(hist $H/range.jsonl --stock 5)"
check "remaining out of range: says so, names line 1 only" sh -c "grep -q 'remaining 5 out of \[0, 5)' $OUT && grep -q '^  line 1: ' $OUT && ! grep -q '^  line 2: ' $OUT"
check_eq "remaining out of range: the same history with S 6 is possible" 0 "$(hist $H/range.jsonl --stock 6)"

check_eq "real-time order broken: exit 1" 1 "$(hist $H/realtime.jsonl --stock 5)"
check "real-time order broken: remaining 2 answered before remaining 3 was sent" \
    grep -q 'real time broken: a sale answered remaining 2 before another was sent that answered remaining 3' "$OUT"
check "real-time order broken: names lines 2 and 4 (not the concurrent line 3)" \
    sh -c "grep -q '^  line 2: ' $OUT && grep -q '^  line 4: ' $OUT && ! grep -q '^  line 3: ' $OUT"

check_eq "sold_out before a sale was sent: exit 1" 1 "$(hist $H/soldout.jsonl --stock 5)"
check "sold_out before a sale was sent: the stock came back" grep -q 'sold_out answered before a sale (remaining 0) was sent: the stock came back' "$OUT"
check "sold_out before a sale was sent: names lines 2 and 3" names 2 3

# final.jsonl: S 5, two sales, one request with no answer: the stock left is 2 or 3.
check_eq "final within the unknown's bounds (2): exit 0" 0 "$(hist $H/final.jsonl --stock 5 --final 2)"
check_eq "final within the unknown's bounds (3): exit 0" 0 "$(hist $H/final.jsonl --stock 5 --final 3)"
check "final 3: its bounds in the summary" grep -q '^item0001: .*possible, final 3 in \[2, 3\]$' "$OUT"
check_eq "final too low (1): exit 1" 1 "$(hist $H/final.jsonl --stock 5 --final 1)"
check "final too low: the bound, and the unknown request (line 3)" \
    sh -c "grep -q 'final stock 1 below max(0, S - sales - unknown) = max(0, 5 - 2 - 1) = 2' $OUT && grep -q '^  line 3: ' $OUT"
check_eq "final too high (4): exit 1" 1 "$(hist $H/final.jsonl --stock 5 --final 4)"
check "final too high: an acknowledged sale lost; names the sales (lines 1 and 2)" \
    sh -c "grep -q 'final stock 4 above S - sales = 5 - 2 = 3: an acknowledged sale was lost' $OUT"
check "final too high: lines 1 and 2" names 1 2

echo '{"inventory001": 0, "item0002": 4}' >"$T_TMP/finals-bad.json"
check_eq "--final-file, two items, one wrong: exit 1" 1 \
    "$(hist $H/valid.jsonl --stock 5 --final-file "$T_TMP/finals-bad.json")"
check "--final-file, one wrong: names that item (item0002) and its sales (lines 6 and 11)" \
    sh -c "grep -q '^VIOLATION item0002: final stock 4 above' $OUT && ! grep -q inventory001 $OUT"
check "--final-file, one wrong: lines 6 and 11" names 6 11
echo '{"inventory001": 1, "item0002": 3}' >"$T_TMP/finals-back.json"
check_eq "stock left after a sold_out was answered: exit 1" 1 \
    "$(hist $H/valid.jsonl --stock 5 --final-file "$T_TMP/finals-back.json")"
check "stock left after a sold_out: names the first sold_out (line 14)" \
    sh -c "grep -q 'final stock 1 though sold_out was answered' $OUT && grep -q '^  line 14: ' $OUT"

# --- rule 5: the store's stock, sold and ledger agree (stock + sold = S, ledger = sold) ---
# final.jsonl again (S 5, two sales, one unknown): the stock left may be 2 or 3, but only
# with sold 5 - stock does the store hold one counter.
check_eq "stock 3, sold 2, ledger 2: possible (exit 0)" 0 \
    "$(hist $H/final.jsonl --stock 5 --final 3 --sold 2 --ledger 2)"
check "  the summary says sold, final + sold = S, and the ledger" \
    grep -q '^item0001: .*possible, final 3 in \[2, 3\]; sold 2, final + sold = S, ledger 2$' "$OUT"
check_eq "stock 2 (within rule 4's bounds), sold 2: exit 1" 1 \
    "$(hist $H/final.jsonl --stock 5 --final 2 --sold 2)"
check "  1 unit left the stock that sold does not count" \
    grep -q '^VIOLATION item0001: final stock 2 + sold 2 = 4, 1 short of S = 5: 1 unit left the stock that sold does not count' "$OUT"
check_eq "stock 2, sold 4: exit 1" 1 "$(hist $H/final.jsonl --stock 5 --final 2 --sold 4)"
check "  1 unit counted sold that the stock still holds" \
    grep -q '^VIOLATION item0001: final stock 2 + sold 4 = 6, above S = 5: 1 unit counted sold that the stock still holds' "$OUT"
check_eq "stock 3, sold 2, ledger 1: exit 1" 1 "$(hist $H/final.jsonl --stock 5 --final 3 --sold 2 --ledger 1)"
check "  a ledger of 1 entry for sold 2" grep -q '^VIOLATION item0001: ledger of 1 entries for sold 2' "$OUT"

# fork.jsonl: a Redis that forked under v9 (S 10). Before the cut a and b sell 9 and 8;
# token 3's grant reached the replica, its write (a's 7) did not. Cut: a sells 6 and 5 on
# the old master (tokens 4, 5), b 7 on the promoted replica (its token 4). Then a's grant
# of token 6, whose read (5) was on the old master, is written on the new one: 200, 4.
# The new master's next tokens, 5 and 6, are refused: 2 answers lease_lost. b sells 3.
# The new master is left with stock 3, sold 5, a ledger of 5: 2 units short, as many as
# the lease_lost answers.
check_eq "fork, with sold and ledger: exit 1" 1 "$(hist $H/fork.jsonl --stock 10 --final 3 --sold 5 --ledger 5)"
check "  the first violation is still a unit sold twice (7)" \
    grep -q '^VIOLATION inventory001: two sales answered remaining 7: a unit of stock sold twice$' "$OUT"
check "  and ALSO: 2 units left the stock that sold does not count; answers lease_lost 2" \
    grep -q '^ALSO inventory001: final stock 3 + sold 5 = 8, 2 short of S = 10: 2 units left the stock that sold does not count .*; answers lease_lost 2$' "$OUT"
check "  the ALSO names the two lease_lost answers (lines 8 and 9)" names 8 9
check_eq "fork, with the stock alone: exit 1 (sold twice), and nothing says the 2 units" "1 0" \
    "$(hist $H/fork.jsonl --stock 10 --final 3) $(grep -c '^ALSO' "$OUT")"
check_eq "fork without the sale sold twice (line 3 left out): rule 5 is the first violation" \
    "1 VIOLATION inventory001: final stock 3 + sold 5 = 8, 2 short of S = 10" \
    "$(hist <(sed 3d $H/fork.jsonl) --stock 10 --final 3 --sold 5 --ledger 5) $(head -1 "$OUT" | cut -c1-69)"
check_eq "  with the stock alone, that history is possible: rule 4 cannot see it" 0 \
    "$(hist <(sed 3d $H/fork.jsonl) --stock 10 --final 3)"

out=$("$CHECK" $H/fork.jsonl --stock 10 --final 3 --sold 5 --ledger 5); rc=$?
check_eq "  the rows' verdict (deploy/lib.sh's history_verdict_of): the first line, and the ALSO's" \
    "impossible: VIOLATION inventory001: two sales answered remaining 7: a unit of stock sold twice; also: final stock 3 + sold 5 = 8, 2 short of S = 10" \
    "$(history_verdict_of "$rc" "$out" | cut -c1-147)"
check_eq "  possible stays possible" possible "$(history_verdict_of 0 "whatever it printed")"

echo '{"inventory001": {"stock": 0, "sold": 5, "ledger": 5}, "item0002": {"stock": 3, "sold": 2}}' \
    >"$T_TMP/state.json"
check_eq "--final-file of {stock, sold, ledger}, both items right: exit 0" 0 \
    "$(hist $H/valid.jsonl --stock 5 --final-file "$T_TMP/state.json")"
echo '{"inventory001": {"stock": 0, "sold": 5, "ledger": 5}, "item0002": {"stock": 3, "sold": 1}}' \
    >"$T_TMP/state-bad.json"
check_eq "--final-file, item0002's sold 1 for stock 3: exit 1" 1 \
    "$(hist $H/valid.jsonl --stock 5 --final-file "$T_TMP/state-bad.json")"
check "  names item0002, 1 unit short" grep -q '^VIOLATION item0002: final stock 3 + sold 1 = 4, 1 short of S = 5' "$OUT"

# --- input it cannot use: exit 2, and why ---
check_eq "malformed line: exit 2" 2 "$(hist $H/malformed.jsonl --stock 5)"
check "malformed line: names the file and line 2" grep -q "malformed.jsonl:2: not JSON" "$ERR"
check_eq "a 200 without remaining: exit 2" 2 "$(hist $H/no-remaining.jsonl --stock 5)"
check "a 200 without remaining: says so" grep -q "no-remaining.jsonl:1: remaining is not an integer" "$ERR"
check_eq "missing file: exit 2" 2 "$(hist "$T_TMP/nothing.jsonl" --stock 5)"
check "missing file: says so" grep -q "nothing.jsonl: No such file or directory" "$ERR"
check_eq "--final-file missing an item of the history: exit 2" 2 \
    "$(hist $H/valid.jsonl --stock 5 --final-file <(echo '{"inventory001": 0}'))"
check "--final-file missing an item: names it" grep -q "no stock left for item item0002" "$ERR"
check_eq "--final for a history of two items: exit 2" 2 "$(hist $H/valid.jsonl --stock 5 --final 0)"
check_eq "bad usage: no --stock" 2 "$(hist $H/valid.jsonl)"
check "bad usage: says why and how" sh -c "grep -q 'FILE and --stock S are required' $ERR && grep -q '^Usage: ' $ERR"
check_eq "bad usage: --stock not a number" 2 "$(hist $H/valid.jsonl --stock many)"
check_eq "bad usage: --final and --final-file together" 2 \
    "$(hist $H/final.jsonl --stock 5 --final 2 --final-file "$T_TMP/finals.json")"
check_eq "bad usage: an unknown option" 2 "$(hist $H/valid.jsonl --stock 5 --strict)"
check_eq "bad usage: --sold without --final" 2 "$(hist $H/final.jsonl --stock 5 --sold 2)"
check_eq "bad usage: --ledger without --sold" 2 "$(hist $H/final.jsonl --stock 5 --final 3 --ledger 2)"
check_eq "--final-file: a ledger without sold: exit 2" 2 \
    "$(hist $H/valid.jsonl --stock 5 --final-file <(echo '{"inventory001": {"stock": 0, "ledger": 5}, "item0002": 3}'))"
check "  names the item" grep -q 'item inventory001: not an integer nor' "$ERR"
check_eq "--help: exit 0" 0 "$(hist --help)"
check "--help: the usage and the model" sh -c "grep -q '^Usage: loadtest/check-history FILE --stock S' $OUT && grep -q 'one counter' $OUT"

# --- 200,000 lines in a few seconds (a load run's size) ---
"$PYTHON" - "$T_TMP/big.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for n in range(200000):
        item = "item%04d" % (n % 4 + 1)
        rem = 59999 - n // 4
        f.write(json.dumps({"start_ns": n * 1000, "end_ns": n * 1000 + 1500, "status": 200,
                            "remaining": rem, "item": item, "key": "k%d" % n}) + "\n")
PY
# Its cost is the checker's own CPU time (user and system), not the wall clock: make test
# runs this suite at nice 10 beside the other lane.
TIMEFORMAT='%3U %3S'
{ time hist "$T_TMP/big.jsonl" --stock 60000 > "$T_TMP/big.rc"; } 2> "$T_TMP/big.time"
check_eq "200,000 lines, four items: possible" 0 "$(cat "$T_TMP/big.rc")"
ms=$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$T_TMP/big.time")
echo "       (200,000 lines in $ms ms of CPU)"
check "200,000 lines in under 10 s of CPU" test "${ms:-99999}" -lt 10000


# --- loadtest/fairness: Jain's index, overtaking, a client never served ----------------------
# Two clients: one sends at 0, 10, 20 and 30 ms, the other at 1, 11 and 21 ms; remaining
# (the place in the lock's order, the higher the earlier) gives the sale sent at 30 ms the
# first grant of all: it overtook the six sales sent 5 ms or more before it.
fair_hist() {   # FILE CONN "START_MS END_MS REMAINING"...
    local f=$1 c=$2; shift 2
    printf '%s\n' "$@" | jq -c --argjson c "$c" -R 'split(" ") | map(tonumber)
        | {status: 200, start_ns: (.[0] * 1000000), end_ns: (.[1] * 1000000), remaining: .[2], conn: $c}' > "$f"
}
fair_hist "$T_TMP/fa.jsonl" 0 "0 30 9" "10 60 6" "20 80 5" "30 35 10"
fair_hist "$T_TMP/fb.jsonl" 0 "1 40 8" "11 50 7" "21 90 4"
fair=$(loadtest/fairness "$T_TMP/fa.jsonl" "$T_TMP/fb.jsonl")
check_eq "fairness: 2 clients, 7 sales, Jain 0.98 (4 and 3)" "2 7 0.98" \
    "$(jq -r '"\(.clients) \(.sales) \(.jain)"' <<< "$fair")"
check_eq "  the most 7 sales over 2 clients allow: 0.98 (4 and 3), so as fair as can be (1)" "0.98 1" \
    "$(jq -r '"\(.jain_best) \(.fair)"' <<< "$fair")"
check_eq "  67 sales over 50 clients: at most 0.8889 (17 get 2, 33 get 1), and such a split is fair (1)" \
    "0.8889 1" "$(for c in $(seq 50); do f="$T_TMP/f67-$c.jsonl"; : > "$f"
        for k in $(seq $([ "$c" -le 17 ] && echo 2 || echo 1)); do
            echo "{\"status\":200,\"start_ns\":$((c * 1000 + k)),\"end_ns\":$((c * 1000 + k + 1)),\"remaining\":$((c * 10 + k)),\"conn\":0}" >> "$f"
        done; done
        loadtest/fairness "$T_TMP"/f67-*.jsonl | jq -r '"\(.jain_best) \(.fair)"')"
check_eq "  6 of 18 pairs sent 5 ms apart granted in reverse; a sale overtaken by 1 at most" \
    "6 18 1" "$(jq -r '"\(.inversions) \(.pairs_apart) \(.max_overtaken)"' <<< "$fair")"
check_eq "  the longest wait 69 ms (sent at 21, answered at 90)" 69 "$(jq -r .longest_wait_ms <<< "$fair")"
echo '{"status":0,"start_ns":1,"end_ns":2,"conn":0}' > "$T_TMP/fc.jsonl"
check_eq "  a client never served counts, with no sale: 3 clients, Jain 0.6533, the fewest 0" \
    "3 0.6533 0" "$(loadtest/fairness "$T_TMP/fa.jsonl" "$T_TMP/fb.jsonl" "$T_TMP/fc.jsonl" |
                    jq -r '"\(.clients) \(.jain) \(.min_sales)"')"
check_eq "  no history: exit 2" 2 "$(loadtest/fairness "$T_TMP/none.jsonl" >/dev/null 2>&1; echo $?)"
# --settled: fb's first sale answered at 40 ms; fa's two answered before (at 30 and 35 ms)
# are left out, its two after and fb's three count.
check_eq "  --settled: from 40 ms (fb's first answer), 2 left out, 2 and 3 counted" "40 2 2,3 5" \
    "$(loadtest/fairness --settled "$T_TMP/fa.jsonl" "$T_TMP/fb.jsonl" |
       jq -r '"\(.from_ms) \(.left_out) \(.by_history | map(tostring) | join(",")) \(.sales)"')"
check_eq "  --settled with a history that never sold: no sale counts, exit 2" 2 \
    "$(loadtest/fairness --settled "$T_TMP/fa.jsonl" "$T_TMP/fc.jsonl" >/dev/null 2>&1; echo $?)"

t_report
