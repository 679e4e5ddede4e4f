#!/usr/bin/env bash
# test_deploy_mysql.sh - deploy/up --mysql on free loopback ports: its own mariadbd in the
# run directory, the instances' user and its password (a file of mode 600, in no argv),
# sales through nginx with --lock atomic and v14, the data kept across a second up, the
# flush setting, a crash and restart of the server (deploy/lib.sh's mysql_kill9 and
# mysql_restart), deploy/status, deploy/down stopping exactly its mariadbd (another one
# left alone), --mysqls on a server running elsewhere, and loadtest/run --mysql with
# v14 and atomic: nothing oversold, the books adding up. Skipped, saying why, without
# MariaDB.
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
. deploy/up-mysql.sh   # mysql_check

RUN=$T_TMP/run RUN2=$T_TMP/run2
trap 'deploy/down --run-dir "$RUN" --quiet >/dev/null 2>&1; deploy/down --run-dir "$RUN2" --quiet >/dev/null 2>&1; t_cleanup' EXIT

if ! why=$(mysql_check); then
    skip "the MariaDB deploy suite" "$why"
    t_report
    exit
fi

NG=$(free_port); A=$(free_port); B=$(free_port)
# mdb_up ARG...: deploy/up --mysql in RUN on this test's ports, ARGs added; its stderr in
# T_TMP/up.err (shown on failure).
mdb_up() {
    deploy/up --mysql --run-dir "$RUN" --port "$NG" --instance-ports "$A,$B" "$@" 2> "$T_TMP/up.err" ||
        { sed 's/^/    /' "$T_TMP/up.err"; return 1; }
}
# run_pids [DIR]: every pid the stack in DIR (default RUN) recorded, and nginx's workers.
run_pids() {
    local f master dir=${1:-$RUN}
    for f in "$dir"/*.pid; do [ -f "$f" ] && head -n 1 "$f"; done
    master=$(head -n 1 "$dir/nginx.pid" 2>/dev/null) && ps -o pid= --ppid "$master" 2>/dev/null
    true
}
# argv_of PID...: each process's command line, a line each.
argv_of() { local p; for p in "$@"; do tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null; echo; done; }
# nginx_sale ITEM: one sale through nginx; prints its status, the body in T_TMP/body.
nginx_sale() { sale "$NG" "$1"; }
# our_mariadbd DIR: pids of live mariadbd processes started from DIR's configuration.
our_mariadbd() {
    local p
    for p in $(pgrep -x mariadbd); do
        running "$p" && argv_of "$p" | grep -qF -- "--defaults-file=$1/mysql/my.cnf " && echo "$p"
    done
    true
}

# --- up: its own mariadbd, the instances' user, a sale with --lock atomic ------------------
t0=$SECONDS
mdb_up --lock atomic
check_eq "up --mysql --lock atomic: mariadbd, 2 instances and nginx come up (in $((SECONDS - t0)) s)" 0 "$?"
. "$RUN/stack.env"
MPORT=${MYSQL_CONNECT##*:}
check_eq "  stack.env: the server (127.0.0.1:port), ours, its password file, flush 1" \
    "127.0.0.1 1 $RUN/mysql/password 1 $RUN" \
    "${MYSQL_CONNECT%:*} $OWN_MYSQL $MYSQL_PASSWORD_FILE $MYSQL_FLUSH $MYSQL_DIR"
check "  its pid is a mariadbd of its own configuration, data under the run directory" \
    bash -c 'tr "\0" " " < /proc/$1/cmdline | grep -q "mariadbd --defaults-file=$2/mysql/my.cnf" &&
             grep -qx "datadir=$2/mysql/data" "$2/mysql/my.cnf" && [ -d "$2/mysql/data/mysql" ]' _ "$MYSQL_PID" "$RUN"
check "  on loopback only, commits synced (innodb_flush_log_at_trx_commit 1)" \
    test "$(mdb_sql 'SELECT @@bind_address, @@innodb_flush_log_at_trx_commit' | tr '\t' ' ')" = "127.0.0.1 1"
check_eq "  the password file: mode 600, one line" "600 1" \
    "$(stat -c %a "$RUN/mysql/password") $(wc -l < "$RUN/mysql/password")"
check_eq "  the user inventory@127.0.0.1: ALL on inventory.*" 1 \
    "$(mdb_sql "SHOW GRANTS FOR 'inventory'@'127.0.0.1'" | grep -c 'GRANT ALL PRIVILEGES ON `inventory`.\*')"
check_eq "  the password is in no process's argv (ps -eo args)" 0 \
    "$(ps -eo args | grep -cF -f "$RUN/mysql/password")"
check "  nor in a log, pid file or stack.env" \
    bash -c '! grep -qF -f "$1/mysql/password" "$1"/*.log "$1"/*.pid "$1/stack.env"' _ "$RUN"
check "  the instances got it by file (--mysql-password-file)" \
    grep -q -- "--mysql 127.0.0.1:$MPORT --mysql-user inventory --mysql-password-file $RUN/mysql/password" \
    <(argv_of $(run_pids))
check "db_admin --set-stock 5" db_admin --set-stock 5 --item mdep
check_eq "a sale through nginx (atomic): 200, remaining 4" "200 atomic 4" \
    "$(nginx_sale mdep) $(jq -r '"\(.lock) \(.remaining)"' "$T_TMP/body")"
check_eq "  db_item_state: stock 4, sold 1, one ledger row" "4 1 1" "$(db_item_state mdep)"
check_eq "  item_counts reads the database" "4 1 1" "$(item_counts mdep)"
check_eq "  the row, as root (mdb_sql)" "4 1" "$(mdb_sql "SELECT stock, sold FROM inventory.items WHERE item = 'mdep'" | tr '\t' ' ')"
deploy/status --run-dir "$RUN" --item mdep > "$T_TMP/status"; rc=$?
check_eq "deploy/status: everything runs (exit 0)" 0 "$rc"
check "  shows the server: pid, answers, its flush setting" \
    grep -qE "^  mariadb +127.0.0.1:$MPORT +pid $MYSQL_PID running +answers, innodb_flush_log_at_trx_commit=1$" "$T_TMP/status"
check "  and the item's stock" grep -q "item mdep *stock 4, sold 1, ledger 1" "$T_TMP/status"
[ "$T_FAILED" = 0 ] || sed 's/^/    /' "$T_TMP/status"

# --- up again, v14 (db-fenced): the data and the password kept; a sale -------------------------
old=$(run_pids) pw=$(cat "$RUN/mysql/password")
t0=$SECONDS
mdb_up --lock v14
check_eq "up again --lock v14: restarts (in $((SECONDS - t0)) s)" 0 "$?"
check "  the first stack's processes are gone" none_running $old
. "$RUN/stack.env"
check_eq "  the data kept (no new install), the same password" "4 1 1 same" \
    "$(db_item_state mdep) $([ "$pw" = "$(cat "$RUN/mysql/password")" ] && echo same)"
check_eq "a sale through nginx (v14): 200, remaining 3" "200 v14 3" \
    "$(nginx_sale mdep) $(jq -r '"\(.lock) \(.remaining)"' "$T_TMP/body")"
check_eq "  db_item_state: stock 3, sold 2, two ledger rows" "3 2 2" "$(db_item_state mdep)"
check_eq "  the lease row names the item, its token granted" "mdep 1" \
    "$(mdb_sql "SELECT name, token > 0 FROM inventory.leases WHERE name = 'mdep'" | tr '\t' ' ')"

# --- the server killed -9 and started again (the crash rows' helpers) ----------------------
check "mysql_kill9: the server is gone" mysql_kill9
check "  its pid no longer runs" none_running "$MYSQL_PID"
check_eq "  a sale meanwhile: 503" 503 "$(nginx_sale mdep)"
t0=$(now_ms)
check "mysql_restart: it answers again, on its port and data" mysql_restart
echo "       (restarted in $(( $(now_ms) - t0 )) ms)"
sold_again() { [ "$(nginx_sale mdep)" = 200 ]; }
check "  the instances sell again" wait_until 15 "" sold_again
check_eq "  nothing acknowledged was lost (flush 1): stock 2, sold 3, three rows" "2 3 3" "$(db_item_state mdep)"
check "  deploy/status: the new pid runs" \
    bash -c 'deploy/status --run-dir "$1" | grep -qE "^  mariadb .* pid $2 running"' _ "$RUN" "$(head -n 1 "$RUN/mysql.pid")"

# --- --mysql-flush 2 ---------------------------------------------------------------------------
deploy/up --lock v12 --mysql-flush 2 --run-dir "$RUN" --port "$NG" --instance-ports "$A,$B" 2> "$T_TMP/up.err" ||
    sed 's/^/    /' "$T_TMP/up.err"
check_eq "up --lock v12 (implies --mysql) --mysql-flush 2: the server's setting, stack.env's" "2 2" \
    "$(. "$RUN/stack.env"; echo "$(mdb_sql 'SELECT @@innodb_flush_log_at_trx_commit') $MYSQL_FLUSH")"
check_eq "  a sale (v12, db-table): 200" "200 v12" "$(nginx_sale mdep) $(jq -r .lock "$T_TMP/body")"

# --- another mariadbd (the test's own), and --mysqls on it --------------------------------------
start_mariadb || exit 1
C=$(free_port)
check "up --mysqls (a server elsewhere; its password from MYSQL_PASSWORD): one instance, no server started" \
    env MYSQL_PASSWORD="$(cat "$MARIADB_PASSWORD_FILE")" deploy/up --mysqls "127.0.0.1:$MARIADB_PORT" \
        --lock v14 --run-dir "$RUN2" --no-nginx --instance-ports "$C"
check_eq "  the password kept in the stack's file (mode 600), not ours, no pid file of a server" \
    "600 0 0" "$(stat -c %a "$RUN2/mysqls.pass") $(. "$RUN2/stack.env"; echo "$OWN_MYSQL") $(ls "$RUN2"/mysql.pid 2>/dev/null | wc -l)"
check "  the instance got it by file" grep -q -- "--mysql-password-file $RUN2/mysqls.pass" <(argv_of $(run_pids "$RUN2"))
(. "$RUN2/stack.env"; db_admin --set-stock 3 --item mext >/dev/null)
check_eq "  a sale there: 200, the row in that server" "200 2 1" \
    "$(sale "$C" mext) $(mdb "SELECT stock, sold FROM inventory.items WHERE item = 'mext'" | tr '\t' ' ')"
check "  deploy/status: the server not ours, answering" \
    bash -c 'deploy/status --run-dir "$1" | grep -qE "^  mariadb +127.0.0.1:$2 +not ours +answers$"' _ "$RUN2" "$MARIADB_PORT"
deploy/down --run-dir "$RUN2" --quiet

# --- down: exactly its mariadbd ----------------------------------------------------------------
pids=$(run_pids)
mine=$(our_mariadbd "$RUN")
check_eq "the stack: mariadbd, 2 instances, nginx and its worker; one mariadbd of its configuration" \
    "5 $(head -n 1 "$RUN/mysql.pid")" "$(echo $pids | wc -w) $mine"
t0=$(now_ms)
check "deploy/down: stops it" deploy/down --run-dir "$RUN"
echo "       (down in $(( $(now_ms) - t0 )) ms)"
check "  every pid is gone" none_running $pids
check_eq "  no mariadbd of this run left" "" "$(our_mariadbd "$RUN")"
check "  nothing answers on its port" bash -c '! mysql_pings "127.0.0.1:$1"' _ "$MPORT"
check "  the test's own mariadbd is left alone (it answers)" running "$MARIADB_PID"
check "  and answers" test "$(mdb 'SELECT 1')" = 1
check "  the data and the password stay for the next up" test -s "$RUN/mysql/password" -a -d "$RUN/mysql/data/inventory"
# A server that outlasts the bound (STOP_WAIT_S; 0 here: at once) is killed -9, and waited for.
deploy/up --mysql --run-dir "$RUN" --instances 0 --no-nginx 2> "$T_TMP/up.err" || sed 's/^/    /' "$T_TMP/up.err"
pid=$(head -n 1 "$RUN/mysql.pid")
out=$(STOP_WAIT_S=0 deploy/down --run-dir "$RUN" 2>&1)
check "down past its bound: mariadbd killed -9 ($(echo $out))" \
    test -n "$(echo "$out" | grep "mariadb: pid $pid ignored SIGTERM for 0s, killed")"
check "  and gone" none_running "$pid"

# --- bad usage ---------------------------------------------------------------------------------
bad() { deploy/up --run-dir "$T_TMP/bad" --port "$NG" "$@" > /dev/null 2>&1; echo $?; }
check_eq "refused (exit 2): --lock v8 --mysql; --mysql --zookeeper 3; --mysql-flush 3; --lock v13 --redis H:P; --mysql --mysqls" \
    "2 2 2 2 2" "$(bad --lock v8 --mysql) $(bad --mysql --zookeeper 3) $(bad --mysql --mysql-flush 3) $(bad --lock v13 --redis 127.0.0.1:1) $(bad --mysql --mysqls 127.0.0.1:1)"

# --- loadtest/run on a database started for the run ---------------------------------------------
# mrun NAME ARG...: loadtest/run ARG..., its stdout and stderr in T_TMP/NAME.out and .err, the
# JSON line in json; returns its exit status.
mrun() {
    local name=$1 rc=0; shift
    loadtest/run "$@" > "$T_TMP/$name.out" 2> "$T_TMP/$name.err" || rc=$?
    json=$(tail -n 1 "$T_TMP/$name.out")
    [ "$rc" = 0 ] || { tail -n 8 "$T_TMP/$name.err"; echo "$json"; }
    return "$rc"
}
for lock in v14 atomic; do
    t0=$SECONDS
    mrun "load-$lock" --lock "$lock" --mysql --item "m$lock" --stock 300 -c 10 -d 3
    check_eq "loadtest/run --lock $lock --mysql -d 3: done (in $((SECONDS - t0)) s)" 0 "$?"
    check_eq "  none oversold; the invariant and the ledger hold; settled" "0 true true true" \
        "$(field oversold) $(field invariant_ok) $(field ledger_ok) $(field settled)"
    check "  the books add up: sold + remaining = 300, sold = ledger, sold > 0 ($(field sold) sold, $(field ok) answered 200)" \
        test "$(( $(field sold) + $(field remaining) ))" = 300 -a "$(field sold)" = "$(field ledger)" -a "$(field sold)" -gt 0
    check "  the summary reads the database: a mysql line" grep -q "^  mysql     sold $(field sold), remaining" "$T_TMP/load-$lock.out"
    check_eq "  JSON: its lock, no flaw" "$lock false" "$(field lock) $(field flaw)"
    echo "       ($(field rps) requests/s, sales/s $(field sales_per_s), p99 $(field p99_ms) ms)"
done
check_eq "no mariadbd of a loadtest run left" "" \
    "$(for p in $(pgrep -x mariadbd); do argv_of "$p" | grep -q "$T_TMP/loadtest\." && echo "$p"; done)"
t_report
