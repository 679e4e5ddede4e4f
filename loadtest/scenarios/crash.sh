# crash.sh - v3's flaw: the holder dies (kill -9) and its lock key, with no TTL, stays forever.
#
# Instance 1's sale takes the lock (and would work 30 s); instance 1 is killed -9 while it
# holds it. A lease-based lock (v4 on) frees the key about one TTL later; three sales on
# instance 2 follow, each waiting up to the wait limit.
# Verdict: the flaw (SCN_FLAW=1) when the key was left with no TTL (PTTL -1) and is still
# held, all three later sales answered 503 (lock_timeout) and sold:{I} did not move; the
# scenario then DELs the key by hand, the only way out, and sells once more.
# On ZooKeeper (v11) the lock is an ephemeral node, whose lease is its session: there,
# instance 2 sells on (two connections, every answer recorded) from the kill until the
# session timeout and 3 s more; the flaw is no sale within the session timeout plus one
# second of the kill, or a history the checker finds impossible, or anything oversold or
# lost (crash_on_zookeeper).
# In the database (v12..v15: crash_on_database), instance 1's sale is seen inside the lock
# in the database before the kill (the probe names it; the lock's row, v12's in locks or
# v13's lease in leases, names the same owner; for v15, a transaction holds the row lock),
# and the probe is emptied after it. A lock's row is watched as on Redis (a lease: until it
# runs out by the database's clock); v15's lock dies with its holder's connection, which
# the server drops at once. Then three sales on instance 2, recorded (their times).
# Verdict: the flaw when the lock's row still names the dead owner, all three later sales
# answered 503 (lock_timeout) and sold (the items row) did not move; the scenario then
# deletes the row by hand and sells once more. Else the first sale sent after the lock's
# freeing as the database showed it (v15: the kill) must be answered 200 within a second
# of being sent, and nothing be oversold, lost or sold twice: the row's gap is the first
# 200's time after the kill.
# Rows in loadtest/evolution: v3 shows it, v4, v8 and v11 do not; v12 shows it, v13 and v15
# do not.

# Short lease and wait: a lease frees the key within a second; a stuck sale gives up in 1 s.
# On ZooKeeper, a session of 2 s (the ensemble's shortest).
defaults_crash="ttl=500 wait=1000 zk_session=2000"

scenario_crash() {
    local "$@"
    local a b i ttl stuck=1 code ok_after=0 freed_ms=-1 t0
    local sold_before sold_after
    stack_read "$stack" || return 1
    if zk_stack; then crash_on_zookeeper "$@"; return; fi
    if db_stack; then crash_on_database "$@"; return; fi
    a=$(port_of 1); b=$(port_of 2)
    sale_bg "$dir" "$item" "$a" "work_ms=30000"
    wait_until 5 "" lock_held "$item" || { SCN_OBSERVED="the first sale never took the lock"; return 1; }
    nap 0.05
    kill -9 "$(pid_of 1)"
    t0=$(date +%s%N)
    # The killed sale never leaves the probe; a dead process is not in the critical
    # section, and no other sale is in it now: empty the probe so it counts only the living.
    rcli del "$(item_key probe "$item")" >/dev/null
    ttl=$(rcli pttl "$(item_key lock "$item")")
    # A lease-based lock frees itself about one TTL after its holder died; give it four.
    wait_until $(( ttl_ms * 4 / 1000 + 1 )) "" lock_free "$item" && freed_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    sold_before=$(item_get sold "$item")
    for i in 1 2 3; do                       # each waits up to the wait limit
        code=$(sale_fg "$dir" "$item" "$b")
        [ "$code" = 503 ] || stuck=0
        [ "$code" = 200 ] && ok_after=$((ok_after+1))
    done
    sold_after=$(item_get sold "$item")
    if [ "$stuck" = 1 ] && [ "$ttl" = -1 ] && lock_held "$item" && [ "${sold_after:-0}" = "${sold_before:-0}" ]; then
        rcli del "$(item_key lock "$item")" >/dev/null      # the only way out: by hand
        code=$(sale_fg "$dir" "$item" "$b")
        SCN_OBSERVED="holder killed: lock key left with no TTL (PTTL $ttl), 3 of 3 later sales lock_timeout, nothing sold; after a DEL by hand: $code"
        SCN_FLAW=1
    else
        SCN_OBSERVED="holder killed: lock key PTTL $ttl ms, freed ${freed_ms} ms after the kill; $ok_after of 3 later sales sold"
        SCN_FLAW=0
    fi
    bg_wait
}

# crash_on_zookeeper WORD...: the crash on ZooKeeper, with scenario_crash's words: instance
# 1's sale takes the lock (30 s of work; its grant seen in its /metrics) and instance 1 is
# killed -9 holding it; instance 2 sells on, build/sale-load with two connections, from
# the kill until the session timeout (instance 1's, from its log) and 3 s more, every
# answer in DIR/history.jsonl with the killed sale's. Sets SCN_FLAW and SCN_OBSERVED.
crash_on_zookeeper() {
    local "$@"
    local a b session t_kill first within=no hist=$dir/history.jsonl
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    a=$(port_of 1); b=$(port_of 2)
    zk_hold "$dir" "$item" "$a" "work_ms=30000" "$dir/held.jsonl" || return 1
    session=$SESSION
    nap 0.05
    kill -9 "$(pid_of 1)"
    t_kill=$(mono_now_ns)
    "$BUILD_DIR/sale-load" --url "http://127.0.0.1:$b/inventory/sale?item=$item" -c 2 \
        -d $(( session / 1000 + 3 )) --history "$hist" > "$dir/load.out" 2>&1 ||
        { SCN_OBSERVED="sale-load failed: $(tail -n 3 "$dir/load.out")"; return 1; }
    sale_load_summary "$dir/load.out" > "$dir/wrk-load.out"
    bg_wait
    cat "$dir/held.jsonl" >> "$hist"
    first=$(first_sale_after "$hist" "$t_kill" answered)
    history_judge "$item" "$stock" "$hist" "$t_kill" || return 1
    [ "$first" -lt 0 ] || [ "$first" -gt $(( session + 1000 )) ] || within=yes
    [ "$within" = yes ] || SCN_FLAW=1
    SCN_OBSERVED="holder killed -9 holding the lock (session timeout $session ms): the next sale on the other instance $first ms after the kill (within the session + 1 s: $within); answers $(history_answers "$hist"); history $VERDICT; acknowledged sales lost $LOST; oversold $OVERSOLD"
}

# crash_on_database WORD...: the crash in the database, with scenario_crash's words:
# instance 1's sale takes the lock (30 s of work) and is seen inside it in the database
# (db_held_by); instance 1 is killed -9 and the probe emptied. The lock's row, where the
# version has one, is watched for four leases at most (freed: gone, or its lease over by
# the database's clock); v15's row lock is freed with the holder's connection (the
# server's thread of the holding transaction gone). Then three sales on instance 2, each
# waiting up to the wait limit, recorded in DIR/history.jsonl. Sets SCN_FLAW, SCN_OBSERVED
# and SCN_GAP_MS (the first sale after the kill, in ms).
crash_on_database() {
    local "$@"
    local a b table owner thread="" t_kill freed=-1 row i code ok=0 stuck=1 first
    local sold_before hist=$dir/history.jsonl how watch=$(( ttl_ms * 4 / 1000 + 1 ))
    db_playable || return 1
    a=$(port_of 1); b=$(port_of 2); table=$(db_lock_table "$lock")
    mono_start
    sale_bg "$dir" "$item" "$a" "work_ms=30000"
    if ! owner=$(db_wait_held "$item" "$a" "$lock"); then
        bg_wait
        SCN_OBSERVED="not played: the database never showed instance 1's sale inside the lock"
        return 1
    fi
    [ -n "$table" ] || thread=$(db_trx_holding)
    nap 0.05
    kill -9 "$(pid_of 1)"
    t_kill=$(mono_now_ns)
    db_probe_clear "$item"
    # Freed as the database shows it: the row gone or its lease over; the holder's
    # connection gone (v15).
    if [ -n "$table" ]; then
        wait_until "$watch" "" db_crash_freed "$table" "$item" "$owner" &&
            freed=$(( ($(mono_now_ns) - t_kill) / 1000000 ))
        row=$(db_row "$table" "$item")
    else
        wait_until 5 "" db_thread_gone "$thread" && freed=$(( ($(mono_now_ns) - t_kill) / 1000000 ))
    fi
    sold_before=$(sold_now "$item")
    for i in 1 2 3; do                       # each waits up to the wait limit
        code=$(sale_hist "$dir" "$item" "$b" "" "$hist")
        [ "$code" = 503 ] || stuck=0
        [ "$code" = 200 ] && ok=$((ok+1))
    done
    # One read of the history: the first 200 answered after the kill (first_sale_after's
    # "answered", ms after the kill, -1 when none), and the first request sent after it: its
    # status, when it was sent and answered (ms after the kill). The script sends it once
    # the lock shows freed: what it then waits is the lock's, not this script's own steps
    # on busy cores.
    set -- $(jq -rs --argjson t "$t_kill" '
        ([.[] | select(.status == 200 and .end_ns >= $t) | .end_ns] | min
         | if . then ((. - $t) / 1e6 | floor) else -1 end) as $first
        | [.[] | select(.start_ns >= $t)] | min_by(.start_ns)
        | if . then "\($first) \(.status) \((.start_ns - $t) / 1e6 | floor) \((.end_ns - $t) / 1e6 | floor)"
          else "\($first) 000 -1 -1" end' "$hist")
    first=$1
    local next_code=$2 next_sent=$3 next_took=$(( $4 - $3 ))
    if [ "$stuck" = 1 ] && [ "$freed" -lt 0 ] && [ "$(sold_now "$item")" = "$sold_before" ] &&
       db_row_names "$table" "$item" "$owner"; then
        db_sql "DELETE FROM inventory.$table WHERE name = $(db_lit "$item")" >/dev/null  # by hand
        code=$(sale_fg "$dir" "$item" "$b")
        SCN_OBSERVED="holder killed -9: its row in $table still names it,"
        SCN_OBSERVED="$SCN_OBSERVED $(( ${row%% *} / 1000 )) s after it was taken; 3 of 3 later"
        SCN_OBSERVED="$SCN_OBSERVED sales lock_timeout, nothing sold; after a DELETE of the row by"
        SCN_OBSERVED="$SCN_OBSERVED hand: $code"
        SCN_FLAW=1
        bg_wait
        return 0
    fi
    bg_wait
    history_judge "$item" "$stock" "$hist" "$t_kill" || return 1
    [ "$first" -ge 0 ] && [ "$freed" -ge 0 ] && [ "$next_code" = 200 ] && [ "$next_sent" -ge "$freed" ] &&
        [ "$next_took" -le 1000 ] || SCN_FLAW=1
    [ "$first" -lt 0 ] || SCN_GAP_MS=$first
    if [ "$freed" -lt 0 ]; then
        how="the database did not free its lock in $watch s"
    elif [ "$table" = leases ] && [ -n "$row" ] && [ "${row#* }" = "$owner" ]; then
        how="its leases row ran out by the database's clock $freed ms after the kill (it names"
        how="$how the dead owner, its lease over by $(( -${row%% *} )) ms)"
    elif [ -n "$table" ]; then
        how="its row in $table gone or taken $freed ms after the kill"
    else
        how="its connection (the server's thread $thread) gone $freed ms after the kill, and the"
        how="$how row lock with it"
    fi
    SCN_OBSERVED="holder killed -9 holding the lock: $how; the next sale sent $next_sent ms after"
    SCN_OBSERVED="$SCN_OBSERVED the kill answered $next_code in $next_took ms; $ok of 3 later sales sold, the first"
    SCN_OBSERVED="$SCN_OBSERVED $first ms after the kill; answers $(history_answers "$hist");"
    SCN_OBSERVED="$SCN_OBSERVED history $VERDICT; acknowledged sales lost $LOST; oversold $OVERSOLD"
}
# db_crash_freed TABLE ITEM OWNER: ITEM's lock is free by TABLE's row as the database shows
# it: no row naming OWNER, or its lease over.
db_crash_freed() {
    local r; r=$(db_row "$1" "$2") || return 1
    [ -z "$r" ] || [ "${r#* }" != "$3" ] || { [ "$1" = leases ] && [ "${r%% *}" -le 0 ]; }
}
