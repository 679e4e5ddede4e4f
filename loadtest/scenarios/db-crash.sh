# db-crash.sh - The database server (mariadbd) killed -9 mid-load and started again from its
# files: what it lost of what it acknowledged, by innodb_flush_log_at_trx_commit.
#
# In the database (v12..v15, or atomic there; deploy/up --mysql: a server the stack
# started, which the scenario kills and starts again by its pid file). Load through nginx
# (build/sale-load, 16 keep-alive connections), every answer in a history (its times,
# status, error, request id, whether it said Retry-After).
# The server's flush setting is set to the scenario's first (SET GLOBAL, read back):
#   db-crash         1: every commit written and synced to disk before it is answered
#                       (InnoDB's default)
#   db-crash-flush0  0: the log written and synced about once a second, by the server
#                       alone: a commit answered lives in the server's memory until then
#   db-crash-flush2  2: every commit written to the operating system before it is
#                       answered, synced about once a second: a killed process loses
#                       nothing the kernel holds (a machine's crash would)
# Once 200 units are sold (from a stock no design sells out in the run: the fastest sells
# 200 in a few ms), the server is killed -9 (deploy/lib.sh's mysql_kill9); a second later
# it starts again on its port and data (mysql_restart: InnoDB recovers from its redo log).
# The instances are not restarted: their pools connect anew. The probe is emptied (the
# sales the crash cut off inside never left it). The load goes on until the first sale
# after the restart and a second more (30 s at most). A run whose stock ran out before
# the kill is not played. A sale is acknowledged when it answered 200; it is lost when its
# request id has no row in orders afterwards.
# Verdict: the flaw when an acknowledged sale was lost (a unit sold again after the
# crash shows as two 200s with one remaining), anything was sold beyond the stock
# (SCN_OVERSOLD, by the books), the database's own books do not add up
# (sold + stock = the stock at the start, a row of orders per unit sold), an answer was
# other than 200, 409 or 503 with Retry-After (or none came at all), no sale went
# through after the restart, or the history checker (loadtest/check-history, against the
# items row and the orders) finds the history impossible or a unit sold twice.
# Rows in loadtest/evolution: v14 db-crash and db-crash-flush2 do not show it,
# db-crash-flush0 does. (now_ms, mono_now_ns, mysql_kill9, mysql_restart,
# sale_load_summary: deploy/lib.sh's; history_judge, first_sale_after, db_*: lib.sh's.)

# A stock that outlasts the load (the books are judged whatever is left).
defaults_db_crash="ttl=2000 wait=3000 stock=1000000"
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
# db_lsns: "CURRENT SYNCED", the server's redo log's end and how far of it is synced
# to disk (Innodb_lsn_current, Innodb_lsn_flushed). db_unsynced: true when commits wait
# for the sync.
db_lsns() {
    db_sql "SELECT MAX(IF(VARIABLE_NAME = 'INNODB_LSN_CURRENT', VARIABLE_VALUE, NULL)),
                   MAX(IF(VARIABLE_NAME = 'INNODB_LSN_FLUSHED', VARIABLE_VALUE, NULL))
            FROM information_schema.GLOBAL_STATUS" | tr '\t' ' '
}
db_unsynced() { local c f; read -r c f <<< "$(db_lsns)"; [ -n "$f" ] && [ "${c:-0}" -gt "$f" ]; }
# db_crash_abort WHY: the scenario cannot go on: its load and sampler stop; fails.
db_crash_abort() {
    kill -INT "$LOAD_PID" 2>/dev/null
    wait "$LOAD_PID" 2>/dev/null
    sampler_stop
    SCN_OBSERVED=$1
    return 1
}

# db_crash_play FLUSH WORD...: plays the scenario (the words: scenarios/lib.sh's) with the
# server's flush setting FLUSH at the kill; db_crash_judge judges it.
db_crash_play() {
    local flush=$1; shift
    local "$@"
    local hist=$dir/history.jsonl t_kill t_start t_up t_start_ns kill_at how s0 lsns lsn_end lsn_synced
    stack_read "$stack" || return 1
    db_playable || return 1
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    mysql_ours >/dev/null ||
        { SCN_OBSERVED="not played: the stack's mariadbd does not run"; return 1; }
    if ! db_flush_set "$flush"; then
        SCN_OBSERVED="not played: the server did not take innodb_flush_log_at_trx_commit=$flush"
        return 1
    fi
    mono_start
    sampler_start "$dir" "$item"
    "$BUILD_DIR/sale-load" --url "http://127.0.0.1:$NGINX_PORT/inventory/sale?item=$item" \
        -c 16 -d 120 --history "$hist" > "$dir/load.out" 2>&1 &
    LOAD_PID=$!
    kill_at=$(( stock / 3 < 200 ? stock / 3 : 200 ))
    wait_until 60 "$LOAD_PID" sold_at_least "$item" "$kill_at" ||
        { db_crash_abort "the load did not sell $kill_at"; return 1; }
    if sold_out_now "$item"; then
        db_crash_abort "not played: the stock ran out before the kill"
        return 1
    fi
    # With the sync a second apart (0, 2), the kill comes while commits wait for it (a
    # second at most): one just after the sync, with the load slow to start again, found
    # none (a busy machine's run lost nothing under 0). Under 1 none ever waits.
    [ "$flush" = 1 ] || wait_until 3 "$LOAD_PID" db_unsynced || true
    lsns=$(db_lsns)
    mysql_kill9 2>/dev/null || { db_crash_abort "the server could not be killed"; return 1; }
    t_kill=$(now_ms)
    sleep 1
    t_start=$(now_ms) t_start_ns=$(mono_now_ns)
    mysql_restart 2>/dev/null ||
        { db_crash_abort "the server did not start again from its files"; return 1; }
    t_up=$(now_ms)
    db_probe_clear "$item"
    db_flush_set "$flush" || true     # (as before the kill; my.cnf says the stack's)
    # Recovery: a sale the database counts after its restart (the load goes on), a second
    # more; then the load stops (SIGINT: its summary).
    wait_until 10 "" sold_at_least "$item" 1 || true   # (read once the server answers)
    s0=$(sold_now "$item")
    wait_until 30 "$LOAD_PID" sold_at_least "$item" $(( s0 + 1 )) || true
    sleep 1
    kill -INT "$LOAD_PID" 2>/dev/null
    if ! wait "$LOAD_PID"; then
        sampler_stop
        SCN_OBSERVED="sale-load failed: $(tail -n 3 "$dir/load.out")"
        return 1
    fi
    sampler_stop
    read -r lsn_end lsn_synced <<< "$lsns"
    how="mariadbd (innodb_flush_log_at_trx_commit $flush) killed -9 at $kill_at+ sold"
    how="$how (its redo log $(( ${lsn_end:-0} - ${lsn_synced:-0} )) bytes past its last sync just before),"
    how="$how restarted $(( t_start - t_kill )) ms later, up in $(( t_up - t_start )) ms,"
    db_crash_judge "$dir" "$item" "$stock" "$hist" "$t_start_ns" "$how"
}

# db_crash_judge DIR ITEM STOCK HISTORY T_NS HOW: the run's answers (sale-load's HISTORY,
# its summary in DIR/load.out) against ITEM's orders rows and its items row (from STOCK),
# judged by the history checker too (scenarios/lib.sh's history_judge); T_NS the restart
# (mono_now_ns); sets SCN_FLAW, SCN_LOST, SCN_OVERSOLD and SCN_OBSERVED (HOW, then what
# was lost). Fails when the record is not whole or the database cannot be read.
db_crash_judge() {
    local dir=$1 item=$2 stock=$3 hist=$4 t_ns=$5 how=$6 answered acked lost landed books=yes
    local bad gone counts first oversold
    # The record is whole: the load's summary counts as many requests as its history holds.
    answered=$(grep -h '^{' "$dir/load.out" | tail -n 1 | jq '.requests // -1')
    if [ "${answered:--1}" != "$(wc -l < "$hist")" ] || [ "${answered:--1}" -le 0 ]; then
        SCN_OBSERVED="the load's summary ($answered requests) and its history"
        SCN_OBSERVED="$SCN_OBSERVED ($(wc -l < "$hist") lines) disagree"
        return 1
    fi
    sale_load_summary "$dir/load.out" > "$dir/wrk-crash.out"
    # What the clients were told, and what the database's orders hold.
    jq -r 'select(.status == 200 and .request_id) | .request_id' "$hist" | sort > "$dir/acked"
    db_sql "SELECT request_id FROM inventory.orders WHERE item = $(db_lit "$item") AND
            status = 200" > "$dir/ledger-ids.raw" ||
        { SCN_OBSERVED="the database's orders could not be read"; return 1; }
    sort "$dir/ledger-ids.raw" > "$dir/ledger-ids"
    acked=$(jq -s 'map(select(.status == 200)) | length' "$hist")
    lost=$(comm -23 "$dir/acked" "$dir/ledger-ids" | wc -l)
    landed=$(comm -13 "$dir/acked" "$dir/ledger-ids" | wc -l)
    counts=$(item_counts "$item") ||
        { SCN_OBSERVED="the stock of $item could not be read"; return 1; }
    set -- $counts                       # stock sold ledger
    [ $(( $1 + $2 )) = "$stock" ] && [ "$3" = "$2" ] || books="NO (stock $1, sold $2, orders $3)"
    history_judge "$item" "$stock" "$hist" "$t_ns" || return 1
    [ "$LOST" -le "$lost" ] || lost=$LOST
    oversold=$(( OVERSOLD > 0 ? OVERSOLD : 0 ))   # sold beyond the stock, by the books
    # Anything but 200, 409 and 503 with Retry-After; a 200 without a request id; and
    # requests that got no answer at all.
    bad=$(jq -s 'map(select((.status == 200 and (.request_id | not)) or (.status != 0 and
        .status != 200 and .status != 409 and (.status != 503 or (.retry_after | not)))))
        | length' "$hist")
    gone=$(jq -s 'map(select(.status == 0)) | length' "$hist")
    first=$(first_sale_after "$hist" "$t_ns" answered)
    SCN_OVERSOLD=$oversold SCN_LOST=$lost
    SCN_FLAW=$(( SCN_FLAW || lost > 0 || bad > 0 || gone > 0 || first < 0 ))
    [ "$books" = yes ] || SCN_FLAW=1
    if [ "$first" -ge 0 ]; then how="$how first sale $first ms after the restart"
    else how="$how no sale after the restart"; fi
    SCN_OBSERVED="$how (the instances not restarted); $acked answered 200 from a stock of"
    SCN_OBSERVED="$SCN_OBSERVED $stock: $lost acknowledged sales lost (no orders row),"
    SCN_OBSERVED="$SCN_OBSERVED oversold $oversold, sold twice $SOLD_TWICE, $landed sales"
    SCN_OBSERVED="$SCN_OBSERVED landed without a 200; the books add up (sold + stock, a row per"
    SCN_OBSERVED="$SCN_OBSERVED unit): $books; history $VERDICT;"
    SCN_OBSERVED="$SCN_OBSERVED answers $(history_answers "$hist");"
    SCN_OBSERVED="$SCN_OBSERVED $bad other answers, $gone without one"
}
