# db-crash.sh - The database server (mariadbd) killed -9 mid-load and started again from its
# files: what it lost of what it acknowledged, by innodb_flush_log_at_trx_commit.
#
# In the database (v12..v15, or atomic there; deploy/up --mysql: a server the stack
# started, which the scenario kills and starts again by its pid file). Load through nginx
# (wrk, 16 connections), every answer recorded (status, error, request id, Retry-After).
# The server's flush setting is set to the scenario's first (SET GLOBAL, read back):
#   db-crash         1: every commit written and synced to disk before it is answered
#                       (InnoDB's default)
#   db-crash-flush0  0: the log written and synced about once a second, by the server
#                       alone: a commit answered lives in the server's memory until then
#   db-crash-flush2  2: every commit written to the operating system before it is
#                       answered, synced about once a second: a killed process loses
#                       nothing the kernel holds (a machine's crash would)
# A third of the stock sold, the server is killed -9 (deploy/lib.sh's mysql_kill9); a
# second later it starts again on its port and data (mysql_restart: InnoDB recovers from
# its redo log). The instances are not restarted: their pools connect anew. The probe is
# emptied (the sales the crash cut off inside never left it). Then the load goes on until
# the stock is sold out. A sale is acknowledged when it answered 200; it is lost when its
# request id has no row in orders afterwards.
# Verdict: the flaw when an acknowledged sale was lost, more 200s were answered than the
# stock (SCN_OVERSOLD, counted from the answers), the database's own books do not add up
# (sold + stock = the stock at the start, a row of orders per unit sold), an answer was
# other than 200, 409 or 503 with Retry-After (or none came at all), or no sale went
# through after the restart.
# Rows in loadtest/evolution: v14 db-crash and db-crash-flush2 do not show it,
# db-crash-flush0 does. (now_ms, mysql_kill9, mysql_restart: deploy/lib.sh's; crash_sale,
# db_*: lib.sh's.)

# A stock that lasts a few seconds of load.
defaults_db_crash="ttl=2000 wait=3000 stock=600"
defaults_db_crash_flush0=$defaults_db_crash
defaults_db_crash_flush2=$defaults_db_crash

scenario_db_crash() { db_crash_play 1 "$@"; }
scenario_db_crash_flush0() { db_crash_play 0 "$@"; }
scenario_db_crash_flush2() { db_crash_play 2 "$@"; }

# db_flush_set N: the server's innodb_flush_log_at_trx_commit set to N (SET GLOBAL: it
# holds until the server stops) and read back; fails when it does not say N.
db_flush_set() {
    db_sql "SET GLOBAL innodb_flush_log_at_trx_commit = $1" >/dev/null &&
        [ "$(db_sql "SELECT @@GLOBAL.innodb_flush_log_at_trx_commit")" = "$1" ]
}
# db_crash_abort WHY: the scenario cannot go on: its load and sampler stop; fails.
db_crash_abort() {
    kill "$LOAD_PID" 2>/dev/null
    bg_wait
    sampler_stop
    SCN_OBSERVED=$1
    return 1
}

# db_crash_play FLUSH WORD...: plays the scenario (the words: scenarios/lib.sh's) with the
# server's flush setting FLUSH at the kill; db_crash_judge judges it.
db_crash_play() {
    local flush=$1; shift
    local "$@"
    local rec=$dir/answers- t_kill t_start t_up t_ok=-1 kill_at sold_out=1 how
    stack_read "$stack" || return 1
    db_playable || return 1
    mysql_ours >/dev/null ||
        { SCN_OBSERVED="not played: the stack's mariadbd does not run"; return 1; }
    if ! db_flush_set "$flush"; then
        SCN_OBSERVED="not played: the server did not take innodb_flush_log_at_trx_commit=$flush"
        return 1
    fi
    : > "$dir/answers-curl"
    sampler_start "$dir" "$item"
    load_bg "$dir" "$item" "$NGINX_PORT" 16 120 "" crash "$rec"
    kill_at=$(( stock / 3 ))
    wait_until 60 "$LOAD_PID" sold_at_least "$item" "$kill_at" ||
        { db_crash_abort "the load did not sell $kill_at"; return 1; }
    mysql_kill9 2>/dev/null || { db_crash_abort "the server could not be killed"; return 1; }
    t_kill=$(now_ms)
    sleep 1
    t_start=$(now_ms)
    mysql_restart 2>/dev/null ||
        { db_crash_abort "the server did not start again from its files"; return 1; }
    t_up=$(now_ms)
    db_probe_clear "$item"
    db_flush_set "$flush" || true     # (as before the kill; my.cnf says the stack's)
    # Recovery: the first sale through nginx that the database answers (wrk's go on).
    wait_until 30 "" crash_sale "$dir" "$item" && t_ok=$(now_ms)
    # The rest of the stock sells; then a moment of 409s; then wrk stops (SIGINT: its summary).
    wait_until 60 "$LOAD_PID" sold_out_now "$item" || sold_out=0
    sleep 0.3
    kill -INT "$LOAD_PID" 2>/dev/null
    bg_wait
    sampler_stop
    how="mariadbd (innodb_flush_log_at_trx_commit $flush) killed -9 at $kill_at+ sold,"
    how="$how restarted $(( t_start - t_kill )) ms later, up in $(( t_up - t_start )) ms, first"
    if [ "$t_ok" -ge 0 ]; then how="$how sale $(( t_ok - t_start )) ms after the restart"
    else how="$how sale never"; fi
    how="$how (the instances not restarted);$([ "$sold_out" = 1 ] || echo " not sold out;")"
    db_crash_judge "$dir" "$item" "$stock" "$rec" "$t_ok" "$how"
}

# db_crash_judge DIR ITEM STOCK REC T_OK HOW: the run's answers (wrk's record REC<thread>,
# crash_sale's DIR/answers-curl) against ITEM's orders rows and its items row (from STOCK),
# T_OK the first sale after the restart (-1: none); sets SCN_FLAW, SCN_LOST, SCN_OVERSOLD
# and SCN_OBSERVED (HOW, then what was lost). Fails when the record is not whole or the
# database cannot be read.
db_crash_judge() {
    local dir=$1 item=$2 stock=$3 rec=$4 t_ok=$5 how=$6 answered acked lost landed oversold
    local bad gone counts books=yes by_status
    cat "$rec"* > "$dir/answers"
    # The record is whole: wrk's one summary counts as many answers as its thread wrote.
    answered=$(grep -h '^{' "$dir/wrk-crash.out" |
        jq -s 'if length == 1 then .[0].requests else -1 end')
    if [ "$answered" != "$(wc -l < "${rec}1")" ] || [ "$answered" -le 0 ]; then
        SCN_OBSERVED="wrk's summary ($answered answers) and its record ($(wc -l < "${rec}1") lines)"
        SCN_OBSERVED="$SCN_OBSERVED disagree"
        return 1
    fi
    # What the clients were told, and what the database's orders hold.
    awk '$1 == 200 && $3 != "-" { print $3 }' "$dir/answers" | sort > "$dir/acked"
    db_sql "SELECT request_id FROM inventory.orders WHERE item = $(db_lit "$item") AND
            status = 200" > "$dir/ledger-ids.raw" ||
        { SCN_OBSERVED="the database's orders could not be read"; return 1; }
    sort "$dir/ledger-ids.raw" > "$dir/ledger-ids"
    acked=$(awk '$1 == 200' "$dir/answers" | wc -l)
    lost=$(comm -23 "$dir/acked" "$dir/ledger-ids" | wc -l)
    landed=$(comm -13 "$dir/acked" "$dir/ledger-ids" | wc -l)
    counts=$(item_counts "$item") ||
        { SCN_OBSERVED="the stock of $item could not be read"; return 1; }
    set -- $counts                       # stock sold ledger
    [ $(( $1 + $2 )) = "$stock" ] && [ "$3" = "$2" ] || books="NO (stock $1, sold $2, orders $3)"
    oversold=$(( acked - (stock - $1) ))
    [ "$oversold" -gt 0 ] || oversold=0
    # Anything but 200, 409 and 503 with Retry-After; an answer without a request id; and
    # requests wrk saw fail without an answer.
    bad=$(awk '!($1 == 200 || $1 == 409 || ($1 == 503 && $4 == 1)) || ($1 == 200 && $3 == "-")' \
        "$dir/answers" | wc -l)
    gone=$(jq -s 'map(.socket_errors + .timeouts) | add // 0' <(grep -h '^{' "$dir"/wrk-crash.out))
    by_status=$(awk '{ n[$1 ($1 == 503 ? " " $2 : "")]++ }
        END { for (k in n) printf "%s x %d\n", k, n[k] }' "$dir/answers" |
        sort | paste -sd, - | sed 's/,/, /g')
    SCN_OVERSOLD=$oversold SCN_LOST=$lost
    SCN_FLAW=0
    [ "$lost" = 0 ] && [ "$oversold" = 0 ] && [ "$books" = yes ] && [ "$bad" = 0 ] &&
        [ "$gone" = 0 ] && [ "$t_ok" -ge 0 ] || SCN_FLAW=1
    SCN_OBSERVED="$how $acked answered 200 from a stock of $stock: $lost acknowledged sales lost"
    SCN_OBSERVED="$SCN_OBSERVED (no orders row), oversold $oversold, $landed sales landed without"
    SCN_OBSERVED="$SCN_OBSERVED a 200; the books add up (sold + stock, a row per unit): $books;"
    SCN_OBSERVED="$SCN_OBSERVED answers: $by_status; $bad other answers, $gone without one"
}
