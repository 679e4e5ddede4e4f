# pause.sh - v8's flaw: a whole-process pause (SIGSTOP) outlasts the lease, watchdog and all.
#
# Instance 1 takes the lock for a long sale (two TTLs of work), then the whole process is
# stopped (SIGSTOP: its watchdog stops too) for four TTLs while wrk sells on instance 2
# (work 50 ms, 4 connections); then it is resumed (SIGCONT). Stock and sold are sampled
# every 100 ms into the run's timeline.
# Verdict: the flaw when Redis shows oversold > 0 (sold - (stock at start - stock)): the
# paused holder's stale write landed, seen in the timeline as the stock jumping back up.
# Where the write is fenced (v9) it is refused instead: the paused sale answers 409
# lease_lost, which the observed line quotes; overlaps:{I} counts the two holders either way.
# On ZooKeeper (v11) the lease is the holder's session: there the holder's sale passes its
# lease check and stops just before its write (write_gap_ms, a session timeout long); the
# whole process is stopped there, once the instance counts the gap begun, for two session
# timeouts, while instance 2 sells (two connections, every answer recorded); the ensemble
# expires the paused session and deletes its lock node. The paused sale's write goes out
# the moment it resumes, its check long passed: ZooKeeper refuses it (the multi checks
# that node, in a new session), or its answer is lost with the old session and the write
# is settled as never made; either way 409 lease_lost, nothing written. (Stopped during
# its work instead, before the check, the sale would often hear first that its session is
# over and write nothing: the holder's own check, not the store's.) The
# flaw is the paused sale answering 200, a history the checker finds impossible, or
# anything oversold or lost (pause_on_zookeeper).
# In the database (v13..v15: pause_on_database) the holder is seen inside the lock in the
# database before the stop (the probe names its sale; the leases row names the same owner
# with a lease running, or, v15, a transaction holds the row lock); instance 2 sells with
# four connections (every answer recorded) from the stop until two seconds after the
# resume. With a lease (v13, v14) the scenario waits for it to run out by the database's
# clock and for instance 2's first grant (the leases row naming it, or the probe), both
# within the pause, or the scenario is not played. Verdict: the flaw when the database
# shows anything oversold (the resumed holder's stale write landed: its orders row is
# there), or the history is impossible, or nothing at all was sold while the holder was
# stopped (v15's row lock has no lease: every sale of the item waits for it; the row's gap
# is the longest time with no sale). v14's fence refuses the stale write: 409 lease_lost,
# and no orders row of it.
# Rows in loadtest/evolution: v8 shows it, v9 and v11 do not; v13 and v15 show it, v14 does
# not.

# A small stock, so that the stale write shows in the timeline. On ZooKeeper, a session of
# 2 s (the ensemble's shortest).
defaults_pause="ttl=500 wait=10000 stock=40 zk_session=2000"

scenario_pause() {
    local "$@"
    local a b pid work=$((ttl_ms * 2)) answer oversold
    stack_read "$stack" || return 1
    if zk_stack; then pause_on_zookeeper "$@"; return; fi
    if db_stack; then pause_on_database "$@"; return; fi
    a=$(port_of 1); b=$(port_of 2); pid=$(pid_of 1)
    sampler_start "$dir" "$item"
    ( code=$(curl -s -o "$dir/paused.json" -m 60 -w '%{http_code}' \
          "http://127.0.0.1:$a/inventory/sale?item=$item&work_ms=$work") || code=000
      echo "$code" >> "$dir/codes"; echo "$code" > "$dir/paused.code" ) &
    BG_PIDS="$BG_PIDS $!"
    wait_until 5 "" lock_held "$item"
    sleep 0.1
    kill -STOP "$pid"
    load_bg "$dir" "$item" "$b" 4 $(( ttl_ms * 4 / 1000 + 1 )) "work_ms=50" pause
    sleep "$(awk "BEGIN{print $ttl_ms * 4 / 1000}")"
    kill -CONT "$pid"
    bg_wait
    sampler_stop
    oversold=$(oversold_now "$item" "$stock")
    answer="$(cat "$dir/paused.code" 2>/dev/null) $(jq -r '.error // "sold"' "$dir/paused.json" 2>/dev/null)"
    SCN_FLAW=0
    [ "$oversold" -gt 0 ] && SCN_FLAW=1
    SCN_OBSERVED="holder paused $((ttl_ms * 4)) ms with a ${ttl_ms} ms lease while others sold; overlaps $(overlaps_now "$item"); oversold $oversold; the paused sale answered $answer"
}

# pause_on_zookeeper WORD...: the pause on ZooKeeper, with scenario_pause's words: instance
# 1's sale takes the lock (its grant seen in its /metrics) and waits a session timeout
# (instance 1's, from its log) between its lease check and its write; once its /metrics
# count that gap begun, the whole process is stopped (SIGSTOP) for two, while
# build/sale-load sells on instance 2 (two connections), then resumed (SIGCONT). Every
# answer in DIR/history.jsonl, the paused sale's answer in DIR/paused.jsonl.body. Sets
# SCN_FLAW and SCN_OBSERVED; fails when nothing was sold during the pause (the session
# outlasted it: nothing to show).
pause_on_zookeeper() {
    local "$@"
    local a b pid session t_stop t_cont during answer hist=$dir/history.jsonl gaps
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    a=$(port_of 1); b=$(port_of 2); pid=$(pid_of 1)
    gaps=$(metric_of "$a" inventory_fault_write_gaps_total)
    zk_hold "$dir" "$item" "$a" "write_gap_ms=@SESSION@" "$dir/paused.jsonl" || return 1
    session=$SESSION
    wait_until 5 "" metric_above "$a" inventory_fault_write_gaps_total "${gaps:-0}" ||
        { SCN_OBSERVED="not played: the held sale never reached its write (no write gap begun)"; return 1; }
    kill -STOP "$pid"
    t_stop=$(mono_now_ns)
    "$BUILD_DIR/sale-load" --url "http://127.0.0.1:$b/inventory/sale?item=$item" -c 2 \
        -d "$(awk -v s="$session" 'BEGIN { print s * 2 / 1000 }')" --history "$hist" > "$dir/load.out" 2>&1
    kill -CONT "$pid"
    t_cont=$(mono_now_ns)
    grep -q '^{' "$dir/load.out" || { SCN_OBSERVED="sale-load failed: $(tail -n 3 "$dir/load.out")"; return 1; }
    sale_load_summary "$dir/load.out" > "$dir/wrk-load.out"
    bg_wait
    cat "$dir/paused.jsonl" >> "$hist"
    during=$(jq -s --argjson a "$t_stop" --argjson b "$t_cont" \
        '[.[] | select(.status == 200 and .end_ns > $a and .end_ns < $b)] | length' "$hist")
    answer=$(jq -r '"\(.status) \(.error // "sold")"' "$dir/paused.jsonl")
    [ "$during" -gt 0 ] || { SCN_OBSERVED="nothing was sold while the holder was paused (session $session ms): nothing to show; the paused sale answered $answer"; return 1; }
    history_judge "$item" "$stock" "$hist" "$t_stop" || return 1
    case $answer in 200\ *) SCN_FLAW=1 ;; esac
    SCN_OBSERVED="holder paused $((session * 2)) ms with a $session ms session while the other instance sold $during; the paused sale answered $answer; answers $(history_answers "$hist"); history $VERDICT; acknowledged sales lost $LOST; oversold $OVERSOLD"
}

# pause_on_database WORD...: the pause in the database, with scenario_pause's words:
# instance 1's sale (three leases of work) is seen inside the lock in the database
# (db_held_by) and the whole process is stopped (SIGSTOP) for four leases, while
# build/sale-load sells on instance 2 (four connections, 50 ms of work a sale) from the
# stop until two seconds after the resume (SIGCONT). Stock and sold sampled into the
# timeline; every answer in DIR/history.jsonl, the paused sale's in DIR/paused.jsonl (its
# body beside it). Sets SCN_FLAW, SCN_OBSERVED and SCN_GAP_MS.
pause_on_database() {
    local "$@"
    local a b pid owner table pause=$((ttl_ms * 4)) t_stop t_cont stop_ms until="" load_pid
    local hist=$dir/history.jsonl over="" why="" held="" during answer rid landed first
    db_playable || return 1
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    a=$(port_of 1); b=$(port_of 2); pid=$(pid_of 1); table=$(db_lock_table "$lock")
    mono_start
    sampler_start "$dir" "$item"
    sale_hist "$dir" "$item" "$a" "work_ms=$((ttl_ms * 3))" "$dir/paused.jsonl" > /dev/null &
    BG_PIDS="$BG_PIDS $!"
    if ! owner=$(db_wait_held "$item" "$a" "$lock"); then
        bg_wait; sampler_stop
        SCN_OBSERVED="not played: the database never showed instance 1's sale inside the lock"
        return 1
    fi
    sleep 0.1
    kill -STOP "$pid"
    t_stop=$(mono_now_ns) stop_ms=$(now_ms)
    # Stopped inside (not in its COMMIT: the probe's leave rides in it); a lease ends where
    # its row says now: the holder renews it no more.
    if [ "$(db_owner_inside "$item" "$a")" != "$owner" ]; then
        kill -CONT "$pid"; bg_wait; sampler_stop
        SCN_OBSERVED="not played: instance 1's sale had left the lock when it was stopped"
        return 1
    fi
    [ "$table" != leases ] || until=$(db_sql "SELECT lock_until FROM inventory.leases
        WHERE name = $(db_lit "$item") AND owner = $(db_lit "$owner")")
    "$BUILD_DIR/sale-load" --url "http://127.0.0.1:$b/inventory/sale?item=$item&work_ms=50" \
        -c 4 -d $(( pause / 1000 + 2 )) --history "$hist" > "$dir/load.out" 2>&1 &
    load_pid=$!
    if [ "$table" = leases ]; then
        over=$(pause_db_lease "$item" "$b" "$owner" "$until" "$stop_ms" "$t_stop" "$pause") ||
            why=$over
    else
        held=$(db_trx_holding) || held=none
    fi
    sleep_until $(( t_stop + pause * 1000000 ))
    t_cont=$(mono_now_ns)   # before the resume: a sale it lets through is after the pause
    kill -CONT "$pid"
    wait "$load_pid" 2>/dev/null
    bg_wait
    sampler_stop
    [ -z "$why" ] || { SCN_OBSERVED="not played: $why"; return 1; }
    grep -q '^{' "$dir/load.out" ||
        { SCN_OBSERVED="sale-load failed: $(tail -n 3 "$dir/load.out")"; return 1; }
    sale_load_summary "$dir/load.out" > "$dir/wrk-load.out"
    cat "$dir/paused.jsonl" >> "$hist"
    during=$(jq -s --argjson a "$t_stop" --argjson b "$t_cont" \
        '[.[] | select(.status == 200 and .end_ns > $a and .end_ns < $b)] | length' "$hist")
    answer=$(jq -r '"\(.status) \(.error // "sold")"' "$dir/paused.jsonl")
    rid=$(jq -r '.request_id // empty' "$dir/paused.jsonl.body" 2>/dev/null) || rid=""
    landed=$([ -n "$rid" ] && db_order_of "$rid")
    first=$(first_sale_after "$hist" "$t_stop" answered)
    history_judge "$item" "$stock" "$hist" "$t_stop" || return 1
    [ "$during" -gt 0 ] || SCN_FLAW=1
    SCN_GAP_MS=$GAP_MS
    SCN_OBSERVED="holder paused $pause ms in the lock"
    if [ "$table" = leases ]; then
        SCN_OBSERVED="$SCN_OBSERVED with a $ttl_ms ms lease (it ran out, its row's lock_until,"
        SCN_OBSERVED="$SCN_OBSERVED $over ms after the stop; instance 2's first sale answered"
        SCN_OBSERVED="$SCN_OBSERVED $first ms after it)"
    else
        SCN_OBSERVED="$SCN_OBSERVED (no lease: its transaction, the server's thread $held, held"
        SCN_OBSERVED="$SCN_OBSERVED the row lock)"
    fi
    SCN_OBSERVED="$SCN_OBSERVED; instance 2 sold $during during the pause; the paused sale answered"
    SCN_OBSERVED="$SCN_OBSERVED $answer, its orders row: ${landed:-none, nothing written};"
    SCN_OBSERVED="$SCN_OBSERVED longest with no sale $GAP_MS ms; overlaps $OVERLAPS;"
    SCN_OBSERVED="$SCN_OBSERVED answers $(history_answers "$hist"); history $VERDICT;"
    SCN_OBSERVED="$SCN_OBSERVED acknowledged sales lost $LOST; oversold $OVERSOLD"
}
# pause_db_lease ITEM PORT OWNER UNTIL STOP_MS T_STOP PAUSE: within the pause (PAUSE ms from
# T_STOP, mono_now_ns's clock): OWNER's lease over by the database's clock (or taken), then
# another's grant (db_granted_other; PORT: instance 2's). Prints how long after the stop
# (STOP_MS, ms since 1970) the lease ran out by its row (UNTIL: its lock_until, read at the
# stop); fails printing which of the two did not come.
pause_db_lease() {
    local left
    if ! is_uint "$4" || ! wait_until "$(ms_to_s "$7")" "" db_lease_gone "$1" "$3"; then
        echo "the paused holder's lease did not run out by the database's clock in the pause"
        return 1
    fi
    left=$(( $7 - ($(mono_now_ns) - $6) / 1000000 ))
    wait_until "$(ms_to_s "$left")" "" db_granted_other "$1" "$2" "$3" ||
        { echo "instance 2 took no grant while the holder was paused"; return 1; }
    echo $(( $4 - $5 ))
}
# ms_to_s MS: MS (0 at least) in seconds, for wait_until.
ms_to_s() { awk -v m="$1" 'BEGIN { printf "%.3f", (m > 0 ? m : 0) / 1000 }'; }
# db_lease_gone ITEM OWNER: ITEM's leases row gives OWNER no running lease any more: its
# lease over by the database's clock, or the row another's.
db_lease_gone() { db_lease_over "$1" || db_row_other "$1" leases "$2"; }
# db_granted_other ITEM PORT OWNER: another than OWNER took ITEM's lock: its leases row names
# another holder with a lease running, or the probe a sale of the instance on PORT.
db_granted_other() { db_row_other "$1" leases "$3" || db_owner_inside "$1" "$2" >/dev/null; }
