# cluster-cut.sh - One instance cut from one master of a Redis Cluster (not from the other
# masters, not from that master's replica) under load: how far a partial failure spreads.
#
# Eight test hosts (deploy/hosts; scenarios/hosts.sh): a Redis Cluster of three masters
# (h1, h2, h3), each with a replica (h4..h6); instance A on h7, instance B on h8, each with
# its own clients (build/sale-load in its host: 16 keep-alive connections, 1,000 items,
# Zipf 1.1, every answer in a history). A locked version runs --combine 16 on 4 workers
# (at most half of them may wait on one master). Two seconds in, A starts two long sales
# (work_ms: four leases) on cold items, one on h2 (healthy) and one on h1; two more of B's
# clients sell the healthy one's item all along. A second later h7 is cut from h1 for
# CUT_S seconds (silently: no reset, as a partition), then healed; the loads go on 4 s.
# The cluster sees nothing wrong: h1 answers every other host.
# Reported, from the histories, Redis and A's /metrics: A's sales of the healthy masters'
# items before and during the cut (p99, how many sold); the long sales' answers (the
# healthy one's lease is renewed while h1's renewal waits); overlaps on its item (B's
# sales inside beside A's); A's sales of h1's items during the cut (answers by status, the
# first that failed fast, the slowest once h1 was marked down: a command timeout in),
# whether A marked h1 down, the most of A's workers that waited on it at once;
# acknowledged sales lost, units sold twice, oversold, the checker's verdict per item.
# Verdict: the flaw when the cut spread past h1's items: the healthy long sale lost its
# lease, a sale entered beside it, a sale was lost or sold twice, an item oversold, a
# history the checker finds impossible, or A's sales of the other masters' items held up
# (their p99 during the cut over ten times, and 100 ms over, what it was before). Rows in
# loadtest/evolution: v8, v9 and atomic.

defaults_cluster_cut="ttl=1500 wait=3000 stock=1000000 hosts=8 items=1000 zipf=1.1"

. "$(dirname "${BASH_SOURCE[0]}")/cluster.sh"

CC_CUT_S=${CC_CUT_S:-10}   # how long h7 is cut from h1 (tests/test_hosts.sh: shorter)
CC_CUT_HOST=h7 CC_CUT_FROM=h1

scenario_cluster_cut() {
    local "$@"
    local k=${items:-1000} locked=1 svc hm="" cm="" cut_ns heal_ns total_s names
    [ "$lock" != atomic ] || locked=0
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    if [ "$locked" = 1 ]; then
        mapfile -t svc < <(instance_flags "$@" combine=16); svc+=(--workers 4)
    else
        mapfile -t svc < <(instance_flags "$@")
    fi
    cc_stack "$stack" "$fsync" "$k" "$stock" "${svc[@]}" || return 1
    cc_item_masters "$dir" "$k" || { SCN_OBSERVED="the cluster's slot map could not be read"; return 1; }
    CC_CUT_MASTER=$(host_addr "$CC_CUT_FROM"):$H_REDIS_PORT
    hm=$(cc_cold_item "$dir" "$(host_addr h2):$H_REDIS_PORT")
    cm=$(cc_cold_item "$dir" "$CC_CUT_MASTER")
    [ -n "$hm" ] && [ -n "$cm" ] || { SCN_OBSERVED="no item found on h1 or h2 (the masters: $(cut -d' ' -f2 "$dir/masters" | sort -u | paste -sd' '))"; return 1; }
    total_s=$(( 3 + CC_CUT_S + 4 ))
    mono_start
    names="A B"
    host_sales "$dir" h7 A "$total_s" 16 "" $(load_item_args "$k" "$zipf")
    host_sales "$dir" h8 B "$total_s" 16 "" $(load_item_args "$k" "$zipf")
    if [ "$locked" = 1 ]; then
        host_sales "$dir" h8 Bh "$total_s" 2 "" --items "$hm"
        names="A B Bh"
    fi
    sleep 2
    if [ "$locked" = 1 ]; then
        host_long_sale "$dir" "$CC_CUT_HOST" "$hm" $(( ttl_ms * 4 )) Lh
        host_long_sale "$dir" "$CC_CUT_HOST" "$cm" $(( ttl_ms * 4 )) Lc
    fi
    sleep 1
    hosts_cut "$CC_CUT_HOST" "$CC_CUT_FROM"
    cut_ns=$(mono_now_ns)
    sleep_until $(( cut_ns + CC_CUT_S * 1000000000 ))
    hosts_heal
    heal_ns=$(mono_now_ns)
    bg_wait
    in_host "$CC_CUT_HOST" curl -s -m 5 "http://$(host_addr "$CC_CUT_HOST"):$H_INSTANCE_PORT/metrics" > "$dir/a-metrics"
    loads_done "$dir" $names || return 1
    [ "$locked" = 0 ] || cat "$dir/history-Lh.jsonl" "$dir/history-Lc.jsonl" >> "$dir/history.jsonl"
    cc_judge "$dir" "$k" "$stock" "$cut_ns" "$heal_ns" "$locked" "$hm" "$cm"
}

# cc_stack RUN FSYNC K STOCK [INSTANCE_ARG...]: the layout above in the run directory RUN,
# item0001..K at STOCK; INSTANCE_ARGs go to both instances.
cc_stack() {
    local h run=$1 fsync=$2 k=$3 stock=$4; shift 4
    hosts_stack_up "$run" 8 "$fsync" || { SCN_OBSERVED="deploy/hosts up 8 failed"; return 1; }
    host_cluster h1 h2 h3 h4 h5 h6 ||
        { SCN_OBSERVED="the cluster on h1..h6 did not come up: $(tail -n 2 "$STACK_DIR/cluster-create.log" 2>/dev/null)"; return 1; }
    item_reset_commands "$stock" $(seq -f "item%04g" 1 "$k") | rcli > /dev/null ||
        { SCN_OBSERVED="the items' stock could not be set"; return 1; }
    for h in h7 h8; do
        host_instance "$h" "$@" || { SCN_OBSERVED="instance $h did not start: $(tail -n 2 "$STACK_DIR/instance-$h.log")"; return 1; }
    done
}

# cc_item_masters DIR K: DIR/masters, "ITEM HOST:PORT" for item0001..K: the master of each
# item's slot, by the cluster's slot map.
cc_item_masters() {
    seq -f "item%04g" 1 "$2" > "$1/items.txt"
    item_key stock $(cat "$1/items.txt") | sed 's/^/CLUSTER KEYSLOT /' | rcli |
        paste -d' ' "$1/items.txt" - > "$1/slots.txt"
    rcli --json cluster slots | jq -r '.[] | "\(.[0]) \(.[1]) \(.[2][0]):\(.[2][1])"' |
        awk 'NR == FNR { lo[NR] = $1; hi[NR] = $2; at[NR] = $3; n = NR; next }
             { for (i = 1; i <= n; i++) if (lo[i] <= $2 && $2 <= hi[i]) { print $1, at[i]; next } }' \
            - "$1/slots.txt" > "$1/masters"
    [ "$(wc -l < "$1/masters")" = "$2" ]
}

# cc_cold_item DIR MASTER: the coldest item (the last) that MASTER serves.
cc_cold_item() { awk -v m="$2" '$2 == m { i = $1 } END { print i }' "$1/masters"; }

# cc_windows DIR CUT_NS HEAL_NS: what A's history says of the healthy masters' items and of
# the cut master's (CC_CUT_MASTER), one line: "H_P99_BEFORE H_N_BEFORE H_P99_CUT H_SOLD_CUT
# C_SENT C_200 C_503 C_OTHER C_FAST_MS C_SLOW_LATE_MS": p99 (ms) and answers of healthy
# items sent in the 2 s before the cut, p99 and 200s of those sent during it; the cut
# master's items sent during it: how many, by status, ms from the cut to the first 503
# answered within 100 ms (-1: none), the slowest answer (ms) of those sent a command
# timeout (5 s) and a probe's gap after the cut until 300 ms before the heal.
cc_windows() {
    "$PYTHON" - "$1/history-A.jsonl" "$1/masters" "$CC_CUT_MASTER" "$2" "$3" <<'EOF'
import json, sys
hist, masters, cut_master, cut, heal = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
at = dict(line.split() for line in open(masters))
def p99(v):
    v = sorted(v)
    return round(v[int(len(v) * 0.99)], 1) if v else -1
before, during, sold, cut_items = [], [], 0, []
for line in open(hist):
    r = json.loads(line)
    if r.get("status", 0) <= 0:
        continue
    s, ms = r["start_ns"], (r["end_ns"] - r["start_ns"]) / 1e6
    if at.get(r.get("item")) == cut_master:
        if cut <= s < heal:
            cut_items.append((s, ms, r["status"]))
    elif cut - 2e9 <= s < cut:
        before.append(ms)
    elif cut <= s < heal:
        during.append(ms)
        sold += r["status"] == 200
fast = [(s - cut) / 1e6 for s, ms, st in cut_items if st == 503 and ms < 100]
late = [ms for s, ms, st in cut_items if cut + 5.25e9 <= s < heal - 3e8]
by = lambda code: sum(1 for c in cut_items if c[2] == code)
print(p99(before), len(before), p99(during), sold, len(cut_items), by(200), by(503),
      len(cut_items) - by(200) - by(503), int(min(fast)) if fast else -1,
      int(max(late)) if late else -1)
EOF
}

# cc_node_metric NAME FILE: A's value of NAME for the cut master (CC_CUT_MASTER) in FILE
# (its /metrics); "-" when it has none (a build without it).
cc_node_metric() {
    awk -v m="$1{node=\"$CC_CUT_MASTER\"}" '$1 == m { v = $2 } END { print (v == "" ? "-" : v) }' "$2"
}

# cc_long_answer DIR NAME: the long sale NAME's answer in a few words.
cc_long_answer() {
    jq -r '"\(if .ok then "200" else .error end)" + (if .lease_lost then " with lease_lost" else "" end)' \
        "$1/long-$2.json" 2>/dev/null || echo "no answer"
}

# cc_judge DIR K STOCK CUT_NS HEAL_NS LOCKED HM CM: the verdict (SCN_FLAW) and the observed
# line (SCN_OBSERVED).
cc_judge() {
    local dir=$1 k=$2 stock=$3 cut=$4 heal=$5 locked=$6 hm=$7 cm=$8 hist=$1/history.jsonl
    local w j verdict over=0 longs="" peak marked healthy
    read -r -a w <<< "$(cc_windows "$dir" "$cut" "$heal")"
    read -r -a j <<< "$(items_judge "$hist" "$k" "$stock" "$dir/items")"   # oversold items ledger lost twice
    verdict=$(history_verdict "$hist" "$stock" "$dir/items")
    peak=$(cc_node_metric inventory_redis_node_workers_peak "$dir/a-metrics")
    marked=$(cc_node_metric inventory_redis_node_marked_down_total "$dir/a-metrics")
    healthy=$(CC_CUT_MASTER=$(host_addr h2):$H_REDIS_PORT cc_node_metric inventory_redis_node_marked_down_total "$dir/a-metrics")
    SCN_OVERSOLD=${j[0]:-0}
    SCN_FLAW=0
    if [ "$locked" = 1 ]; then
        over=$(overlaps_now "$hm")
        longs="A's long sales: on h2 ($hm) $(cc_long_answer "$dir" Lh), on h1 ($cm) $(cc_long_answer "$dir" Lc); B's sales inside beside A's on $hm: $over; "
        [ "$over" = 0 ] && jq -e '.ok and (.lease_lost | not)' "$dir/long-Lh.json" > /dev/null 2>&1 || SCN_FLAW=1
    fi
    [ "${j[0]:-1}" = 0 ] && [ "${j[3]:-1}" = 0 ] && [ "${j[4]:-1}" = 0 ] || SCN_FLAW=1
    case $verdict in possible) ;; *) SCN_FLAW=1 ;; esac
    # The cut held A's other items: their p99 during it over ten times (and 100 ms over)
    # what it was before (a margin for two noisy cores; the spread shows in whole seconds).
    awk -v b="${w[0]}" -v d="${w[2]}" 'BEGIN { exit !(d > 10 * b && d > b + 100) }' && SCN_FLAW=1
    SCN_OBSERVED="$CC_CUT_HOST (A) cut from $CC_CUT_FROM ($CC_CUT_MASTER, a master) for $(( (heal - cut) / 1000000 )) ms; ${longs}A's items on the healthy masters: p99 ${w[0]} ms before the cut (${w[1]} answers), ${w[2]} ms during it (${w[3]} sold); A's items on $CC_CUT_FROM during the cut: ${w[4]} sent, ${w[5]} sold, ${w[6]} answered 503, ${w[7]} other; the first 503 within 100 ms ${w[8]} ms after the cut, the slowest a timeout on ${w[9]} ms; $CC_CUT_FROM marked down $marked times (h2 $healthy), the most workers waiting on it $peak; acknowledged sales lost ${j[3]:-?}, sold twice ${j[4]:-?}, oversold ${j[0]:-?}; history $verdict; answers $(history_answers "$hist")"
}
