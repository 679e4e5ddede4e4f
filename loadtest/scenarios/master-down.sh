# master-down.sh - v10 (redlock) without one master: a quorum is enough, sales go on.
#
# wrk loads both instances (4 connections each, 3 s); a second in, the first of the three
# lock masters is killed -9. Redlock's lock is on a majority of independent masters, so
# losing one of three (f = 1) must not stop the sales. Redlock stacks only (MASTER_PIDS).
# Verdict: the flaw when no sale landed in Redis after the kill (sold:{I} did not move),
# or Redis shows anything oversold. The time from the kill to the first sale after it is
# the row's longest time with no sale (SCN_GAP_MS).
# Rows in loadtest/evolution: v10, which must not show it.

# A stock large enough that the load never sells out.
defaults_master_down="ttl=2000 wait=3000 stock=100000"

scenario_master_down() {
    local "$@"
    local at after t0
    stack_read "$stack" || return 1
    [ -n "${MASTER_PIDS:-}" ] || { SCN_OBSERVED="no lock masters in this stack (redlock only)"; return 1; }
    load_bg "$dir" "$item" "$(port_of 1)" 4 3 "" md1
    load_bg "$dir" "$item" "$(port_of 2)" 4 3 "" md2
    sleep 1
    kill_master 1
    t0=$(date +%s%N)
    at=$(sold_now "$item")
    # The time with no sale the kill made: to the first sale after it (none in 2 s: not
    # measured, and the row's gap null).
    SCN_GAP_MS=""
    wait_until 2 "" sold_at_least "$item" $((at + 1)) && SCN_GAP_MS=$(( ($(date +%s%N) - t0) / 1000000 ))
    bg_wait
    after=$(( $(sold_now "$item") - at ))
    SCN_FLAW=0
    [ "$after" -gt 0 ] && [ "$(oversold_now "$item" "$stock")" = 0 ] || SCN_FLAW=1
    SCN_OBSERVED="one lock master of $(echo $MASTER_PORTS | wc -w) killed mid-load: $([ -n "$SCN_GAP_MS" ] && echo "the first sale $SCN_GAP_MS ms after the kill" || echo "no sale within 2 s of the kill"), $after sales after it; oversold $(oversold_now "$item" "$stock")"
}
