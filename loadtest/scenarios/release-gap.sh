# release-gap.sh - v5's flaw: release's DEL, after its lease ran out, deletes another's lock.
#
# A's sale (instance 1) releases slowly: its release checks ownership, then sleeps 1.5
# TTLs before its delete. At 1.15 TTL, A's lease gone, B (instance 2, work 0.75 TTL)
# takes the lock; at 1.6 TTL, C arrives on instance 2 while B still works.
# Verdict: the flaw when inventory_lock_stolen_total, summed over the instances' /metrics,
# is > 0: B found its lock deleted by another while its own lease still ran (A deleted
# it, and C could enter beside B). v6's compare-and-delete in one Lua script cannot.
# Rows in loadtest/evolution: v5 shows it, v6 does not.

defaults_release_gap="ttl=2000 wait=10000"

scenario_release_gap() {
    local "$@"
    local a b gap=$((ttl_ms * 3 / 2)) stolen
    stack_read "$stack" || return 1
    a=$(port_of 1); b=$(port_of 2)
    sale_bg "$dir" "$item" "$a" "release_gap_ms=$gap"    # t=0: sells, then releases slowly
    sleep "$(awk "BEGIN{print $ttl_ms * 1.15 / 1000}")"  # its lease has run out
    sale_bg "$dir" "$item" "$b" "work_ms=$((ttl_ms * 3 / 4))"   # B holds from ~1.15 TTL to ~1.9 TTL
    sleep "$(awk "BEGIN{print $ttl_ms * 0.45 / 1000}")"  # A's step runs at 1.5 TTL, B inside
    sale_bg "$dir" "$item" "$b" ""                       # C: enters if B's lock was deleted
    bg_wait
    stolen=$(metric_sum inventory_lock_stolen_total)   # deploy/lib.sh's, over the stack's instances
    SCN_FLAW=0
    [ "${stolen:-0}" -gt 0 ] && SCN_FLAW=1
    SCN_OBSERVED="foreign deletes seen by the holder: ${stolen:-0}; overlaps $(overlaps_now "$item")"
}
