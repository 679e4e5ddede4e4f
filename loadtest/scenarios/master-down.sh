# master-down.sh - v10 (redlock) without one master: a quorum is enough, sales go on.
#
# wrk loads both instances (4 connections each, 3 s); a second in, the first of the three
# lock masters is killed -9. Redlock's lock is on a majority of independent masters, so
# losing one of three (f = 1) must not stop the sales. Redlock stacks only (MASTER_PIDS).
# Verdict: the flaw when no sale landed in Redis after the kill (sold:{I} did not move),
# or Redis shows anything oversold.
# Rows in loadtest/evolution: v10, which must not show it.

# A stock large enough that the load never sells out.
defaults_master_down="ttl=2000 wait=3000 stock=100000"

scenario_master_down() {
    local "$@"
    local at after
    stack_read "$stack" || return 1
    [ -n "${MASTER_PIDS:-}" ] || { SCN_OBSERVED="no lock masters in this stack (redlock only)"; return 1; }
    load_bg "$dir" "$item" "$(port_of 1)" 4 3 "" md1
    load_bg "$dir" "$item" "$(port_of 2)" 4 3 "" md2
    sleep 1
    kill_master 1
    at=$(sold_now "$item")
    bg_wait
    after=$(( $(sold_now "$item") - at ))
    SCN_FLAW=0
    [ "$after" -gt 0 ] && [ "$(oversold_now "$item" "$stock")" = 0 ] || SCN_FLAW=1
    SCN_OBSERVED="one lock master of $(echo $MASTER_PORTS | wc -w) killed mid-load: $after sales after the kill; oversold $(oversold_now "$item" "$stock")"
}
