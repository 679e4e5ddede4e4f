# long-work.sh - v4's and v7's flaw: the work outlasts the lease, a second holder enters.
#
# One sale on instance 1 takes the lock and works three TTLs; then wrk sends sales (work
# 100 ms each, 4 connections) to instance 2 for as long. The long sale holds the lock
# first, so that the others cannot starve it: what happens next is up to the lock. Stock
# and sold are sampled every 100 ms into the run's timeline.
# Verdict: the flaw when overlaps:{I} > 0 (the overlap probe saw two sales inside the
# critical section at once); the stale write then oversells, seen in the timeline as
# the stock jumping back up. v8's watchdog renews the lease while the work runs: none.
# Rows in loadtest/evolution: v4 and v7 show it, v8 does not.

# A small stock, so that the stale write shows in the timeline.
defaults_long_work="ttl=500 wait=10000 stock=40"

scenario_long_work() {
    local "$@"
    local a b work=$((ttl_ms * 3)) overlaps seen
    stack_read "$stack" || return 1
    a=$(port_of 1); b=$(port_of 2)
    sampler_start "$dir" "$item"
    lock_seen "$item" 5 & seen=$!
    sale_bg "$dir" "$item" "$a" "work_ms=$work"
    wait "$seen" || { bg_wait; sampler_stop; SCN_OBSERVED="not played: the long sale's lock was not seen within 5 s"; return 1; }
    load_bg "$dir" "$item" "$b" 4 $(( work / 1000 + 2 )) "work_ms=100" long
    bg_wait
    sampler_stop
    overlaps=$(item_get overlaps "$item"); overlaps=${overlaps:-0}
    SCN_FLAW=0
    [ "$overlaps" -gt 0 ] && SCN_FLAW=1
    SCN_OBSERVED="one sale worked ${work} ms on a ${ttl_ms} ms lease while others sold; overlaps $overlaps"
}
