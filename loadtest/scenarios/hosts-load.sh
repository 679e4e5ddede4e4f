# hosts-load.sh - The stack spread over six test hosts, as "More than one host" in
# docs/operations.md lays it out, and a load through it: the recipe, run.
#
#   h1: the data Redis (master) and a sentinel      h4: two instances (deploy/up)
#   h2: a replica and a sentinel                    h5: two instances (deploy/up)
#   h3: a replica and a sentinel (quorum 2)         h6: nginx (deploy/up) and the clients
# The Redis servers and sentinels are started as the recipe's redis-server lines start
# them (scenarios/hosts.sh); the instances and nginx by deploy/up run in their hosts,
# given the sentinels (--sentinels) and the upstream instances (--upstream) by address.
# build/sale-load on h6 sells through nginx (32 keep-alive connections, SECS seconds), every
# answer in a history. Reported: answers, requests/s, p50/p99, sales per instance, the
# checker's verdict, sold + remaining. Verdict: the flaw when the history is impossible,
# the stock does not add up, or an instance sold nothing (nginx did not spread the load).

defaults_hosts_load="stock=1000000 hosts=6"

# recipe_up H ARG...: deploy/up in host H, its run directory STACK_DIR/H, faults on, with
# the sentinels of h1..h3; ARGs added (the run's lock settings among them).
recipe_up() {
    local h=$1 args; shift
    args=(--run-dir "$STACK_DIR/$h" --faults --sentinels "$(echo $SENTINEL_PORTS | tr ' ' ,)"
          --sentinel-password-file "$SENTINEL_PASSWORD_FILE" --redis-password-file "$REDIS_PASSWORD_FILE")
    in_host "$h" "$DEPLOY_DIR/up" "${args[@]}" "$@" > "$STACK_DIR/up-$h.out" 2>&1
}

scenario_hosts_load() {
    local "$@"
    local h a6 hist=$dir/history.jsonl upstream="" final verdict counts per lock_args
    secs=${secs:-10}
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    # deploy/up's flags for the run's lease, wait limit, wait policy and combining.
    mapfile -t lock_args < <(instance_flags lock="$lock" ttl_ms="$ttl_ms" wait_ms="$wait_ms" \
                             wait_policy="$wait_policy" combine="$combine")
    hosts_stack_up "$stack" 6 "$fsync" || { SCN_OBSERVED="deploy/hosts up 6 failed"; return 1; }
    host_redis h1 || { SCN_OBSERVED="the master on h1 did not start"; return 1; }
    for h in h2 h3; do
        host_redis "$h" --replicaof "$REDIS_HOST" "$REDIS_PORT" || { SCN_OBSERVED="the replica on $h did not start"; return 1; }
    done
    wait_until 10 "" replica_acks "$REDIS_HOST" "$REDIS_PORT" 2 || { SCN_OBSERVED="the replicas did not acknowledge a write"; return 1; }
    for h in h1 h2 h3; do host_sentinel "$h" 2; done
    wait_until 20 "" sentinels_ready || { SCN_OBSERVED="the sentinels did not find each other and both replicas"; return 1; }
    for h in h4 h5; do
        recipe_up "$h" "${lock_args[@]}" --no-nginx --bind "$(host_addr "$h")" --name-prefix "$h" ||
            { SCN_OBSERVED="deploy/up on $h failed: $(tail -n 3 "$STACK_DIR/up-$h.out")"; return 1; }
        upstream="$upstream,$(host_addr "$h"):8081,$(host_addr "$h"):8082"
    done
    upstream=${upstream#,}
    a6=$(host_addr h6)
    recipe_up h6 "${lock_args[@]}" --instances 0 --upstream "$upstream" --nginx-bind "$a6" --port "$H_NGINX_PORT" ||
        { SCN_OBSERVED="deploy/up (nginx) on h6 failed: $(tail -n 3 "$STACK_DIR/up-h6.out")"; return 1; }
    INSTANCE_PORTS=$(echo "$upstream" | tr , ' ')
    item_set "$item" "$stock" >/dev/null
    in_host h6 "$BUILD_DIR/sale-load" --url "http://$a6:$H_NGINX_PORT/inventory/sale?item=$item" \
        -c 32 -d "$secs" --history "$hist" > "$dir/load.out" 2>&1 ||
        { SCN_OBSERVED="sale-load failed: $(tail -n 2 "$dir/load.out")"; return 1; }
    sale_load_summary "$dir/load.out" > "$dir/wrk-load.out"
    HOSTS_VIA=h6 "$DEPLOY_DIR/status" --run-dir "$STACK_DIR/h6" > "$dir/status-h6.out" 2>&1 || true
    counts=$(item_counts "$item") || { SCN_OBSERVED="the stock of $item could not be read"; return 1; }
    final=${counts%% *}
    verdict=$(history_check "$hist" "$stock" $counts) ||
        { SCN_OBSERVED="check-history could not read the history: $verdict"; return 1; }
    per=$(jq -rs '[.[] | select(.status == 200) | .instance] | group_by(.) | map("\(.[0]) \(length)") | join(", ")' "$hist")
    SCN_FLAW=0
    [ "$verdict" = possible ] && [ "$(echo "$per" | tr ',' '\n' | grep -c .)" = 4 ] || SCN_FLAW=1
    set -- $(jq -r '[.requests, .rps, .p50_ms, .p99_ms] | map(tostring) | join(" ")' "$dir/wrk-load.out")
    SCN_OBSERVED="Redis h1 (replicas h2 h3, sentinels h1-h3), instances h4 h5 (2 each, deploy/up --sentinels), nginx h6 (deploy/up --upstream), 32 connections from h6 for ${secs} s: $1 answers, $2 requests/s, p50 $3 ms, p99 $4 ms; sold by instance: $per; history $verdict; answers $(history_answers "$hist")"
}
