# hosts.sh - A stack on test hosts (deploy/hosts): what the scenarios across hosts share.
# Sourced by loadtest/run for a scenario whose defaults say hosts=N: no stack is brought
# up on loopback; the scenario lays its own out on hosts h1..hN, each part on the address
# of its host and the same port everywhere (as on real machines): Redis 6379, a sentinel
# 26379, a ZooKeeper server 2181 (2888 and 3888 between servers), an instance 8001, nginx
# 8080. Pid files and logs go to the stack's run directory (hosts_stack_up's RUN:
# STACK_DIR) under deploy/up's names (redis.pid for the data Redis started as master,
# replica-hK, sentinel-hK, zk-ID, instance-hK), so deploy/down stops them;
# loadtest/run's finish removes the hosts (hosts_stack_down).
# Everything the scenario and loadtest/run then read goes through a host (HOSTS_VIA,
# deploy/lib.sh's in_net): this machine has no route to them. The loads run in the hosts.
#
# Sets for loadtest/run and lib.sh, as stack.env would: REDIS_HOST, REDIS_PORT,
# REDIS_PASSWORD_FILE, FSYNC, INSTANCE_PORTS (HOST:PORT each), INSTANCE_PIDS, with
# sentinels SENTINEL_PORTS (HOST:PORT each), SENTINEL_MASTER, SENTINEL_PASSWORD_FILE, and
# with redlock's lock masters MASTER_PORTS (HOST:PORT each), MASTER_PIDS; and STACK_DIR.
# The run's lock settings reach the instances as flags the scenario hands host_instance
# (instance_flags, from its words).
#
# A process may be started under a command prefix (a clock faker: scenarios/clock-jump.sh):
# INSTANCE_WRAP for host_instance, REDIS_WRAP for host_redis and host_lock_master, e.g.
# REDIS_WRAP="env LD_PRELOAD=... CLOCKSTEP_FILE=..." host_redis h1. The prefix must end by
# exec'ing the command (env does): the pid is the server's, as deploy/down checks it.

. "$DEPLOY_DIR/up-redis.sh"   # new_secret, conf_quote, write_sentinel_conf, sentinel_ready
. "$DEPLOY_DIR/up-zookeeper.sh"   # zk_check, zk_server_start: a server as deploy/up starts one
HOSTS_BIN=$DEPLOY_DIR/hosts
H_REDIS_PORT=6379 H_SENTINEL_PORT=26379 H_INSTANCE_PORT=8001 H_NGINX_PORT=8080
H_MYSQL_PORT=3306   # a database node's clients, on 127.0.0.1 of its own host (scenarios/galera.sh)
H_ZK_PORTS="2181 2888 3888"   # a ZooKeeper server's client, quorum and election ports
# Each run its own hosts (names invltPID-h1...): two runs at once never remove each other's.
export HOSTS_PREFIX=${HOSTS_PREFIX:-invlt$$}

host_addr() { "$HOSTS_BIN" addr "$1"; }
in_host() { local h=$1; shift; "$HOSTS_BIN" run "$h" "$@"; }

# hosts_why_not: why test hosts cannot be made here (deploy/hosts check); fails when they can.
hosts_why_not() { ! "$HOSTS_BIN" check; }

# hosts_stack_up RUN N FSYNC: the hosts h1..hN, a stack to lay out on them in the run
# directory RUN (STACK_DIR), its data Redis servers' AOF as FSYNC (everysec when empty),
# and the stack's passwords (files only this user reads: the Redis servers' in
# REDIS_CONF, the sentinels' in SENTINEL_PASSWORD_FILE).
hosts_stack_up() {
    "$HOSTS_BIN" up "$2" || return 1
    STACK_DIR=$1 FSYNC=${3:-everysec}
    HOSTS_UP=$2
    HOSTS_VIA=h$2
    REDIS_PASSWORD_FILE=$STACK_DIR/redis.pass SENTINEL_PASSWORD_FILE=$STACK_DIR/sentinel.pass
    REDIS_CONF=$STACK_DIR/redis.conf SENTINEL_MASTER=inventory
    new_secret "$REDIS_PASSWORD_FILE"
    new_secret "$SENTINEL_PASSWORD_FILE"
    (umask 077; pw=$(conf_quote "$(head -n 1 "$REDIS_PASSWORD_FILE")")
     printf 'requirepass %s\nmasterauth %s\n' "$pw" "$pw" > "$REDIS_CONF")
    INSTANCE_PORTS="" INSTANCE_PIDS="" SENTINEL_PORTS="" REPLICA_PORTS="" MASTER_PORTS="" MASTER_PIDS=""
    ZK_CONNECT="" CLUSTER_PORTS="" CLUSTER_SEEDS=""
}
# hosts_stack_down: what runs in the hosts, by pid (deploy/down: STACK_DIR's and those of
# deploy/up run in a host with STACK_DIR/H), then the hosts.
hosts_stack_down() {
    local d
    [ -n "${HOSTS_UP:-}" ] || return 0
    for d in "$STACK_DIR"/h[0-9]*/; do    # stacks deploy/up started in a host (STACK_DIR/H)
        [ ! -f "$d/stack.env" ] || "$DEPLOY_DIR/down" --run-dir "$d" --quiet || true
    done
    "$DEPLOY_DIR/down" --run-dir "$STACK_DIR" --quiet || true
    "$HOSTS_BIN" down || true
    HOSTS_UP=""
}

# host_redis H [ARG...]: a data Redis in H on its address (AOF as FSYNC, data and log under
# STACK_DIR: the first one started is the master, redis/; the others replica-H/); ARGs are
# added (--replicaof, min-replicas-...). True once it answers.
host_redis() {
    local h=$1 name a; shift
    a=$(host_addr "$h")
    if [ -z "${REDIS_HOST:-}" ]; then name=redis; REDIS_HOST=$a REDIS_PORT=$H_REDIS_PORT
    else name=replica-$h; REPLICA_PORTS="${REPLICA_PORTS:+$REPLICA_PORTS }$a:$H_REDIS_PORT"; fi
    redis_in_host "$h" "$name" "$@"
}

# host_lock_master H [ARG...]: one of redlock's lock masters in H on its address (as
# host_redis's, under STACK_DIR/master-H/), added to MASTER_PORTS and MASTER_PIDS: every
# host_instance started after it takes them as --lock-redis. True once it answers.
host_lock_master() {
    local h=$1; shift
    redis_in_host "$h" "master-$h" "$@" || return 1
    MASTER_PORTS="${MASTER_PORTS:+$MASTER_PORTS }$(host_addr "$h"):$H_REDIS_PORT"
    MASTER_PIDS="${MASTER_PIDS:+$MASTER_PIDS }$REDIS_IN_HOST_PID"
}

# redis_in_host H NAME [ARG...]: redis-server in H on its address and H_REDIS_PORT, under
# REDIS_WRAP, data in STACK_DIR/NAME/, log NAME.log, pid file NAME.pid (REDIS_IN_HOST_PID).
# True once it answers.
redis_in_host() {
    local h=$1 name=$2 a; shift 2
    a=$(host_addr "$h")
    # shellcheck disable=SC2206  # REDIS_WRAP: words (a clock faker's env and preload)
    local REDIS_LAUNCH=("$HOSTS_BIN" run "$h" ${REDIS_WRAP:-})
    redis_start "$H_REDIS_PORT" "$a" "$FSYNC" "$STACK_DIR/$name" "$STACK_DIR/$name.log" \
        "$STACK_DIR/$name.pid" --protected-mode no --repl-diskless-sync-delay 0 "$@"
    REDIS_IN_HOST_PID=$REDIS_STARTED_PID
    wait_until 10 "$REDIS_STARTED_PID" sh -c "[ \"\$(REDISCLI_AUTH=\$(cat '$REDIS_PASSWORD_FILE') '$HOSTS_BIN' run '$h' redis-cli -h '$a' -p '$H_REDIS_PORT' ping)\" = PONG ]"
}

# host_cluster H...: a Redis Cluster of one node in each host H (as deploy/up --cluster
# makes one: AOF as FSYNC, cluster-node-timeout CLUSTER_NODE_TIMEOUT_MS, default 2000),
# the first half of them masters, each given a replica from the rest by redis-cli
# --cluster create (in the first host); data and log under STACK_DIR/node-H, pid file
# node-H.pid. Sets CLUSTER_PORTS (every node, HOST:PORT: rcli and scenarios/cluster.sh
# take them) and CLUSTER_SEEDS (the masters, for the instances). True once every node
# says cluster_state:ok.
host_cluster() {
    local h nodes=() n=$# p
    for h in "$@"; do
        # shellcheck disable=SC2046 # (the flags are words)
        redis_in_host "$h" "node-$h" $(cluster_node_flags "${CLUSTER_NODE_TIMEOUT_MS:-2000}") ||
            return 1
        nodes+=("$(host_addr "$h"):$H_REDIS_PORT")
    done
    cluster_create "$STACK_DIR/cluster-create.log" "$HOSTS_BIN" run "$1" -- "${nodes[@]}" || return 1
    CLUSTER_PORTS="${nodes[*]}"
    CLUSTER_SEEDS=$(printf '%s\n' "${nodes[@]:0:$(( n / 2 ))}" | paste -sd, -)
    for p in "${nodes[@]}"; do
        wait_until 20 "" sh -c "REDISCLI_AUTH=\$(head -n 1 '$REDIS_PASSWORD_FILE') '$HOSTS_BIN' run '$1' \
            redis-cli -h '${p%:*}' -p '${p##*:}' cluster info | grep -q '^cluster_state:ok'" || return 1
    done
}

# host_sentinel H QUORUM: a sentinel in H watching the master (REDIS_HOST) as SENTINEL_MASTER
# with QUORUM, down after SENTINEL_DOWN_AFTER_MS (default 500), failover timeout
# SENTINEL_FAILOVER_TIMEOUT_MS (default 4000).
host_sentinel() {
    local h=$1 a dir; a=$(host_addr "$h"); dir=$STACK_DIR/sentinel-$h
    (umask 077; mkdir -p "$dir"
     SENTINEL_QUORUM=$2 SENTINEL_DOWN_AFTER_MS=${SENTINEL_DOWN_AFTER_MS:-500} \
         SENTINEL_FAILOVER_TIMEOUT_MS=${SENTINEL_FAILOVER_TIMEOUT_MS:-4000} \
         write_sentinel_conf "$H_SENTINEL_PORT" "$a" "$dir" > "$dir/sentinel.conf")
    (umask 077; exec setsid "$HOSTS_BIN" run "$h" redis-server "$dir/sentinel.conf" --sentinel \
        </dev/null >>"$STACK_DIR/sentinel-$h.log" 2>&1) &
    printf '%s\nredis-server\n:%s \n[sentinel]\n' $! "$H_SENTINEL_PORT" > "$STACK_DIR/sentinel-$h.pid"
    SENTINEL_PORTS="${SENTINEL_PORTS:+$SENTINEL_PORTS }$a:$H_SENTINEL_PORT"
}
# sentinels_ready: every sentinel knows every replica (REPLICA_PORTS) and every other
# sentinel (up-redis.sh's sentinel_ready, for each).
sentinels_ready() {
    local s
    for s in $SENTINEL_PORTS; do SENTINEL_PORT_LIST=$SENTINEL_PORTS sentinel_ready "$s" || return 1; done
}

# instance_flags WORD...: the service's flags for the run's lock settings among a
# scenario's WORDs (lock=, ttl_ms=, wait_ms=, retry_ms=, wait_policy=, combine=,
# replicas=; an empty one left out), one a line (mapfile -t FLAGS < <(instance_flags ...)).
instance_flags() {
    local lock="" ttl_ms="" wait_ms="" retry_ms="" wait_policy="" combine="" replicas=""
    local "$@"
    printf '%s\n' --lock "$lock"
    [ -z "${ttl_ms:-}" ] || printf '%s\n' --ttl-ms "$ttl_ms"
    [ -z "${wait_ms:-}" ] || printf '%s\n' --wait-ms "$wait_ms"
    [ -z "${retry_ms:-}" ] || printf '%s\n' --retry-ms "$retry_ms"
    [ -z "${wait_policy:-}" ] || printf '%s\n' --wait "$wait_policy"
    [ -z "${combine:-}" ] || printf '%s\n' --combine "$combine"
    [ -z "${replicas:-}" ] || printf '%s\n' --replicas "$replicas"
}

# host_zookeeper H ID N: server ID of an ensemble of N, in H on its address (every server
# on the same ports: H_ZK_PORTS), as deploy/up starts one (up-zookeeper.sh: its
# configuration, data and log under STACK_DIR/zk-ID, pid file zk-ID.pid); the servers'
# addresses are those of the hosts ZK_ON_HOSTS names (server 1 on the first). Sets
# ZK_CONNECT (every server's address), which host_instance then gives the instances.
host_zookeeper() {
    local h=$1 id=$2 n=$3 i
    local ZK_CLIENT_PORTS ZK_QUORUM_PORTS ZK_ELECTION_PORTS ZK_ADDRS="" RUN_DIR=$STACK_DIR
    local ZK_LAUNCH=("$HOSTS_BIN" run "$h")
    ZK_CLIENT_PORTS=$(printf "${H_ZK_PORTS%% *} %.0s" $(seq "$n"))
    ZK_QUORUM_PORTS=$(printf "$(echo $H_ZK_PORTS | cut -d' ' -f2) %.0s" $(seq "$n"))
    ZK_ELECTION_PORTS=$(printf "${H_ZK_PORTS##* } %.0s" $(seq "$n"))
    for i in $ZK_ON_HOSTS; do ZK_ADDRS="$ZK_ADDRS $(host_addr "$i")"; done
    zk_server_start "$id"
    ZK_CONNECT=$(for i in $ZK_ADDRS; do printf '%s:%s\n' "$i" "${H_ZK_PORTS%% *}"; done | paste -sd, -)
}
# zk_hosts_quorum: the ensemble of ZK_ON_HOSTS serves: each server, asked from its own host,
# says leader or follower, and one leads.
zk_hosts_quorum() {
    local h i=1 m modes=""
    for h in $ZK_ON_HOSTS; do
        m=$(HOSTS_VIA=$h zk_mode "$(host_addr "$h"):${H_ZK_PORTS%% *}")
        modes="$modes ${m:--}"
    done
    case $modes in *leader*) ;; *) return 1 ;; esac
    ! echo "$modes" | grep -qE '(^| )-( |$)|standalone'
}

# host_instance H [ARG...]: an instance in H on its address, named inventory-H, faults on
# (the overlap probe), Redis found by the sentinels (or REDIS_HOST without them; or the
# cluster of host_cluster by its seeds), the lock
# masters of host_lock_master if any, or with ZK_CONNECT set (host_zookeeper) the stock in
# that ensemble, or with MYSQL_ON_HOSTS set (scenarios/galera.sh) the stock in the database
# node of its own host (127.0.0.1:H_MYSQL_PORT there, MYSQL_PASSWORD_FILE), under
# INSTANCE_WRAP; ARGs are added (the run's lock settings: instance_flags). The binary is
# SERVICE_BIN when set (as deploy/up takes it: another build, for a before-and-after),
# else build/inventory-service. True once it answers /health.
host_instance() {
    local h=$1 a bin=${SERVICE_BIN:-$BUILD_DIR/inventory-service} args; a=$(host_addr "$h"); shift
    args=(--bind "$a" --port "$H_INSTANCE_PORT" --name "inventory-$h" --faults)
    if [ -n "${MYSQL_ON_HOSTS:-}" ]; then
        args+=(--mysql "127.0.0.1:$H_MYSQL_PORT" --mysql-password-file "$MYSQL_PASSWORD_FILE")
    elif [ -n "${ZK_CONNECT:-}" ]; then
        args+=(--zookeeper "$ZK_CONNECT")
    elif [ -n "${CLUSTER_SEEDS:-}" ]; then
        args+=(--redis-cluster "$CLUSTER_SEEDS")
    elif [ -n "$SENTINEL_PORTS" ]; then
        args+=(--sentinel "$(echo $SENTINEL_PORTS | tr ' ' ,)" --sentinel-master "$SENTINEL_MASTER"
               --sentinel-password-file "$SENTINEL_PASSWORD_FILE")
    else
        args+=(--redis "$REDIS_HOST:$REDIS_PORT")
    fi
    [ -n "${ZK_CONNECT:-}${MYSQL_ON_HOSTS:-}" ] || args+=(--redis-password-file "$REDIS_PASSWORD_FILE")
    [ -z "${MASTER_PORTS:-}" ] || args+=(--lock-redis "$(echo $MASTER_PORTS | tr ' ' ,)")
    setsid "$HOSTS_BIN" run "$h" ${INSTANCE_WRAP:-} "$bin" "${args[@]}" "$@" \
        </dev/null >>"$STACK_DIR/instance-$h.log" 2>&1 &
    printf '%s\n%s \n--port %s \n' $! "$bin" "$H_INSTANCE_PORT" > "$STACK_DIR/instance-$h.pid"
    INSTANCE_PORTS="${INSTANCE_PORTS:+$INSTANCE_PORTS }$a:$H_INSTANCE_PORT"
    INSTANCE_PIDS="${INSTANCE_PIDS:+$INSTANCE_PIDS }$!"
    wait_until 10 $! in_host "$h" curl -sf -m 2 -o /dev/null "http://$a:$H_INSTANCE_PORT/health"
}

# host_sales DIR H NAME SECS CONNS QUERY [ARG...]: build/sale-load in H against H's
# instance for SECS with CONNS connections, QUERY (may be empty) added to each sale's URL,
# ARGs sale-load's items (--item-count K --zipf S, --items I), in the background (its pid
# appended to BG_PIDS); every answer in DIR/history-NAME.jsonl, its summary in
# DIR/load-NAME.out.
host_sales() {
    local dir=$1 h=$2 name=$3 secs=$4 conns=$5 query=$6 a; shift 6
    a=$(host_addr "$h")
    # At nice 10: the clients are the background. Flat out on two busy cores they took the
    # CPU that the scenario's own steps (a cut, a clock step, the samplers) need on time.
    in_host "$h" nice -n 10 "$BUILD_DIR/sale-load" --url "http://$a:$H_INSTANCE_PORT/inventory/sale${query:+?$query}" \
        -c "$conns" -d "$secs" "$@" --timeout-ms 10000 --history "$dir/history-$name.jsonl" \
        > "$dir/load-$name.out" 2>&1 &
    BG_PIDS="$BG_PIDS $!"
}

# host_load DIR ITEM H SECS CONNS NAME [QUERY]: host_sales of one item, ITEM (QUERY, e.g.
# work_ms=50, added to each sale).
host_load() { host_sales "$1" "$3" "$6" "$4" "$5" "item=$2${7:+&$7}"; }

# host_long_sale DIR H ITEM WORK_MS NAME: one sale of ITEM by curl in H, to H's instance,
# working WORK_MS in its critical section (--faults' work_ms), in the background (LONG_PID,
# also in BG_PIDS): its answer in DIR/long-NAME.json, its code in DIR/codes, its history
# line in DIR/history-NAME.jsonl (the clock read in H just before curl and just after: an
# interval a little wider than the real one, never narrower). MONO_OFFSET: deploy/lib.sh's
# mono_start.
host_long_sale() {
    local dir=$1 h=$2 item=$3 name=$5
    local url="http://$(host_addr "$h"):$H_INSTANCE_PORT/inventory/sale?item=$item&work_ms=$4"
    ( set -- $(in_host "$h" sh -c 'date +%s%N
          curl -s -o "$1" -m 120 -w "%{http_code}\n" "$2"
          date +%s%N' sh "$dir/long-$name.json" "$url")
      code=${2:-000}
      echo "$code" >> "$dir/codes"
      [ "$code" != 000 ] || code=0
      jq -c --argjson s "$(( ${1:-0} - MONO_OFFSET ))" --argjson e "$(( ${3:-0} - MONO_OFFSET ))" \
          --argjson code "$code" --arg item "$item" '
          {start_ns: $s, end_ns: $e, status: $code, error: (.error // ""), item: $item,
           instance: (.instance // "")} + if .remaining then {remaining} else {} end' \
          "$dir/long-$name.json" > "$dir/history-$name.jsonl" 2>/dev/null ||
          jq -nc --argjson s "$(( ${1:-0} - MONO_OFFSET ))" --arg item "$item" \
          '{start_ns: $s, status: 0, item: $item}' > "$dir/history-$name.jsonl" ) &
    LONG_PID=$!
    BG_PIDS="$BG_PIDS $!"
}

# loads_stop DIR: host_sales' loads into DIR end now, as at the end of their time
# (sale-load on SIGTERM: no new request, the answers in flight awaited, its summary and
# history written whole).
loads_stop() { pkill -TERM -f -- "--history $1/history-" 2>/dev/null || true; }

# loads_done DIR NAME...: once host_sales' loads have ended (bg_wait): each one's summary in
# DIR/wrk-NAME.out (the fields loadtest/run sums) and their histories, one after the
# other, in DIR/history.jsonl. Fails, saying why in SCN_OBSERVED, when a load left no
# summary.
loads_done() {
    local dir=$1 n; shift
    for n in "$@"; do
        sale_load_summary "$dir/load-$n.out" > "$dir/wrk-$n.out" ||
            { SCN_OBSERVED="sale-load $n failed: $(tail -n 2 "$dir/load-$n.out")"; return 1; }
    done
    for n in "$@"; do cat "$dir/history-$n.jsonl"; done > "$dir/history.jsonl"
}

# hosts_cut "A B..." "C D...": a partition: every host of the first group cut from every
# host of the second, the links all at once and ahead of everything else (nice -10): a
# partition is one moment, and on two busy cores one link after another took 0.9 s each
# (the six links of a 4 s cut were not all in place when it healed). hosts_heal: every
# cut healed, as promptly.
hosts_cut() {
    local a b pids=() p rc=0
    for a in $1; do for b in $2; do
        nice -n -10 "$HOSTS_BIN" cut "$a" "$b" & pids+=($!)
    done; done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    return "$rc"
}
hosts_heal() { nice -n -10 "$HOSTS_BIN" heal; }
