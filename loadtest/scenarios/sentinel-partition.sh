# sentinel-partition.sh - Jepsen's partition (2013) of Redis under Sentinel, with a lock
# and a stock: what the old master sells while it is cut off, and what the promoted
# replica forgets of it.
#
# Five test hosts (deploy/hosts; scenarios/hosts.sh), laid out as Jepsen did:
#   h1: the master, a sentinel, instance A and its clients
#   h2: a replica, a sentinel
#   h3: a replica, a sentinel
#   h4: a sentinel, instance B and its clients
#   h5: a sentinel
# Five sentinels, quorum 3, down after 500 ms. Each side's clients (build/sale-load, 8
# keep-alive connections, every answer in a history) sell through their own instance.
# After 3 s the network is cut {h1,h2} | {h3,h4,h5} for SECS seconds, then healed, and
# the load goes on until 2 s after the sentinels demoted the old master (15 s at most). On the minority side, A keeps selling on the old master
# (its two sentinels name it still); the majority's sentinels promote h3, and B follows
# them. After the heal the sentinels demote the old master (it becomes h3's replica and
# drops what it took alone): every sale it acknowledged since the cut is lost, and each
# of those units is sold again: sold twice.
# Reported: the checker's verdict on both histories; acknowledged sales lost (200s beyond
# what the stock says was sold); stock sold twice; the sales A made on the old master
# during the cut and after the heal until the demotion; when the majority promoted and
# B's first sale after it; the longest time with no sale; answers by status.
# Verdict: the flaw when acknowledged sales were lost (or the checker finds the history
# impossible), whatever the lock: the lock lives in the same Redis and splits with it.
#
# Variants (what Redis offers; loadtest/evolution rows):
#   sentinel-partition-min1  min-replicas-to-write 1, min-replicas-max-lag 10 on every data
#                            server: the old master keeps its replica on h2, so nothing stops
#   sentinel-partition-min2  min-replicas-to-write 2, min-replicas-max-lag 1: the old master
#                            refuses writes once h3's acknowledgements are a second old, so
#                            it sells only in that window
#   sentinel-partition-wait  the instances' --replicas 2: a grant and a sale answer 200
#                            only once both replicas acknowledged them (WAIT 2, sent after
#                            the script on its connection); short of it, outcome_unknown
#                            (503): no 200 on the minority side after the cut
# (now_ms, sale_load_summary, mono_start, mono_now_ns: deploy/lib.sh's; history_report,
# history_check, history_answers: lib.sh's.)

defaults_sentinel_partition="ttl=2000 wait=3000 stock=1000000 hosts=5"
defaults_sentinel_partition_min1=$defaults_sentinel_partition
defaults_sentinel_partition_min2=$defaults_sentinel_partition
defaults_sentinel_partition_wait=$defaults_sentinel_partition

MINORITY="h1 h2" MAJORITY="h3 h4 h5"

# partition_stack RUN FSYNC ITEM STOCK REDIS_ARGS [INSTANCE_ARG...]: the layout above in
# the run directory RUN, ITEM's stock set to STOCK; REDIS_ARGS (words, split) go to every
# data server, INSTANCE_ARGs (instance_flags) to both instances.
partition_stack() {
    local h run=$1 fsync=$2 item=$3 stock=$4 redis_args=$5; shift 5
    hosts_stack_up "$run" 5 "$fsync" || { SCN_OBSERVED="deploy/hosts up 5 failed"; return 1; }
    host_redis h1 $redis_args || { SCN_OBSERVED="the master on h1 did not start"; return 1; }
    for h in h2 h3; do
        host_redis "$h" --replicaof "$REDIS_HOST" "$REDIS_PORT" $redis_args ||
            { SCN_OBSERVED="the replica on $h did not start"; return 1; }
    done
    wait_until 10 "" replica_acks "$REDIS_HOST" "$REDIS_PORT" 2 ||
        { SCN_OBSERVED="the replicas did not acknowledge a write"; return 1; }
    for h in h1 h2 h3 h4 h5; do host_sentinel "$h" 3; done
    wait_until 20 "" sentinels_ready ||
        { SCN_OBSERVED="the five sentinels did not find each other and both replicas"; return 1; }
    for h in h1 h4; do
        host_instance "$h" "$@" || { SCN_OBSERVED="instance $h did not start: $(tail -n 2 "$STACK_DIR/instance-$h.log")"; return 1; }
    done
    item_set "$item" "$stock" >/dev/null && rcli del "$(item_key sold "$item")" "$(item_key orders "$item")" >/dev/null
}

# majority_names_other OLD: a majority sentinel (h5's) names a master other than OLD, and
# that server says it is one.
majority_names_other() {
    local at
    at=$(HOSTS_VIA=h5 sentinel_names "$(host_addr h5):$H_SENTINEL_PORT") && [ "$at" != "$1" ] &&
        [ "$(HOSTS_VIA=h5 role_of "$at")" = master ]
}
# demoted ADDR: the server at ADDR says it is a replica.
demoted() { [ "$(role_of "$1")" = slave ]; }

# side_sales HISTORY FROM_NS TO_NS: the 200s of HISTORY answered between FROM_NS and TO_NS.
side_sales() {
    jq -s --argjson a "$2" --argjson b "$3" \
        '[.[] | select(.status == 200 and .end_ns >= $a and .end_ns < $b)] | length' "$1"
}
# lost_when DIR CUT_NS HEAL_NS: the units sold twice (DIR's histories A and B), by when the sale that is lost was
# answered: "BEFORE DURING AFTER" (before the cut, during it, after the heal). Of the two
# 200s that answered one remaining, the lost one is the old master's: one answered before
# the cut (all were on the old master then: a write the promoted replica had not copied
# yet); else A's, if the other is B's (B reached only the new master after the cut); else
# (both A's: A moved after the heal) the earlier.
lost_when() {
    jq -rn --argjson cut "$2" --argjson heal "$3" \
        --slurpfile a "$1/history-A.jsonl" --slurpfile b "$1/history-B.jsonl" '
        [($a | map(. + {side: 0})), ($b | map(. + {side: 1}))] | add
        | map(select(.status == 200)) | group_by(.remaining) | map(select(length > 1))
        | map(sort_by([(if .end_ns < $cut then 0 else 1 end), .side, .end_ns]) | .[0:length - 1][])
        | [(map(select(.end_ns < $cut)) | length), (map(select(.end_ns >= $cut and .end_ns < $heal)) | length),
           (map(select(.end_ns >= $heal)) | length)] | map(tostring) | join(" ")'
}

scenario_sentinel_partition() { partition_play "" "$@"; }
scenario_sentinel_partition_min1() { partition_play "--min-replicas-to-write 1 --min-replicas-max-lag 10" "$@"; }
scenario_sentinel_partition_min2() { partition_play "--min-replicas-to-write 2 --min-replicas-max-lag 1" "$@"; }
scenario_sentinel_partition_wait() { partition_play "" "$@" replicas=2; }

# partition_play REDIS_ARGS WORD...: plays the scenario (the words: scenarios/lib.sh's) on
# the layout with REDIS_ARGS (words, split) on every data server.
partition_play() {
    local redis_args=$1; shift
    local "$@"
    local cut_s=${secs:-10} before_s=3 after_s=15 total old new hist=$dir/history.jsonl
    local cut_ns heal_ns prom_ns demote_ns final verdict counts lost setting svc
    local during during_late after first_b in_ns
    setting="$redis_args${replicas:+--replicas $replicas (WAIT on the grant and the sale)}"
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    mapfile -t svc < <(instance_flags "$@")
    partition_stack "$stack" "$fsync" "$item" "$stock" "$redis_args" "${svc[@]}" || return 1
    mono_start
    old=$REDIS_HOST:$REDIS_PORT
    total=$(( before_s + cut_s + after_s ))
    host_load "$dir" "$item" h1 "$total" 8 A
    host_load "$dir" "$item" h4 "$total" 8 B
    sleep "$before_s"
    # The cut is six links, all at once (about 0.1 s; on a busy machine more): cut_ns is
    # when it was asked, in_ns when every link was in place: "more than 1 s into the cut"
    # counts from in_ns (a sale answered earlier may have been acknowledged by h3 before).
    cut_ns=$(mono_now_ns)
    hosts_cut "$MINORITY" "$MAJORITY"
    in_ns=$(mono_now_ns)
    wait_until "$cut_s" "" majority_names_other "$old" && prom_ns=$(mono_now_ns) || prom_ns=""
    sleep_until $(( cut_ns + cut_s * 1000000000 ))
    hosts_heal
    heal_ns=$(mono_now_ns)
    # The old master goes on as a master until the sentinels demote it (they wait a few
    # seconds for its role to settle before they send it REPLICAOF).
    wait_until "$after_s" "" demoted "$old" && demote_ns=$(mono_now_ns) || demote_ns=""
    # Two seconds more of sales on the mended stack, then the loads end: what was left of
    # their time (up to after_s) showed nothing more.
    sleep 2
    loads_stop "$dir"
    bg_wait
    loads_done "$dir" A B || return 1
    wait_until 10 "" sentinels_agree || true
    new=$(current_master) || { SCN_OBSERVED="no master after the heal"; return 1; }
    counts=$(item_counts "$item") || { SCN_OBSERVED="the stock of $item could not be read"; return 1; }
    final=${counts%% *}
    verdict=$(history_check "$hist" "$stock" $counts) ||
        { SCN_OBSERVED="check-history could not read the history: $verdict"; return 1; }
    set -- $(history_report "$hist" "$cut_ns")   # sales gap_ms gap_from_ms first_after_cut_ms sold_twice
    lost=$(acked_lost "$stock" "$1" "$final")
    read -r lost_before lost_during lost_after < <(lost_when "$dir" "$cut_ns" "$heal_ns")
    during=$(side_sales "$dir/history-A.jsonl" "$cut_ns" "$heal_ns")
    during_late=$(side_sales "$dir/history-A.jsonl" $(( in_ns + 1000000000 )) "$heal_ns")
    after=$(side_sales "$dir/history-A.jsonl" "$heal_ns" "${demote_ns:-$heal_ns}")
    first_b=-1; [ -z "$prom_ns" ] || first_b=$(first_sale_after "$dir/history-B.jsonl" "$prom_ns")
    SCN_FLAW=0
    [ "$lost" = 0 ] && [ "$5" = 0 ] && [ "$verdict" = possible ] || SCN_FLAW=1
    SCN_OBSERVED="cut {h1,h2}|{h3,h4,h5} for ${cut_s} s${setting:+ with $setting} (in place $(( (in_ns - cut_ns) / 1000000 )) ms after it was asked): the majority promoted $([ -n "$prom_ns" ] && echo "${new%:*} $(( (prom_ns - cut_ns) / 1000000 )) ms after the cut, B's first sale $first_b ms after that" || echo "no replica during the cut"); A sold $during on the old master during the cut ($during_late of them more than 1 s into it), and $after between the heal and the old master's demotion$([ -n "$demote_ns" ] && echo " ($(( (demote_ns - heal_ns) / 1000000 )) ms after the heal)" || echo " (not demoted within ${after_s} s)"); history $verdict; acknowledged sales lost $lost; sold twice $5 (the lost sale of each answered before the cut $lost_before, during it $lost_during, after the heal $lost_after); longest with no sale $2 ms (from $3 ms after the cut); answers $(history_answers "$dir/history-A.jsonl" "$dir/history-B.jsonl")"
}

