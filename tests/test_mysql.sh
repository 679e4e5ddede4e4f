#!/usr/bin/env bash
# test_mysql.sh - the stock in a database (--mysql, MariaDB) through real HTTP and a real
# mariadbd (start_mariadb): the flags and their refusals; --set-stock and --get-stock; the
# store's tables made at start; the atomic sale (the items row, one orders row per sale),
# sold out, an unknown item, an Idempotency-Key; the database down at start (503, then it
# sells once it is up), a wrong password, a user without CREATE; mariadbd killed -9 under
# sales and started again (every acknowledged sale in orders); a sale under each of v12 to
# v15, and v14's fence refusing a write whose lease was taken (409 lease_lost).
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

SVC=build/inventory-service
t_start=$SECONDS

if ! command -v mariadbd >/dev/null || ! command -v mariadb-install-db >/dev/null; then
    skip "the database suite" "mariadbd or mariadb-install-db is missing (make deps)"
    t_report
    exit
fi

# --- the flags, refused before anything starts ------------------------------------------
# db_refused NAME REASON ARG...: the service exits 2 with REASON in its one line.
db_refused() {
    local name=$1 reason=$2 out rc=0; shift 2
    out=$("$SVC" "$@" 2>&1 >/dev/null) || rc=$?
    check_eq "$name: exit 2" 2 "$rc"
    check "  says why: $reason" grep -qF -- "$reason" <<<"$out"
}
db_refused "--lock v12 without --mysql" \
    "--lock v12 keeps its lock and the stock in the database: give --mysql HOST:PORT" --lock v12
db_refused "--mysql with --lock v8" \
    "--mysql serves --lock v12 to v15 and --lock atomic only, not v8" --mysql 127.0.0.1:1 --lock v8
db_refused "--mysql with --replicas" "--replicas does nothing with --mysql" \
    --mysql 127.0.0.1:1 --lock atomic --replicas 1
db_refused "--mysql with --redis-password-file" "--redis-password-file does nothing with --mysql" \
    --mysql 127.0.0.1:1 --lock v14 --redis-password-file /dev/null
db_refused "--mysql with --zookeeper" \
    "give one of --redis, --sentinel, --redis-cluster, --zookeeper and --mysql" \
    --mysql 127.0.0.1:1 --zookeeper 127.0.0.1:2 --lock atomic
db_refused "--mysql-db without --mysql" "--mysql-db goes with --mysql" --mysql-db x --lock v8
db_refused "a password on the command line: no such flag" \
    "unknown option '--mysql-password' (see --help; a password is read from a file or the" \
    --mysql 127.0.0.1:1 --mysql-password=s3cret
check "  nor a prefix of --mysql-password-file, and the password never shown" bash -c \
    'out=$("$1" --mysql 127.0.0.1:1 --mysql-password s3cret 2>&1)
     [ $? = 2 ] && ! grep -q s3cret <<<"$out" || exit 1
     out=$("$1" --mysql 127.0.0.1:1 --mysql-password=s3cret 2>&1)
     ! grep -q s3cret <<<"$out"' _ "$SVC"
check "--help lists --mysql, --mysql-db, --mysql-user, --mysql-password-file, --mysql-pool" \
    bash -c 'h=$("$1" --help) || exit 1
             for f in mysql mysql-db mysql-user mysql-password-file mysql-pool; do
                 grep -qE "^  --$f( |$)" <<<"$h" || exit 1
             done' _ "$SVC"
check "  each line within 100 columns" bash -c '! "$1" --help | grep -q ".\{101\}"' _ "$SVC"

# --- the server ------------------------------------------------------------------------
t0=$SECONDS
start_mariadb || { t_report; exit 1; }
check "a private mariadbd answers (made and started in $((SECONDS - t0)) s)" mdb "SELECT 1"
DB=127.0.0.1:$MARIADB_PORT
M=(--mysql "$DB" --mysql-password-file "$MARIADB_PASSWORD_FILE")
admin() { "$SVC" "${M[@]}" "$@" 2>/dev/null; }
items() { mdb "SELECT stock, sold FROM inventory.items WHERE item = '$1'" | tr '\t' ' '; }
orders() { mdb "SELECT COUNT(*) FROM inventory.orders WHERE item = '$1' $2"; }
svc_stop() { kill "$SVC_PID"; wait "$SVC_PID" 2>/dev/null; }

check "--set-stock 5 with --mysql" admin --set-stock 5 --item a
tables() { mdb "SHOW TABLES FROM $1" | sort | paste -sd' ' -; }
check_eq "the store's tables are made: items, orders, idem_keys, probes" \
    "idem_keys items orders probes" "$(tables inventory)"
check_eq "--get-stock: stock 5, sold 0, ledger 0" "a 5 0 0" "$(admin --get-stock --item a)"
check_eq "  the items row: 5 0" "5 0" "$(items a)"
check_eq "--get-stock of an item with no row: exit 1" 1 "$(admin --get-stock --item none; echo $?)"
check_eq "the user and password from MYSQL_USER and MYSQL_PASSWORD instead" "a 5 0 0" \
    "$(MYSQL_USER=inventory MYSQL_PASSWORD=$(head -n 1 "$MARIADB_PASSWORD_FILE") \
       "$SVC" --mysql "$DB" --get-stock --item a 2>/dev/null)"

# --- the atomic sale -------------------------------------------------------------------
start_service A "${M[@]}" --lock atomic --name dbatomic || { t_report; exit 1; }
check_eq "a sale (--lock atomic --mysql): 200" 200 "$(sale "$A" a '' -H 'X-Request-Id: req-one')"
check "  remaining 4, lock atomic" \
    jq -e '.ok and .remaining == 4 and .lock == "atomic"' "$T_TMP/body"
check_eq "  the items row: stock 4, sold 1" "4 1" "$(items a)"
check_eq "  one orders row, with the request id, status 200, remaining 4, its instance" \
    "1 req-one 200 4 dbatomic" \
    "$(mdb "SELECT COUNT(*), MAX(request_id), MAX(status), MAX(remaining), MAX(instance)
            FROM inventory.orders WHERE item = 'a'" | tr '\t' ' ')"
for _ in 1 2 3 4; do sale "$A" a >/dev/null; done
check_eq "the stock sold out: 409" 409 "$(sale "$A" a)"
check "  sold_out, remaining 0" jq -e '.error == "sold_out" and .remaining == 0' "$T_TMP/body"
check_eq "  no row for it: stock 0, sold 5, five rows" "0 5 5" "$(items a) $(orders a '')"
check_eq "an unknown item: 404" 404 "$(sale "$A" nosuch)"
check "  unknown_item, the table named" \
    jq -e '.error == "unknown_item" and (.message | test("items"))' "$T_TMP/body"
check_eq "GET /inventory: the row" '{"item":"a","stock":0,"sold":5}' \
    "$(curl -s "http://127.0.0.1:$A/inventory?item=a")"

admin --set-stock 3 --item k
db_keyed() { sale "$A" "$2" '' -H "Idempotency-Key: $1"; }
check_eq "a sale with an Idempotency-Key: 200" 200 "$(db_keyed key-1 k)"
first=$(jq -c '{remaining, instance}' "$T_TMP/body")
check_eq "  the same key again: 200" 200 "$(db_keyed key-1 k)"
check_eq "  the same answer, replayed" "$first true" \
    "$(jq -c '{remaining, instance}' "$T_TMP/body") $(jq .replayed "$T_TMP/body")"
check_eq "  sold once: stock 2, sold 1, one orders row named by the key" "2 1 1" \
    "$(items k) $(orders k "AND id = 'kkey-1'")"
check_eq "  the same key for another item: 422 (as the Redis store answers)" 422 \
    "$(db_keyed key-1 a)"
check "  idempotency_key_reused, the first item named" \
    jq -e '.error == "idempotency_key_reused" and (.message | test("item k"))' "$T_TMP/body"
check_eq "  the key bound in idem_keys to its first item" k \
    "$(mdb "SELECT item FROM inventory.idem_keys WHERE k = 'key-1'")"
check "/metrics: the database's counters and gauges" bash -c \
    'm=$(curl -s "http://127.0.0.1:$1/metrics") &&
     grep -q "^inventory_db_statements_total [1-9]" <<<"$m" &&
     grep -q "^inventory_db_pool_connections{state=\"idle\"} " <<<"$m" &&
     grep -q "^# TYPE inventory_db_statement_failures_total counter" <<<"$m"' _ "$A"

# --- the database down at start: the instance serves 503 until it is up -------------------
# mariadbd stopped at once (kill -9); an instance started on it (a database not made yet,
# dbdown) answers, its sales 503 store_unavailable with Retry-After; mariadbd started again,
# it sells without a restart, the database and its tables made on the first connection.
mariadb_down() {
    local p rest=""
    kill -9 "$MARIADB_PID" 2>/dev/null
    wait "$MARIADB_PID" 2>/dev/null
    for p in $T_PIDS; do [ "$p" = "$MARIADB_PID" ] || rest="$rest $p"; done
    T_PIDS=$rest
}
mariadb_down
start_service D "${M[@]}" --mysql-db dbdown --lock atomic --name dbdown || { t_report; exit 1; }
check "the database down at start: the instance starts and says so in one line" \
    grep -qE "WARN dbdown mysql $DB/dbdown as inventory unreachable: .*; sales answer 503 \
store_unavailable until it answers" "$T_TMP/svc-$D.log"
check_eq "  a sale: 503" 503 "$(sale "$D" a '' -D "$T_TMP/down.h")"
check "  store_unavailable, with Retry-After" bash -c \
    'jq -e ".error == \"store_unavailable\"" "$1" && grep -qi "^Retry-After: 1" "$2"' _ \
    "$T_TMP/body" "$T_TMP/down.h"
check_eq "  /health: 503" 503 \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$D/health")"
mariadb_run || { echo "mariadbd did not start again" >&2; t_report; exit 1; }
mdb "GRANT ALL ON dbdown.* TO 'inventory'@'127.0.0.1'"   # (CREATE alone on any other)
check_eq "  mariadbd up again: the same instance answers (404: no row yet)" 404 "$(sale "$D" a)"
check "  and said it answers again" grep -q "INFO dbdown mysql .* answers again" "$T_TMP/svc-$D.log"
check_eq "  it made the database and its tables" "idem_keys items orders probes" "$(tables dbdown)"
admin --mysql-db dbdown --set-stock 2 --item a
check_eq "  it sells (200), one sale written" "200 1 1" \
    "$(sale "$D" a) $(mdb "SELECT stock, sold FROM dbdown.items" | tr '\t' ' ')"
svc_stop

# --- a wrong password, a right missing ------------------------------------------------------
echo wrong-password > "$T_TMP/wrong"
chmod 600 "$T_TMP/wrong"
rc=0
out=$("$SVC" --port "$(free_port)" --mysql "$DB" --mysql-password-file "$T_TMP/wrong" \
      --lock atomic 2>&1) || rc=$?
check_eq "a wrong password at start (the database up): exit 1" 1 "$rc"
check "  one clear line: access denied, the user named" \
    grep -q "Access denied for user 'inventory'@'127.0.0.1'" <<<"$out"
check "  what was tried, what to check" \
    grep -q "tried --mysql $DB, database inventory, user inventory: check the user, its password" \
    <<<"$out"
check "  the password never in it" bash -c '! grep -q wrong-password <<<"$1"' _ "$out"
check_eq "  nothing written" "2 1" "$(items k)"

# A running instance whose password stops working: its connections killed, a new one is
# refused: 503 and one line, nothing written; the password back, it sells again.
pw=$(head -n 1 "$MARIADB_PASSWORD_FILE")
start_service W "${M[@]}" --lock atomic --name dbauth || { t_report; exit 1; }
check_eq "an instance selling: 200" 200 "$(sale "$W" k)"
mdb_stdin <<<"ALTER USER 'inventory'@'127.0.0.1' IDENTIFIED BY 'changed-elsewhere';"
for id in $(mdb "SELECT id FROM information_schema.PROCESSLIST WHERE user = 'inventory'"); do
    mdb "KILL $id" 2>/dev/null
done
sleep 1.1   # an idle connection is pinged before its next use after 1 s
check_eq "  its password changed: 503" 503 "$(sale "$W" k)"
check "  store_unavailable, the refusal said" \
    jq -e '.error == "store_unavailable" and (.message | test("Access denied"))' "$T_TMP/body"
check "  one line: the database refuses the store (auth)" \
    grep -q "WARN dbauth mysql .* refuses the store (auth): .*Access denied" "$T_TMP/svc-$W.log"
check_eq "  nothing written" "1 2" "$(items k)"
mdb_stdin <<<"ALTER USER 'inventory'@'127.0.0.1' IDENTIFIED BY '$pw';"
check_eq "  the password back: it sells again" 200 "$(sale "$W" k)"
svc_stop

# A user with SELECT, INSERT, UPDATE and DELETE on a fresh database, and no CREATE.
new_secret "$T_TMP/limited"
mdb_stdin <<SQL
CREATE DATABASE fresh;
CREATE USER 'limited'@'127.0.0.1' IDENTIFIED BY '$(head -n 1 "$T_TMP/limited")';
GRANT SELECT, INSERT, UPDATE, DELETE ON fresh.* TO 'limited'@'127.0.0.1';
SQL
rc=0; out=$("$SVC" --port "$(free_port)" --mysql "$DB" --mysql-db fresh --mysql-user limited \
            --mysql-password-file "$T_TMP/limited" --lock atomic 2>&1) || rc=$?
check_eq "a user without CREATE on a fresh database: exit 1" 1 "$rc"
check "  the right named: CREATE TABLE items, CREATE command denied" \
    grep -q "CREATE TABLE items: .*CREATE command denied to user 'limited'@'127.0.0.1'" <<<"$out"
check "  and what the user needs" \
    grep -q "the user needs CREATE, once, to make the tables" <<<"$out"

# --- mariadbd killed -9 under sales, started again on its data ------------------------------
# Three clients sell one after another (their request ids kill-C-N) while mariadbd is
# killed and started again: the instance sells again without a restart, and every sale
# it acknowledged (200) is in orders (innodb_flush_log_at_trx_commit=1); the books add up.
# kill_under_sales LOCK ITEM
kill_under_sales() {
    local lock=$1 item=$2 acked codes missing t0
    admin --set-stock 100000 --item "$item"
    start_service K "${M[@]}" --lock "$lock" --ttl-ms 1000 --name "dbkill-$lock" || return 1
    rm -f "$T_TMP/stop" "$T_TMP"/kill-?
    client() {
        local i=0
        while [ ! -e "$T_TMP/stop" ]; do
            i=$((i + 1))
            echo "$(curl -s -m 10 -o /dev/null -w '%{http_code}' -H "X-Request-Id: kill-$1-$i" \
                    "http://127.0.0.1:$K/inventory/sale?item=$item") kill-$1-$i"
        done > "$T_TMP/kill-$1"
    }
    client 1 & client 2 & client 3 &
    sleep 0.5
    t0=$SECONDS
    restart_mariadb || return 1
    sleep 0.5
    touch "$T_TMP/stop"
    wait_all
    acked=$(cat "$T_TMP"/kill-? | awk '$1 == 200 { print $2 }' | sort)
    codes=$(cat "$T_TMP"/kill-? | awk '{ print $1 }' | sort | uniq -c |
            awk '{ printf "%s %s x %s", sep, $2, $1; sep = "," }')
    echo "  (--lock $lock: mariadbd killed and up again in $((SECONDS - t0)) s; answered:$codes;" \
         "lost answers settled sold $(metric "$K" 'inventory_db_settled_total{outcome="sold"}')," \
         "not sold $(metric "$K" 'inventory_db_settled_total{outcome="not_sold"}')," \
         "unknown $(metric "$K" 'inventory_db_settled_total{outcome="unknown"}'))"
    check_eq "--lock $lock, mariadbd killed -9 under sales and started again: it sells (200)" \
        200 "$(sale "$K" "$item" '' -m 15)"
    missing=$(comm -23 <(echo "$acked") \
              <(mdb "SELECT request_id FROM inventory.orders WHERE item = '$item'" | sort))
    check_eq "  every acknowledged sale ($(echo "$acked" | wc -l)) has its orders row" "" "$missing"
    check_eq "  the books add up: stock + sold = 100000, one row per unit sold" "100000 0" \
        "$(mdb "SELECT i.stock + i.sold, i.sold - (SELECT COUNT(*) FROM inventory.orders o
                WHERE o.item = '$item' AND o.status = 200) FROM inventory.items i
                WHERE i.item = '$item'" | tr '\t' ' ')"
    check "  only 200 and 503 answered" \
        bash -c '! cat "$1"/kill-? | awk "\$1 != 200 && \$1 != 503" | grep -q .' _ "$T_TMP"
    svc_stop
}
kill_under_sales atomic kk
kill_under_sales v14 kf
kill_under_sales v15 kr

# --- the database's lock versions: a sale under each, the books ------------------------------
for v in v12 v13 v14 v15; do
    admin --set-stock 2 --item "l$v"
    if ! start_service L "${M[@]}" --lock "$v" --ttl-ms 2000 --faults --name "db$v"; then
        check "--lock $v --mysql starts" false
        continue
    fi
    c1=$(sale "$L" "l$v"); r1=$(jq -c '[.remaining, .lock]' "$T_TMP/body")
    c2=$(sale "$L" "l$v" work_ms=10)   # the probe in and out (--faults)
    c3=$(sale "$L" "l$v")              # sold out: no write, the probe out alone
    check_eq "--lock $v --mysql: two sales 200 (remaining 1, lock $v), then sold out 409" \
        "200 200 409 [1,\"$v\"]" "$c1 $c2 $c3 $r1"
    check_eq "  the books add up: stock 0, sold 2, two orders rows" "0 2 2" \
        "$(items "l$v") $(orders "l$v" '')"
    svc_stop
done
check_eq "  each version's table made by its init: leases, locks, row_locks" \
    "leases locks row_locks" "$(tables inventory | tr ' ' '\n' | grep -xE 'locks|leases|row_locks' |
                                 paste -sd' ' -)"
check_eq "  the probe (--faults): a row per item, no overlap, nobody left inside" "4 0 0" \
    "$(mdb "SELECT COUNT(*), SUM(overlaps), SUM(id <> '') FROM inventory.probes
            WHERE item LIKE 'lv1_'" | tr '\t' ' ')"

# --- v14's fence: a lease taken while the holder paused is refused where it writes ---
# The holder passes its lease check and pauses (write_gap_ms: after the check, before the
# write); meanwhile its row in leases is taken by another owner (by hand, as an instance
# whose clock saw the lease end would). Its transaction's fence finds the row naming the
# other: rolled back, 409 lease_lost, nothing written. (The watchdog renews each ttl/3,
# 3.3 s: not within the pause.)
admin --set-stock 5 --item fx
start_service F "${M[@]}" --lock v14 --ttl-ms 10000 --faults --name dbfence ||
    { t_report; exit 1; }
SALE_BODY=$T_TMP/fenced.body sale "$F" fx write_gap_ms=1500 > "$T_TMP/fenced.code" &
held() { [ "$(mdb "SELECT owner <> '' FROM inventory.leases WHERE name = 'fx'")" = 1 ]; }
check "a v14 sale holds its lease and pauses before its write" wait_until 3 "" held
mdb "UPDATE inventory.leases SET owner = 'someone-else:1', token = token + 1 WHERE name = 'fx'"
wait_all
check_eq "  its lease taken meanwhile: 409" 409 "$(cat "$T_TMP/fenced.code")"
check "  lease_lost: the database refused the write" \
    jq -e '.error == "lease_lost" and (.message | test("the lock.s row names another holder"))' \
    "$T_TMP/fenced.body"
check_eq "  nothing written: stock 5, sold 0, no orders row" "5 0 0" "$(items fx) $(orders fx '')"
check_eq "  the other owner's row left as it was" someone-else:1 \
    "$(mdb "SELECT owner FROM inventory.leases WHERE name = 'fx'")"
check "  counted in /metrics" bash -c \
    'curl -s "http://127.0.0.1:$1/metrics" |
     grep -q "^inventory_sales_total{result=\"lease_lost\"} 1"' _ "$F"
mdb "UPDATE inventory.leases SET owner = '', lock_until = 0 WHERE name = 'fx'"
check_eq "  the row free again: the next sale 200" 200 "$(sale "$F" fx)"
svc_stop

echo "  (the suite took $((SECONDS - t_start)) s)"
t_report
