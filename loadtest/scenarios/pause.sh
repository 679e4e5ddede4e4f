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
# Rows in loadtest/evolution: v8 shows it, v9 does not.

# A small stock, so that the stale write shows in the timeline.
defaults_pause="ttl=500 wait=10000 stock=40"

scenario_pause() {
    local "$@"
    local a b pid work=$((ttl_ms * 2)) answer oversold
    stack_read "$stack" || return 1
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
