# cluster-reshard.sh - Slots that move under load, on Redis Cluster: while the history
# client sells across 1,000 items (Zipf 1.1: a few hot items, a long tail), the slots of
# the five hottest items and 2,000 others move from their masters to another and back
# (loadtest/cluster-move: CLUSTER SETSLOT and MIGRATE, slot by slot, as redis-cli
# --cluster reshard does).
#
# The stack: deploy/up --cluster 3 (3 masters, 3 replicas, AOF), the instances on
# --redis-cluster. Load through nginx by build/sale-load (16 keep-alive connections, SECS
# seconds, every answer recorded with the load host's monotonic times). The moves start a
# quarter of the way in; what is left of the load runs after them.
# Then every item's state is read (one pipeline) and the history checked per item
# (loadtest/check-history --final-file).
# Reported: units oversold and items oversold, items whose ledger length is not their
# sold, acknowledged sales lost, units sold twice, the checker's verdict, answers by
# status, the redirects the instances followed (MOVED, ASK, TRYAGAIN and the time spent
# waiting TRYAGAIN out), and the p99 of sales sent before the moves, during them and
# after, with how many answers took 50 ms or more in each.
# Verdict: the flaw when anything was oversold, lost or sold twice, a ledger is off, the
# history is impossible, or an answer was other than 200, 409 or 503 (a redirect leaking
# to the client as an error). Rows in loadtest/evolution: v8 and atomic.

# A stock the run cannot sell out on any item; 1,000 items, Zipf 1.1.
defaults_cluster_reshard="ttl=30000 wait=10000 stock=1000000 cluster items=1000 zipf=1.1"

. "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"

# redirects: "moved ask tryagain tryagain_wait_s" summed over the instances now.
redirects() {
    echo "$(metric_sum 'inventory_redis_redirects_total{kind="moved"}')" \
         "$(metric_sum 'inventory_redis_redirects_total{kind="ask"}')" \
         "$(metric_sum 'inventory_redis_redirects_total{kind="tryagain"}')" \
         "$(metric_sum inventory_redis_tryagain_wait_seconds_total)"
}

# move_slots TO SPEC...: each SPEC "PORT:SLOT,SLOT,..." moved from the master on PORT to
# the one on TO (a SPEC already there is skipped). Prints cluster-move's lines.
move_slots() {
    local to=$1 spec; shift
    for spec in "$@"; do
        [ "${spec%%:*}" != "$to" ] || continue
        REDIS_PASSWORD_FILE=${REDIS_PASSWORD_FILE:-} "$LOADTEST_TOOLS/cluster-move" \
            --from "127.0.0.1:${spec%%:*}" --to "127.0.0.1:$to" --slots "${spec#*:}" || return 1
    done
}

scenario_cluster_reshard() {
    local "$@"
    local hist=$dir/history.jsonl k=${items:-1000} load_pid
    local hot="" spec=() masters target bulk t0 t1 t2 before during after r0 r1
    local j verdict answers others
    secs=${secs:-20}
    stack_read "$stack" || return 1
    [ -n "${CLUSTER_PORTS:-}" ] || { SCN_OBSERVED="no cluster in this stack (deploy/up --cluster 3)"; return 1; }
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    mono_start
    masters=$(cluster_masters)
    # The hottest items' slots, by their masters now; the target: a master that has none
    # of them, else the next one; 2,000 more slots of another master.
    for j in 1 2 3 4 5; do hot="$hot $(item_slot "$(printf item%04d "$j")")"; done
    for j in $hot; do spec+=("$(slot_owner "$j"):$j"); done
    target=$(for p in $masters; do printf '%s\n' "${spec[@]}" | grep -q "^$p:" || echo "$p"; done | head -n 1)
    [ -n "$target" ] || target=$(echo "$masters" | awk 'NR == 2')
    others=$(echo "$masters" | grep -vx "$target" | head -n 1)
    bulk=$(master_slots "$others" 2000)
    r0=$(redirects)
    "$BUILD_DIR/sale-load" --url "http://127.0.0.1:$NGINX_PORT/inventory/sale" -c 16 -d "$secs" \
        $(load_item_args "$k" "${zipf:-1.1}") --history "$hist" > "$dir/load.out" 2>&1 &
    load_pid=$!
    sleep "$(awk -v s="$secs" 'BEGIN { printf "%.2f", s / 4 }')"
    t0=$(mono_now_ns)
    {
        move_slots "$target" "${spec[@]}" &&
        move_slots "$target" "$others:$bulk" &&
        for j in "${spec[@]}"; do move_slots "${j%%:*}" "$target:${j#*:}"; done &&
        move_slots "$others" "$target:$bulk"
    } > "$dir/moves.out" 2>&1 || {
        SCN_OBSERVED="a move failed: $(tail -n 2 "$dir/moves.out" | tr '\n' ' ')"
        kill "$load_pid" 2>/dev/null; wait "$load_pid" 2>/dev/null; return 1; }
    t1=$(mono_now_ns)
    wait "$load_pid" || { SCN_OBSERVED="sale-load failed: $(tail -n 3 "$dir/load.out")"; return 1; }
    t2=$(mono_now_ns)
    sale_load_summary "$dir/load.out" > "$dir/wrk-load.out"
    r1=$(redirects)
    set -- $(items_judge "$hist" "$k" "$stock" "$dir/items")   # oversold items ledger lost twice
    verdict=$(history_verdict "$hist" "$stock" "$dir/items")
    before=$(window_p99 "$hist" 0 "$t0") during=$(window_p99 "$hist" "$t0" "$t1")
    after=$(window_p99 "$hist" "$t1" "$t2")
    answers=$(history_answers "$hist")
    SCN_OVERSOLD=$1
    SCN_FLAW=0
    [ "$1" -le 0 ] && [ "$3" = 0 ] && [ "$4" = 0 ] && [ "$5" = 0 ] && [ "$verdict" = possible ] || SCN_FLAW=1
    jq -e 'all(.status == 200 or .status == 409 or .status == 503)' -s "$hist" > /dev/null || SCN_FLAW=1
    set -- "$@" $r0 $r1
    SCN_OBSERVED="$k items (Zipf ${zipf:-1.1}), 16 connections; the 5 hottest items' slots ($(echo $hot | tr ' ' ',')) moved to :$target, 2,000 slots of :$others too, and all back, in $(( (t1 - t0) / 1000000 )) ms ($(jq -s 'map(.slots) | add' "$dir/moves.out") slot moves, $(jq -s 'map(.keys) | add' "$dir/moves.out") keys); oversold $1 (items $2), ledgers off $3, acknowledged sales lost $4, sold twice $5, history $verdict; answers $answers; followed MOVED $(( ${10:-0} - ${6:-0} )), ASK $(( ${11:-0} - ${7:-0} )), TRYAGAIN $(( ${12:-0} - ${8:-0} )) ($(awk -v a="${9:-0}" -v b="${13:-0}" 'BEGIN { printf "%.2f", b - a }') s waited); p99 before ${before% *} ms (${before#* } sales), during ${during% *} ms (${during#* }), after ${after% *} ms (${after#* }); answers of 50 ms or more: before $(slow_answers "$hist" 0 "$t0" 50), during $(slow_answers "$hist" "$t0" "$t1" 50), after $(slow_answers "$hist" "$t1" "$t2" 50)"
}
