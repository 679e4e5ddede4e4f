# failover.sh - v8's flaw in a failover: the promoted replica lost the grant, two holders.
# Also failover-wait: a grant counts only once a replica has it.
#
# The data Redis has an asynchronous replica (deploy/up --replica: REPLICA_PORT). Once the
# replica has the stock, its link drops (it is pointed at an address where nothing
# answers, as a partition would) just before A's grant, so that the grant never reaches
# it; A works two TTLs on instance 1; the master is killed -9 and the replica promoted
# (REPLICAOF NO ONE); the instances follow it (--redis-standby); the old master comes back
# as its replica; B sells three times on instance 2 while A still works. From here on
# Redis is the promoted replica.
# Verdict: the flaw when Redis shows oversold > 0: two holders, A's write landed after
# B's. The observed line says what A answered and, where there is a fence:{I}, how it
# went back on the promoted replica and the tokens in the ledger. Fenced (v9), A's write
# is refused (409 lease_lost). failover-wait starts the instances with --replicas 1: a
# grant counts only once the replica has it, so A's is refused (503 lock_unavailable).
# Rows in loadtest/evolution: v8 shows it; v9 (both), and v10 (locks on its own
# masters) do not.

# A small stock; the stack gets a replica (and, for failover-wait, --replicas 1).
defaults_failover="ttl=2000 wait=10000 stock=40 replica"
defaults_failover_wait="ttl=2000 wait=10000 stock=40 replica replicas=1"

# replica_cli ARG...: redis-cli to the replica (the data Redis once promoted).
replica_cli() { rcli -p "$REPLICA_PORT" "$@"; }
replica_has_stock() { [ "$(replica_cli get "stock:{$ITEM}")" = "$STOCK" ]; }
# a_holds_or_answered: A's sale has answered, or its lock is held (on the first lock
# master for redlock, on the data Redis otherwise).
a_holds_or_answered() {
    [ -s "$SCN_DIR/a.code" ] && return 0
    if [ -n "${MASTER_PORTS:-}" ]; then
        [ "$(rcli -p "$(master_port 1)" exists "$(lock_key)")" = 1 ]
    else
        lock_held
    fi
}

scenario_failover() {
    local a b work=$((TTL_MS * 2)) master_pid old_port fence_a fence_r fence tokens i code sold_b=0 answer oversold
    [ -n "${REPLICA_PORT:-}" ] || { SCN_OBSERVED="no replica in this stack (deploy/up --replica)"; return 1; }
    a=$(port_of 1); b=$(port_of 2); master_pid=$(head -n 1 "$RUN_DIR/redis.pid"); old_port=$REDIS_PORT
    wait_until 10 "" replica_has_stock || { SCN_OBSERVED="the replica never got the stock"; return 1; }
    replica_cli replicaof 127.0.0.1 "$(free_port)" >/dev/null
    ( code=$(curl -s -o "$SCN_DIR/a.json" -m 60 -w '%{http_code}' \
          "http://127.0.0.1:$a/inventory/sale?item=$ITEM&work_ms=$work") || code=000
      echo "$code" >> "$SCN_DIR/codes"; echo "$code" > "$SCN_DIR/a.code" ) &
    BG_PIDS="$BG_PIDS $!"
    # A holds (or was refused) once its try and the replicas' acknowledgement are over.
    wait_until 5 "" a_holds_or_answered
    sleep "$(awk "BEGIN{print ($TTL_MS / 10 + 300) / 1000}")"
    fence_a=$(rcli get "fence:{$ITEM}")
    kill -9 "$master_pid"
    replica_cli replicaof no one >/dev/null
    # The old master comes back from its files as the new master's replica (as Sentinel
    # would have it); the instances skip it, it says it is a replica.
    redis_start "$old_port" 127.0.0.1 "$FSYNC" "$RUN_DIR/redis" "$RUN_DIR/redis.log" \
        "$RUN_DIR/redis.pid" --replicaof "$REDIS_HOST" "$REPLICA_PORT"
    REDIS_PORT=$REPLICA_PORT            # the promoted replica is the data Redis now
    wait_until 10 "" replica_acks "$REDIS_HOST" "$REPLICA_PORT" ||
        { SCN_OBSERVED="the old master did not come back as a replica"; return 1; }
    fence_r=$(rcli get "fence:{$ITEM}")
    for i in 1 2 3; do
        code=$(sale "$b")
        [ "$code" = 200 ] && sold_b=$((sold_b+1))
    done
    bg_wait
    oversold=$(oversold_now)
    answer="$(cat "$SCN_DIR/a.code" 2>/dev/null) $(jq -r 'if .ok then "sold" + (if .lease_lost then " (lease lost)" else "" end) else .error end' "$SCN_DIR/a.json" 2>/dev/null)"
    fence=""
    if [ -n "$fence_a" ]; then
        tokens=$(rcli xrange "orders:{$ITEM}" - + | awk 'prev == "token" { print } { prev = $0 }' | paste -sd, -)
        fence=" (its fence:{I} went back from $fence_a to ${fence_r:-0}; tokens in the ledger ${tokens:-none})"
    fi
    SCN_FLAW=0
    [ "$oversold" -gt 0 ] && SCN_FLAW=1
    SCN_OBSERVED="the replica missed A's grant; master killed, replica promoted$fence: then B sold $sold_b of 3; A (working $work ms) answered $answer; oversold $oversold"
}
# failover-wait: the same choreography on a stack that waits for the replica.
scenario_failover_wait() { scenario_failover; }
