# up-redis.sh - deploy/up's Redis servers: the data Redis, redlock's masters, the replica.
# Sourced by deploy/up; functions only. They read its settings (REDIS_ADDR, REDIS_BIND,
# REDIS_PORT, MASTER_PORTS, REPLICA_PORT, FSYNC, RUN_DIR, START_WAIT_S), set what
# stack.env records, and exit through deploy/up's die or fail_with_log when a server does
# not start: deploy/up's rollback then stops the rest.

# write_redis_conf: the password, on every Redis started here (data, masters, replica: its
# link uses it too), in files only this user reads. redis-server gets it in its
# configuration file (REDIS_CONF), the instances by --redis-password-file, the scripts
# through rcli (REDISCLI_AUTH). A Redis not ours keeps its own (--redis-password-file),
# and masters started beside it get that one. Sets REDIS_PASSWORD_FILE and REDIS_CONF.
write_redis_conf() {
    local pw
    if [ -z "$REDIS_ADDR" ] && [ -z "$REDIS_PASSWORD_FILE" ]; then
        REDIS_PASSWORD_FILE=$RUN_DIR/redis.pass
        (umask 077; head -c 24 /dev/urandom | base64 | tr '+/' '-_' > "$REDIS_PASSWORD_FILE") ||
            die "cannot write $REDIS_PASSWORD_FILE"
    fi
    if [ -n "$REDIS_PASSWORD_FILE" ] && { [ -z "$REDIS_ADDR" ] || [ -n "$MASTER_PORTS" ]; }; then
        [ -s "$REDIS_PASSWORD_FILE" ] || die "the password file $REDIS_PASSWORD_FILE is empty"
        REDIS_CONF=$RUN_DIR/redis.conf
        pw=$(head -n 1 "$REDIS_PASSWORD_FILE" | sed 's/[\\"]/\\&/g')  # quoted for redis.conf
        (umask 077; printf '# redis.conf - written by deploy/up: the password of this stack.\nrequirepass "%s"\nmasterauth "%s"\n' \
            "$pw" "$pw" > "$REDIS_CONF") || die "cannot write $REDIS_CONF"
    fi
}

# start_data_redis: checks the Redis of --redis answers, or starts one here (AOF, in
# RUN_DIR/redis) and waits until it does. Sets REDIS_HOST, OWN_REDIS, and REDIS_EXTRA:
# the arguments the data Redis and its replica share.
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
    # With a replica: a (re)connecting replica is served at once, not after 5 s.
    [ -z "$REPLICA_PORT" ] || REDIS_EXTRA+=(--repl-diskless-sync-delay 0)
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

# start_replica: with --replica, the data Redis's replica on REPLICA_PORT: asynchronous,
# as Redis replicates; it has what the master sent so far. Waits until a write reaches it.
start_replica() {
    [ -n "$REPLICA_PORT" ] || return 0
    mark_log "$RUN_DIR/replica.log"
    redis_start "$REPLICA_PORT" "$REDIS_BIND" "$FSYNC" "$RUN_DIR/replica" "$RUN_DIR/replica.log" \
        "$RUN_DIR/replica.pid" --replicaof "$REDIS_HOST" "$REDIS_PORT" "${REDIS_EXTRA[@]}"
    wait_until "$START_WAIT_S" "$REDIS_STARTED_PID" replica_acks "$REDIS_HOST" "$REDIS_PORT" ||
        fail_with_log "replica on port $REPLICA_PORT" "$RUN_DIR/replica.log"
}
