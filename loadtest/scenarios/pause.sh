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
# Rows in loadtest/evolution: v8 shows it, v9 and v11 do not.

# A small stock, so that the stale write shows in the timeline. On ZooKeeper, a session of
# 2 s (the ensemble's shortest).
defaults_pause="ttl=500 wait=10000 stock=40 zk_session=2000"

scenario_pause() {
    local "$@"
    local a b pid work=$((ttl_ms * 2)) answer oversold
    stack_read "$stack" || return 1
    if zk_stack; then pause_on_zookeeper "$@"; return; fi
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
