# release-gap.sh - v5's flaw: release's DEL, after its lease ran out, deletes another's lock.
#
# A's sale (instance 1) releases slowly: its release checks ownership, then sleeps 1.7
# TTLs before its delete; its answer comes once the delete is sent. Each step waits for
# the event it needs, as Redis and the answers show it (each wait bounded): once A's lock
# is seen held and then gone (its lease ran out; one redis-cli asks every 10 ms), B
# (instance 2, work 0.9 TTL) is sent and takes the lock; once A has answered (its delete
# done, B still inside), C is sent on instance 2. Where an event does not come, the run is
# "not played". B is inside at A's delete when its grant comes within 0.7 TTL of A's lease
# running out (1.4 s; with 1.5 TTLs, 1 s was once too little on two busy cores).
# Verdict: the flaw when inventory_lock_stolen_total, summed over the instances' /metrics,
# is > 0: B found its lock deleted by another while its own lease still ran (A deleted
# it, and C could enter beside B). v6's compare-and-delete in one Lua script cannot.
# Rows in loadtest/evolution: v5 shows it, v6 does not.

defaults_release_gap="ttl=2000 wait=10000"

scenario_release_gap() {
    local "$@"
    local a b gap=$((ttl_ms * 17 / 10)) stolen a_pid b_pid bound_s
    stack_read "$stack" || return 1
    a=$(port_of 1); b=$(port_of 2)
    bound_s=$(awk "BEGIN{print $ttl_ms * 3 / 1000}")
    sale_bg "$dir" "$item" "$a" "release_gap_ms=$gap"    # A: sells, then releases slowly
    a_pid=$!
    if ! wait_until "$bound_s" "$a_pid" lock_held "$item" ||
       ! lock_gone "$item" "$(( ttl_ms * 3 / 1000 ))"; then
        bg_wait; SCN_OBSERVED="not played: A's lock was not seen held, then run out, before A answered"; return 1
    fi
    sale_bg "$dir" "$item" "$b" "work_ms=$((ttl_ms * 9 / 10))"   # B: takes the free lock
    b_pid=$!
    wait "$a_pid" 2>/dev/null    # A's delete sent (curl's own bound: 60 s)
    if pid_gone "$b_pid"; then
        bg_wait; SCN_OBSERVED="not played: B's sale had answered before A's release was done"; return 1
    fi
    sale_bg "$dir" "$item" "$b" ""                       # C: enters if B's lock was deleted
    bg_wait
    stolen=$(metric_sum inventory_lock_stolen_total)   # deploy/lib.sh's, over the stack's instances
    SCN_FLAW=0
    [ "${stolen:-0}" -gt 0 ] && SCN_FLAW=1
    SCN_OBSERVED="foreign deletes seen by the holder: ${stolen:-0}; overlaps $(overlaps_now "$item")"
}
