# failover.sh - v8's flaw in a Sentinel failover: the promoted replica lost the grant, two
# holders. Also failover-wait: a grant counts only once a replica has it.
#
# The data Redis runs under Sentinel (deploy/up --sentinel: a master, two asynchronous
# replicas, three sentinels). Once both replicas have the stock, their links drop (each is
# pointed at an address where nothing answers, as a partition would) just before A's
# grant, so that the grant reaches neither; A works on instance 1 until well after the
# failover; the master is killed -9 and the sentinels promote a replica (nobody sends
# REPLICAOF NO ONE by hand); the instances follow (they ask the sentinels, confirm with
# ROLE, hear +switch-master); B sells three times on instance 2 while A still works; the
# old master comes back from its files as the new master's replica (it says so from its
# first moment: A's write, after it, does not go there).
# Checked, not assumed: the promoted replica lacks what A's grant wrote on the master (the
# lock key, the token counter), else the cut did not hold and the run is not played. Two
# ways Sentinel could undo the cut, kept out of the window: it points a replica that
# follows another address back at the master (+fix-slave-config) only once the master
# looks sane and failover-timeout has passed since it saw the change (the kill comes
# within a second of the cut; the scenario refuses to play if it came later than
# failover-timeout less one second); and it skips a replica whose link has been down
# longer than ten down-afters plus the master's downtime (the cut is a second old).
# Verdict: the flaw when Redis shows oversold > 0: two holders, A's write landed after
# B's. The observed line says what A answered and, where there is a fence:{I}, how it
# went back on the promoted replica and the tokens in the ledger. Fenced (v9), A's write
# is refused (409 lease_lost). failover-wait starts the instances with --replicas 1: a
# grant counts only once a replica has it, so A's is refused (503 lock_unavailable).
# Rows in loadtest/evolution: v8 shows it; v9 (both), and v10 (locks on its own
# masters) do not.

# A small stock; the stack runs under Sentinel (and, for failover-wait, --replicas 1).
defaults_failover="ttl=2000 wait=10000 stock=40 sentinel"
defaults_failover_wait="ttl=2000 wait=10000 stock=40 sentinel replicas=1"

# replicas_have_stock ITEM STOCK: every replica has ITEM's stock, STOCK.
replicas_have_stock() {
    local p
    for p in $REPLICA_PORTS; do [ "$(item_get -p "$p" stock "$1")" = "$2" ] || return 1; done
}
# grant_trace ITEM HOST:PORT: what a grant of ITEM writes on the data Redis, as that server
# has it: whether lock:{I} exists, and fence:{I}.
grant_trace() {
    printf 'EXISTS %s\nGET %s\n' "$(item_key lock "$1")" "$(item_key fence "$1")" |
        REDIS_HOST=${2%:*} rcli -p "${2##*:}" | paste -sd' ' -
}
# a_holds_or_answered DIR ITEM: A's sale (DIR/a.code) has answered, or ITEM's lock is held
# (on the first lock master for redlock, on the data Redis otherwise).
a_holds_or_answered() {
    [ -s "$1/a.code" ] && return 0
    if [ -n "${MASTER_PORTS:-}" ]; then
        [ "$(rcli -p "$(master_port 1)" exists "$(item_key lock "$2")")" = 1 ]
    else
        lock_held "$2"
    fi
}
# trace_text TRACE: a grant_trace in words.
trace_text() { set -- $1; echo "lock:{I} ${1:-?}, fence:{I} ${2:-none}"; }
# a_answer DIR: A's status and what it said (sold, sold with its lease lost, or the error).
a_answer() {
    echo "$(cat "$1/a.code" 2>/dev/null) $(jq -r 'if .ok then "sold" + (if .lease_lost then " (lease lost)" else "" end) else .error end' "$1/a.json" 2>/dev/null)"
}

# failover_cut_and_kill DIR ITEM TTL_MS WORK OLD_MASTER: cuts both replicas off, starts A's
# sale of ITEM (working WORK ms; its answer in DIR/a.json, a.code), kills the master
# (OLD_MASTER, HOST:PORT); sets CUT_MS, KILL_MS and TRACE_OLD (grant_trace of the master
# just before).
failover_cut_and_kill() {
    local dir=$1 item=$2 ttl_ms=$3 work=$4 old=$5 a p dead
    a=$(port_of 1); dead=$(free_port)
    CUT_MS=$(now_ms)
    for p in $REPLICA_PORTS; do rcli -p "$p" replicaof 127.0.0.1 "$dead" >/dev/null; done
    ( code=$(curl -s -o "$dir/a.json" -m 60 -w '%{http_code}' \
          "http://127.0.0.1:$a/inventory/sale?item=$item&work_ms=$work") || code=000
      echo "$code" >> "$dir/codes"; echo "$code" > "$dir/a.code" ) &
    BG_PIDS="$BG_PIDS $!"
    # A holds (or was refused) once its try and the replicas' acknowledgement are over.
    wait_until 2 "" a_holds_or_answered "$dir" "$item"
    sleep "$(awk "BEGIN{print ($ttl_ms / 10 + 300) / 1000}")"
    TRACE_OLD=$(grant_trace "$item" "$old")
    kill_data_server "$REDIS_PORT"
    KILL_MS=$(now_ms)
}

scenario_failover() {
    local "$@"
    local b ft new trace_new fence code sold_b=0 b_first="" oversold promoted_ms b_ms b_until b_tries
    local old work
    stack_read "$stack" || return 1
    [ -n "${SENTINEL_PORTS:-}" ] || { SCN_OBSERVED="no sentinels in this stack (deploy/up --sentinel)"; return 1; }
    b=$(port_of 2); ft=${SENTINEL_FAILOVER_TIMEOUT_MS:-4000}
    old=$(current_master) && [ "$old" = "$REDIS_HOST:$REDIS_PORT" ] ||
        { SCN_OBSERVED="the sentinels do not name the first master ($REDIS_HOST:$REDIS_PORT)"; return 1; }
    # A works two leases past a failover the sentinels had to start twice: a first try
    # that fails (a split vote, or no replica they deem good: one slow to answer a PING on
    # a busy machine) is tried again only 2 x failover-timeout after it began, and A's
    # answer must still come after the promotion and B's sales.
    work=$((ttl_ms * 2 + ft * 3))
    wait_until 10 "" replicas_have_stock "$item" "$stock" || { SCN_OBSERVED="the replicas never got the stock"; return 1; }
    failover_cut_and_kill "$dir" "$item" "$ttl_ms" "$work" "$old"
    [ $((KILL_MS - CUT_MS)) -lt $((ft - 1000)) ] ||
        { SCN_OBSERVED="the kill came $((KILL_MS - CUT_MS)) ms after the cut: the sentinels may have mended it (failover-timeout $ft ms)"; return 1; }
    wait_until $((ft * 3 / 1000 + 5)) "" promoted_from "$old" ||
        { SCN_OBSERVED="the sentinels promoted no replica within $((ft * 3 / 1000 + 5)) s"; return 1; }
    promoted_ms=$(now_ms); new=$(current_master)
    trace_new=$(grant_trace "$item" "$new")
    [ "$trace_new" != "$TRACE_OLD" ] ||
        { SCN_OBSERVED="the promoted replica $new has what the master had at the kill (lock, fence: $TRACE_OLD): the cut did not hold"; return 1; }
    # B sells as soon as the replica is promoted, while A still works: A's work must
    # outlast the failover and B's sales, not the old master's restart too (on a busy
    # machine, the two together once took longer than A's work, and A answered first).
    # B's instance may not have followed the failover yet (a busy machine): a sale it
    # refuses is tried again, every 100 ms, until three sold or A's work is nearly over.
    b_until=$((CUT_MS + work - 1000)) b_tries=0
    while [ "$sold_b" -lt 3 ] && [ "$(now_ms)" -lt "$b_until" ]; do
        code=$(sale_fg "$dir" "$item" "$b"); b_tries=$((b_tries+1))
        if [ "$code" = 200 ]; then sold_b=$((sold_b+1)); else sleep 0.1; fi
    done
    b_ms=$(now_ms)
    [ -s "$dir/a.code" ] && b_first=" (A had answered already)"
    restart_as_replica "$REDIS_PORT" "$new" && [ "$(role_of "$old")" = slave ] ||
        { SCN_OBSERVED="the old master did not come back as a replica"; return 1; }
    wait_until 10 "" linked_to_master "$REDIS_PORT" || { SCN_OBSERVED="the old master did not link to $new"; return 1; }
    bg_wait
    oversold=$(oversold_now "$item" "$stock")
    fence=""    # a version with a fence:{I}: how it went back, and the tokens in the ledger
    set -- $TRACE_OLD "" ""
    [ -z "$2" ] || fence="; its fence:{I} went back from $2 to $(set -- $trace_new; echo "${2:-0}"), tokens in the ledger $(
        rcli xrange "$(item_key orders "$item")" - + | awk 'prev == "token" { print } { prev = $0 }' | paste -sd, -)"
    SCN_FLAW=0
    [ "$oversold" -gt 0 ] && SCN_FLAW=1
    SCN_OBSERVED="both replicas cut before A's grant; master killed $((KILL_MS - CUT_MS)) ms after the cut ($(trace_text "$TRACE_OLD")), the sentinels promoted the replica on :${new##*:} $((promoted_ms - KILL_MS)) ms later ($(trace_text "$trace_new"))$fence; B sold $sold_b of 3 ($b_tries tried)$b_first ($((b_ms - CUT_MS)) ms after A's start); the old master back as its replica; A (working $work ms) answered $(a_answer "$dir"); oversold $oversold"
}
# failover-wait: the same choreography on a stack that waits for a replica.
scenario_failover_wait() { scenario_failover "$@"; }
