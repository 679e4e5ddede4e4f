# lib.sh - What the fault scenarios share: sales by curl and wrk, Redis read, a timeline.
# Sourced by loadtest/run, with the file of the scenario asked for, once the stack is up and
# the stock set. A scenario lives in loadtest/scenarios/NAME.sh, named after the flaw it
# shows (a variant, such as failover-wait, in the file of the scenario it varies). Its file
# defines scenario_NAME, which plays it, and defaults_NAME, the words loadtest/run reads
# for its stack: ttl=MS (lease), wait=MS (wait limit), stock=N, fsync=MODE, sentinel (the
# data Redis under Sentinel: deploy/up --sentinel, two asynchronous replicas, three
# sentinels), replicas=N; the run's own flags win. Every scenario:
#   - drives sales with curl (exact choreography) and wrk (background load),
#   - appends each HTTP status it got to DIR/codes (wrk's JSON line goes to
#     DIR/wrk-NAME.out),
#   - sets SCN_FLAW=1 when what Redis and the HTTP answers show is the flaw, 0 when not,
#   - sets SCN_OBSERVED to one line saying what was seen,
#   - may set SCN_OVERSOLD: units answered 200 beyond the stock, counted from the answers
#     (redis-crash: a Redis that lost part of its memory cannot tell),
#   - returns non-zero, with SCN_OBSERVED saying why, when it could not be played.
# The verdict never comes from a scenario's or a version's name: only from these numbers.
# Those three variables and the files in DIR (codes, wrk-*.out, timeline, history.jsonl)
# are how the results come back to loadtest/run.
#
# Inputs: words, and the stack they name; nothing else of loadtest/run. loadtest/run calls
#   scenario_NAME item=I stock=S dir=DIR stack=RUN lock=V ttl_ms=T wait_ms=W retry_ms=R
#                 wait_policy=P combine=N replicas=N fsync=F secs=D items=K zipf=Z
# and the scenario binds them to locals (local "$@"): the item sold, the stock at the
# start, DIR (the scenario's own: its outputs), RUN (the stack's run directory), the run's
# lock settings (ttl_ms: the lease in force, the service's 30000 unless given; wait_ms,
# retry_ms, wait_policy (poll|notify), combine, replicas: empty when not given), fsync
# (--fsync), secs (-d), items and zipf (--items, --zipf). A word may be empty; a variant
# passes its words on ("$@"), adding its own after them (a later word wins).
# The stack: a scenario on the stack deploy/up brought up reads it itself, stack_read RUN
# (RUN/stack.env); one on test hosts lays its own out in RUN (scenarios/hosts.sh,
# hosts_stack_up). Either way the stack is stack.env's names (REDIS_HOST, REDIS_PORT,
# INSTANCE_PORTS, INSTANCE_PIDS, NGINX_PORT, MASTER_PORTS, MASTER_PIDS, REPLICA_PORTS,
# SENTINEL_PORTS, CLUSTER_PORTS, FSYNC, the password files, ...) and STACK_DIR (RUN: its
# pid files and logs), which deploy/lib.sh's helpers read (rcli, current_master,
# sentinel_names, role_of, metric_sum, redis_start, ...) and the stack's helpers below
# (port_of, master_pid, data_pidfile, ...). Every other helper here takes what it uses
# (the item, DIR, the stock, ...) as arguments. Also from deploy/lib.sh: item_key,
# wait_until, free_port, redis_pings, replica_acks, now_ms, mono_start, mono_now_ns,
# sale_load_summary, items_read, and on ZooKeeper (stack.env's ZK_CONNECT, ZK_DIR) zk_mode,
# zk_modes, zk_leader, zk_item_state. A scenario on ZooKeeper (v11's, or atomic's there) has no Redis to read
# and no fault probe: it is judged from the HTTP answers, its history (check-history) and
# the stock the service reads (--get-stock). A scenario in a MariaDB database (v12..v15, or
# atomic there: stack.env's MYSQL_CONNECT, MYSQL_DIR, MYSQL_FLUSH) reads the database
# itself, as root on the server deploy/up started (mdb_sql): the items row, the orders
# rows, the probe's row and the lock's own row (db_* below); it keeps no fault probe of a
# sale killed inside (a dead process is not inside: db_probe_clear).

# Where the tools are, from this file's place: loadtest/ (check-history, sale.lua,
# cluster-move) and build/ (sale-load, clockstep.so, inventory-service).
LOADTEST_TOOLS=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD_DIR=${LOADTEST_TOOLS%/*}/build

# stack_read RUN: the stack deploy/up brought up in RUN: its RUN/stack.env (stack.env's
# names), and STACK_DIR, RUN. Fails, saying why in SCN_OBSERVED, when RUN has none.
stack_read() {
    [ -f "$1/stack.env" ] || { SCN_OBSERVED="no stack.env in $1 (deploy/up writes it)"; return 1; }
    . "$1/stack.env"
    STACK_DIR=$1
}

# --- histories (build/sale-load --history: times on the load host's monotonic clock, which
# deploy/lib.sh's mono_now_ns reads) ---------------------------------------------------------

# history_report FILE T_NS: prints "sales gap_ms gap_from_ms first_after_ms sold_twice"
# from the history: the 200s, the longest time with no 200 answered (between the load's
# start and its end), where it began (ms after T_NS, the fault: a kill, a cut; negative
# before), the first 200 sent after T_NS (ms from T_NS to its answer; -1: none), and the
# 200s that share their remaining with another (a unit sold twice).
history_report() {
    jq -rs --argjson kill "$2" '
        (map(.start_ns) | min) as $t0 | (map(.end_ns) | max) as $t1
        | map(select(.status == 200)) as $ok
        | ([$t0] + ($ok | map(.end_ns) | sort) + [$t1]) as $t
        | ([range(1; $t | length) | {gap: ($t[.] - $t[. - 1]), from: $t[. - 1]}]
           | max_by(.gap)) as $g
        | ([$ok[] | select(.start_ns >= $kill) | .end_ns] | min) as $first
        | ($ok | group_by(.remaining) | map(select(length > 1) | length - 1) | add // 0) as $twice
        | "\($ok | length) \(($g.gap / 1e6) | floor) \((($g.from - $kill) / 1e6) | floor) \(if $first then (($first - $kill) / 1e6 | floor) else -1 end) \($twice)"
    ' "$1"
}

# history_check FILE STOCK FINAL [SOLD LEDGER]: the checker's verdict on the history FILE
# for a run from STOCK that left FINAL (and the sold counter SOLD and a ledger of LEDGER
# entries: the checker's rule 5, stock + sold = STOCK and ledger = sold): "possible", or
# "impossible: " and the checker's first line (history_verdict_of). Fails (its output in
# the verdict's place) when the checker cannot read it.
history_check() {
    local out rc=0 counts=()
    [ -z "${4:-}" ] || counts=(--sold "$4" --ledger "$5")
    out=$("$LOADTEST_TOOLS/check-history" "$1" --stock "$2" --final "$3" "${counts[@]}" 2>&1) ||
        rc=$?
    history_verdict_of "$rc" "$out"
}

# acked_lost STOCK SALES FINAL: acknowledged sales lost: the 200s (SALES) beyond what the
# stock left (FINAL) says was sold of STOCK; 0 when none.
acked_lost() { local n=$(( $2 - ($1 - $3) )); echo $(( n > 0 ? n : 0 )); }
# first_sale_after HISTORY T_NS [answered]: ms from T_NS to the first 200 of HISTORY sent
# after it (with "answered": answered after it, wherever sent); -1: none.
first_sale_after() {
    jq -s --argjson t "$2" --arg by "$([ "${3:-}" = answered ] && echo end_ns || echo start_ns)" \
        '[.[] | select(.status == 200 and .[$by] >= $t) | .end_ns] | min
        | if . then ((. - $t) / 1e6 | floor) else -1 end' "$1"
}
# sleep_until NS: sleeps until the monotonic time NS (mono_now_ns); at once when it passed.
sleep_until() {
    sleep "$(awk -v t=$(( $1 - $(mono_now_ns) )) 'BEGIN { printf "%.3f", (t > 0 ? t / 1e9 : 0) }')"
}

# history_judge ITEM STOCK HISTORY T_NS: a run's verdict from its history (checked against
# ITEM's stock, sold and ledger now, from STOCK) and from Redis (or ZooKeeper): sets VERDICT (the
# checker's), LOST (acknowledged sales lost), SOLD_TWICE, GAP_MS and GAP_FROM_MS (the
# longest time with no sale, and where it began, in ms from T_NS), OVERSOLD, OVERLAPS
# (null on ZooKeeper: no probe there), and SCN_FLAW: 1 when anything was oversold, lost or
# sold twice, or the history is impossible. Fails, saying why in SCN_OBSERVED, when the
# checker cannot read the history or the store the stock.
history_judge() {
    local item=$1 stock=$2 final counts
    counts=$(item_counts "$item") || { SCN_OBSERVED="the stock of $item could not be read"; return 1; }
    final=${counts%% *}
    VERDICT=$(history_check "$3" "$stock" $counts) ||
        { SCN_OBSERVED="check-history could not read the history: $VERDICT"; return 1; }
    set -- $(history_report "$3" "$4")   # sales gap_ms gap_from_ms first_after_ms sold_twice
    LOST=$(acked_lost "$stock" "$1" "$final") SOLD_TWICE=$5 GAP_MS=$2 GAP_FROM_MS=$3
    OVERSOLD=$(oversold_now "$item" "$stock") OVERLAPS=null
    zk_stack || OVERLAPS=$(overlaps_now "$item")
    SCN_FLAW=0
    [ "$OVERSOLD" -le 0 ] && [ "$LOST" = 0 ] && [ "$SOLD_TWICE" = 0 ] && [ "$VERDICT" = possible ] ||
        SCN_FLAW=1
}

# history_answers FILE...: the histories' answers by status (and by error for 409 and
# 503), one line: "200 x N, 409 x N (sold_out N, lease_lost N), ...".
history_answers() {
    cat "$@" | jq -rs '
        group_by(.status) | map("\(.[0].status) x \(length)" + if .[0].status == 503 or .[0].status == 409 then
            " (" + (group_by(.error) | map("\(.[0].error) \(length)") | join(", ")) + ")" else "" end)
        | join(", ")'
}

# crash_sale DIR ITEM: one sale of ITEM through nginx, recorded like wrk's (a line of
# DIR/answers-curl: status, error, request id, Retry-After); true when the store answered
# it (200 or 409). For the scenarios that kill a store and start it again.
crash_sale() {
    local dir=$1 code body
    rm -f "$dir/probe.h" "$dir/probe.json"
    code=$(curl -s -D "$dir/probe.h" -o "$dir/probe.json" -m 10 -w '%{http_code}' \
        "http://127.0.0.1:$NGINX_PORT/inventory/sale?item=$2") || code=000
    body=$(jq -r '"\(.error // "-") \(.request_id // "-")"' "$dir/probe.json" 2>/dev/null) || body="- -"
    echo "$code $body $(grep -qi '^retry-after:' "$dir/probe.h" 2>/dev/null && echo 1 || echo 0)" \
        >> "$dir/answers-curl"
    echo "$code" >> "$dir/codes"
    [ "$code" = 200 ] || [ "$code" = 409 ]
}

# port_of N, pid_of N: the stack's Nth instance's port and pid (1-based).
port_of() { echo "$INSTANCE_PORTS" | awk -v n="$1" '{ print $n }'; }
pid_of() { echo "$INSTANCE_PIDS" | awk -v n="$1" '{ print $n }'; }

# sale_fg DIR ITEM PORT [QUERY]: one sale of ITEM on the instance on PORT, QUERY added; its
# status appended to DIR/codes; prints the status.
sale_fg() {
    local code
    code=$(curl -s -o /dev/null -m 60 -w '%{http_code}' \
        "http://127.0.0.1:$3/inventory/sale?item=$2${4:+&$4}") || code=000
    echo "$code" >> "$1/codes"
    echo "$code"
}

# sale_bg DIR ITEM PORT [QUERY]: the same in the background; bg_wait waits for it.
BG_PIDS=""
sale_bg() { sale_fg "$@" >/dev/null & BG_PIDS="$BG_PIDS $!"; }

# load_bg DIR ITEM PORT CONNS SECS QUERY NAME [RECORD]: wrk in the background against one
# port, selling ITEM with QUERY added, its JSON line in DIR/wrk-NAME.out (LOAD_PID is its
# pid); with RECORD, every answer is written to RECORD<thread> (sale.lua).
load_bg() {
    wrk -t 1 -c "$4" -d "${5}s" --timeout 30s -s "$LOADTEST_TOOLS/sale.lua" \
        "http://127.0.0.1:$3" -- "/inventory/sale?item=$2${6:+&$6}" ${8:+"$8"} \
        > "$1/wrk-$7.out" 2>&1 &
    LOAD_PID=$!
    BG_PIDS="$BG_PIDS $!"
}

# bg_wait: waits for the sales and loads started above, by pid (a bare `wait` would also
# wait for the sampler, or anything else the caller runs in the background).
bg_wait() {
    local p
    for p in $BG_PIDS; do wait "$p" 2>/dev/null || true; done
    BG_PIDS=""
}

# overlaps_now ITEM, sold_now ITEM: ITEM's overlaps and sold in Redis (or the database)
# now (0: none).
overlaps_now() {
    local o
    if db_stack; then
        o=$(db_sql "SELECT SUM(overlaps) FROM inventory.probes WHERE item = $(db_lit "$1")")
    else
        o=$(item_get overlaps "$1")
    fi
    is_uint "${o:-}" && echo "$o" || echo 0
}
sold_now() {
    local s
    if db_stack; then s=$(db_item "$1"); s=${s#* }; else s=$(item_get sold "$1"); fi
    echo "${s:-0}"
}
# sold_at_least ITEM N, sold_out_now ITEM: ITEM has sold N or more; has no stock left.
sold_at_least() { [ "$(sold_now "$1")" -ge "$2" ]; }
sold_out_now() { [ "$(stock_left "$1")" = 0 ]; }
# oversold_now ITEM STOCK: sold - (STOCK - stock) of ITEM, from what Redis (or ZooKeeper,
# or the database) holds now.
oversold_now() {
    local stock=$2
    if zk_stack; then
        set -- $(zk_item_state "$1")
    elif db_stack; then
        set -- $(db_item "$1")
    else
        set -- $(rcli mget "$(item_key stock "$1")" "$(item_key sold "$1")" | tr '\n' ' ')
    fi
    echo $(( ${2:-0} - (stock - ${1:-0}) ))
}
# stock_left ITEM: ITEM's stock now, in Redis (or ZooKeeper: --get-stock; or the database);
# fails when the store does not answer.
stock_left() {
    local v
    if zk_stack; then
        v=$(zk_item_state "$1") || return 1
        echo "${v%% *}"
    elif db_stack; then
        v=$(db_item "$1") && [ -n "$v" ] || return 1
        echo "${v%% *}"
    else
        item_get stock "$1"
    fi
}
# lock_held ITEM, lock_free ITEM: ITEM's lock key exists; does not.
lock_held() { [ "$(rcli exists "$(item_key lock "$1")")" = 1 ]; }
lock_free() { [ "$(rcli exists "$(item_key lock "$1")")" = 0 ]; }
# lock_seen ITEM SECS, lock_gone ITEM SECS: ITEM's lock key seen to exist (not to exist)
# within about SECS (whole) seconds, asked every 10 ms by one redis-cli (lock_watch). On busy
# cores a poll that forked a client each time missed a 500 ms lease, or saw one run out
# hundreds of ms late; lock_seen is started (&) before the sale that takes the lock.
lock_watch() {
    rcli -r "$(( $2 * 100 ))" -i 0.01 exists "$(item_key lock "$1")" 2>/dev/null | grep -qxm1 "$3"
}
lock_seen() { lock_watch "$1" "$2" 1; }
lock_gone() { lock_watch "$1" "$2" 0; }

# sampler_start DIR ITEM / sampler_stop: ITEM's stock and sold (in Redis, or the database)
# every 100 ms into DIR/timeline.
# A sample forks only its client and its sleep (the time is bash's own EPOCHREALTIME, in
# microseconds once its point is dropped): on busy cores, each fork more was a sample less.
sampler_start() {
    local t0 stock sold item=$2
    t0=${EPOCHREALTIME//[!0-9]/} stock=$(item_key stock "$2") sold=$(item_key sold "$2")
    ( while sleep 0.1; do
        if db_stack; then
            v=$(db_item "$item") && [ -n "$v" ] || continue   # the database down: no point
        else
            v=$(rcli mget "$stock" "$sold") || continue   # Redis down: no point
        fi
        set -- $v   # (stock and sold, on one line or two)
        echo "$(( (${EPOCHREALTIME//[!0-9]/} - t0) / 1000 )) ${1:-0} ${2:-0}"
      done ) > "$1/timeline" 2>/dev/null &
    SAMPLER_PID=$!
}
sampler_stop() { kill "$SAMPLER_PID" 2>/dev/null; wait "$SAMPLER_PID" 2>/dev/null; }

# --- redlock's lock masters (the stack's MASTER_PORTS, MASTER_PIDS) ------------------------
master_pid() { echo "$MASTER_PIDS" | awk -v n="$1" '{ print $n }'; }
master_port() { echo "$MASTER_PORTS" | awk -v n="$1" '{ print $n }'; }
# kill_master N: kill -9 the Nth master.
kill_master() { kill -9 "$(master_pid "$1")" 2>/dev/null; }
# stop_master N: the Nth master killed -9, and gone.
stop_master() {
    local pid; pid=$(master_pid "$1")
    kill -9 "$pid" 2>/dev/null
    wait_until 5 "" pid_gone "$pid"
}
# restart_master N: the stack's Nth master again, from its own files, on its port (as
# deploy/up started it; its pid file and MASTER_PIDS updated so that deploy/down stops it).
restart_master() {
    local p; p=$(master_port "$1")
    redis_start "$p" "$REDIS_HOST" "$FSYNC" "$STACK_DIR/master-$p" "$STACK_DIR/master-$p.log" \
        "$STACK_DIR/master-$p.pid"
    MASTER_PIDS=$(echo "$MASTER_PIDS" | awk -v n="$1" -v pid="$REDIS_STARTED_PID" '{ $n = pid; print }')
    wait_until 10 "$REDIS_STARTED_PID" redis_pings "$p"
}

# --- the data Redis under Sentinel (deploy/up --sentinel) -----------------------------------
# Its servers are known by port: REDIS_PORT (the first master: STACK_DIR/redis, redis.pid)
# and REPLICA_PORTS (STACK_DIR/replica-PORT, replica-PORT.pid); which of them is master
# changes with each failover: current_master (deploy/lib.sh) says which is now.

# data_pidfile PORT, data_dir PORT, data_log PORT: the files of the data server on PORT.
data_pidfile() { [ "$1" = "$REDIS_PORT" ] && echo "$STACK_DIR/redis.pid" || echo "$STACK_DIR/replica-$1.pid"; }
data_dir() { [ "$1" = "$REDIS_PORT" ] && echo "$STACK_DIR/redis" || echo "$STACK_DIR/replica-$1"; }
data_log() { [ "$1" = "$REDIS_PORT" ] && echo "$STACK_DIR/redis.log" || echo "$STACK_DIR/replica-$1.log"; }
# kill_data_server PORT: kill -9 the data server on PORT (by its pid file, if still ours).
kill_data_server() {
    local pid; pid=$(head -n 1 "$(data_pidfile "$1")")
    is_ours "$pid" redis-server ":$1 " && kill -9 "$pid"
}
# restart_as_replica PORT HOST:PORT: the data server on PORT again, from its own files, as a
# replica of the master at HOST:PORT: it says so (ROLE) from its first moment, so no
# instance ever writes to it. Its pid file is rewritten; true once it answers.
restart_as_replica() {
    redis_start "$1" "$REDIS_HOST" "$FSYNC" "$(data_dir "$1")" "$(data_log "$1")" \
        "$(data_pidfile "$1")" --replicaof "${2%:*}" "${2##*:}" --repl-diskless-sync-delay 0
    wait_until 10 "$REDIS_STARTED_PID" redis_pings "$1"
}
# sentinels_agree: every sentinel names the same master; prints it (HOST:PORT).
sentinels_agree() {
    local p at first=""
    for p in $SENTINEL_PORTS; do
        at=$(sentinel_names "$p") || return 1
        [ -z "$first" ] || [ "$at" = "$first" ] || return 1
        first=$at
    done
    echo "$first"
}
# promoted_from HOST:PORT: true once every sentinel names another master than HOST:PORT and
# that server says it is a master: the failover is over (+switch-master sent).
promoted_from() {
    local at
    at=$(sentinels_agree) && [ "$at" != "$1" ] && [ "$(role_of "$at")" = master ]
}
# linked_to_master PORT: the replica on PORT has its master link up.
linked_to_master() {
    rcli -p "$1" info replication 2>/dev/null | tr -d '\r' | grep -qx 'master_link_status:up'
}

# --- ZooKeeper (a stack from deploy/up --zookeeper N or --zookeepers: ZK_CONNECT, ZK_DIR) ---
# zk_stack: the stack's stock is in ZooKeeper.
zk_stack() { [ -n "${ZK_CONNECT:-}" ]; }
# zk_session_of PORT: the session timeout (ms) the instance on PORT has from the ensemble,
# as its log says at start ("session timeout N ms").
zk_session_of() {
    sed -n 's/.* zookeeper .*: session timeout \([0-9]*\) ms.*/\1/p' "$STACK_DIR/instance-$1.log" | tail -n 1
}
# metric_of PORT NAME: the metric NAME of the instance on PORT (0 when it does not answer).
metric_of() {
    local n
    n=$(curl -s -m 2 "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2 }')
    echo "${n:-0}"
}
# metric_above PORT NAME N: that metric is above N.
metric_above() { [ "$(metric_of "$1" "$2")" -gt "$3" ]; }
# grants_of PORT: the locks the instance on PORT was granted so far (its /metrics); 0 when
# it does not answer.
grants_of() { metric_of "$1" inventory_lock_acquisitions_total; }
# granted_more PORT N: the instance on PORT was granted more than N locks.
granted_more() { metric_above "$1" inventory_lock_acquisitions_total "$2"; }
# zk_hold DIR ITEM PORT QUERY HISTORY: a sale of ITEM on the instance on PORT, QUERY added
# (its work), started in the background (sale_hist; its pid in BG_PIDS) and waited for
# until the instance's grants say it took the lock (5 s at most). Sets SESSION to the
# instance's session timeout (ms); fails with SCN_OBSERVED set when it has none, or the
# lock was not taken.
zk_hold() {
    local granted
    SESSION=$(zk_session_of "$3")
    [ -n "$SESSION" ] || { SCN_OBSERVED="instance 1's log names no session timeout"; return 1; }
    granted=$(grants_of "$3")
    mono_start
    sale_hist "$1" "$2" "$3" "${4//@SESSION@/$SESSION}" "$5" > /dev/null &
    BG_PIDS="$BG_PIDS $!"
    wait_until 5 "" granted_more "$3" "$granted" ||
        { SCN_OBSERVED="the first sale never took the lock"; return 1; }
}
# zk_server_id HOST:PORT: the number of the server at HOST:PORT: its place in ZK_CONNECT.
zk_server_id() { zk_servers | awk -v a="$1" '$0 == a { print NR; exit }'; }
# zk_server_pid ID: the pid of the ensemble's server ID, from its pid file in ZK_DIR (the
# run directory that started it), when the process is still that server; fails otherwise.
zk_server_pid() {
    local f=$ZK_DIR/zk-$1.pid pid
    [ -n "$ZK_DIR" ] && [ -f "$f" ] || return 1
    pid=$(head -n 1 "$f")
    is_ours "$pid" "$(sed -n 2p "$f")" "$(sed -n 3p "$f")" && echo "$pid"
}
# sale_hist DIR ITEM PORT QUERY HISTORY: one sale of ITEM on the instance on PORT, QUERY
# added, recorded in HISTORY as build/sale-load records one (times on mono_now_ns's clock:
# mono_start first; status 0: no answer); its status appended to DIR/codes, its answer's
# body left in HISTORY.body; prints the status.
sale_hist() {
    local t0 t1 code
    : > "$5.body"
    t0=$(mono_now_ns)
    code=$(curl -s -o "$5.body" -m 60 -w '%{http_code}' \
        "http://127.0.0.1:$3/inventory/sale?item=$2${4:+&$4}") || code=000
    t1=$(mono_now_ns)
    echo "$code" >> "$1/codes"
    jq -cn --argjson s "$t0" --argjson e "$t1" --argjson st "$((10#$code))" --arg item "$2" \
        --rawfile body "$5.body" '($body | try fromjson catch {}) as $a
        | {start_ns: $s, end_ns: $e, status: $st, item: $item}
          + if $a.error then {error: $a.error} else {} end
          + if $st == 200 then {remaining: $a.remaining, instance: $a.instance} else {} end' >> "$5"
    echo "$code"
}

# --- MariaDB (a stack from deploy/up --mysql: MYSQL_CONNECT, MYSQL_DIR, MYSQL_FLUSH) --------
# What the database holds, read as root (deploy/lib.sh's mdb_sql: root has no password over
# TCP on a server deploy/up started): ITEM's row of items, its sales' rows of orders, the
# probe's row (probes: the id of the sale inside, "NAME:OWNER:N"), and the lock's own row,
# by version: v12's in locks (its owner, locked_at), v13's and v14's in leases (its owner
# and lock_until, the lease's end in ms since 1970: on the client's clock for v13, the
# database's for v14). v15's lock is a row lock of its holder's open transaction, which no
# table names: the probe and information_schema's INNODB_TRX show it.

# db_stack: the stack's stock is in a MariaDB database.
db_stack() { [ -n "${MYSQL_CONNECT:-}" ]; }
# db_ours: the stack's server is one deploy/up started (MYSQL_DIR): root may read it.
db_ours() { [ -n "${MYSQL_DIR:-}" ]; }
# db_playable: the stack's stock is in a database of its own (db_stack, db_ours); else
# SCN_OBSERVED says why the scenario cannot be played there, and it fails.
db_playable() {
    db_stack && db_ours && return 0
    SCN_OBSERVED="not played: no database of the stack's own (deploy/up --mysql: root reads it)"
    return 1
}
# db_sql SQL: SQL's rows, tab-separated, no header, as root on the stack's server; fails
# when it does not answer.
db_sql() { mdb_sql "$1" 2>/dev/null; }
# db_lit TEXT: TEXT as an SQL string literal.
db_lit() { local q="'"; printf "'%s'" "${1//$q/$q$q}"; }
# The database's clock, ms since 1970 (v14's lease's clock), as SQL.
DB_NOW_MS="ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000)"
# db_item ITEM: "STOCK SOLD" of ITEM's row of items; nothing when it has none.
db_item() {
    db_sql "SELECT stock, sold FROM inventory.items WHERE item = $(db_lit "$1")" | tr '\t' ' '
}
# db_lock_table LOCK: the table the version LOCK keeps its lock's row in: locks (v12), leases
# (v13, v14); nothing for v15 (a row lock) or any other.
db_lock_table() {
    case $1 in v12|db-table) echo locks ;; v13|db-expiry|v14|db-fenced) echo leases ;; esac
}
# db_row TABLE ITEM: ITEM's row of the lock's TABLE now, "MS OWNER": in leases MS is how
# long its lease still runs by the database's clock (0 or less: over), in locks how long
# ago it was taken; nothing when there is no row.
db_row() {
    local w="name = $(db_lit "$2")"
    case $1 in
    locks) db_sql "SELECT CONCAT(ROUND(TIMESTAMPDIFF(MICROSECOND, locked_at, NOW(6)) / 1000), ' ',
                   owner) FROM inventory.locks WHERE $w" ;;
    leases) db_sql "SELECT CONCAT(lock_until - $DB_NOW_MS, ' ', owner) FROM inventory.leases
                    WHERE $w" ;;
    esac
}
# db_row_names TABLE ITEM OWNER: ITEM's row of TABLE names OWNER (in leases, with its lease
# still running by the database's clock).
db_row_names() {
    local r; r=$(db_row "$1" "$2")
    [ "${r#* }" = "$3" ] && { [ "$1" = locks ] || [ "${r%% *}" -gt 0 ]; }
}
# db_lease_over ITEM: ITEM's leases row has run out by the database's clock (lock_until
# at or below its now), or is free.
db_lease_over() { local r; r=$(db_row leases "$1") && [ -n "$r" ] && [ "${r%% *}" -le 0 ]; }
# db_row_other ITEM TABLE OWNER: ITEM's row of TABLE names a holder other than OWNER (in
# leases, one whose lease runs): another took the lock.
db_row_other() {
    local r; r=$(db_row "$2" "$1")
    [ -n "$r" ] && [ -n "${r#* }" ] && [ "${r#* }" != "$3" ] &&
        { [ "$2" = locks ] || [ "${r%% *}" -gt 0 ]; }
}
# db_inside ITEM: the probe's id of the sale inside ITEM's lock now; nothing when none is.
db_inside() { db_sql "SELECT id FROM inventory.probes WHERE item = $(db_lit "$1")"; }
# db_owner_inside ITEM PORT: the owner of the sale of the instance on PORT (named NAME-PORT)
# inside ITEM's lock now, from the probe's id; fails when none of its sales is inside.
db_owner_inside() {
    local id; id=$(db_inside "$1")
    case $id in *-"$2":*:*) ;; *) return 1 ;; esac
    id=${id#*-"$2":}
    echo "${id%:*}"
}
# db_probe_clear ITEM: the probe emptied: a sale killed inside never leaves it, and a dead
# process is not inside.
db_probe_clear() {
    db_sql "UPDATE inventory.probes SET id = '' WHERE item = $(db_lit "$1")" >/dev/null
}
# db_trx_holding: the server's thread id of a transaction that holds a row lock (v15's
# holder: its SELECT ... FOR UPDATE), running (not waiting); fails when none does.
# INNODB_TRX is the server's cache of its transactions, refreshed by a read only when none
# came in the last 100 ms: read more often, it would show the same moment for ever.
db_trx_holding() {
    local t
    sleep 0.15
    t=$(db_sql "SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX
                WHERE trx_state = 'RUNNING' AND trx_rows_locked > 0 LIMIT 1")
    [ -n "$t" ] && echo "$t"
}
# db_thread_gone ID: the server has no connection ID any more.
db_thread_gone() {
    [ "$(db_sql "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = $1")" = 0 ]
}
# db_held_by ITEM PORT LOCK: the sale of the instance on PORT is inside ITEM's lock now, as
# the database shows it: the probe names it and, where the version LOCK has a lock's row,
# that row names the same owner (in leases, with its lease running by the database's
# clock), else a transaction holds a row lock (v15). Prints its owner.
db_held_by() {
    local table w ev r id owner
    table=$(db_lock_table "$3") w=$(db_lit "$1")
    case $table in
    locks) ev="SELECT owner FROM inventory.locks WHERE name = $w" ;;
    leases) ev="SELECT owner FROM inventory.leases WHERE name = $w AND lock_until > $DB_NOW_MS" ;;
    *) ev="SELECT NULL" ;;
    esac
    r=$(db_sql "SELECT (SELECT id FROM inventory.probes WHERE item = $w), ($ev)") || return 1
    id=${r%%$'\t'*} ev=${r#*$'\t'}
    case $id in *-"$2":*:*) ;; *) return 1 ;; esac
    owner=${id#*-"$2":} owner=${owner%:*}
    if [ -n "$table" ]; then [ "$ev" = "$owner" ] || return 1
    else db_trx_holding >/dev/null || return 1; fi
    echo "$owner"
}
# db_wait_held ITEM PORT LOCK: waits (5 s at most) until the database shows the sale of the
# instance on PORT inside ITEM's lock (db_held_by); prints its owner; fails when it did not.
db_wait_held() { wait_until 5 "" db_held_by "$@" && db_held_by "$@"; }
# db_order_of REQUEST_ID: "STATUS REMAINING INSTANCE" of the orders row of the sale whose
# answer named REQUEST_ID; nothing when it has none (its write never landed).
db_order_of() {
    db_sql "SELECT status, remaining, instance FROM inventory.orders
            WHERE request_id = $(db_lit "$1") LIMIT 1" | tr '\t' ' '
}
