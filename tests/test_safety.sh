#!/usr/bin/env bash
# test_safety.sh - what a careful user expects under duplicates and faults, on real Redis
# and nginx (deploy/up on free loopback ports): an Idempotency-Key sells once however
# many copies arrive at once on both instances, across a restart, and its first answer
# (200 or 409) comes back; a key reused for another item answers 422; a write whose reply
# was lost answers 503 outcome_unknown and a retry with the key learns the truth; nginx's
# own errors reach the client as JSON 503/400; the request id goes from nginx to the
# ledger; /metrics has the histograms and counters; SIGTERM finishes the sale in flight,
# releases its lock and exits 0; garbage over raw TCP leaves an instance serving.
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh

RUN=$T_TMP/run
trap 'deploy/down --run-dir "$RUN" --quiet >/dev/null 2>&1; t_cleanup' EXIT
NGINX_P=$(free_port); REDIS_P=$(free_port); A=$(free_port); B=$(free_port)
URL=http://127.0.0.1:$NGINX_P
# safety_up ARG...: deploy/up on this test's ports, AOF appendfsync always, ARGs added.
safety_up() {
    deploy/up --run-dir "$RUN" --port "$NGINX_P" --redis-port "$REDIS_P" --instance-ports "$A,$B" \
        --fsync always "$@" >"$T_TMP/up.out" 2>&1 || { cat "$T_TMP/up.out"; return 1; }
}
# r ARG...: redis-cli to the stack's Redis, with its password.
r() { REDIS_PORT=$REDIS_P REDIS_PASSWORD_FILE=$RUN/redis.pass rcli "$@"; }
r_pings() { r ping 2>/dev/null | grep -q PONG; }
# keyed_sale KEY [ITEM]: one sale through nginx with that Idempotency-Key; prints "CODE BODY".
keyed_sale() { curl -s -m 10 -w '\n%{http_code}' -H "Idempotency-Key: $1" "$URL/inventory/sale?item=${2:-idem}" |
         awk '{ l[NR] = $0 } END { print l[NR], l[1] }'; }
# answer_field KEY: KEY of the JSON body in each line on stdin, a bare body or keyed_sale's
# "CODE BODY" (json_field, deploy/lib.sh); nothing where the body has no KEY.
answer_field() { sed 's/^[0-9]\{3\} //' | json_field "$1"; }

# --- duplicates at once, on both instances: one sale, one answer -------------------------
for mode in "atomic" "v8" "v8 --combine 8"; do
    set -- $mode
    safety_up --lock "$@" || exit 1
    deploy/stock 10 --item idem --run-dir "$RUN" >/dev/null
    key="dup-$RANDOM-$1"
    for i in $(seq 20); do keyed_sale "$key" > "$T_TMP/dup.$i" & done
    wait_pids=$(jobs -p); for p in $wait_pids; do wait "$p"; done
    check_eq "$mode: 20 copies of one purchase at once all answer 200" 20 \
        "$(cat "$T_TMP"/dup.* | grep -c '^200 ')"
    check_eq "$mode: ... with one answer (remaining 9, all alike)" "9" \
        "$(cat "$T_TMP"/dup.* | answer_field remaining | sort -u | paste -sd' ')"
    check_eq "$mode: ... the copies reached both instances" 2 \
        "$(curl -s "http://127.0.0.1:$A/metrics" "http://127.0.0.1:$B/metrics" |
           awk '$1 == "inventory_sales_total{result=\"ok\"}" && $2 > 0' | wc -l)"
    check_eq "$mode: sold 1, stock 9, one ledger entry" "1 9 1" \
        "$(r get "$(item_key sold idem)") $(r get "$(item_key stock idem)") $(r xlen "$(item_key orders idem)")"
    check_eq "$mode: 19 answered as replays" 19 "$(cat "$T_TMP"/dup.* | answer_field replayed | grep -cx true)"
    rm -f "$T_TMP"/dup.*
done

# --- across a restart; the first answer, 409 too; another item; a bad key ------------------
first=$(keyed_sale "keep-1")
check_eq "a sale with a key: 200" 200 "${first%% *}"
safety_up --lock v8 --faults --ttl-ms 2000 || exit 1
again=$(keyed_sale "keep-1")
check_eq "after a restart of the stack, the same key: the first answer again" \
    "200 $(echo "$first" | answer_field remaining) $(echo "$first" | answer_field instance) true" \
    "${again%% *} $(echo "$again" | answer_field remaining) $(echo "$again" | answer_field instance) $(echo "$again" | answer_field replayed)"
check_eq "... nothing more sold" 2 "$(r get "$(item_key sold idem)")"
deploy/stock 0 --item empty --run-dir "$RUN" >/dev/null
check_eq "sold out with a key: 409" 409 "$(keyed_sale none-1 empty | cut -d' ' -f1)"
deploy/stock 5 --item empty --run-dir "$RUN" >/dev/null
out=$(keyed_sale none-1 empty)
check_eq "stock came back: the same key still answers its first answer, 409 (replayed)" "409 true" \
    "${out%% *} $(echo "$out" | answer_field replayed)"
check_eq "... and sells nothing" 5 "$(r get "$(item_key stock empty)")"
out=$(keyed_sale keep-1 empty)
check_eq "the key reused for another item: 422 idempotency_key_reused" "422 idempotency_key_reused" \
    "${out%% *} $(echo "$out" | answer_field error)"
check_eq "... nothing sold" 5 "$(r get "$(item_key stock empty)")"
check_eq "a key of 65 characters: 400" 400 \
    "$(curl -s -o /dev/null -w '%{http_code}' -H "Idempotency-Key: $(printf 'k%.0s' $(seq 65))" "$URL/inventory/sale?item=idem")"
check_eq "a key with a space: 400" 400 \
    "$(curl -s -o /dev/null -w '%{http_code}' -H 'Idempotency-Key: a b' "$URL/inventory/sale?item=idem")"
keep_record_lasts() { [ "$(r pttl "$(item_key idem idem):keep-1")" -gt 86000000 ]; }
check "the record lives next to the item (idem:{I}:K), with a TTL" keep_record_lasts

# --- the request id: nginx's, in the answer and in the ledger ------------------------------
deploy/stock 5 --item rid --run-dir "$RUN" >/dev/null
body=$(curl -s "$URL/inventory/sale?item=rid")
rid=$(echo "$body" | answer_field request_id)
check "the answer carries nginx's request id (32 hex)" grep -qE '^[0-9a-f]{32}$' <<<"$rid"
check_eq "the ledger entry carries it" "$rid" "$(r xrange "$(item_key orders rid)" - + | grep -A1 -x request | tail -n 1)"
body=$(curl -s -H 'X-Request-Id: my-req-42' "http://127.0.0.1:$A/inventory/sale?item=rid")
check_eq "a request id sent to the instance is used" "my-req-42" "$(echo "$body" | answer_field request_id)"

# --- /metrics ---------------------------------------------------------------------------
m=$(curl -s "http://127.0.0.1:$A/metrics"; curl -s "http://127.0.0.1:$B/metrics")
check "metrics: sale latency histogram" grep -q '^inventory_sale_duration_seconds_bucket{le="0.005"} ' <<<"$m"
check "metrics: lock wait histogram" grep -q '^inventory_lock_wait_seconds_bucket{le="+Inf"} ' <<<"$m"
check_eq "metrics: the replays counted (keep-1 and none-1 again)" 2 \
    "$(awk '$1 == "inventory_idempotent_replays_total" { n += $2 } END { print n }' <<<"$m")"
for c in inventory_lock_renewals_total inventory_lock_lost_leases_total inventory_redis_reconnects_total inventory_overlaps_total; do
    check "metrics: $c" grep -q "^$c " <<<"$m"
done

# --- the reply lost: outcome_unknown, then the truth by the key ----------------------------
# v8 holds the lock while the sale works 1 s; then its writes (riding with the release)
# wait in a Redis paused for writes, and Redis dies before it answers.
deploy/stock 5 --item lost --run-dir "$RUN" >/dev/null
curl -s -m 10 -w '\n%{http_code}' -H "Idempotency-Key: lost-1" "$URL/inventory/sale?item=lost&work_ms=1000" |
    awk '{ l[NR] = $0 } END { print l[NR], l[1] }' > "$T_TMP/lost.out" &
spid=$!
REDIS_PORT=$REDIS_P REDIS_PASSWORD_FILE=$RUN/redis.pass wait_until 5 "" redis_says 1 exists "$(item_key lock lost)"
r client pause 10000 write >/dev/null
sleep 1.5
kill -9 "$(head -n 1 "$RUN/redis.pid")"
wait "$spid"
out=$(cat "$T_TMP/lost.out")
echo "    $out"
check_eq "the reply never came: 503 outcome_unknown, naming the key" "503 outcome_unknown lost-1" \
    "${out%% *} $(echo "$out" | answer_field error) $(echo "$out" | answer_field idempotency_key)"
REDIS_CONF=$RUN/redis.conf redis_start "$REDIS_P" 127.0.0.1 always "$RUN/redis" "$RUN/redis.log" "$RUN/redis.pid"
wait_until 10 "$REDIS_STARTED_PID" r_pings
out=$(keyed_sale lost-1 lost); out2=$(keyed_sale lost-1 lost)
check_eq "Redis back: the retry with the key learns the outcome (not sold: sells now)" "200 4 -" \
    "${out%% *} $(echo "$out" | answer_field remaining) $(echo "$out" | answer_field replayed)-"
check_eq "... and again: the same answer, replayed; sold once" "200 4 true 1" \
    "${out2%% *} $(echo "$out2" | answer_field remaining) $(echo "$out2" | answer_field replayed) $(r get "$(item_key sold lost)")"

# --- nginx's own errors, as answers the service could give -----------------------------------
kill -9 "$(head -n 1 "$RUN/instance-$B.pid")"
codes=""
for _ in 1 2 3 4; do
    curl -s -D "$T_TMP/h" -o "$T_TMP/b" -H 'Idempotency-Key: down-1' "$URL/inventory/sale?item=rid"
    code=$(awk 'NR == 1 { print $2 }' "$T_TMP/h"); codes="$codes $code"
    [ "$code" = 503 ] && cp "$T_TMP/h" "$T_TMP/h503" && cp "$T_TMP/b" "$T_TMP/b503"
done
check "an instance down: its share answers 503, never 502" grep -q 503 <<<"$codes"
check_eq "... only 200 and 503" "" "$(echo $codes | tr ' ' '\n' | grep -vE '^(200|503)$')"
# Refused at connect (nothing sent): instance_unavailable; sent on a kept-alive connection
# the instance had left: outcome_unknown. Either way JSON, with the key.
check "... as JSON: instance_unavailable or outcome_unknown, with the key" \
    jq -e '.ok == false and (.error == "instance_unavailable" or .error == "outcome_unknown")
           and .idempotency_key == "down-1"' "$T_TMP/b503"
check "... with Retry-After" grep -qi '^retry-after: 1' "$T_TMP/h503"
code=$(curl -s -o "$T_TMP/b" -w '%{http_code}' "$URL/inventory/sale?item=$(head -c 20000 /dev/zero | tr '\0' a)")
check_eq "a 20 KB URL through nginx: 400 bad_request (JSON)" "400 bad_request" "$code $(answer_field error < "$T_TMP/b")"
deploy/down --run-dir "$RUN" --quiet

# --- hostile clients over raw TCP, straight to an instance -------------------------------------
start_redis || exit 1
item_set g 1000000 >/dev/null
# send PORT: writes stdin to the instance on PORT and prints the status of what it answers.
send() {
    exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
    cat >&3 2>/dev/null
    timeout 5 head -c 12 <&3 2>/dev/null | awk '{ print $2 }'
    exec 3<&-
}
for lock in "atomic" "v8" "v8 --combine 8"; do
    start_service P --redis "127.0.0.1:$REDIS_PORT" --lock $lock --max-conns 300 || exit 1
    pid=$SVC_PID
    head -c 65536 /dev/urandom | send "$P" >/dev/null
    long=$( { printf 'GET /inventory/sale?item=%s HTTP/1.1\r\nHost: x\r\n\r\n' "$(head -c 200000 /dev/zero | tr '\0' a)"; } | send "$P")
    many=$( { printf 'GET /health HTTP/1.1\r\nHost: x\r\n'; for i in $(seq 20000); do printf 'X-H%d: v\r\n' "$i"; done; printf '\r\n'; } | send "$P")
    huge=$(printf 'POST /inventory/sale HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\nab' | send "$P")
    pct=$(printf 'GET /inventory/sale?item=%%zz%%%%%%00 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' | send "$P")
    slow_pids=""
    for i in $(seq 200); do
        { exec 3<>"/dev/tcp/127.0.0.1/$P" && printf 'GET /inv' >&3 && sleep 4; } 2>/dev/null &
        slow_pids="$slow_pids $!"
    done
    sleep 1
    check_eq "$lock: binary noise, a 200 KB URL, 20,000 headers, a huge Content-Length, bad percent-encoding: refused (414 431 413 400)" \
        "414 431 413 400" "$long $many $huge $pct"
    check_eq "$lock: ... with 200 slow clients connected, a sale still answers 200" 200 \
        "$(curl -s -m 5 -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P/inventory/sale?item=g")"
    check "$lock: ... and the instance lives" running "$pid"
    # Within the limit: a request whose headers take 8 KB (a browser's cookies) is served.
    ok8=$( { printf 'GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n'
             for i in $(seq 100); do printf 'X-Cookie-%03d: %070d\r\n' "$i" 0; done
             printf '\r\n'; } | send "$P")
    check_eq "$lock: a request with 8 KB of headers is served" 200 "$ok8"
    for sp in $slow_pids; do kill "$sp" 2>/dev/null; done
    for sp in $slow_pids; do wait "$sp" 2>/dev/null; done
    kill "$pid"; wait "$pid" 2>/dev/null
done

# --- SIGTERM: the sale in flight finishes, its lock is released, exit 0 ------------------------
for lock in "v8" "v8 --combine 8"; do
    item_set g 5 >/dev/null
    start_service P --redis "127.0.0.1:$REDIS_PORT" --lock $lock --faults --wait-ms 2000 || exit 1
    pid=$SVC_PID
    curl -s -m 10 "http://127.0.0.1:$P/inventory/sale?item=g&work_ms=1500" > "$T_TMP/inflight" &
    cpid=$!
    wait_until 5 "" redis_says 1 exists "$(item_key lock g)"
    t0=$(date +%s%N)
    kill -TERM "$pid"
    wait "$pid"; rc=$?
    elapsed=$(( ($(date +%s%N) - t0) / 1000000 ))
    wait "$cpid"
    check_eq "$lock: SIGTERM mid-sale: exit 0" 0 "$rc"
    check "$lock: ... within --wait-ms + 1 s ($elapsed ms)" test "$elapsed" -lt 3000
    check_eq "$lock: ... the sale in flight answered 200" true "$(answer_field ok < "$T_TMP/inflight")"
    check_eq "$lock: ... its lock released, its sale written" "0 4" \
        "$(rcli exists "$(item_key lock g)") $(item_get stock g)"
    check "$lock: ... it said so in its log" grep -q 'stopping on SIGTERM' "$T_TMP/svc-$P.log"
done

t_report
