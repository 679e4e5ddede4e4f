# redis-crash.sh - The data Redis killed -9 mid-load, restarted from its files: what is lost.
# With fsync always, nothing acknowledged (v8 safe); from a snapshot, sales (the flaw).
#
# Load through nginx (wrk, 16 connections), every answer recorded (status, error, request
# id, Retry-After); each sale works 4 ms under the lock, so that the steps below come at a
# known point of the stock even on a slow machine. A third of the stock sold, Redis is
# killed; a second later it starts again on its port, from its data directory, with the
# same settings: the scenario's fsync, always (redis-crash), everysec
# (redis-crash-everysec), or off with one BGSAVE taken at a sixth of the stock, as a
# periodic snapshot would be (redis-crash-snapshot). Then the load goes on until the stock
# is sold out. A sale is acknowledged when it answered 200; it is lost when its request id
# is not in the ledger (orders:{I}) afterwards.
# Verdict: the flaw when an acknowledged sale was lost, more 200s were answered than the
# stock (SCN_OVERSOLD, counted from the answers), Redis's own books do not add up
# (sold - (stock at start - stock) > 0), an answer was other than 200, 409 or 503 with
# Retry-After (or none came at all), or no sale went through after the restart.
# Rows in loadtest/evolution: v8 redis-crash does not show it, v8 redis-crash-snapshot
# does. (now_ms is deploy/lib.sh's; crash_sale lib.sh's.)

# The scenario's fsync, and a stock that lasts a few seconds of load.
defaults_redis_crash="ttl=2000 wait=3000 stock=1200 fsync=always"
defaults_redis_crash_everysec="ttl=2000 wait=3000 stock=1200 fsync=everysec"
defaults_redis_crash_snapshot="ttl=2000 wait=3000 stock=1200 fsync=off"

# restart_redis ITEM: the stack's data Redis again, from its files, as deploy/up started it
# (its pid file updated: once it listens on its port, its process title names it as
# deploy/down expects); sets RESTORED_PTTL, ITEM's lock's PTTL as the files gave it back.
# It starts on a private unix socket only: the sales inside the critical section when
# Redis died never left the overlap probe (their SREM failed), and it is emptied before
# any sale can reach Redis; then Redis listens on its port again (CONFIG SET port).
restart_redis() {
    local sock
    sock=$(mktemp -u /tmp/redis-restart.XXXXXX.sock)    # a unix socket path is short
    redis_start "$REDIS_PORT" "$REDIS_HOST" "$FSYNC" "$STACK_DIR/redis" "$STACK_DIR/redis.log" \
        "$STACK_DIR/redis.pid" --port 0 --unixsocket "$sock" --unixsocketperm 700
    if wait_until 30 "$REDIS_STARTED_PID" redis_pings -s "$sock" &&
       RESTORED_PTTL=$(rcli -s "$sock" pttl "$(item_key lock "$1")") &&
       rcli -s "$sock" del "$(item_key probe "$1")" >/dev/null &&
       [ "$(rcli -s "$sock" config set port "$REDIS_PORT")" = OK ]; then
        return 0
    fi
    kill -9 "$REDIS_STARTED_PID" 2>/dev/null      # its pid file names the port it never took
    return 1
}
# snapshot_done: the BGSAVE asked for has finished, and written its file.
snapshot_done() {
    local info; info=$(rcli info persistence) || return 1
    grep -q '^rdb_bgsave_in_progress:0' <<<"$info" && grep -q '^rdb_last_bgsave_status:ok' <<<"$info"
}
# crash_abort WHY: the scenario cannot go on: its load and sampler stop; fails.
crash_abort() { kill "$LOAD_PID" 2>/dev/null; bg_wait; sampler_stop; SCN_OBSERVED=$1; return 1; }

scenario_redis_crash() {
    local "$@"
    local rec=$dir/answers- t_kill t_start t_up t_ok=-1 snap_sold=0 kill_at pttl
    local acked lost landed oversold bad remaining by_status gone sold_out=1 answered
    stack_read "$stack" || return 1
    : > "$dir/answers-curl"
    sampler_start "$dir" "$item"
    load_bg "$dir" "$item" "$NGINX_PORT" 16 120 "work_ms=4" crash "$rec"
    if [ "$FSYNC" = off ]; then
        wait_until 60 "$LOAD_PID" sold_at_least "$item" $(( stock / 6 )) ||
            { crash_abort "the load did not sell a sixth of the stock"; return 1; }
        snap_sold=$(sold_now "$item")
        rcli bgsave | grep -q 'Background saving started' || { crash_abort "BGSAVE refused"; return 1; }
        wait_until 30 "" snapshot_done || { crash_abort "BGSAVE did not finish"; return 1; }
    fi
    # The kill: a third of the stock sold, and (after a snapshot) 50 sales it does not have.
    kill_at=$(( stock / 3 ))
    [ "$FSYNC" != off ] || [ "$kill_at" -ge $(( $(sold_now "$item") + 50 )) ] || kill_at=$(( $(sold_now "$item") + 50 ))
    wait_until 60 "$LOAD_PID" sold_at_least "$item" "$kill_at" ||
        { crash_abort "the load did not sell $kill_at"; return 1; }
    kill -9 "$(head -n 1 "$STACK_DIR/redis.pid")"
    t_kill=$(now_ms)
    sleep 1
    t_start=$(now_ms)
    restart_redis "$item" || { crash_abort "Redis did not start again from its files"; return 1; }
    t_up=$(now_ms)
    pttl=$RESTORED_PTTL                  # a lock Redis had when it died comes back with it
    # Recovery: the first sale through nginx that Redis answers (wrk's go on meanwhile).
    wait_until 30 "" crash_sale "$dir" "$item" && t_ok=$(now_ms)
    # The rest of the stock sells; then a moment of 409s; then wrk stops (SIGINT: its summary).
    wait_until 60 "$LOAD_PID" sold_out_now "$item" || sold_out=0
    sleep 0.3
    kill -INT "$LOAD_PID" 2>/dev/null
    bg_wait
    sampler_stop
    cat "$rec"* > "$dir/answers"
    # The record is whole: wrk's one summary counts as many answers as its thread wrote.
    answered=$(grep -h '^{' "$dir/wrk-crash.out" | jq -s 'if length == 1 then .[0].requests else -1 end')
    [ "$answered" = "$(wc -l < "${rec}1")" ] && [ "$answered" -gt 0 ] ||
        { SCN_OBSERVED="wrk's summary ($answered answers) and its record ($(wc -l < "${rec}1") lines) disagree"; return 1; }
    # What the clients were told, and what the ledger holds.
    awk '$1 == 200 && $3 != "-" { print $3 }' "$dir/answers" | sort > "$dir/acked"
    rcli xrange "$(item_key orders "$item")" - + | awk 'p { print; p = 0 } $0 == "request" { p = 1 }' |
        sort > "$dir/ledger-ids"
    acked=$(awk '$1 == 200' "$dir/answers" | wc -l)
    lost=$(comm -23 "$dir/acked" "$dir/ledger-ids" | wc -l)
    landed=$(comm -13 "$dir/acked" "$dir/ledger-ids" | wc -l)
    remaining=$(item_get stock "$item"); remaining=${remaining:-0}
    oversold=$(( acked - (stock - remaining) ))
    [ "$oversold" -gt 0 ] || oversold=0
    # Anything but 200, 409 and 503 with Retry-After; an answer without a request id; and
    # requests wrk saw fail without an answer.
    bad=$(awk '!($1 == 200 || $1 == 409 || ($1 == 503 && $4 == 1)) || ($1 == 200 && $3 == "-")' \
        "$dir/answers" | wc -l)
    gone=$(jq -s 'map(.socket_errors + .timeouts) | add // 0' <(grep -h '^{' "$dir"/wrk-crash.out))
    by_status=$(awk '{ n[$1 ($1 == 503 ? " " $2 : "")]++ }
        END { for (k in n) printf "%s x %d\n", k, n[k] }' "$dir/answers" | sort | paste -sd, - | sed 's/,/, /g')
    SCN_OVERSOLD=$oversold
    # Flaw: what the clients were promised is not what Redis holds, Redis's own books do
    # not add up, or a client got a wrong answer, none, or no sale after the restart.
    SCN_FLAW=0
    [ "$lost" = 0 ] && [ "$oversold" = 0 ] && [ "$(oversold_now "$item" "$stock")" = 0 ] && [ "$bad" = 0 ] &&
        [ "$gone" = 0 ] && [ "$t_ok" -ge 0 ] || SCN_FLAW=1
    SCN_OBSERVED="Redis (fsync $FSYNC$([ "$FSYNC" != off ] || echo ", a snapshot at about $snap_sold sold"))"
    SCN_OBSERVED="$SCN_OBSERVED killed -9 at $kill_at+ sold, restarted $(( t_start - t_kill )) ms later,"
    SCN_OBSERVED="$SCN_OBSERVED up in $(( t_up - t_start )) ms with the lock"
    SCN_OBSERVED="$SCN_OBSERVED $([ "$pttl" -ge 0 ] 2>/dev/null && echo "back (PTTL $pttl ms)" || echo free),"
    SCN_OBSERVED="$SCN_OBSERVED first sale $([ "$t_ok" -ge 0 ] && echo "$(( t_ok - t_start )) ms after the restart" || echo never);"
    SCN_OBSERVED="$SCN_OBSERVED $acked answered 200 from a stock of $stock$([ "$sold_out" = 1 ] || echo " (not sold out)"):"
    SCN_OBSERVED="$SCN_OBSERVED $lost acknowledged sales lost, oversold $oversold, $landed sales landed without a 200;"
    SCN_OBSERVED="$SCN_OBSERVED answers: $by_status; $bad other answers, $gone without one"
}
# The variants: the same choreography; their stacks differ in fsync only.
scenario_redis_crash_everysec() { scenario_redis_crash "$@"; }
scenario_redis_crash_snapshot() { scenario_redis_crash "$@"; }
