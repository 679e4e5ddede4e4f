# sentinel-failover.sh - The master killed -9 mid-load under Sentinel: how long no sale goes
# through, and what the failover lost, from the history of every sale.
#
# The stack: deploy/up --sentinel (a master, two asynchronous replicas, three sentinels,
# quorum 2, down after 500 ms). Load through nginx by build/sale-load (16 keep-alive
# connections, SECS seconds, each sale 1 ms of work inside the lock), every answer
# recorded with the load host's monotonic times (--history). One sale of a second item
# (I-held) works 2 s inside its lock; once both replicas have its lock (WAIT 2 on the
# master: one command, however busy the machine), the master is killed -9 1.2 s into that
# sale (from its grant, by its lease's PTTL), a third of the way into the load: a lock is
# certainly held when the master dies, the replica promoted has it, and the sale's write,
# 800 ms after the kill and long before a promotion, meets no master (503): its lock is left to be given back. A run
# where the replicas did not have it by then is "not played". The sentinels promote a replica; the held item is sold again until one sale goes
# through; the old master comes back from its files as the new master's replica; the load
# goes on to its end.
# Then loadtest/check-history checks the history against the stock left on the master now.
# Reported: the checker's verdict; acknowledged sales lost (200s beyond what the stock
# says was sold); stock sold twice (200s sharing a remaining); the longest time with no
# sale; the failover's own time (kill to the promotion seen by polling the sentinels);
# the first sale after the kill, of each item; answers by status.
# Verdict: the flaw when a time with no sale outlasts the failover by more than a second,
# or the held item is not sold again within it (a stall: before abandoned locks were given
# back, a lock held at the crash stayed for its lease, renewed by its own thread), or when
# two sales were inside the critical section at once (the probe, once the
# ghost of the sale inside at the kill, which never left it, is removed from the promoted
# replica, as soon as it says it is a master: before the sentinels announce it, so before
# the instances write there). The checker's verdict is reported, not judged: a replica promoted after an
# asynchronous copy may lack the last sales the master acknowledged, whatever the lock
# (the faster the sales, the more: a few of the atomic sale's 15,000 a second, seldom one
# of v8's 500), and sells those units again; the checker counts them (acknowledged sales
# lost, sold twice). Only a grant confirmed by WAIT (--replicas) is safe from it, and the
# sale's own write is not.
# Rows in loadtest/evolution: v8, v9 and atomic. (now_ms is deploy/lib.sh's.)

# A lease as in production (30 s: a stall would show whole); a stock the run cannot sell.
defaults_sentinel_failover="ttl=30000 wait=10000 stock=1000000 sentinel"

# held_sale HELD: one sale of the held item HELD through nginx; prints its status.
held_sale() { curl -s -o /dev/null -m 15 -w '%{http_code}' "http://127.0.0.1:$NGINX_PORT/inventory/sale?item=$1"; }
# first_held_sale_ms HELD T0_NS: sells the held item HELD until one is sold (30 s at most);
# prints the ms from T0_NS (monotonic) to that answer, or -1.
first_held_sale_ms() {
    local end=$(( $(date +%s) + 30 ))
    while [ "$(date +%s)" -lt "$end" ]; do
        [ "$(held_sale "$1")" = 200 ] && { echo $(( ($(mono_now_ns) - $2) / 1000000 )); return; }
        nap 0.02
    done
    echo -1
}

master_gone() { ! is_ours "$1" redis-server; }
# switches_logged: the distinct master switches the sentinels logged (+switch-master NAME
# OLD-HOST OLD-PORT NEW-HOST NEW-PORT, each sentinel logs one per failover it sees), as
# "OLD->NEW" ports in order; one failover is one entry.
switches_logged() {
    local p
    for p in $SENTINEL_PORTS; do
        grep -o '+switch-master [^ ]* [^ ]* [0-9]* [^ ]* [0-9]*' "$STACK_DIR/sentinel-$p.log" 2>/dev/null
    done | awk '!seen[$0]++ { printf "%s%s->%s", sep, $4, $6; sep = ", " }'
}
# a_replica_promoted: prints the port of a replica that says it is a master (the sentinels
# made it one: they announce it later, once they see it).
a_replica_promoted() {
    local p
    for p in $REPLICA_PORTS; do
        [ "$(role_of "$REDIS_HOST:$p")" = master ] && { echo "$p"; return 0; }
    done
    return 1
}

# held_kill_at HELD: once the held item HELD's sale holds its lock on the master (OLD, the
# scenario's) and both replicas have every write so far (WAIT 2), sleeps until 1.2 s
# after that lock was granted (its PTTL says when: the lease is ttl_ms), or not at all
# when that is past; HELD_ON: whether each replica has it ("1,1"). Fails, "not played" in
# SCN_OBSERVED, when the replicas do not have it, or not by 1.7 s into the sale (its write
# at 2 s must come after the kill: on two busy cores the replicas had it at 1.6 s).
held_kill_at() {
    local pttl granted acked
    wait_until 3 "" held_lock_on "$old" "$1" ||
        { SCN_OBSERVED="not played: the held item's sale never took its lock"; return 1; }
    acked=$(rcli -p "$old" wait 2 1500)
    pttl=$(rcli -p "$old" pttl "$(item_key lock "$1")")
    granted=$(( $(mono_now_ns) - (ttl_ms - ${pttl:-0}) * 1000000 ))
    [ "$acked" = 2 ] && [ "${pttl:-0}" -gt 0 ] ||
        { SCN_OBSERVED="not played: the replicas did not have the held lock (WAIT 2: $acked)"; return 1; }
    # Whether the held lock is on each replica (the one promoted will hold it at the
    # start): read now, while the held sale works in it, before the kill. Read after the
    # kill, a busy machine read them once the sentinels had promoted one and the held
    # sale's release (its instance had followed) had reached both.
    HELD_ON=$(for p in $REPLICA_PORTS; do rcli -p "$p" exists "$(item_key lock "$1")"; done | paste -sd, -)
    [ "$(mono_now_ns)" -lt $(( granted + 1700000000 )) ] ||
        { SCN_OBSERVED="not played: the replicas had the held lock $(( ($(mono_now_ns) - granted) / 1000000 )) ms into its sale, past the kill's last place (1700 ms)"; return 1; }
    sleep_until $(( granted + 1200000000 ))
}
# held_lock_on HOST:PORT HELD: the server at HOST:PORT has the held item HELD's lock.
held_lock_on() { [ "$(rcli -p "$1" exists "$(item_key lock "$2")")" = 1 ]; }

scenario_sentinel_failover() {
    local "$@"
    local hist=$dir/history.jsonl old kill_at new work="" load_pid work_pid held held_t0 work_code work_s
    local kill_ns prom_ns final verdict counts lost before ghosts at_clean failover_ms overlaps held_ms pid held_on
    secs=${secs:-10} held="$item-held"
    stack_read "$stack" || return 1
    [ -n "${SENTINEL_PORTS:-}" ] || { SCN_OBSERVED="no sentinels in this stack (deploy/up --sentinel)"; return 1; }
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    mono_start
    old=$(current_master) || { SCN_OBSERVED="the sentinels name no master"; return 1; }
    item_set "$held" 1000 >/dev/null
    # Work inside the lock (1 ms a sale, so that one is inside at the kill), where the
    # instances take work (the atomic sale has no room for it: 400).
    [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGINX_PORT/inventory/sale?item=$held&work_ms=1")" = 400 ] ||
        work="&work_ms=1"
    "$BUILD_DIR/sale-load" --url "http://127.0.0.1:$NGINX_PORT/inventory/sale?item=$item$work" \
        -c 16 -d "$secs" --history "$hist" > "$dir/load.out" 2>&1 &
    load_pid=$!
    # The kill a third of the way in; the held sale starts its 2 s so that the kill comes
    # 1.2 s into it.
    kill_at=$(awk -v s="$secs" -v w="$([ -n "$work" ] && echo 1.2 || echo 0)" \
        'BEGIN { t = s / 3 - w; printf "%.2f", (t > 0.2 ? t : 0.2) }')
    sleep "$kill_at"
    held_t0=$(mono_now_ns)
    curl -s -o "$dir/work.json" -m 30 -w '%{http_code} %{time_total}\n' \
        "http://127.0.0.1:$NGINX_PORT/inventory/sale?item=$held${work:+&work_ms=2000}" > "$dir/work.out" &
    work_pid=$!
    stop_bg() { kill "$load_pid" "$work_pid" 2>/dev/null; wait "$load_pid" "$work_pid" 2>/dev/null; }
    # The master's pid, and that it is ours, before the kill's place: on two busy cores
    # each process started there delays the kill by a tenth of a second or more.
    pid=$(head -n 1 "$(data_pidfile "${old##*:}")")
    is_ours "$pid" redis-server ":${old##*:} " || { SCN_OBSERVED="could not kill the master ${old}: not its pid ($pid)"; stop_bg; return 1; }
    [ -z "$work" ] || held_kill_at "$held" || { stop_bg; return 1; }
    before=$(item_get overlaps "$item")
    before=${before:-0}
    kill -9 "$pid" 2>/dev/null || { SCN_OBSERVED="could not kill the master ${old}"; stop_bg; return 1; }
    wait_until 2 "" master_gone "$pid"    # (a zombie until reaped: is_ours reads its cmdline)
    kill_ns=$(mono_now_ns)     # once it is gone: no sale answered after this came from it
    # The sales inside the critical section at the kill never leave the overlap probe (their
    # SREM went nowhere), and the replicas have them: read them there before a promotion.
    ghosts=$(for p in $REPLICA_PORTS; do rcli -p "$p" smembers "$(item_key probe "$item")"; done | sort -u)
    # The ghosts go from the promoted replica as soon as it says it is a master, most often
    # before the sentinels announce it and the instances write there; the overlaps counted
    # until then (each entry saw a ghost) are set apart.
    wait_until 30 "" a_replica_promoted || { SCN_OBSERVED="no replica was promoted within 30 s"; stop_bg; return 1; }
    at_clean=$(rcli -p "$(a_replica_promoted)" eval "for _, m in ipairs(ARGV) do redis.call('srem', KEYS[1], m) end
        return tonumber(redis.call('get', KEYS[2]) or '0')" 2 "$(item_key probe "$item")" "$(item_key overlaps "$item")" $ghosts)
    wait_until 30 "" promoted_from "$old" || { SCN_OBSERVED="the sentinels promoted no replica within 30 s"; stop_bg; return 1; }
    prom_ns=$(mono_now_ns)
    new=$(current_master)
    wait "$work_pid"
    read -r work_code work_s < "$dir/work.out"
    [ -z "$work" ] || [ "$work_code" != 200 ] ||
        { SCN_OBSERVED="not played: the held sale was sold (200), $(awk -v t="$held_t0" -v s="$work_s" -v k="$kill_ns" \
            'BEGIN { printf "%d", (t + s * 1e9 - k) / 1e6 }') ms after the kill"; stop_bg; return 1; }
    held_ms=$(first_held_sale_ms "$held" "$kill_ns")
    restart_as_replica "${old##*:}" "$new" || { SCN_OBSERVED="the old master did not come back as a replica"; stop_bg; return 1; }
    wait "$load_pid" || { SCN_OBSERVED="sale-load failed: $(tail -n 3 "$dir/load.out")"; return 1; }
    sale_load_summary "$dir/load.out" > "$dir/wrk-load.out"
    counts=$(item_counts "$item") || { SCN_OBSERVED="the stock of $item could not be read"; return 1; }
    final=${counts%% *}
    verdict=$(history_check "$hist" "$stock" $counts) ||
        { SCN_OBSERVED="check-history could not read the history: $verdict"; return 1; }
    case $verdict in impossible:*) verdict="impossible (what the asynchronous copy lost: ${verdict#impossible: })" ;; esac
    set -- $(history_report "$hist" "$kill_ns")   # sales gap_ms gap_from_ms first_after_kill_ms sold_twice
    lost=$(acked_lost "$stock" "$1" "$final")
    failover_ms=$(( (prom_ns - kill_ns) / 1000000 ))
    overlaps=$(( $(item_get overlaps "$item") - at_clean + ${before:-0} ))
    SCN_FLAW=0
    # A stall: a time with no sale longer than the failover (kill to the promotion the
    # sentinels answer) plus a second; the held item not sold again within that.
    [ "$2" -le $(( failover_ms + 1000 )) ] || SCN_FLAW=1
    [ "$held_ms" -ge 0 ] && [ "$held_ms" -le $(( failover_ms + 1000 )) ] || SCN_FLAW=1
    [ "$overlaps" -le 0 ] || SCN_FLAW=1
    if [ -n "$work" ]; then
        held_on="a sale of $held working in its lock (it answered $work_code; the replicas had its lock: $HELD_ON)"
    else
        held_on="a sale of $held at the kill (no lock, no work: it answered $work_code)"
    fi
    SCN_OBSERVED="master ${old##*:} killed mid-load (16 keep-alive connections), $held_on; the sentinels named ${new##*:} $failover_ms ms later; first sale $4 ms after the kill, of $held $held_ms ms; longest with no sale $2 ms (from $3 ms after the kill); history $verdict; acknowledged sales lost $lost; sold twice $5; overlaps $overlaps (besides $(( at_clean - ${before:-0} )) against the crash's ghost); locks given back $(metric_sum inventory_lock_given_back_total); master switches $(switches_logged); answers $(jq -r '[.by_status | to_entries[] | "\(.key) x \(.value)"] | join(", ")' < <(grep '^{' "$dir/load.out" | tail -n 1)), no answer $(grep '^{' "$dir/load.out" | tail -n 1 | jq .no_answer)"
}
