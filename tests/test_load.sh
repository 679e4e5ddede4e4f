#!/usr/bin/env bash
# test_load.sh - build/sale-load, the load client that records a sale history: against
# two real instances (v8) on one real Redis, a stock that runs out mid-run, the history
# checked line by line and by loadtest/check-history; an instance killed mid-run (status
# 0, no hang); a server that never answers (--timeout-ms); answers chunked, in pieces or
# with Connection: close; bad usage. Needs a build (make).
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

LOAD=${SALE_LOAD:-build/sale-load}
CHECK=${CHECK_HISTORY:-loadtest/check-history}

# summary OUT KEY: KEY of the summary's JSON line (the last line of OUT).
summary() { tail -1 "$1" | jq -r --arg k "$2" '.[$k]'; }
# lines FILE: the number of lines of FILE.
lines() { wc -l <"$1" | tr -d ' '; }
# well_formed FILE: every line is an object with the fields every request has, in order.
well_formed() {
    jq -e -s 'length > 0 and all(.[]; (.start_ns | type) == "number" and .start_ns <= .end_ns
              and (.status | type) == "number" and (.item | type) == "string")' "$1"
}
# answered_200 FILE: every 200 carries remaining and instance (and there are 200s).
answered_200() {
    jq -e -s '[.[] | select(.status == 200)] | length > 0 and
              all(.[]; (.remaining | type) == "number" and (.instance | type) == "string")' "$1"
}
# status_count FILE STATUS: how many lines have this status.
status_count() { jq -s --argjson s "$2" '[.[] | select(.status == $s)] | length' "$1"; }

start_redis || { t_report; exit 1; }
RP=$REDIS_PORT
start_service PA --redis "127.0.0.1:$RP" --lock v8 --name inv-a --faults || { t_report; exit 1; }
start_service PB --redis "127.0.0.1:$RP" --lock v8 --name inv-b --faults || { t_report; exit 1; }
PB_PID=$SVC_PID
URL_A="http://127.0.0.1:$PA/inventory/sale"
URL_B="http://127.0.0.1:$PB/inventory/sale"

# --- both instances, one item, keys; the stock runs out mid-run ---
# work_ms=5 holds the lock 5 ms a sale: at most ~200 sales/s over both instances, so 150
# units last most of a second whatever the machine's speed, and both instances sell.
S=150
item_set -p "$RP" one $S >/dev/null
"$LOAD" --url "$URL_A?item=one&work_ms=5" -c 3 -d 2 --keys --history "$T_TMP/a.jsonl" >"$T_TMP/a.out" 2>&1 &
la=$!
"$LOAD" --url "$URL_B?item=one&work_ms=5" -c 3 -d 2 --keys --history "$T_TMP/b.jsonl" >"$T_TMP/b.out" 2>&1
rb=$?
wait $la
ra=$?
check_eq "two runs, one per instance: both exit 0" "0 0" "$ra $rb"
cat "$T_TMP/a.out"
check_eq "instance a: one history line per request of the summary" \
    "$(summary "$T_TMP/a.out" requests)" "$(lines "$T_TMP/a.jsonl")"
check_eq "instance b: one history line per request of the summary" \
    "$(summary "$T_TMP/b.out" requests)" "$(lines "$T_TMP/b.jsonl")"
cat "$T_TMP/a.jsonl" "$T_TMP/b.jsonl" >"$T_TMP/ab.jsonl"
H=$T_TMP/ab.jsonl
check "every line parses, with start_ns <= end_ns, a status and an item" well_formed "$H"
check "every 200 carries remaining and instance" answered_200 "$H"
check "every answer carries the body's request_id, each its own" \
    jq -e -s 'map(select(.status > 0)) | (all(.[]; .request_id | type == "string")
        and (map(.request_id) | unique | length) == length)' "$H"
check_eq "no 200 or 409 says retry_after (the service sends Retry-After with 503s only)" 0 \
    "$(jq -s 'map(select(.retry_after)) | length' "$H")"
check "both instances sold (inv-a and inv-b in the 200s)" \
    sh -c "jq -r 'select(.status == 200) | .instance' $H | sort -u | tr '\n' ' ' | grep -qx 'inv-a inv-b '"
check_eq "the whole stock sold: $S 200s" $S "$(status_count "$H" 200)"
echo "       (sold out $(jq -s '(([.[] | select(.status == 200) | .end_ns] | max) - ([.[] | .start_ns] | min)) / 1000000 | floor' "$H") ms into the run)"
check "then sold_out: 409s with error sold_out and remaining 0" \
    jq -e -s '[.[] | select(.status == 409)] | length > 0 and all(.[]; .error == "sold_out" and .remaining == 0)' "$H"
check_eq "--keys: every line has a key" "$(lines "$H")" "$(jq -r 'select(.key) | .key' "$H" | wc -l | tr -d ' ')"
check_eq "--keys: the keys are distinct (two processes, every connection)" "" \
    "$(jq -r .key "$H" | sort | uniq -d | head -3)"
check "--keys: at most 64 characters of the service's set" \
    jq -e -s 'all(.[]; .key | test("^[A-Za-z0-9_.:=+/-]{1,64}$"))' "$H"
check_eq "the summary's statuses add up to its answers" \
    "$(( $(summary "$T_TMP/a.out" requests) - $(summary "$T_TMP/a.out" no_answer) ))" \
    "$(tail -1 "$T_TMP/a.out" | jq '[.by_status[]] | add')"
check "the summary's JSON line has every key" sh -c "tail -1 $T_TMP/a.out | jq -e \
    'has(\"requests\") and (.by_status | type) == \"object\" and (.by_error | type) == \"object\"
     and has(\"no_answer\") and has(\"rps\") and has(\"p50_ms\") and has(\"p99_ms\") and has(\"seconds\")'"
check "the summary counts sold_out by error" sh -c "tail -1 $T_TMP/a.out | jq -e '.by_error.sold_out > 0'"
final=$(item_get -p "$RP" stock one)
check_eq "check-history: the recorded history is possible (--final $final from Redis)" 0 \
    "$("$CHECK" "$H" --stock $S --final "$final" >"$T_TMP/check.out" 2>&1; echo $?)"
cat "$T_TMP/check.out"
# One 200 line's remaining made the same as another's: a unit sold twice.
"$PYTHON" - "$H" "$T_TMP/dup.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ok = [r for r in rows if r["status"] == 200]
ok[1]["remaining"] = ok[0]["remaining"]
with open(sys.argv[2], "w") as f:
    f.writelines(json.dumps(r, separators=(",", ":")) + "\n" for r in rows)
PY
check_eq "check-history: the same history with one remaining duplicated is impossible (exit 1)" 1 \
    "$("$CHECK" "$T_TMP/dup.jsonl" --stock $S --final "$final" >"$T_TMP/dup.out" 2>&1; echo $?)"
check "check-history: says a unit was sold twice" grep -q 'a unit of stock sold twice' "$T_TMP/dup.out"

# --- --items: round robin over two items, item= of the URL replaced ---
item_set -p "$RP" two 40 >/dev/null
item_set -p "$RP" three 40 >/dev/null
check_eq "--items two,three: exit 0" 0 \
    "$("$LOAD" --url "$URL_A?item=one" -c 2 -d 1 --items two,three --history "$T_TMP/i.jsonl" >"$T_TMP/i.out" 2>&1; echo $?)"
check_eq "--items: every request asked for two or three, in turn (counts within 1)" "ok" \
    "$(jq -r .item "$T_TMP/i.jsonl" | sort | uniq -c | awk '{ n[$2] = $1 } END {
        d = n["two"] - n["three"]; print (length(n) == 2 && d <= 1 && d >= -1) ? "ok" : "bad" }')"
check_eq "--items: no key without --keys" 0 "$(jq -r 'select(.key)' "$T_TMP/i.jsonl" | wc -l | tr -d ' ')"
echo "{\"two\": $(item_get -p "$RP" stock two), \"three\": $(item_get -p "$RP" stock three)}" >"$T_TMP/finals.json"
check_eq "--items: check-history with --final-file: possible" 0 \
    "$("$CHECK" "$T_TMP/i.jsonl" --stock 40 --final-file "$T_TMP/finals.json" >/dev/null 2>&1; echo $?)"

# --- --item-count K, uniform and Zipf ---
item_key stock $(seq -f item%04g 1 20) | sed 's/^/SET /; s/$/ 1000000/' | redis-cli -p "$RP" >/dev/null
check_eq "--item-count 20: exit 0" 0 \
    "$("$LOAD" --url "$URL_A" -c 4 -d 1 --item-count 20 --history "$T_TMP/u.jsonl" >/dev/null 2>&1; echo $?)"
check_eq "  round robin over item0001..item0020: 20 items, counts within 1 of each other" "20 ok" \
    "$(jq -r .item "$T_TMP/u.jsonl" | sort | uniq -c | awk '{ n++; if (min == "" || $1 < min) min = $1; if ($1 > max) max = $1 }
        END { print n, (max - min <= 1 ? "ok" : "bad") }')"
check_eq "--item-count 20 --zipf 1.1: exit 0" 0 \
    "$("$LOAD" --url "$URL_A" -c 4 -d 2 --item-count 20 --zipf 1.1 --seed 7 --history "$T_TMP/z.jsonl" >/dev/null 2>&1; echo $?)"
# Zipf 1.1 over 20 items: item0001 takes 1/H = 31.3 %, item0002 14.6 %, item0020 1.2 %.
shares=$(jq -r .item "$T_TMP/z.jsonl" | sort | uniq -c | awk '{ n[$2] = $1; t += $1 } END {
    printf "%.3f %.3f %.3f", n["item0001"] / t, n["item0002"] / t, n["item0020"] / t }')
echo "       Zipf 1.1 shares of item0001, item0002, item0020: $shares (of $(lines "$T_TMP/z.jsonl"))"
check "  skewed as 1/r^1.1 says: item0001 28-35 %, item0002 12-17 %, item0020 0.6-1.8 %" \
    awk -v s="$shares" 'BEGIN { split(s, f, " "); exit !(f[1] > 0.28 && f[1] < 0.35 && f[2] > 0.12 && f[2] < 0.17 && f[3] > 0.006 && f[3] < 0.018) }'
check_eq "--zipf without items: exit 2" 2 "$("$LOAD" --url "$URL_A" -c 1 -d 1 --zipf 1.1 >/dev/null 2>&1; echo $?)"
check_eq "--items and --item-count: exit 2" 2 "$("$LOAD" --url "$URL_A" -c 1 -d 1 --items a,b --item-count 3 >/dev/null 2>&1; echo $?)"
check_eq "--item-count 100001: exit 2" 2 "$("$LOAD" --url "$URL_A" -c 1 -d 1 --item-count 100001 >/dev/null 2>&1; echo $?)"

# --- an instance killed mid-run: status 0, reconnects that back off, no hang ---
item_set -p "$RP" four 1000000 >/dev/null
t0=$(now_ms)
"$LOAD" --url "$URL_B?item=four" -c 3 -d 2 --timeout-ms 2000 --history "$T_TMP/k.jsonl" >"$T_TMP/k.out" 2>&1 &
lk=$!
sleep 0.8
kill -9 "$PB_PID"
{ wait "$PB_PID"; } 2>/dev/null                  # (no "Killed" line from bash)
wait $lk
rk=$? ms=$(($(now_ms) - t0))
cat "$T_TMP/k.out"
check_eq "killed instance: the run still exits 0" 0 "$rk"
check "killed instance: the run ended within its duration and timeout (took $ms ms)" test "$ms" -lt 4000
check "killed instance: requests in flight recorded as status 0" test "$(status_count "$T_TMP/k.jsonl" 0)" -ge 1
check_eq "killed instance: status 0 lines carry no answer's fields" 0 \
    "$(jq -c 'select(.status == 0 and (has("remaining") or has("instance") or has("error")))' "$T_TMP/k.jsonl" | wc -l | tr -d ' ')"
check_eq "killed instance: the summary's no_answer is the status 0 lines" \
    "$(status_count "$T_TMP/k.jsonl" 0)" "$(summary "$T_TMP/k.out" no_answer)"
check "killed instance: refused reconnects counted, backing off (at most ~100/s a connection)" \
    sh -c "n=\$(tail -1 $T_TMP/k.out | jq .connect_failures); [ \$n -ge 1 ] && [ \$n -le 600 ]"
check_eq "killed instance: one line per request" "$(summary "$T_TMP/k.out" requests)" "$(lines "$T_TMP/k.jsonl")"
check_eq "killed instance: check-history counts the status 0 as unknown: possible" 0 \
    "$("$CHECK" "$T_TMP/k.jsonl" --stock 1000000 --final "$(item_get -p "$RP" stock four)" >/dev/null 2>&1; echo $?)"

# --- a server that accepts and never answers: --timeout-ms ---
QP=$(free_port)
"$PYTHON" -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16); time.sleep(60)' "$QP" &
T_PIDS="$T_PIDS $!"
wait_until 5 "" bash -c "exec 3<>/dev/tcp/127.0.0.1/$QP"
t0=$(now_ms)
"$LOAD" --url "http://127.0.0.1:$QP/inventory/sale" -c 2 -d 0.3 --timeout-ms 300 \
    --history "$T_TMP/t.jsonl" >"$T_TMP/t.out" 2>&1
rt=$? ms=$(($(now_ms) - t0))
check_eq "no answer: exit 0 (the run was done)" 0 "$rt"
check "no answer: over after the duration and one timeout (took $ms ms)" test "$ms" -lt 1500
check "no answer: every request recorded as status 0" \
    jq -e -s 'length >= 2 and all(.[]; .status == 0 and .item == "inventory001")' "$T_TMP/t.jsonl"

# --- answers chunked, in pieces, or with Connection: close ---
cat >"$T_TMP/odd.py" <<'PY'
import json, socket, sys, threading, time
lock, state = threading.Lock(), {"n": 0, "remaining": 100000}
def serve(conn):
    buf = b""
    with conn:
        while True:
            while b"\r\n\r\n" not in buf:
                data = conn.recv(4096)
                if not data:
                    return
                buf += data
            buf = buf.split(b"\r\n\r\n", 1)[1]
            with lock:
                state["n"] += 1; state["remaining"] -= 1
                n, rem = state["n"], state["remaining"]
            body = json.dumps({"ok": True, "remaining": rem, "instance": "odd"}).encode()
            if n % 3 == 0:      # Content-Length, the answer in two pieces
                msg = b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body
                conn.sendall(msg[:20]); time.sleep(0.002); conn.sendall(msg[20:])
            elif n % 3 == 1:    # chunked, two chunks (one with an extension), in pieces
                conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                time.sleep(0.001)
                conn.sendall(b"5\r\n" + body[:5] + b"\r\n")
                conn.sendall(b"%x;x=1\r\n" % (len(body) - 5) + body[5:] + b"\r\n0\r\n\r\n")
            else:               # Connection: close, then the server closes
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
                             % len(body) + body)
                return
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(16)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
OP=$(free_port)
"$PYTHON" "$T_TMP/odd.py" "$OP" &
T_PIDS="$T_PIDS $!"
wait_until 5 "" bash -c "exec 3<>/dev/tcp/127.0.0.1/$OP"
"$LOAD" --url "http://127.0.0.1:$OP/x?item=odd" -c 2 -d 0.5 --history "$T_TMP/o.jsonl" >"$T_TMP/o.out" 2>&1
check_eq "odd answers: exit 0" 0 "$?"
check "odd answers: every one read whole (all 200, with remaining and instance)" \
    jq -e -s 'length >= 6 and all(.[]; .status == 200 and (.remaining | type) == "number" and .instance == "odd")' \
    "$T_TMP/o.jsonl"
check_eq "odd answers: check-history: possible" 0 \
    "$("$CHECK" "$T_TMP/o.jsonl" --stock 100000 >/dev/null 2>&1; echo $?)"

# --- bad usage: exit 2 with a reason; --help; what cannot be done: exit 1 ---
check_eq "a host outside loopback and 198.18.0.0/15 (10.0.0.1): exit 2" 2 \
    "$("$LOAD" --url http://10.0.0.1:8080/inventory/sale -c 1 -d 1 >/dev/null 2>"$T_TMP/err"; echo $?)"
check "a host outside the rule: says why" grep -q 'host refused: load goes only to 127.0.0.1 or to test hosts in 198.18.0.0/15' "$T_TMP/err"
if ! ip -4 addr 2>/dev/null | grep -q 'inet 198\.1[89]\.'; then
    check_eq "a test host's address (198.18.0.1) from outside the test hosts: exit 2" 2 \
        "$("$LOAD" --url http://198.18.0.1:8001/inventory/sale -c 1 -d 1 >/dev/null 2>"$T_TMP/err"; echo $?)"
    check "  says why: only from inside a test host" grep -q '198.18.0.0/15 only from inside a test host' "$T_TMP/err"
else
    skip "a test host's address from outside the test hosts" "this machine itself has an address in 198.18.0.0/15"
    skip "  says why" "this machine itself has an address in 198.18.0.0/15"
fi
check_eq "a host by name (localhost): exit 2" 2 \
    "$("$LOAD" --url http://localhost:8080/ -c 1 -d 1 >/dev/null 2>&1; echo $?)"
# The item rule is the service's (common/item.h): 1 to ITEM_MAX (64) characters.
long_item() { printf "i%.0s" $(seq "$1"); }
check_eq "--items: an item of 64 characters (the service's limit): runs (exit 0)" 0 \
    "$("$LOAD" --url "$URL_A" -c 1 -d 0.1 --items "$(long_item 64)" >/dev/null 2>&1; echo $?)"
check_eq "--items: an item of 65 characters: exit 2" 2 \
    "$("$LOAD" --url "$URL_A" -c 1 -d 0.1 --items "a,$(long_item 65)" >/dev/null 2>"$T_TMP/err"; echo $?)"
check "  says why: 1 to 64 characters" grep -q -- '--items: each item is 1 to 64 characters' "$T_TMP/err"
check_eq "-c 0: exit 2" 2 "$("$LOAD" --url "$URL_A" -c 0 -d 1 >/dev/null 2>"$T_TMP/err"; echo $?)"
check "-c 0: says why" grep -q -- '-c must be a whole number of connections in 1..1024' "$T_TMP/err"
check_eq "-c 1025: exit 2" 2 "$("$LOAD" --url "$URL_A" -c 1025 -d 1 >/dev/null 2>&1; echo $?)"
check_eq "-d 0.01: exit 2" 2 "$("$LOAD" --url "$URL_A" -c 1 -d 0.01 >/dev/null 2>&1; echo $?)"
check_eq "no --url: exit 2" 2 "$("$LOAD" -c 1 -d 1 >/dev/null 2>&1; echo $?)"
check_eq "an unknown option: exit 2" 2 "$("$LOAD" --url "$URL_A" -c 1 -d 1 --pipeline >/dev/null 2>&1; echo $?)"
check_eq "--help: exit 0" 0 "$("$LOAD" --help >"$T_TMP/help" 2>&1; echo $?)"
check "--help: the usage and every option" sh -c "grep -q '^Usage: sale-load --url' $T_TMP/help && \
    grep -q -- '--history FILE' $T_TMP/help && grep -q -- '--timeout-ms MS' $T_TMP/help && grep -q -- '--items' $T_TMP/help && \
    grep -q -- '--item-count K' $T_TMP/help && grep -q -- '--zipf S' $T_TMP/help"
check_eq "a history that cannot be opened: exit 1" 1 \
    "$("$LOAD" --url "$URL_A" -c 1 -d 0.1 --history "$T_TMP/no/such/dir/h.jsonl" >/dev/null 2>&1; echo $?)"
check_eq "nobody listening (the killed instance): no request sent, exit 1" 1 \
    "$("$LOAD" --url "$URL_B" -c 1 -d 0.2 >/dev/null 2>&1; echo $?)"

t_report
