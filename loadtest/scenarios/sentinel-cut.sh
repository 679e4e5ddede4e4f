# sentinel-cut.sh - One of three sentinels cut off from the instances (not from Redis, not
# from the other sentinels): how long an instance takes to find the master, at its start
# and through a failover, with the cut and without it.
#
# Five test hosts (deploy/hosts; scenarios/hosts.sh):
#   h1: instance A and its clients; the instance started and timed in phase 1
#   h2: instance B and its clients
#   h3: a sentinel alone: the one cut off, first in the instances' --sentinel list (the
#       first a locator that asks one after another asks)
#   h4: a replica and a sentinel
#   h5: the master and a sentinel (where the run reads Redis and the sentinels)
# Three sentinels, quorum 2, down after 500 ms. The cut is h3 from h1 and from h2, silent
# (deploy/hosts cut: dropped, no reset): a connection to that sentinel hangs until its
# connect timeout (1 s), while the sentinel itself still sees Redis and the others, and
# takes part in every failover.
#
# Phases, in this order:
#   1. start-ups, no cut: an instance started on h1, timed from its start to its first
#      sale answered 200 (a probe in h1 sells until one is), then stopped; STARTS times.
#   2. a failover, no cut (left out when SENTINEL_CUT_UNCUT_FAILOVER=0): A and B under a
#      bounded load (build/sale-load, 4 keep-alive connections each, every answer in a
#      history); the master killed -9; the sentinels' promotion (the first +switch-master
#      any of them logged) and each instance's first 200 sent after the kill. The old
#      master is brought back as the new one's replica, and the sentinels wait for it.
#   3. the cut, then a failover the same way under the same load; the load ends, A and B
#      stop, and the history of every answer is judged (scenarios/lib.sh's history_judge).
#   4. start-ups with the cut in place, STARTS times, as in 1.
# Reported: the start-ups' times and medians, without the cut and with it; for each
# failover, when the sentinels switched and each instance's first sale (ms after the kill)
# and its own delay (first sale less the switch); the history's verdict, acknowledged sales
# lost, sold twice, oversold, the longest time with no sale, answers by status.
# Verdict: the flaw when the locator is slowed by the cut sentinel: the median start-up
# with the cut more than 200 ms over the median without it, or (where both failovers ran)
# an instance's own delay in the cut failover more than 200 ms over the slower one's
# without the cut, or no sale after it; and whenever the history shows a sale oversold,
# or lost (sold twice) other than by the asynchronous copy: a sale the master answered in
# the second before a kill that the promoted replica had not copied yet is lost whatever
# the locator does (sentinel-failover reports the same; only WAIT, --replicas, keeps it),
# so such losses are counted and reported apart, not judged.
# Env: SENTINEL_CUT_STARTS (start-ups each way, default 5), SENTINEL_CUT_UNCUT_FAILOVER
# (1, the default: phase 2 runs; 0: left out, as make test's short version does).
# (now_ms, sale_load_summary, mono_start, mono_now_ns: deploy/lib.sh's; history_judge,
# first_sale_after, history_answers: lib.sh's.)

defaults_sentinel_cut="ttl=2000 wait=3000 stock=1000000 hosts=5"

SC_CUT=h3 SC_FROM="h1 h2" SC_PROBE=h1
SC_SLACK_MS=200    # how much slower than without the cut the locator may be

# sc_stack RUN FSYNC ITEM STOCK: the layout above in the run directory RUN (the master on
# h5, its replica on h4, the sentinels started h3 first), ITEM's stock set to STOCK.
sc_stack() {
    local h run=$1 fsync=$2
    hosts_stack_up "$run" 5 "$fsync" || { SCN_OBSERVED="deploy/hosts up 5 failed"; return 1; }
    host_redis h5 || { SCN_OBSERVED="the master on h5 did not start"; return 1; }
    host_redis h4 --replicaof "$REDIS_HOST" "$REDIS_PORT" ||
        { SCN_OBSERVED="the replica on h4 did not start"; return 1; }
    wait_until 10 "" replica_acks "$REDIS_HOST" "$REDIS_PORT" 1 ||
        { SCN_OBSERVED="the replica did not acknowledge a write"; return 1; }
    for h in h3 h5 h4; do host_sentinel "$h" 2; done
    wait_until 20 "" sentinels_ready ||
        { SCN_OBSERVED="the three sentinels did not find each other and the replica"; return 1; }
    sc_stock "$3" "$4"
}
# sc_stock ITEM STOCK: ITEM's stock set to STOCK, its sold and ledger emptied.
sc_stock() {
    item_set "$1" "$2" >/dev/null && rcli del "$(item_key sold "$1")" "$(item_key orders "$1")" >/dev/null
}

# sc_instance_stop H: the instance on H stopped (SIGTERM, by the pid host_instance wrote),
# waited for, and taken out of INSTANCE_PORTS and INSTANCE_PIDS.
sc_instance_stop() {
    local pid a; pid=$(head -n 1 "$STACK_DIR/instance-$1.pid"); a=$(host_addr "$1"):$H_INSTANCE_PORT
    kill -TERM "$pid" 2>/dev/null || true
    wait_until 10 "" sh -c "! kill -0 $pid" || kill -9 "$pid" 2>/dev/null || true
    INSTANCE_PIDS=$(echo $INSTANCE_PIDS | tr ' ' '\n' | grep -vx "$pid" | paste -sd' ' -) || true
    INSTANCE_PORTS=$(echo $INSTANCE_PORTS | tr ' ' '\n' | grep -vx "$a" | paste -sd' ' -) || true
}

# sc_startup_ms ITEM FLAG...: an instance started on SC_PROBE (FLAGs: instance_flags), and
# sold ITEM through until a sale answers 200 (a probe in the host: curl, every 5 ms; the
# port not listening yet is refused at once); prints the ms from just before the start to
# that answer (-1: none within 15 s). The instance is stopped after.
sc_startup_ms() {
    local item=$1 a t0 t1 probe url; shift
    a=$(host_addr "$SC_PROBE"); url="http://$a:$H_INSTANCE_PORT/inventory/sale?item=$item"
    "$HOSTS_BIN" run "$SC_PROBE" timeout 15 sh -c 'until [ "$(curl -s -o /dev/null -m 5 -w "%{http_code}" "$1")" = 200 ]
        do sleep 0.005; done; date +%s%N' probe "$url" > "$STACK_DIR/probe.out" 2>/dev/null &
    probe=$!
    t0=$(date +%s%N)
    host_instance "$SC_PROBE" "$@" || true
    wait "$probe" 2>/dev/null || true
    t1=$(head -n 1 "$STACK_DIR/probe.out")
    sc_instance_stop "$SC_PROBE"
    [ -n "$t1" ] && echo $(( (t1 - t0) / 1000000 )) || echo -1
}
# sc_startups N ITEM FLAG...: sc_startup_ms N times; prints the times, space-separated.
sc_startups() {
    local n=$1 i out=""; shift
    for i in $(seq "$n"); do out="$out $(sc_startup_ms "$@")"; done
    echo $out
}
# sc_median MS...: the median of the figures (the lower middle one of an even count); -1 of
# none, and of any -1 (a start-up that never sold).
sc_median() {
    printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1; if ($1 < 0) bad = 1 }
        END { print (NR == 0 || bad) ? -1 : v[int((NR + 1) / 2)] }'
}

# sc_host_of ADDR: the host of ADDR (HOST:PORT; hK is at 198.18.0.K). sc_name_of ADDR: the
# name (pid file, data directory) of the data server at ADDR: redis for the first
# master's, else replica-H.
sc_host_of() { local ip=${1%:*}; echo "h${ip##*.}"; }
sc_name_of() { [ "$1" = "$REDIS_HOST:$REDIS_PORT" ] && echo redis || echo "replica-$(sc_host_of "$1")"; }
# sc_switch_ns OLD: the first +switch-master away from OLD (HOST:PORT) that any sentinel
# logged, on mono_now_ns's clock (a sentinel's log times are this machine's clock, to the
# ms); fails when none did.
sc_switch_ns() {
    local t
    t=$(grep -h -- "+switch-master $SENTINEL_MASTER ${1%:*} ${1##*:} " "$STACK_DIR"/sentinel-h*.log 2>/dev/null |
        awk '{ print $2, $3, $4, $5 }' | while read -r d; do date -d "$d" +%s%N; done | sort -n | head -n 1)
    [ -n "$t" ] && echo $(( t - MONO_OFFSET ))
}
# sold_since MS ITEM NAME...: ITEM's ledger has a sale by each instance NAME since MS (Redis
# time, ms: a ledger entry's id).
sold_since() {
    local ms=$1 item=$2 got n; shift 2
    got=$(rcli xrevrange "$(item_key orders "$item")" + "$ms" COUNT 5000 2>/dev/null) || return 1
    for n in "$@"; do grep -Fxq "$n" <<< "$got" || return 1; done
}

# sc_failover ITEM: the master killed -9 under the load; sets SC_KILL_NS (once it is gone),
# SC_SWITCH_NS (the first +switch-master, -1: none) and SC_NEW (the master the sentinels
# then name), then waits until A and B have each sold on it (15 s at most) and a second
# more. Fails, saying why in SCN_OBSERVED, when no replica was promoted within 30 s.
sc_failover() {
    local old pid name
    old=$(current_master) || { SCN_OBSERVED="no master before the failover"; return 1; }
    name=$(sc_name_of "$old")
    pid=$(head -n 1 "$STACK_DIR/$name.pid")
    kill -9 "$pid" 2>/dev/null || { SCN_OBSERVED="could not kill the master $old"; return 1; }
    wait_until 2 "" sh -c "! kill -0 $pid"
    SC_KILL_NS=$(mono_now_ns)
    wait_until 30 "" promoted_from "$old" ||
        { SCN_OBSERVED="the sentinels promoted no replica within 30 s of the kill of $old"; return 1; }
    SC_NEW=$(current_master)
    SC_SWITCH_NS=$(sc_switch_ns "$old") || SC_SWITCH_NS=-1
    wait_until 15 "" sold_since $(( (SC_KILL_NS + MONO_OFFSET) / 1000000 )) "$1" inventory-h1 inventory-h2 || true
    sleep 1
    SC_OLD=$old
}
# sc_restore: the master killed by sc_failover (SC_OLD) back from its files as the new
# master's (SC_NEW) replica, once every sentinel lists it as a replica again (20 s at most).
sc_restore() {
    local name h
    name=$(sc_name_of "$SC_OLD"); h=$(sc_host_of "$SC_OLD")
    redis_in_host "$h" "$name" --replicaof "${SC_NEW%:*}" "${SC_NEW##*:}" ||
        { SCN_OBSERVED="the old master $SC_OLD did not come back"; return 1; }
    wait_until 20 "" sentinels_see_replica "$SC_OLD" ||
        { SCN_OBSERVED="the sentinels did not see $SC_OLD as a replica again"; return 1; }
}
# sentinels_see_replica ADDR: every sentinel lists ADDR as a replica, up (flags: slave).
sentinels_see_replica() {
    local s
    for s in $SENTINEL_PORTS; do
        sentinel_cli "$s" sentinel replicas "$SENTINEL_MASTER" 2>/dev/null | awk -v a="$1" '
            NR % 2 { k = $0; next } k == "name" { n = $0 } k == "flags" && n == a && $0 == "slave" { ok = 1 }
            END { exit !ok }' || return 1
    done
}
# sc_failover_figures DIR KILL_NS SWITCH_NS: one failover's figures from DIR's histories
# (sc_failover's SC_KILL_NS and SC_SWITCH_NS): "SWITCH_MS A_MS B_MS A_OWN B_OWN": the
# switch and each instance's first 200 sent after the kill, in ms after it, and each one's
# own delay (its first sale less the switch); -1 for what did not happen.
sc_failover_figures() {
    local sw=-1 a b
    [ "$3" = -1 ] || sw=$(( ($3 - $2) / 1000000 ))
    a=$(first_sale_after "$1/history-A.jsonl" "$2")
    b=$(first_sale_after "$1/history-B.jsonl" "$2")
    echo "$sw $a $b $([ "$a" = -1 ] || [ "$sw" = -1 ] && echo -1 || echo $((a - sw))) $([ "$b" = -1 ] || [ "$sw" = -1 ] && echo -1 || echo $((b - sw)))"
}

# scenario_sentinel_cut WORD...: plays the scenario (the words: scenarios/lib.sh's). Its
# phases share its locals: sc_phases (2 and 3) sets the failovers' times, sc_judge the
# verdict and the observed line.
scenario_sentinel_cut() {
    local "$@"
    local starts=${SENTINEL_CUT_STARTS:-5} uncut_fo=${SENTINEL_CUT_UNCUT_FAILOVER:-1} svc
    local up_uncut up_cut kill_u=-1 sw_u=-1 kill_c sw_c hist_flaw
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    mapfile -t svc < <(instance_flags "$@")
    sc_stack "$stack" "$fsync" "$item" "$stock" || return 1
    mono_start
    up_uncut=$(sc_startups "$starts" "$item" "${svc[@]}")
    sc_stock "$item" "$stock" || { SCN_OBSERVED="the stock could not be set again"; return 1; }
    sc_phases || return 1
    history_judge "$item" "$stock" "$dir/history.jsonl" "$kill_c" || return 1
    read -r SC_COPY_LOST SC_OTHER_LOST < <(sc_lost_at_kills "$dir/history.jsonl" "$kill_u" "$kill_c")
    hist_flaw=$SCN_FLAW
    # Sold twice only where the asynchronous copy lost a sale at a kill: not the locator's.
    case $VERDICT in possible|impossible:*"sold twice"*)
        [ "$OVERSOLD" -le 0 ] && [ "$SC_OTHER_LOST" = 0 ] && [ "$LOST" = "$SOLD_TWICE" ] &&
            [ "$LOST" = "$SC_COPY_LOST" ] && hist_flaw=0 ;;
    esac
    up_cut=$(sc_startups "$starts" "$item" "${svc[@]}")
    sc_judge
}

# sc_phases: A and B (instance flags svc) under the load; the failover without the cut
# (unless uncut_fo is 0) and the old master back; the cut; the failover with it; the
# load's end, its histories in dir (history-A, history-B, history.jsonl); A and B stopped.
# Sets kill_u, sw_u, kill_c, sw_c (scenario_sentinel_cut's).
sc_phases() {
    local h
    for h in h1 h2; do
        host_instance "$h" "${svc[@]}" ||
            { SCN_OBSERVED="instance $h did not start: $(tail -n 2 "$STACK_DIR/instance-$h.log")"; return 1; }
    done
    host_load "$dir" "$item" h1 300 4 A
    host_load "$dir" "$item" h2 300 4 B
    sleep 2
    if [ "$uncut_fo" != 0 ]; then
        sc_failover "$item" && kill_u=$SC_KILL_NS sw_u=$SC_SWITCH_NS && sc_restore ||
            { loads_stop "$dir"; bg_wait; return 1; }
    fi
    hosts_cut "$SC_CUT" "$SC_FROM"
    sleep 2    # the cut in place a while before the kill: the instances' links to h3 hang
    sc_failover "$item" || { loads_stop "$dir"; bg_wait; return 1; }
    kill_c=$SC_KILL_NS sw_c=$SC_SWITCH_NS
    loads_stop "$dir"
    bg_wait
    loads_done "$dir" A B || return 1
    for h in h1 h2; do sc_instance_stop "$h"; done
}

# sc_lost_at_kills HISTORY KILL_U KILL_C: the units sold twice, by when the lost sale of
# each (the earlier answered of the two 200s of one remaining) was answered: "COPY OTHER",
# COPY those answered in the second before a kill (KILL_U: -1 when that failover did not
# run), OTHER the rest.
sc_lost_at_kills() {
    jq -rs --argjson u "$2" --argjson c "$3" '
        def at_kill($k): $k > 0 and . < $k and . >= $k - 1000000000;
        map(select(.status == 200)) | group_by(.remaining) | map(select(length > 1))
        | map(sort_by(.end_ns) | .[0:length - 1][] | .end_ns)
        | (map(select(at_kill($u) or at_kill($c))) | length) as $copy
        | "\($copy) \(length - $copy)"' "$1"
}

# sc_judge: the verdict and the observed line, from the start-ups (up_uncut, up_cut), the
# failovers (kill_u, sw_u, kill_c, sw_c) and history_judge's figures (hist_flaw).
sc_judge() {
    local mu mc fu fc worst_u=-1 worst_c
    mu=$(sc_median $up_uncut) mc=$(sc_median $up_cut)
    read -r -a fc <<< "$(sc_failover_figures "$dir" "$kill_c" "$sw_c")"
    worst_c=$(( fc[3] > fc[4] ? fc[3] : fc[4] ))
    SCN_FLAW=$hist_flaw
    [ "$mu" -ge 0 ] && [ "$mc" -ge 0 ] && [ "$mc" -le $(( mu + SC_SLACK_MS )) ] || SCN_FLAW=1
    [ "${fc[1]}" -ge 0 ] && [ "${fc[2]}" -ge 0 ] && [ "${fc[0]}" -ge 0 ] || SCN_FLAW=1
    fu="not run"
    if [ "$kill_u" != -1 ]; then
        read -r -a fu <<< "$(sc_failover_figures "$dir" "$kill_u" "$sw_u")"
        worst_u=$(( fu[3] > fu[4] ? fu[3] : fu[4] ))
        [ "${fu[1]}" -ge 0 ] && [ "${fu[2]}" -ge 0 ] && [ "$worst_c" -le $(( worst_u + SC_SLACK_MS )) ] ||
            SCN_FLAW=1
        fu=$(sc_failover_words "${fu[@]}")
    fi
    SCN_OBSERVED="one sentinel of three ($SC_CUT, first in the instances' list) cut from both instances; a new instance's start to its first sale: without the cut ${up_uncut// /, } ms (median $mu), with it ${up_cut// /, } ms (median $mc); a failover without the cut: $fu; with it: $(sc_failover_words "${fc[@]}"); history $VERDICT; acknowledged sales lost $LOST; sold twice $SOLD_TWICE (the lost sale of each answered in the second before a kill, the asynchronous copy's: $SC_COPY_LOST; other: $SC_OTHER_LOST); oversold $OVERSOLD; longest with no sale $GAP_MS ms (from $GAP_FROM_MS ms after the kill with the cut); answers $(history_answers "$dir/history.jsonl")"
}
# sc_failover_words SWITCH_MS A_MS B_MS A_OWN B_OWN: sc_failover_figures's, in words.
sc_failover_words() {
    echo "the sentinels switched $1 ms after the kill, A's first sale $2 ms (its own delay $4 ms), B's $3 ms ($5 ms)"
}
