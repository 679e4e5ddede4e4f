#!/usr/bin/env bash
# test_service.sh - The service over real HTTP against a real redis-server: every status
# code and JSON field of the API, the teaching faults, Redis down and back, the flags.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

BIN=${SERVICE_BIN:-build/inventory-service}
BODY="$T_TMP/body"
HDRS="$T_TMP/headers"

# req METHOD URL: prints the status code; the body goes to $BODY, the headers to $HDRS.
req() {
    curl -s -m 30 -X "$1" -o "$BODY" -D "$HDRS" -w '%{http_code}' "$2" || echo 000
}
body_has() { grep -qF -- "$1" "$BODY"; }
# check_answer DESCRIPTION EXPECTED_CODE METHOD URL FRAGMENT...: code, then each fragment in the body.
check_answer() {
    local d=$1 want=$2 method=$3 url=$4 got f missing=""
    shift 4
    got=$(req "$method" "$url")
    for f in "$@"; do body_has "$f" || missing="$missing $f"; done
    if [ "$got" = "$want" ] && [ -z "$missing" ]; then
        T_PASSED=$((T_PASSED+1)); echo "ok     $d"
    else
        T_FAILED=$((T_FAILED+1))
        echo "FAIL   $d: got $got (want $want)${missing:+, body lacks$missing}: $(head -c 300 "$BODY")"
    fi
}

start_redis || exit 1
item_set inventory001 3 >/dev/null

# --- flags ---------------------------------------------------------------------------
"$BIN" --help > "$T_TMP/help" 2>&1
check_eq "--help exits 0" 0 $?
for f in --port --redis --lock --ttl-ms --wait-ms --faults --name; do
    check "--help explains $f" grep -q -- "$f" "$T_TMP/help"
done
check "--help lists every version with its flaw" grep -q "flaw:" "$T_TMP/help"
# Every flag of the option table (service/config/config.c) but a retired one has a line of
# its own, and those with a default say it on that line or the lines that go on from it.
table=$(sed -n '/retired_/!s/^ *{ \.name = "\([a-z-]*\)".*/\1/p' service/config/config.c)
check "the option table is read (over 30 flags)" test "$(echo "$table" | wc -l)" -gt 30
missing=""
for f in $table; do grep -qE -- "^  --$f( |$)" "$T_TMP/help" || missing="$missing --$f"; done
check_eq "--help: every flag of the option table has its own line (but a retired one)" "" \
    "${missing# }"
# help_of FLAG: the flag's line and the lines that go on from it (indented past the flags).
help_of() {
    awk -v f="  --$1" '
        index($0, f) == 1 && (length($0) == length(f) || substr($0, length(f) + 1, 1) == " ") {
            on = 1; print; next }
        on && /^                      [^ ]/ { print; next }
        { on = 0 }' "$T_TMP/help"
}
nodefault=""
for f in port bind redis lock ttl-ms wait-ms retry-ms wait combine workers replicas \
         idempotency-ttl zk-session-ms max-conns max-streams name item no-events faults; do
    help_of "$f" | grep -q default || nodefault="$nodefault --$f"
done
check_eq "--help: each flag with a default says it" "" "${nodefault# }"
check_eq "--help: no line over 100 columns" "" "$(awk 'length > 100 { print NR }' "$T_TMP/help" | tr '\n' ' ')"
check "--help: --workers as workers.c schedules (an idle worker takes the longest-waiting item)" \
    sh -c "awk '/^  --workers/,/^  --lock-redis/' '$T_TMP/help' | tr '\n' ' ' | grep -q 'waited *longest'"
"$BIN" --lock v99 > "$T_TMP/bad" 2>&1
rc=$?
check_eq "an unknown version: bad usage (exit 2)" 2 "$rc"
check_eq "  with a one-line reason" 1 "$(wc -l < "$T_TMP/bad")"
check "  that names it" grep -q "unknown lock version 'v99'" "$T_TMP/bad"
"$BIN" --port nope > "$T_TMP/bad" 2>&1
check "a bad number exits 2 with a reason" test $? = 2 -a "$(wc -l < "$T_TMP/bad")" = 1
"$BIN" --frobnicate > "$T_TMP/bad" 2>&1
check "an unknown flag exits 2 with a reason" test $? = 2 -a "$(wc -l < "$T_TMP/bad")" = 1
"$BIN" --redis nohostport > "$T_TMP/bad" 2>&1
check_eq "a bad --redis exits 2" 2 $?

# refused DESCRIPTION REASON ARG...: the service refuses ARGs at once: exit 2, one line,
# that says REASON.
refused() {
    local d=$1 reason=$2 rc said
    shift 2
    timeout 10 "$BIN" "$@" > "$T_TMP/bad" 2>&1; rc=$?
    said=$(grep -qF -- "$reason" "$T_TMP/bad" && echo yes || head -c 300 "$T_TMP/bad")
    check_eq "$d: exit 2, one line with its reason" "2 1 yes" "$rc $(wc -l < "$T_TMP/bad") $said"
}
Z=127.0.0.1:1          # a ZooKeeper address: every refusal comes before any connection
M3=127.0.0.1:1,127.0.0.1:2,127.0.0.1:3
refused "--zookeeper --redis H:P (a missing value)" "--zookeeper wants a value" \
    --zookeeper --redis "127.0.0.1:$REDIS_PORT"
refused "--port at the end (a missing value)" "--port wants a value" --lock v8 --port
refused "--lock-redis with v8" "--lock-redis does nothing with --lock v8" --lock v8 --lock-redis "$M3"
refused "--lock-redis with atomic" "--lock-redis does nothing with --lock atomic" \
    --lock atomic --lock-redis "$M3"
refused "v10 without --lock-redis" "wants its lock masters: --lock-redis" --lock v10
refused "v10 with 2 lock masters" "2f + 1" --lock v10 --lock-redis 127.0.0.1:1,127.0.0.1:2
refused "v10 with 4 lock masters" "gives 4 lock masters: a grant needs 3, so 1 may fail, as with 3" \
    --lock v10 --lock-redis "$M3,127.0.0.1:4"
refused "--zk-session-ms without --zookeeper" "--zk-session-ms goes with --zookeeper" \
    --lock v8 --zk-session-ms 4000
for v in v8 v10 v1 none; do
    refused "--zookeeper with $v" "--zookeeper serves --lock v11 and --lock atomic only, not $v" \
        --lock "$v" --zookeeper "$Z"
done
refused "v11 without --zookeeper" "v11 keeps its lock and the stock in ZooKeeper" --lock v11
refused "--combine with atomic" "--combine does nothing with --lock atomic" --lock atomic --combine 8
refused "--workers with atomic" "--workers does nothing with --lock atomic" --lock atomic --workers 2
refused "--workers without --combine" "--workers does nothing without --combine N (N > 1)" \
    --lock v8 --workers 2
refused "--workers with --combine 1" "--workers does nothing without --combine" \
    --lock v8 --combine 1 --workers 2
refused "--retry-ms with atomic" "--retry-ms does nothing with --lock atomic" --lock atomic --retry-ms 5
refused "--retry-ms with v1" "--retry-ms spaces the tries of a lock in Redis" --lock v1 --retry-ms 5
refused "--retry-ms with v11" "--retry-ms spaces the tries" --lock v11 --zookeeper "$Z" --retry-ms 5
refused "--wait notify with v1" "v1 waits only by local" --lock v1 --wait notify
refused "--wait poll with v11" "v11 waits only by local" --lock v11 --zookeeper "$Z" --wait poll
refused "--wait poll with atomic" "no --wait" --lock atomic --wait poll
for f in "--replicas 1" "--redis-password-file /dev/null" "--idempotency-ttl 60" "--no-events" \
         "--max-streams 4"; do
    refused "$f with --zookeeper" "${f%% *} " --lock v11 --zookeeper "$Z" $f
done
refused "--sentinel-master without --sentinel" "--sentinel-master goes with --sentinel" \
    --sentinel-master shop
refused "--sentinel without --sentinel-master" "--sentinel wants --sentinel-master NAME" \
    --sentinel "$M3"
refused "--sentinel-password-file without --sentinel" "--sentinel-password-file goes with --sentinel" \
    --redis "127.0.0.1:$REDIS_PORT" --sentinel-password-file /dev/null
refused "--item while serving" "--item goes with --set-stock or --get-stock" --item inventory001
refused "--items while serving" "--items goes with --set-stock or --get-stock" --items 3
refused "--item and --items" "--item or --items, not both" --get-stock --item a --items 3
refused "--redis and --zookeeper" "give one of --redis" --redis "127.0.0.1:$REDIS_PORT" --zookeeper "$Z"
# What does apply is not refused: redlock on one master (N = 1 = 2f + 1), combined, with
# its workers and a WAIT for no replica.
start_service V --redis "127.0.0.1:$REDIS_PORT" --lock v10 --lock-redis "127.0.0.1:$REDIS_PORT" \
    --combine 4 --workers 2 --replicas 0 --retry-ms 5 --name svc-v10 || exit 1
check_answer "v10 --lock-redis (one master) --combine 4 --workers 2 --replicas 0: serves" 200 \
    GET "http://127.0.0.1:$V/health" '"ok":true'
kill "$SVC_PID"

# A v11 instance whose ensemble is not there says what it tried and what to start, and
# stops at once on SIGTERM while it waits (not at the end of the session timeout).
zp=$(free_port)
"$BIN" --lock v11 --zookeeper "127.0.0.1:$zp" --port "$(free_port)" > "$T_TMP/zkwait" 2>&1 &
zpid=$!
T_PIDS="$T_PIDS $zpid"
sleep 1
kill -TERM "$zpid"
t0=$(date +%s%N)
for _ in $(seq 40); do kill -0 "$zpid" 2>/dev/null || break; sleep 0.05; done
gone_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
check "v11 without its ensemble: SIGTERM during the wait stops it within 2 s ($gone_ms ms)" \
    sh -c "! kill -0 $zpid 2>/dev/null"
wait "$zpid"
check_eq "  exit 0: it stopped as asked" 0 $?
check "  it said it was waiting for 127.0.0.1:$zp" grep -q "waiting .*for a session" "$T_TMP/zkwait"
check "  its reason names the address it tried" grep -q "tried 127.0.0.1:$zp" "$T_TMP/zkwait"
check "  and what to start: deploy/up --zookeeper" grep -qF "deploy/up --zookeeper" "$T_TMP/zkwait"
check "  and that it stopped on SIGTERM" grep -q "stopped on SIGTERM" "$T_TMP/zkwait"

# --- the API, lock v8 (alias watchdog), faults off ----------------------------
start_service P --redis "127.0.0.1:$REDIS_PORT" --lock watchdog --name svc-a --wait-ms 300 || exit 1
U="http://127.0.0.1:$P"

check_answer "GET /health with Redis up: 200" 200 GET "$U/health" '"ok":true'
check_answer "GET /inventory: 200 with item, stock, sold" 200 GET "$U/inventory" \
    '"item":"inventory001"' '"stock":3' '"sold":0'
check_answer "GET /inventory/sale: 200 with every field" 200 GET "$U/inventory/sale" \
    '"ok":true' '"item":"inventory001"' '"remaining":2' '"instance":"svc-a"' '"lock":"v8"'
check "  answered as JSON" grep -qi '^content-type: application/json' "$HDRS"
check_answer "POST /inventory/sale sells too" 200 POST "$U/inventory/sale" '"remaining":1'
check_answer "the last one" 200 GET "$U/inventory/sale?item=inventory001" '"remaining":0'
check_answer "sold out: 409" 409 GET "$U/inventory/sale" '"ok":false' '"error":"sold_out"' '"remaining":0'
check_eq "sold out changed nothing: stock" 0 "$(item_get stock inventory001)"
check_eq "sold counts the three sales" 3 "$(item_get sold inventory001)"
check_eq "the ledger has one entry per sale" 3 "$(rcli xlen "$(item_key orders inventory001)")"
check "a ledger entry names the instance and what remained" \
    sh -c "redis-cli -p $REDIS_PORT xrange '$(item_key orders inventory001)' - + | grep -qx svc-a"
check_answer "GET /inventory after: stock 0, sold 3" 200 GET "$U/inventory" '"stock":0' '"sold":3'

# Bad input: 400 with a message, and nothing sold.
item_set other 5 >/dev/null
long=$(printf 'x%.0s' $(seq 65))
for q in "item=" "item=$long" "item=a%20b" "item=a/b" "item=%C3%A9" "bogus=1"; do
    check_answer "bad request '${q:0:20}': 400 with a message" 400 GET "$U/inventory/sale?$q" \
        '"error":"bad_request"' '"message":'
done
check_answer "an item of 64 characters is fine (unknown: 404)" 404 GET \
    "$U/inventory/sale?item=$(printf 'y%.0s' $(seq 64))" '"error":"unknown_item"'
check_answer "GET /inventory with a bad item: 400" 400 GET "$U/inventory?item=" '"error":"bad_request"'
check_answer "GET /inventory takes no fault: 400" 400 GET "$U/inventory?work_ms=5" '"error":"bad_request"'
for q in "work_ms=5" "release_gap_ms=5" "nested=1"; do
    check_answer "fault $q without --faults: 403" 403 GET "$U/inventory/sale?item=other&$q" '"ok":false'
done
check_eq "nothing was sold by the refused requests" 5 "$(item_get stock other)"

# Unknown path, wrong method.
check_answer "unknown path: 404 JSON" 404 GET "$U/nope" '"error":"not_found"'
check_answer "DELETE /inventory/sale: 405" 405 DELETE "$U/inventory/sale" '"error":"method_not_allowed"'
check "  with Allow: GET, POST" grep -qi '^allow: GET, POST' "$HDRS"
check_answer "POST /inventory: 405" 405 POST "$U/inventory" '"error":"method_not_allowed"'
check_answer "PUT /health: 405" 405 PUT "$U/health" '"ok":false'

# Missing or broken stock: a clear answer, never a crash, never a negative stock.
check_answer "no stock key: 404 unknown_item with a message" 404 GET "$U/inventory/sale?item=ghost" \
    '"error":"unknown_item"' "$(item_key stock ghost)"
check_eq "  and no stock key was made up" 0 "$(rcli exists "$(item_key stock ghost)")"
item_set junk 'twelve' >/dev/null
check_answer "a stock that is not an integer: 500 bad_stock" 500 GET "$U/inventory/sale?item=junk" \
    '"error":"bad_stock"' '"message":'
check_eq "  left as it was" twelve "$(item_get stock junk)"
check_answer "GET /inventory of a broken stock: 500 bad_stock" 500 GET "$U/inventory?item=junk" '"error":"bad_stock"'
item_set neg -2 >/dev/null
check_answer "a negative stock is sold out: 409" 409 GET "$U/inventory/sale?item=neg" '"error":"sold_out"'
check_eq "  and does not go lower" -2 "$(item_get stock neg)"
rcli hset "$(item_key stock wrongtype)" a 1 >/dev/null
check_answer "a stock key of the wrong type: 500, not a crash" 500 GET "$U/inventory/sale?item=wrongtype" '"ok":false'

# The lock is held by someone else: 503 lock_timeout with Retry-After, within the wait limit.
item_set held 5 >/dev/null
rcli hset "$(item_key lock held)" 'someone-else:1' 1 >/dev/null
t0=$(date +%s%N)
check_answer "lock held elsewhere: 503 lock_timeout" 503 GET "$U/inventory/sale?item=held" \
    '"ok":false' '"error":"lock_timeout"'
t1=$(date +%s%N)
check "  with Retry-After" grep -qi '^retry-after: ' "$HDRS"
check "  after about the wait limit (300 ms), not forever" test $(( (t1 - t0) / 1000000 )) -lt 5000
check_eq "  and nothing sold" 5 "$(item_get stock held)"
check_eq "  the other's lock left alone" 1 "$(rcli hget "$(item_key lock held)" 'someone-else:1')"
rcli del "$(item_key lock held)" >/dev/null
check_answer "once it is free, the sale goes through" 200 GET "$U/inventory/sale?item=held" '"remaining":4'

# Keep-alive: two requests, one connection.
curl -s -v -o /dev/null -o /dev/null "$U/health" "$U/health" 2> "$T_TMP/keepalive"
check "two requests reuse one connection (keep-alive)" grep -qi 're-using existing connection' "$T_TMP/keepalive"

# Metrics: Prometheus text with the families the API names.
check_answer "GET /metrics: 200" 200 GET "$U/metrics" 'inventory_sales_total{result="ok"} 4'
for m in 'inventory_sales_total{result="sold_out"} ' 'inventory_sales_total{result="lock_timeout"} 1' \
         'inventory_sales_in_flight 0' '# TYPE inventory_lock_wait_seconds histogram' \
         'inventory_lock_wait_seconds_bucket{le="+Inf"}' 'inventory_lock_acquisitions_total ' \
         'inventory_lock_timeouts_total 1' 'inventory_lock_renewals_total ' \
         'inventory_lock_lost_leases_total '; do
    check "metrics has $m" body_has "$m"
done
check "  as text/plain" grep -qi '^content-type: text/plain' "$HDRS"

# --- Redis down, then back: 503 redis_unavailable, the process stays up, no restart ----
rcli shutdown nosave >/dev/null 2>&1
for _ in $(seq 50); do kill -0 "$REDIS_PID" 2>/dev/null || break; sleep 0.1; done
check_answer "Redis down: sale 503 redis_unavailable" 503 GET "$U/inventory/sale?item=other" \
    '"error":"redis_unavailable"'
check_answer "Redis down: /health 503" 503 GET "$U/health" '"ok":false'
check_answer "Redis down: /inventory 503" 503 GET "$U/inventory" '"error":"redis_unavailable"'
check "the service is still running" kill -0 "$SVC_PID"
check "it logged the outage once, as one line" grep -q 'unreachable' "$T_TMP/svc-$P.log"
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    --dir "$T_TMP/redis-$REDIS_PORT" >"$T_TMP/redis2.log" 2>&1 &
REDIS_PID=$!
T_PIDS="$T_PIDS $REDIS_PID"
for _ in $(seq 100); do rcli ping >/dev/null 2>&1 && break; sleep 0.05; done
item_set inventory001 2 >/dev/null
check_answer "Redis back: /health 200 without a restart" 200 GET "$U/health" '"ok":true'
check_answer "Redis back: the sale works (scripts reloaded after NOSCRIPT)" 200 GET \
    "$U/inventory/sale" '"remaining":1'
check "it logged the recovery" grep -q 'reachable again' "$T_TMP/svc-$P.log"

# --- the teaching faults, with --faults --------------------------------------------
start_service F --redis "127.0.0.1:$REDIS_PORT" --lock v6 --faults --wait-ms 400 --name svc-f || exit 1
item_set f 10 >/dev/null
for q in "work_ms=-1" "work_ms=abc" "work_ms=99999999999999999999" "work_ms=60001" "nested=2" \
         "release_gap_ms=1.5"; do
    check_answer "fault $q out of range: 400" 400 GET "http://127.0.0.1:$F/inventory/sale?item=f&$q" \
        '"error":"bad_request"'
done
t0=$(date +%s%N)
check_answer "work_ms=300 sells, slowly" 200 GET "http://127.0.0.1:$F/inventory/sale?item=f&work_ms=300" '"remaining":9'
check "  it took at least 300 ms" test $(( ($(date +%s%N) - t0) / 1000000 )) -ge 300
check_answer "release_gap_ms=50 sells" 200 GET "http://127.0.0.1:$F/inventory/sale?item=f&release_gap_ms=50" '"remaining":8'
check_answer "v6 nested=1 (flaw): waits on itself, 503 lock_timeout" 503 GET \
    "http://127.0.0.1:$F/inventory/sale?item=f&nested=1" '"error":"lock_timeout"'
check_eq "  nothing sold" 8 "$(item_get stock f)"
check_eq "  and its lock was given back" 0 "$(rcli exists "$(item_key lock f)")"
o=$(item_get overlaps f)
check_eq "the probe saw no overlap" 0 "${o:-0}"
check_eq "the probe is empty: every sale that entered left" 0 "$(rcli scard "$(item_key probe f)")"

start_service R --redis "127.0.0.1:$REDIS_PORT" --lock v7 --faults --wait-ms 400 --name svc-r || exit 1
check_answer "v7 nested=1: reentrant, sells" 200 GET "http://127.0.0.1:$R/inventory/sale?item=f&nested=1" '"remaining":7'
check_eq "  and the lock is gone after both releases" 0 "$(rcli exists "$(item_key lock f)")"

start_service W --redis "127.0.0.1:$REDIS_PORT" --lock v8 --faults --ttl-ms 300 --name svc-w || exit 1
check_answer "v8 work_ms=1000 on a 300 ms lease: the watchdog holds it" 200 GET \
    "http://127.0.0.1:$W/inventory/sale?item=f&work_ms=1000" '"remaining":6'
check "  no lease was lost" sh -c "! grep -q lease_lost '$BODY'"
curl -s "http://127.0.0.1:$W/metrics" > "$BODY"
check "  the watchdog renewed it (metrics)" \
    sh -c "awk '\$1==\"inventory_lock_renewals_total\" && \$2 >= 2 {f=1} END {exit !f}' '$BODY'"

start_service A --redis "127.0.0.1:$REDIS_PORT" --lock atomic --faults --name svc-atomic || exit 1
check_answer "atomic: sells by one script" 200 GET "http://127.0.0.1:$A/inventory/sale?item=f" '"lock":"atomic"' '"remaining":5'
check_answer "atomic: no lock to fault: 400" 400 GET "http://127.0.0.1:$A/inventory/sale?item=f&work_ms=5" '"error":"bad_request"'
check_eq "sold + stock is still the start (10) after every answer above" 10 \
    "$(( $(item_get sold f) + $(item_get stock f) ))"
check_eq "one ledger entry per 200" "$(item_get sold f)" "$(rcli xlen "$(item_key orders f)")"

# A clean stop on SIGTERM.
kill "$SVC_PID"
for _ in $(seq 50); do kill -0 "$SVC_PID" 2>/dev/null || break; sleep 0.1; done
check "SIGTERM stops the service" sh -c "! kill -0 $SVC_PID 2>/dev/null"
check "  and it logged the stop" grep -q 'stopping on SIGTERM' "$T_TMP/svc-$A.log"
t_report
