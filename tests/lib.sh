# lib.sh - shared helpers for the shell tests: checks, free ports, a throwaway Redis.
# Source it; call t_cleanup (or let the EXIT trap) to stop what was started.

T_PASSED=0
T_FAILED=0
T_SKIPPED=0
T_PIDS=""
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/invtest.XXXXXX")

. deploy/lib.sh   # free_port, is_ours, metric_sum (the tests run from the top folder)

# check DESCRIPTION COMMAND...: runs COMMAND, records pass or fail.
check() {
    local d=$1; shift
    if "$@" >/dev/null 2>&1; then T_PASSED=$((T_PASSED+1)); echo "ok     $d"
    else T_FAILED=$((T_FAILED+1)); echo "FAIL   $d"; fi
}
# check_eq DESCRIPTION EXPECTED ACTUAL
check_eq() {
    if [ "$2" = "$3" ]; then T_PASSED=$((T_PASSED+1)); echo "ok     $1"
    else T_FAILED=$((T_FAILED+1)); echo "FAIL   $1: expected '$2', got '$3'"; fi
}
# skip DESCRIPTION WHY: a check that cannot run here (say why); counted apart, never passed.
skip() { T_SKIPPED=$((T_SKIPPED+1)); echo "skip   $1: $2"; }
t_report() {
    echo "$T_PASSED passed, $T_FAILED failed$([ "$T_SKIPPED" = 0 ] || echo ", $T_SKIPPED skipped")"
    [ "$T_FAILED" = 0 ]
}


# start_redis [ARG...]: starts a redis-server on a free port (ARGs added to its command
# line); sets REDIS_PORT and REDIS_PID. A port taken between free_port and the bind (by
# another program; for a cluster node also its bus port, PORT + 10000) is retried.
start_redis() {
    local attempt
    for attempt in 1 2 3; do
        REDIS_PORT=$(free_port)
        mkdir -p "$T_TMP/redis-$REDIS_PORT"
        redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
            --dir "$T_TMP/redis-$REDIS_PORT" --daemonize no "$@" >"$T_TMP/redis-$REDIS_PORT.log" 2>&1 &
        REDIS_PID=$!
        T_PIDS="$T_PIDS $REDIS_PID"
        for _ in $(seq 100); do
            redis-cli -p "$REDIS_PORT" ping >/dev/null 2>&1 && return 0
            kill -0 "$REDIS_PID" 2>/dev/null || break
            sleep 0.05
        done
        grep -q 'Address already in use' "$T_TMP/redis-$REDIS_PORT.log" || break
    done
    echo "redis-server did not start on port $REDIS_PORT" >&2
    cat "$T_TMP/redis-$REDIS_PORT.log" >&2
    return 1
}


# start_sentinels MASTER_PORT [FAILOVER_TIMEOUT_MS]: three real sentinels (redis-server
# --sentinel) watching the master on MASTER_PORT as "shop", quorum 2, down after 500 ms;
# each its own config file (a sentinel rewrites it). Sets SENTINELS (HOST:PORT,...) and
# SENTINEL_PORTS (space-separated); SENTINEL_PORT is the last one.
start_sentinels() {
    local port
    SENTINEL_PORTS="" SENTINELS=""
    for _ in 1 2 3; do
        port=$(free_port)
        mkdir -p "$T_TMP/sentinel-$port"
        printf '%s\n' "port $port" "bind 127.0.0.1" "dir $T_TMP/sentinel-$port" \
            "sentinel monitor shop 127.0.0.1 $1 2" "sentinel down-after-milliseconds shop 500" \
            "sentinel failover-timeout shop ${2:-3000}" "sentinel parallel-syncs shop 1" \
            > "$T_TMP/sentinel-$port/sentinel.conf"
        redis-server "$T_TMP/sentinel-$port/sentinel.conf" --sentinel > "$T_TMP/sentinel-$port.log" 2>&1 &
        T_PIDS="$T_PIDS $!"
        SENTINEL_PORTS="$SENTINEL_PORTS $port"
        SENTINELS="$SENTINELS${SENTINELS:+,}127.0.0.1:$port"
        SENTINEL_PORT=$port
    done
}

# start_cluster N: a throwaway Redis Cluster on free ports, N masters and N replicas (no
# AOF, no password, node timeout 2 s), made by redis-cli --cluster create and waited for
# until every node says cluster_state:ok and every replica is linked. Sets CLUSTER_PORTS
# (every node), CLUSTER_MASTERS (the masters' ports) and CLUSTER_SEEDS (127.0.0.1:P,... of
# the masters). A node's bus port is its port + 10000: both must be free. t_cleanup stops
# the nodes.
start_cluster() {
    local p i nodes=() ok
    CLUSTER_PORTS=""
    for i in $(seq $(($1 * 2))); do
        for _ in 1 2 3 4 5; do
            p=$(free_port 10000)   # its bus port, p + 10000, below the ephemeral range too
            (exec 3<>"/dev/tcp/127.0.0.1/$((p + 10000))") 2>/dev/null || break
        done
        mkdir -p "$T_TMP/node-$p"
        redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no --dir "$T_TMP/node-$p" \
            --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
            --cluster-replica-validity-factor 0 --repl-diskless-sync-delay 0 --daemonize no \
            > "$T_TMP/node-$p.log" 2>&1 &
        T_PIDS="$T_PIDS $!"
        CLUSTER_PORTS="$CLUSTER_PORTS $p"
        nodes+=("127.0.0.1:$p")
    done
    CLUSTER_PORTS=${CLUSTER_PORTS# }
    for p in $CLUSTER_PORTS; do
        wait_until 10 "" sh -c "redis-cli -p $p ping 2>/dev/null | grep -q PONG" ||
            { echo "cluster node $p did not start:" >&2; cat "$T_TMP/node-$p.log" >&2; return 1; }
    done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 1 --cluster-yes > "$T_TMP/cluster-create.log" 2>&1 ||
        { echo "redis-cli --cluster create failed:" >&2; tail -n 5 "$T_TMP/cluster-create.log" >&2; return 1; }
    for p in $CLUSTER_PORTS; do
        ok="redis-cli -p $p cluster info | grep -q '^cluster_state:ok' &&
            redis-cli -p $p info replication | grep -qE '^role:master|^master_link_status:up'"
        wait_until 20 "" sh -c "$ok" || { echo "cluster node $p never became ready" >&2; return 1; }
    done
    CLUSTER_MASTERS=$(for p in $CLUSTER_PORTS; do
        redis-cli -p "$p" role | head -n 1 | grep -qx master && echo "$p"; done | paste -sd' ' -)
    CLUSTER_SEEDS=$(for p in $CLUSTER_MASTERS; do echo "127.0.0.1:$p"; done | paste -sd, -)
}

# running PID: the process exists and is not a zombie (builtins only: it runs often).
running() {
    local stat
    IFS= read -r stat 2>/dev/null < "/proc/$1/stat" || return 1
    stat=${stat##*) }
    [ "${stat%% *}" != Z ]
}

# start_service PORTVAR ARGS...: starts build/inventory-service on a free port, waits for it.
# Sets the variable named PORTVAR to the port and SVC_PID to the pid. A port taken between
# free_port and the bind (another test, a load generator) is retried on another port.
start_service() {
    local var=$1; shift
    local port attempt
    for attempt in 1 2 3; do
        port=$(free_port)
        "${SERVICE_BIN:-build/inventory-service}" --port "$port" "$@" >"$T_TMP/svc-$port.log" 2>&1 &
        SVC_PID=$!
        T_PIDS="$T_PIDS $SVC_PID"
        printf -v "$var" '%s' "$port"
        for _ in $(seq 200); do
            curl -s -o /dev/null "http://127.0.0.1:$port/health" && return 0
            kill -0 "$SVC_PID" 2>/dev/null || break
            sleep 0.05
        done
        grep -q 'cannot listen' "$T_TMP/svc-$port.log" || break
    done
    echo "service did not start on port $port:" >&2
    cat "$T_TMP/svc-$port.log" >&2
    return 1
}

t_cleanup() {
    local p
    for p in $T_PIDS; do kill "$p" 2>/dev/null; done
    for p in $T_PIDS; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null
        kill -CONT "$p" 2>/dev/null
    done
    T_PIDS=""
    rm -rf "$T_TMP"
}
trap t_cleanup EXIT
