# up-redis.sh - deploy/up's Redis servers: the data Redis, redlock's masters, with
# --sentinel the data Redis's two replicas and three sentinels, and with --cluster N a
# Redis Cluster of N masters and N replicas instead of the data Redis.
# Sourced by deploy/up (and by the tests that start Sentinel or a Cluster the same way,
# after deploy/lib.sh); functions only. They read deploy/up's settings (REDIS_ADDR,
# REDIS_BIND, REDIS_HOST, REDIS_PORT, MASTER_PORTS, REPLICA_PORTS, SENTINEL_PORT_LIST,
# SENTINEL_MASTER, SENTINEL_QUORUM, SENTINEL_DOWN_AFTER_MS, SENTINEL_FAILOVER_TIMEOUT_MS,
# SENTINEL_PASSWORD_FILE, REDIS_PASSWORD_FILE, CLUSTER_NODE_PORTS, CLUSTER_NODE_TIMEOUT_MS,
# FSYNC, RUN_DIR, START_WAIT_S), set what stack.env records, add every server they start
# to STARTED_PIDS, and exit through deploy/lib.sh's die or fail_with_log when a server does
# not start: deploy/up's rollback then stops the rest (a test's cleanup, by STARTED_PIDS).

# new_secret FILE: a random password in FILE, readable by this user only.
new_secret() {
    (umask 077; head -c 24 /dev/urandom | base64 | tr '+/' '-_' > "$1") || die "cannot write $1"
}
# conf_quote STRING: STRING quoted for a redis.conf line.
conf_quote() { printf '"%s"' "$(printf '%s' "$1" | sed 's/[\\"]/\\&/g')"; }

# write_redis_conf: the password, on every Redis started here (data, masters, replicas:
# their link uses it too), in files only this user reads. redis-server gets it in its
# configuration file (REDIS_CONF), the instances by --redis-password-file, the scripts
# through rcli (REDISCLI_AUTH). A Redis not ours keeps its own (--redis-password-file),
# and masters started beside it get that one. With sentinels, they get a password of their
# own (SENTINEL_PASSWORD_FILE, RUN_DIR/sentinel.pass). Sets REDIS_PASSWORD_FILE,
# REDIS_CONF and SENTINEL_PASSWORD_FILE.
write_redis_conf() {
    local pw
    if [ -n "$SENTINEL_PORT_LIST" ] && [ -z "$SENTINELS_EXT" ]; then
        SENTINEL_PASSWORD_FILE=$RUN_DIR/sentinel.pass
        new_secret "$SENTINEL_PASSWORD_FILE"
    fi
    if [ -z "$REDIS_ADDR" ] && [ -z "$REDIS_PASSWORD_FILE" ]; then
        REDIS_PASSWORD_FILE=$RUN_DIR/redis.pass
        new_secret "$REDIS_PASSWORD_FILE"
    fi
    if [ -n "$REDIS_PASSWORD_FILE" ] && { [ -z "$REDIS_ADDR" ] || [ -n "$MASTER_PORTS" ]; }; then
        [ -s "$REDIS_PASSWORD_FILE" ] || die "the password file $REDIS_PASSWORD_FILE is empty"
        REDIS_CONF=$RUN_DIR/redis.conf
        pw=$(conf_quote "$(head -n 1 "$REDIS_PASSWORD_FILE")")
        (umask 077; printf '# redis.conf - written by deploy/up: the password of this stack.\nrequirepass %s\nmasterauth %s\n' \
            "$pw" "$pw" > "$REDIS_CONF") || die "cannot write $REDIS_CONF"
    fi
}

# master_moved_to: the port of the former replica that the sentinels of the stack now in
# RUN_DIR (its stack.env) name master, when a failover moved it off the data Redis's port;
# "?" when the stack has sentinels but no master can be found; nothing otherwise.
master_moved_to() {
    [ -f "$RUN_DIR/stack.env" ] || return 0
    ( . "$RUN_DIR/stack.env"
      [ -n "${SENTINEL_PORTS:-}" ] || exit 0
      at=$(current_master) || { echo "?"; exit 0; }
      [ "${at##*:}" = "$REDIS_PORT" ] || echo "${at##*:}" )
}

# take_master_data PORT: after a failover to the replica that was on PORT (stopped by now),
# its data directory becomes the data Redis's (RUN_DIR/redis), the one a restart starts
# the master from; the old one is kept as RUN_DIR/redis.replaced. Nothing without PORT.
take_master_data() {
    case ${1:-} in
    '') return 0 ;;
    '?') say "deploy/up: warning: no sentinel named a master that answers; the data Redis restarts from" \
             "$RUN_DIR/redis as it is (what a promoted replica took since is not in it)"; return 0 ;;
    esac
    [ -d "$RUN_DIR/replica-$1" ] || return 0
    rm -rf "$RUN_DIR/redis.replaced"
    { [ ! -d "$RUN_DIR/redis" ] || mv "$RUN_DIR/redis" "$RUN_DIR/redis.replaced"; } &&
        cp -a "$RUN_DIR/replica-$1" "$RUN_DIR/redis" || die "cannot take the data of $RUN_DIR/replica-$1"
    say "the master had moved to port $1 (a failover): its data is the data Redis's now" \
        "(the one before: $RUN_DIR/redis.replaced)"
}

# start_data_redis: checks the Redis of --redis answers, or starts one here (AOF, in
# RUN_DIR/redis) and waits until it does. Sets REDIS_HOST, OWN_REDIS, and REDIS_EXTRA:
# the arguments the data Redis and its replicas share.
# shellcheck disable=SC2034  # OWN_REDIS: for stack.env, which deploy/up writes
start_data_redis() {
    if [ -n "$REDIS_ADDR" ]; then
        redis_pings || die "no Redis answers PONG at $REDIS_ADDR$([ -n "$REDIS_PASSWORD_FILE" ] ||
            echo " (one with a password: --redis-password-file)")"
        OWN_REDIS=0
        return 0
    fi
    REDIS_HOST=$(local_host "$REDIS_BIND")
    REDIS_EXTRA=()
    case $REDIS_BIND in
    127.0.0.1) ;;
    *) REDIS_EXTRA=(--protected-mode no) ;;    # it has a password
    esac
    # With replicas: a (re)connecting replica is served at once, not after 5 s (by
    # whichever of them is master after a failover too).
    [ -z "$REPLICA_PORTS" ] || REDIS_EXTRA+=(--repl-diskless-sync-delay 0)
    mark_log "$RUN_DIR/redis.log"
    redis_start "$REDIS_PORT" "$REDIS_BIND" "$FSYNC" "$RUN_DIR/redis" "$RUN_DIR/redis.log" \
        "$RUN_DIR/redis.pid" "${REDIS_EXTRA[@]}"
    wait_until "$START_WAIT_S" "$REDIS_STARTED_PID" redis_pings ||
        fail_with_log "redis-server on port $REDIS_PORT" "$RUN_DIR/redis.log"
    OWN_REDIS=1
}

# start_masters: redlock's masters, independent Redis servers on MASTER_PORTS, each its
# own AOF in RUN_DIR/master-PORT; each is added to LOCK_REDIS once it answers.
start_masters() {
    local p
    for p in $MASTER_PORTS; do
        mark_log "$RUN_DIR/master-$p.log"
        redis_start "$p" "$REDIS_BIND" "$FSYNC" "$RUN_DIR/master-$p" "$RUN_DIR/master-$p.log" \
            "$RUN_DIR/master-$p.pid"
        wait_until "$START_WAIT_S" "$REDIS_STARTED_PID" redis_pings "$p" ||
            fail_with_log "lock master on port $p" "$RUN_DIR/master-$p.log"
        LOCK_REDIS="${LOCK_REDIS:+$LOCK_REDIS,}$(local_host "$REDIS_BIND"):$p"
    done
}

# start_replicas: with --sentinel, the data Redis's replicas on REPLICA_PORTS (each its own
# AOF in RUN_DIR/replica-PORT): asynchronous, as Redis replicates; each has what the
# master sent so far. Waits until a write reaches every one started so far.
start_replicas() {
    local p n=0
    for p in $REPLICA_PORTS; do
        n=$((n + 1))
        mark_log "$RUN_DIR/replica-$p.log"
        redis_start "$p" "$REDIS_BIND" "$FSYNC" "$RUN_DIR/replica-$p" "$RUN_DIR/replica-$p.log" \
            "$RUN_DIR/replica-$p.pid" --replicaof "$REDIS_HOST" "$REDIS_PORT" "${REDIS_EXTRA[@]}"
        wait_until "$START_WAIT_S" "$REDIS_STARTED_PID" replica_acks "$REDIS_HOST" "$REDIS_PORT" "$n" ||
            fail_with_log "replica on port $p" "$RUN_DIR/replica-$p.log"
    done
}

# write_sentinel_conf PORT BIND DIR: a sentinel's configuration, to stdout: on PORT and
# BIND, its working directory DIR, watching REDIS_HOST:REDIS_PORT as SENTINEL_MASTER with
# SENTINEL_QUORUM. Each sentinel rewrites its own file (what it learns: the replicas, the
# other sentinels, the epochs), so each gets one, written afresh by every start. It holds
# both passwords (none without SENTINEL_PASSWORD_FILE: a test's sentinels on loopback):
# mode 600. (Also loadtest/scenarios/hosts.sh's, for a sentinel in a host.)
write_sentinel_conf() {
    local m=$SENTINEL_MASTER
    echo "# sentinel.conf - written for this run directory; the sentinel rewrites it."
    echo "port $1"
    echo "bind $2"
    [ "$2" = 127.0.0.1 ] || echo "protected-mode no"    # it has a password
    echo "dir $3"
    [ -z "${SENTINEL_PASSWORD_FILE:-}" ] ||
        echo "requirepass $(conf_quote "$(head -n 1 "$SENTINEL_PASSWORD_FILE")")"
    echo "sentinel monitor $m $REDIS_HOST $REDIS_PORT $SENTINEL_QUORUM"
    [ -z "${REDIS_PASSWORD_FILE:-}" ] ||
        echo "sentinel auth-pass $m $(conf_quote "$(head -n 1 "$REDIS_PASSWORD_FILE")")"
    echo "sentinel down-after-milliseconds $m $SENTINEL_DOWN_AFTER_MS"
    echo "sentinel failover-timeout $m $SENTINEL_FAILOVER_TIMEOUT_MS"
    echo "sentinel parallel-syncs $m 1"
}

# sentinel_ready PORT: the sentinel on PORT knows the master, both replicas and the two
# other sentinels (it finds them through the master within about 2 s): only then can it
# take part in a failover.
sentinel_ready() {
    sentinel_cli "$1" sentinel master "$SENTINEL_MASTER" 2>/dev/null |
        awk -v r="$(echo $REPLICA_PORTS | wc -w)" -v s="$(( $(echo $SENTINEL_PORT_LIST | wc -w) - 1 ))" '
            prev == "num-slaves" { slaves = $0 } prev == "num-other-sentinels" { others = $0 }
            { prev = $0 }
            END { exit !(slaves == r && others == s) }'
}

# start_sentinels: with --sentinel, three sentinels (redis-server --sentinel) on
# SENTINEL_PORT_LIST watching the data Redis as SENTINEL_MASTER, quorum SENTINEL_QUORUM;
# each's configuration and working directory in RUN_DIR/sentinel-PORT, its pid added to
# STARTED_PIDS. Waits until each is ready (sentinel_ready).
start_sentinels() {
    local p pids=""
    for p in $SENTINEL_PORT_LIST; do
        (umask 077; mkdir -p "$RUN_DIR/sentinel-$p" &&
         write_sentinel_conf "$p" "$REDIS_BIND" "$RUN_DIR/sentinel-$p" > "$RUN_DIR/sentinel-$p/sentinel.conf") ||
            die "cannot write $RUN_DIR/sentinel-$p/sentinel.conf"
        mark_log "$RUN_DIR/sentinel-$p.log"
        # umask: the file it rewrites stays this user's alone.
        (umask 077; exec setsid "${REDIS_SERVER_BIN:-redis-server}" "$RUN_DIR/sentinel-$p/sentinel.conf" \
            --sentinel </dev/null >>"$RUN_DIR/sentinel-$p.log" 2>&1) &
        printf '%s\nredis-server\n:%s \n[sentinel]\n' $! "$p" > "$RUN_DIR/sentinel-$p.pid"
        pids="$pids $!" STARTED_PIDS="${STARTED_PIDS:-} $!"
    done
    set -- $pids
    for p in $SENTINEL_PORT_LIST; do
        wait_until "$START_WAIT_S" "$1" sentinel_ready "$p" ||
            fail_with_log "sentinel on port $p (it must see the master, ${REPLICA_PORTS:+its replicas }and the other sentinels)" \
                "$RUN_DIR/sentinel-$p.log"
        shift
    done
}

# cluster_node_flags TIMEOUT_MS: a cluster node's flags (as redis-server arguments) beyond
# its port and data: nodes.conf in its directory, the node timeout, and a replica that may
# take over at once (validity factor 0: however long its link was down), so that a master
# killed under load is always replaced.
cluster_node_flags() {
    echo "--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout $1 --cluster-replica-validity-factor 0"
}

# cluster_create LOG [RUNNER...] -- NODE...: redis-cli --cluster create of the nodes
# (HOST:PORT; the first half made masters, each given a replica from the rest), through
# RUNNER when given (a test host's), with the password of REDIS_PASSWORD_FILE when set;
# its output in LOG. On failure, LOG's last lines on stderr.
cluster_create() {
    local log=$1 run=(); shift
    while [ "$1" != -- ]; do run+=("$1"); shift; done
    shift
    if ! ( [ -z "${REDIS_PASSWORD_FILE:-}" ] || export REDISCLI_AUTH="$(head -n 1 "$REDIS_PASSWORD_FILE")"
           exec ${run[@]+"${run[@]}"} redis-cli --cluster create "$@" --cluster-replicas 1 --cluster-yes ) > "$log" 2>&1; then
        tail -n 5 "$log" >&2
        return 1
    fi
}

# start_cluster: with --cluster N, 2N cluster nodes on CLUSTER_NODE_PORTS (each its own
# AOF and nodes.conf in RUN_DIR/node-PORT; a node's bus port is its port + 10000), made a
# cluster of N masters with a replica each by redis-cli --cluster create, and waited for
# until every node says cluster_state:ok and every replica's link is up. Sets
# CLUSTER_MASTERS (ports of the masters) and CLUSTER_SEEDS (HOST:PORT,... of them), and
# REDIS_HOST, OWN_REDIS. The ports need not follow each other (a test draws each apart).
start_cluster() {
    local p host nodes=()
    REDIS_HOST=$(local_host "$REDIS_BIND")
    for p in $CLUSTER_NODE_PORTS; do
        mark_log "$RUN_DIR/node-$p.log"
        # shellcheck disable=SC2046 # (the flags are words)
        redis_start "$p" "$REDIS_BIND" "$FSYNC" "$RUN_DIR/node-$p" "$RUN_DIR/node-$p.log" \
            "$RUN_DIR/node-$p.pid" $(cluster_node_flags "$CLUSTER_NODE_TIMEOUT_MS") \
            --repl-diskless-sync-delay 0 --appendfilename appendonly.aof
        if ! wait_until "$START_WAIT_S" "$REDIS_STARTED_PID" redis_pings "$p"; then
            # Its bus port (port + 10000) taken, by an outgoing connection perhaps: exit 3.
            grep -q 'Address already in use' "$RUN_DIR/node-$p.log" &&
                { echo "$PROG: port $p or its bus port $((p + 10000)) is taken; choose another --redis-port" >&2; exit 3; }
            fail_with_log "cluster node on port $p" "$RUN_DIR/node-$p.log"
        fi
        nodes+=("$REDIS_HOST:$p")
    done
    if ! rcli -p "${nodes[0]##*:}" cluster info 2>/dev/null | grep -q '^cluster_known_nodes:1.\?$'; then
        # A second up in this run directory: the nodes know their cluster (nodes.conf) and
        # come back with their data; a node that does not means the directory is mixed.
        for p in $CLUSTER_NODE_PORTS; do
            [ -s "$RUN_DIR/node-$p/nodes.conf" ] ||
                die "the cluster in $RUN_DIR is partly there (no nodes.conf for :$p): deploy/down, then remove $RUN_DIR/node-*"
        done
    else
        cluster_create "$RUN_DIR/cluster-create.log" -- "${nodes[@]}" ||
            die "redis-cli --cluster create failed"
    fi
    for p in $CLUSTER_NODE_PORTS; do
        wait_until "$START_WAIT_S" "" cluster_ok "$p" ||
            fail_with_log "the cluster (node $p never said cluster_state:ok)" "$RUN_DIR/node-$p.log"
        wait_until "$START_WAIT_S" "" cluster_linked "$p" ||
            fail_with_log "the cluster (replica $p never linked to its master)" "$RUN_DIR/node-$p.log"
    done
    CLUSTER_MASTERS=$(for p in $CLUSTER_NODE_PORTS; do
        [ "$(role_of "$REDIS_HOST:$p")" != master ] || echo "$p"; done | paste -sd' ' -)
    CLUSTER_SEEDS=$(for p in $CLUSTER_MASTERS; do echo "$REDIS_HOST:$p"; done | paste -sd, -)
    OWN_REDIS=1
}
