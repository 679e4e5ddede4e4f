# lib.sh - What the fault scenarios share: sales by curl and wrk, Redis read, a timeline.
# Sourced by loadtest/run, with the file of the scenario asked for, once the stack is up and
# the stock set. A scenario lives in loadtest/scenarios/NAME.sh, named after the flaw it
# shows (a variant, such as failover-wait, in the file of the scenario it varies). Its file
# defines scenario_NAME, which plays it, and defaults_NAME, the words loadtest/run reads
# for its stack: ttl=MS (lease), wait=MS (wait limit), stock=N, fsync=MODE, sentinel (the
# data Redis under Sentinel: deploy/up --sentinel, two asynchronous replicas, three
# sentinels), replicas=N; the run's own flags win. Every scenario:
#   - drives sales with curl (exact choreography) and wrk (background load),
#   - appends each HTTP status it got to "$SCN_DIR/codes" (wrk's JSON line goes to
#     $SCN_DIR/wrk-NAME.out),
#   - sets SCN_FLAW=1 when what Redis and the HTTP answers show is the flaw, 0 when not,
#   - sets SCN_OBSERVED to one line saying what was seen,
#   - may set SCN_OVERSOLD: units answered 200 beyond the stock, counted from the answers
#     (redis-crash: a Redis that lost part of its memory cannot tell),
#   - returns non-zero, with SCN_OBSERVED saying why, when it could not be played.
# The verdict never comes from a scenario's or a version's name: only from these numbers.
#
# Inputs (set by loadtest/run, most from stack.env): ITEM, STOCK, NGINX_PORT, REDIS_HOST,
# REDIS_PORT, FSYNC, RUN_DIR, INSTANCE_PORTS and INSTANCE_PIDS (space-separated, same
# order), TTL_MS, SCN_DIR; under Sentinel also REPLICA_PORTS, SENTINEL_PORTS,
# SENTINEL_MASTER, SENTINEL_FAILOVER_TIMEOUT_MS. From deploy/lib.sh: rcli (under Sentinel:
# to the master now), current_master, sentinel_names, role_of, wait_until, metric_sum,
# free_port, redis_start, redis_pings, replica_acks; from loadtest/run: now_ms,
# sale_load_summary.

lock_key() { echo "lock:{$ITEM}"; }

# --- histories (build/sale-load --history: times on the load host's monotonic clock) ------
# mono_offset_ns: realtime minus monotonic, in ns, on this host: date +%s%N minus it is the
# load client's clock (CLOCK_MONOTONIC).
mono_offset_ns() { python3 -c 'import time; print(time.time_ns() - time.monotonic_ns())'; }
mono_now_ns() { echo $(( $(date +%s%N) - MONO_OFFSET )); }

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

# history_check FILE FINAL: the checker's verdict on the history FILE for a run from STOCK
# that left FINAL: "possible", or "impossible: " and the checker's first line. Fails (its
# output in the verdict's place) when the checker cannot read it.
history_check() {
    local out
    out=$("$LOADTEST_DIR/check-history" "$1" --stock "$STOCK" --final "$2" 2>&1)
    case $? in
    0) echo "possible" ;;
    1) echo "impossible: $(echo "$out" | head -n 1)" ;;
    *) echo "$out"; return 1 ;;
    esac
}

# acked_lost SALES FINAL: acknowledged sales lost: the 200s (SALES) beyond what the stock
# left (FINAL) says was sold; 0 when none.
acked_lost() { local n=$(( $1 - (STOCK - $2) )); echo $(( n > 0 ? n : 0 )); }
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

# history_judge HISTORY T_NS: a run's verdict from its history (checked against the stock
# left now) and from Redis: sets VERDICT (the checker's), LOST (acknowledged sales lost),
# SOLD_TWICE, GAP_MS and GAP_FROM_MS (the longest time with no sale, and where it began,
# in ms from T_NS), OVERSOLD, OVERLAPS, and SCN_FLAW: 1 when anything was oversold, lost
# or sold twice, or the history is impossible. Fails, saying why in SCN_OBSERVED, when
# the checker cannot read the history.
history_judge() {
    local final
    final=$(rcli get "stock:{$ITEM}")
    VERDICT=$(history_check "$1" "$final") ||
        { SCN_OBSERVED="check-history could not read the history: $VERDICT"; return 1; }
    set -- $(history_report "$1" "$2")   # sales gap_ms gap_from_ms first_after_ms sold_twice
    LOST=$(acked_lost "$1" "$final") SOLD_TWICE=$5 GAP_MS=$2 GAP_FROM_MS=$3
    OVERSOLD=$(oversold_now) OVERLAPS=$(overlaps_now)
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

# port_of N, pid_of N: the Nth instance's port and pid (1-based).
port_of() { echo "$INSTANCE_PORTS" | awk -v n="$1" '{ print $n }'; }
pid_of() { echo "$INSTANCE_PIDS" | awk -v n="$1" '{ print $n }'; }

# sale PORT QUERY: one sale, its status appended to codes; prints the status.
sale() {
    local code
    code=$(curl -s -o /dev/null -m 60 -w '%{http_code}' \
        "http://127.0.0.1:$1/inventory/sale?item=$ITEM${2:+&$2}") || code=000
    echo "$code" >> "$SCN_DIR/codes"
    echo "$code"
}

# sale_bg PORT QUERY: the same in the background; bg_wait waits for it.
BG_PIDS=""
sale_bg() { sale "$@" >/dev/null & BG_PIDS="$BG_PIDS $!"; }

# load_bg PORT CONNS SECS QUERY NAME [RECORD]: wrk in the background against one port
# (LOAD_PID is its pid); with RECORD, every answer is written to RECORD<thread> (sale.lua).
load_bg() {
    wrk -t 1 -c "$2" -d "${3}s" --timeout 30s -s "$LOADTEST_DIR/sale.lua" \
        "http://127.0.0.1:$1" -- "/inventory/sale?item=$ITEM${4:+&$4}" ${6:+"$6"} \
        > "$SCN_DIR/wrk-$5.out" 2>&1 &
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

overlaps_now() { local o; o=$(rcli get "overlaps:{$ITEM}"); echo "${o:-0}"; }
sold_now() { local s; s=$(rcli get "sold:{$ITEM}"); echo "${s:-0}"; }
sold_at_least() { [ "$(sold_now)" -ge "$1" ]; }
sold_out_now() { [ "$(rcli get "stock:{$ITEM}")" = 0 ]; }
# oversold_now: sold - (STOCK - stock), from what Redis holds now.
oversold_now() {
    set -- $(rcli mget "stock:{$ITEM}" "sold:{$ITEM}" | tr '\n' ' ')
    echo $(( ${2:-0} - (STOCK - ${1:-0}) ))
}
lock_held() { [ "$(rcli exists "$(lock_key)")" = 1 ]; }
lock_free() { [ "$(rcli exists "$(lock_key)")" = 0 ]; }

# sampler_start / sampler_stop: stock and sold every 100 ms into $SCN_DIR/timeline.
sampler_start() {
    local t0; t0=$(date +%s%N)
    ( while sleep 0.1; do
        v=$(rcli mget "stock:{$ITEM}" "sold:{$ITEM}") || continue   # Redis down: no point
        set -- $(echo "$v" | tr '\n' ' ')
        echo "$(( ($(date +%s%N) - t0) / 1000000 )) ${1:-0} ${2:-0}"
      done ) > "$SCN_DIR/timeline" 2>/dev/null &
    SAMPLER_PID=$!
}
sampler_stop() { kill "$SAMPLER_PID" 2>/dev/null; wait "$SAMPLER_PID" 2>/dev/null; }

# --- redlock's lock masters (MASTER_PORTS, MASTER_PIDS from stack.env) --------------------
master_pid() { echo "$MASTER_PIDS" | awk -v n="$1" '{ print $n }'; }
master_port() { echo "$MASTER_PORTS" | awk -v n="$1" '{ print $n }'; }
# kill_master N: kill -9 the Nth master.
kill_master() { kill -9 "$(master_pid "$1")" 2>/dev/null; }

# --- the data Redis under Sentinel (deploy/up --sentinel) -----------------------------------
# Its servers are known by port: REDIS_PORT (the first master: RUN_DIR/redis, redis.pid)
# and REPLICA_PORTS (RUN_DIR/replica-PORT, replica-PORT.pid); which of them is master
# changes with each failover: current_master (deploy/lib.sh) says which is now.

# data_pidfile PORT, data_dir PORT, data_log PORT: the files of the data server on PORT.
data_pidfile() { [ "$1" = "$REDIS_PORT" ] && echo "$RUN_DIR/redis.pid" || echo "$RUN_DIR/replica-$1.pid"; }
data_dir() { [ "$1" = "$REDIS_PORT" ] && echo "$RUN_DIR/redis" || echo "$RUN_DIR/replica-$1"; }
data_log() { [ "$1" = "$REDIS_PORT" ] && echo "$RUN_DIR/redis.log" || echo "$RUN_DIR/replica-$1.log"; }
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
