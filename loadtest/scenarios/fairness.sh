# fairness.sh - Who gets the lock: every waiter its turn, or every process?
#
# Instance 1 has one client, instance 2 has 49 (build/sale-load, keep-alive connections,
# each instance loaded directly: nginx would spread them), for SECS (10), every answer in
# a history; loadtest/fairness reads both. One item and no combining: every sale is one
# grant. Fifty clients alike: each should get a fiftieth of the sales.
# Counted from the moment both loads had a sale answered (loadtest/fairness --settled):
# before it, the load that came up first was alone in the queue.
# Reported: how many sales the lone client got against its fair share, and each of the
# 49's on average; Jain's index over the 50 clients' sales (1: all served alike, 1/50:
# one got everything); the longest wait; overtaking: for one sale, how many sales sent
# 5 ms or more after it were granted before it (the most).
# Verdict: the flaw when Jain's index is below 0.9 of the most the sales allow (loadtest/
# fairness's "fair": 67 sales over 50 clients can be no fairer than 0.889): the lock
# served processes, not waiters. v8's notify queues each process's waiters first come, first served, but the
# processes take turns at Redis: the lone client gets the lock about every other time,
# while the 49 share the other half. v11's queue is ZooKeeper's, in the order the nodes
# were made: each client its fiftieth.
# Rows in loadtest/evolution: v8 and v10 show it, v11 does not.

defaults_fairness="stock=1000000"
JAIN_MIN=0.9

scenario_fairness() {
    local "$@"
    local a b out p n lone
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    stack_read "$stack" || return 1
    a=$(port_of 1); b=$(port_of 2)
    for p in "$a" "$b"; do
        n=$([ "$p" = "$a" ] && echo 1 || echo 49)
        "$BUILD_DIR/sale-load" --url "http://127.0.0.1:$p/inventory/sale?item=$item" -c "$n" \
            -d "${secs:-10}" --history "$dir/history-$p.jsonl" > "$dir/load-$p.out" 2>&1 &
        BG_PIDS="$BG_PIDS $!"
    done
    bg_wait
    for p in "$a" "$b"; do
        sale_load_summary "$dir/load-$p.out" > "$dir/wrk-$p.out" ||
            { SCN_OBSERVED="sale-load failed: $(tail -n 2 "$dir/load-$p.out")"; return 1; }
    done
    # Judged from the moment both loads had a sale answered: before it, the load that came up
    # first (one client: on ZooKeeper its node was made before the 49 of the other load)
    # was alone in the queue.
    out=$("$LOADTEST_TOOLS/fairness" --settled "$dir/history-$a.jsonl" "$dir/history-$b.jsonl") ||
        { SCN_OBSERVED="loadtest/fairness could not read the histories"; return 1; }
    echo "$out" > "$dir/fairness.json"
    lone=$(jq '.by_history[0]' <<< "$out")
    SCN_FLAW=0
    jq -e --argjson min "$JAIN_MIN" '.fair >= $min' <<< "$out" > /dev/null || SCN_FLAW=1
    SCN_JAIN=$(jq '.fair' <<< "$out")
    SCN_OBSERVED=$(jq -r --argjson lone "$lone" '"the lone client of instance 1 got \($lone) of \(.sales) sales (a fair share: \(.sales / .clients | floor)), each of instance 2'"'"'s 49 \((.sales - $lone) / 49 | floor) on average; Jain \(.jain) over the \(.clients) clients (at most \(.jain_best) for \(.sales) sales: \(.fair) of it); longest wait \(.longest_wait_ms) ms; a sale overtaken by at most \(.max_overtaken) sent 5 ms or more after it; counted from \(.from_ms) ms, when both loads had sold (\(.left_out) answered before it left out)"' <<< "$out")
}
