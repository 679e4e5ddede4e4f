# lib.sh - shared helpers for the shell tests: checks, free ports, a throwaway Redis, a
# sale. Source it; call t_cleanup (or let the EXIT trap) to stop what was started. (Sentinel
# and a Cluster start as deploy/up starts them: deploy/up-redis.sh's start_sentinels and
# start_cluster, whose servers go to STARTED_PIDS.)

T_PASSED=0
T_FAILED=0
T_SKIPPED=0
T_PIDS=""
T_TMP=$(mktemp -d "${TMPDIR:-/tmp}/invtest.XXXXXX")
# What the test starts keeps its temporary files under T_TMP (loadtest/run's and
# loadtest/evolution's run directories among them): by that a server is known to be this
# test's (ours), also while other suites run beside it (tests/run runs some side by side).
export TMPDIR=$T_TMP

. deploy/lib.sh        # free_port, is_ours, metric_sum, rcli, item_key (the tests run from the top folder)
. deploy/up-redis.sh   # start_sentinels, start_cluster: as deploy/up starts them

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
            nap 0.05
        done
        grep -q 'Address already in use' "$T_TMP/redis-$REDIS_PORT.log" || break
    done
    echo "redis-server did not start on port $REDIS_PORT" >&2
    cat "$T_TMP/redis-$REDIS_PORT.log" >&2
    return 1
}

# sentinels_up FAILOVER_TIMEOUT_MS MASTER_PORT [REPLICA_PORT...]: three real sentinels
# started and waited for as deploy/up does (up-redis.sh's start_sentinels: until each
# knows the master, every replica and the two others) on free ports, watching the master
# on MASTER_PORT as "shop": quorum 2, down after 500 ms, that failover timeout, no
# password, their files in T_TMP. Sets SENTINEL_PORTS (space-separated), SENTINELS
# (HOST:PORT,...) and SENTINEL_PORT (the last one); t_cleanup stops them.
sentinels_up() {
    local RUN_DIR=$T_TMP REDIS_BIND=127.0.0.1 REDIS_HOST=127.0.0.1 START_WAIT_S=20
    local SENTINEL_MASTER=shop SENTINEL_QUORUM=2 SENTINEL_DOWN_AFTER_MS=500
    local SENTINEL_FAILOVER_TIMEOUT_MS=$1 REDIS_PORT=$2 REPLICA_PORTS="${*:3}"
    local REDIS_PASSWORD_FILE="" SENTINEL_PASSWORD_FILE="" SENTINEL_PORT_LIST p
    SENTINEL_PORT_LIST="$(free_port) $(free_port) $(free_port)"
    start_sentinels
    SENTINEL_PORTS=$SENTINEL_PORT_LIST SENTINEL_PORT=${SENTINEL_PORT_LIST##* }
    SENTINELS=$(for p in $SENTINEL_PORT_LIST; do echo "127.0.0.1:$p"; done | paste -sd, -)
}

# cluster_up N: a throwaway Redis Cluster of N masters and N replicas, made and waited for
# as deploy/up does (up-redis.sh's start_cluster: until every node says cluster_state:ok
# with every slot, and every replica is linked) on free ports (each with its bus port,
# + 10000): no AOF, no password, node timeout 2 s, their files in T_TMP. Sets
# CLUSTER_PORTS (every node), CLUSTER_MASTERS (the masters' ports) and CLUSTER_SEEDS
# (127.0.0.1:P,... of the masters); t_cleanup stops the nodes.
cluster_up() {
    local RUN_DIR=$T_TMP REDIS_BIND=127.0.0.1 REDIS_HOST START_WAIT_S=20 FSYNC=off
    local CLUSTER_NODE_TIMEOUT_MS=2000 REDIS_PASSWORD_FILE="" OWN_REDIS CLUSTER_NODE_PORTS=""
    for _ in $(seq $(($1 * 2))); do
        CLUSTER_NODE_PORTS="$CLUSTER_NODE_PORTS $(free_port 10000)"   # and its bus port
    done
    start_cluster
    CLUSTER_PORTS=${CLUSTER_NODE_PORTS# }
}

# on_hosts: the pids of the servers that run on test hosts (198.18.0.0/15: Redis, the
# instances, nginx), sorted: taken before a run and after, what a run left is the difference.
on_hosts() { pgrep -f 'redis-server 198\.18\.|inventory-service .*--bind 198\.18\.|nginx: master' | ours | sort; }

# ours: of the pids on stdin, this test's: a process whose command line, working directory
# or output (fd 1 or 2) lies under T_TMP (Redis works in its data directory, nginx's master
# names its configuration, an instance writes its log there), or whose parent's does (an
# nginx worker's master). Other suites' servers, side by side with this one, are not.
ours() {
    local p q f
    while read -r p; do
        for q in "$p" "$(ps -o ppid= -p "$p" 2>/dev/null | tr -d ' ')"; do
            [ -n "$q" ] && [ "$q" != 1 ] || continue
            case " $(tr '\0' ' ' < "/proc/$q/cmdline" 2>/dev/null) " in *"$T_TMP/"*) echo "$p"; continue 2 ;; esac
            for f in cwd fd/1 fd/2; do
                case $(readlink "/proc/$q/$f" 2>/dev/null) in "$T_TMP"/*) echo "$p"; continue 3 ;; esac
            done
        done
    done
}

# running PID: the process exists and is not a zombie (deploy/lib.sh's pid_gone: builtins
# only, it runs often).
running() { ! pid_gone "$1"; }

# none_running PID...: none of the PIDs runs (a zombie has ended).
none_running() { local p; for p in "$@"; do running "$p" && return 1; done; return 0; }

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
            nap 0.05
        done
        grep -q 'cannot listen' "$T_TMP/svc-$port.log" || break
    done
    echo "service did not start on port $port:" >&2
    cat "$T_TMP/svc-$port.log" >&2
    return 1
}

# sale PORT ITEM [QUERY [CURL_ARG...]]: one sale of ITEM on the instance on PORT
# (127.0.0.1), QUERY added (work_ms=...); prints the HTTP status (000: no answer). The body
# goes to SALE_BODY (default T_TMP/body); SALE_MAX_S seconds at most (default 10).
sale() {
    curl -s -m "${SALE_MAX_S:-10}" -o "${SALE_BODY:-$T_TMP/body}" -w '%{http_code}' \
        "http://127.0.0.1:$1/inventory/sale?item=$2${3:+&$3}" "${@:4}"
}
# wait_all: waits for the test's background jobs, by pid, but the servers (T_PIDS).
wait_all() { local p; for p in $(jobs -p); do case " $T_PIDS " in *" $p "*) ;; *) wait "$p" ;; esac; done; }
# redis_says ANSWER ARG...: rcli ARG... (the Redis of REDIS_PORT) answers ANSWER; for
# wait_until, which asks again until it does.
# play_slower OUT ERR TTL_MS ARGS...: loadtest/run ARGS --ttl-ms TTL_MS (its stdout in OUT,
# its stderr in ERR); a run that says it could not be played ("not played": the machine
# too slow for the story's timings, which are in leases) is played again with the lease
# twice as long, twice at most, saying so on stdout. Its status is the last run's; the
# lease that run had is in OUT.ttl.
play_slower() {
    local out=$1 err=$2 ttl=$3 try rc; shift 3
    for try in 1 2 3; do
        echo "$ttl" > "$out.ttl"
        loadtest/run "$@" --ttl-ms "$ttl" > "$out" 2> "$err"; rc=$?
        [ "$rc" != 0 ] && [ "$try" -lt 3 ] && grep -q 'could not be played: not played' "$err" || return "$rc"
        echo "   not played with a lease of $ttl ms ($(grep -o 'not played: .*' "$err" | head -n 1 | cut -c 1-200)): played again with $((ttl * 2)) ms"
        ttl=$((ttl * 2))
    done
}

redis_says() { [ "$(rcli "${@:2}")" = "$1" ]; }
# metric PORT NAME: the value of metric NAME of the instance on PORT (nothing when absent).
metric() { curl -s -m 5 "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }'; }
# field KEY: KEY of the JSON line the test holds in json (a run's last line; json_field).
# shellcheck disable=SC2154  # json: the test's
field() { json_field "$1" <<<"$json"; }
# px KEY FILE: the number after KEY in FILE, whose lines are "KEY N" (a screenshot's
# pixels by colour, tests/png_stats.py).
px() { awk -v k="$1" '$1 == k { print $2 }' "$2"; }

# t_cleanup: stops what the test started, by pid (T_PIDS, and STARTED_PIDS: the servers
# deploy/lib.sh's redis_start and up-redis.sh's start_sentinels started), and removes T_TMP.
t_cleanup() {
    local p
    T_PIDS="$T_PIDS ${STARTED_PIDS:-}" STARTED_PIDS=""
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

# start_mariadb [ARG...]: a private mariadbd on a free port of 127.0.0.1 (ARGs added to its
# command line), its data directory made fresh under T_TMP (MARIADB_DIR/data), waited for
# until it answers a ping (20 s at most). root@127.0.0.1 has no password (mdb); the user
# inventory@127.0.0.1 gets a random one, in MARIADB_PASSWORD_FILE (mode 600, first line),
# ALL on the database inventory and CREATE. Sets MARIADB_PORT, MARIADB_PID, MARIADB_DIR and
# MARIADB_PASSWORD_FILE; t_cleanup stops it. A port taken between free_port and the bind is
# retried. MARIADB_DIR/run starts it again (restart_mariadb).
start_mariadb() {
    local attempt root=""
    [ "$(id -u)" != 0 ] || root=--user=root
    for attempt in 1 2 3; do
        MARIADB_PORT=$(free_port)
        MARIADB_DIR=$T_TMP/mariadb-$MARIADB_PORT
        mkdir -p "$MARIADB_DIR"
        if ! mariadb-install-db --no-defaults $root --datadir="$MARIADB_DIR/data" \
                --auth-root-authentication-method=normal --skip-test-db \
                --innodb-log-file-size=16M >"$MARIADB_DIR/install.log" 2>&1; then
            echo "mariadb-install-db failed in $MARIADB_DIR:" >&2
            tail -n 20 "$MARIADB_DIR/install.log" >&2
            return 1
        fi
        { printf 'exec'
          printf ' %q' mariadbd --no-defaults $root --datadir="$MARIADB_DIR/data" \
              --port="$MARIADB_PORT" --bind-address=127.0.0.1 --socket="$MARIADB_DIR/sock" \
              --pid-file="$MARIADB_DIR/pid" --skip-name-resolve \
              --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=64M \
              --innodb-log-file-size=16M --max-connections=400 \
              --log-error="$MARIADB_DIR/log" "$@"
          echo; } > "$MARIADB_DIR/run"
        if mariadb_run; then
            MARIADB_PASSWORD_FILE=$MARIADB_DIR/password
            new_secret "$MARIADB_PASSWORD_FILE"
            # The password through stdin: never on a command line.
            mdb_stdin <<SQL && return 0
CREATE USER 'inventory'@'127.0.0.1' IDENTIFIED BY '$(head -n 1 "$MARIADB_PASSWORD_FILE")';
GRANT ALL ON \`inventory\`.* TO 'inventory'@'127.0.0.1';
GRANT CREATE ON *.* TO 'inventory'@'127.0.0.1';
SQL
            echo "mariadbd on $MARIADB_PORT: cannot create the user inventory" >&2
            return 1
        fi
        grep -q 'Address already in use' "$MARIADB_DIR/log" 2>/dev/null || break
    done
    echo "mariadbd did not start on port $MARIADB_PORT:" >&2
    tail -n 20 "$MARIADB_DIR/log" >&2
    return 1
}

# mariadb_run: starts MARIADB_DIR/run (the mariadbd start_mariadb laid out) in the
# background and waits until it answers a ping (20 s at most); sets MARIADB_PID and adds it
# to T_PIDS. Fails when it exits first or does not answer in time.
mariadb_run() {
    bash "$MARIADB_DIR/run" >>"$MARIADB_DIR/out" 2>&1 &
    MARIADB_PID=$!
    disown "$MARIADB_PID"   # killed by a test (kill -9): no "Killed" line from this shell
    T_PIDS="$T_PIDS $MARIADB_PID"
    for _ in $(seq 200); do
        mariadb-admin --no-defaults -h127.0.0.1 -P"$MARIADB_PORT" -uroot --connect-timeout=1 \
            ping >/dev/null 2>&1 && return 0
        running "$MARIADB_PID" || return 1
        sleep 0.1
    done
    return 1
}

# restart_mariadb: kills the mariadbd of MARIADB_PID at once (kill -9: a crash) and starts
# it again on the same port and data directory (MARIADB_DIR), waited for as start_mariadb
# waits; sets MARIADB_PID. (Of several servers: the one MARIADB_PID, MARIADB_PORT and
# MARIADB_DIR name, the last started unless set back.)
restart_mariadb() {
    local p rest=""
    kill -9 "$MARIADB_PID" 2>/dev/null
    for _ in $(seq 100); do running "$MARIADB_PID" || break; nap 0.05; done
    for p in $T_PIDS; do [ "$p" = "$MARIADB_PID" ] || rest="$rest $p"; done
    T_PIDS=$rest
    mariadb_run || { echo "mariadbd did not start again on port $MARIADB_PORT" >&2; return 1; }
}

# mdb SQL...: runs SQL as root on the mariadbd of MARIADB_PORT; prints the rows, tab
# separated, no column names. mdb_stdin: the same, the SQL read from stdin.
mdb() { mariadb --no-defaults -h127.0.0.1 -P"$MARIADB_PORT" -uroot -N -B -e "$*"; }
mdb_stdin() { mariadb --no-defaults -h127.0.0.1 -P"$MARIADB_PORT" -uroot -N -B; }
