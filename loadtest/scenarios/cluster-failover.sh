# cluster-failover.sh - A master of a Redis Cluster killed -9 mid-load: its replica is
# promoted by the cluster itself (no sentinels), the instances follow the new map, and
# the history says what the asynchronous copy lost: the Sentinel lesson on the other
# engine.
#
# The stack: deploy/up --cluster 3 (3 masters, each with one asynchronous replica, AOF;
# cluster-node-timeout 2 s), the instances on --redis-cluster. Load through nginx by
# build/sale-load (16 keep-alive connections, SECS seconds, 1,000 items, Zipf 1.1), every
# answer recorded with the load host's monotonic times. A third of the way in, the master
# of the hottest item is killed -9; its replica is polled (ROLE) until it says master.
# Then every item's state is read and the history checked per item.
# Reported: the kill to the promotion; the first sale of an item of the dead master's
# slots answered after the promotion (how fast the instances followed the new map), and
# the longest time those items had no sale; acknowledged sales lost and units sold twice
# (what the replica had not received), the checker's verdict, answers by status.
# Verdict: the flaw when the instances took more than a second after the promotion to
# sell those items again, or an answer was other than 200, 409 or 503. The checker's
# verdict is reported, not judged, as in sentinel-failover: a replica promoted after an
# asynchronous copy may lack the last sales the master acknowledged, whatever the lock.
# Rows in loadtest/evolution: v8 and atomic.

defaults_cluster_failover="ttl=30000 wait=10000 stock=1000000 cluster items=1000 zipf=1.1"

. "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"

# replica_of PORT: the port of a replica of the master on PORT (as the replica's ROLE says).
replica_of() {
    local p
    for p in $CLUSTER_PORTS; do
        [ "$(cluster_cli "$p" role 2>/dev/null | sed -n '1p;3p' | paste -sd' ')" = "slave $1" ] &&
            { echo "$p"; return 0; }
    done
    return 1
}

# items_on DIR PORT K: the items of item0001..K whose slots the master on PORT serves, one
# a line (DIR: its work files).
items_on() {
    local dir=$1; shift
    seq -f "item%04g" 1 "$2" > "$dir/items.txt"
    item_key stock $(cat "$dir/items.txt") | sed 's/^/CLUSTER KEYSLOT /' | cluster_cli "$1" |
        paste "$dir/items.txt" - > "$dir/slots.txt"
    cluster_cli "$1" --json cluster slots |
        jq -r --argjson p "$1" '.[] | select(.[2][1] == $p) | "\(.[0]) \(.[1])"' |
        awk 'NR == FNR { lo[NR] = $1; hi[NR] = $2; n = NR; next }
             { for (i = 1; i <= n; i++) if (lo[i] <= $2 && $2 <= hi[i]) { print $1; next } }' - "$dir/slots.txt"
}

# first_sale_of HISTORY ITEMS_FILE T_NS: ms from T_NS to the first 200 of one of those
# items answered after it; -1: none.
first_sale_of() {
    jq -s --argjson t "$3" --rawfile items "$2" '
        ($items | split("\n") | map(select(. != "")) | map({(.): 1}) | add) as $in
        | [.[] | select(.status == 200 and .end_ns >= $t and $in[.item]) | .end_ns] | min
        | if . then ((. - $t) / 1e6 | floor) else -1 end' "$1"
}

# gap_of HISTORY ITEMS_FILE: the longest time, in ms, with no 200 answered for those items.
gap_of() {
    jq -s --rawfile items "$2" '
        ($items | split("\n") | map(select(. != "")) | map({(.): 1}) | add) as $in
        | (map(.start_ns) | min) as $t0 | (map(.end_ns) | max) as $t1
        | ([$t0] + ([.[] | select(.status == 200 and $in[.item]) | .end_ns] | sort) + [$t1]) as $t
        | [range(1; $t | length) | $t[.] - $t[. - 1]] | max / 1e6 | floor' "$1"
}

role_is_master() { [ "$(cluster_cli "$1" role 2>/dev/null | head -n 1)" = master ]; }

scenario_cluster_failover() {
    local "$@"
    local hist=$dir/history.jsonl k=${items:-1000} load_pid victim replica
    local pid kill_ns prom_ns follow gap verdict answers n
    secs=${secs:-15}
    stack_read "$stack" || return 1
    [ -n "${CLUSTER_PORTS:-}" ] || { SCN_OBSERVED="no cluster in this stack (deploy/up --cluster 3)"; return 1; }
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    mono_start
    victim=$(slot_owner "$(item_slot item0001)") && replica=$(replica_of "$victim") && [ -n "$replica" ] ||
        { SCN_OBSERVED="no replica found for the master of item0001"; return 1; }
    items_on "$dir" "$victim" "$k" > "$dir/affected.txt"
    n=$(wc -l < "$dir/affected.txt")
    pid=$(cluster_node_pid "$victim") || { SCN_OBSERVED="no pid for the master on :$victim"; return 1; }
    "$BUILD_DIR/sale-load" --url "http://127.0.0.1:$NGINX_PORT/inventory/sale" -c 16 -d "$secs" \
        $(load_item_args "$k" "${zipf:-1.1}") --history "$hist" > "$dir/load.out" 2>&1 &
    load_pid=$!
    sleep "$(awk -v s="$secs" 'BEGIN { printf "%.2f", s / 3 }')"
    kill -9 "$pid"
    kill_ns=$(mono_now_ns)
    wait_until 30 "" role_is_master "$replica" ||
        { SCN_OBSERVED="the cluster promoted no replica of :$victim within 30 s"; kill "$load_pid"; wait "$load_pid"; return 1; }
    prom_ns=$(mono_now_ns)
    wait "$load_pid" || { SCN_OBSERVED="sale-load failed: $(tail -n 3 "$dir/load.out")"; return 1; }
    sale_load_summary "$dir/load.out" > "$dir/wrk-load.out"
    follow=$(first_sale_of "$hist" "$dir/affected.txt" "$prom_ns")
    gap=$(gap_of "$hist" "$dir/affected.txt")
    set -- $(items_judge "$hist" "$k" "$stock" "$dir/items")   # oversold items ledger lost twice
    verdict=$(history_verdict "$hist" "$stock" "$dir/items")
    case $verdict in impossible:*) verdict="impossible (what the asynchronous copy lost: ${verdict#impossible: })" ;; esac
    answers=$(history_answers "$hist")
    SCN_OVERSOLD=$1
    # The row's measure: the longest time those items had no sale (the words below put
    # "of them" after "longest with no sale", where loadtest/run would not find it).
    case $gap in ''|*[!0-9]*) ;; *) SCN_GAP_MS=$gap ;; esac
    SCN_FLAW=0
    [ "$follow" -ge 0 ] && [ "$follow" -le 1000 ] || SCN_FLAW=1
    jq -e 'all(.status == 200 or .status == 409 or .status == 503)' -s "$hist" > /dev/null || SCN_FLAW=1
    SCN_OBSERVED="master :$victim (serving $n of $k items, item0001 the hottest) killed -9 mid-load; its replica :$replica said master $(( (prom_ns - kill_ns) / 1000000 )) ms later; the first sale of those items answered $follow ms after that; longest with no sale of them $gap ms; acknowledged sales lost $4, sold twice $5, oversold $1, ledgers off $3; history $verdict; answers $answers"
}
