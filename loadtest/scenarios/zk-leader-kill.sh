# zk-leader-kill.sh - The ZooKeeper ensemble's leader killed -9 mid-load: the survivors elect
# another, and the sales stop only about as long as the election takes; none is lost.
#
# build/sale-load sells through nginx (20 keep-alive connections, SECS seconds, every
# answer recorded); a third of the way in, the server whose srvr says "Mode: leader" is
# killed -9 (by its pid file, in the run directory that started the ensemble: stack.env's
# ZK_DIR), and the two others' srvr polled every 50 ms until one says leader and the other
# follower: the election's time. The instances' sessions outlive it (4 s here). A client
# gives a connection up when it has heard nothing on it for two thirds of its session:
# in about one run of ten a request to the new leader got no answer at all (nor did the
# pings after it) until then, and went on through another server; with the service's
# default 10 s session that is 6.7 s without a sale, with 4 s it is 2.7 s.
# Verdict, from the history (check-history, against the stock the service reads), the
# stock and the instances: the flaw when an acknowledged sale is missing from the final
# state, a unit was sold twice, anything was oversold, or the history is impossible; and
# when the sales did not come back: no leader elected within 20 s, an instance gone, or
# a time with no sale longer than the election and 5 s more. The observed line gives the
# election's time and the longest time with no sale, to compare.
# Rows in loadtest/evolution: v11 does not show it.

# A ZooKeeper stack (whatever the lock; v11 is one anyway), and a stock the load cannot
# sell out: the longest time with no sale is then the fault's.
defaults_zk_leader_kill="zookeeper stock=100000 zk_session=4000"

# zk_new_leader OLD: true once a server of ZK_CONNECT other than OLD says leader and every
# other server but OLD says follower (a quorum serves again).
zk_new_leader() {
    local a m leader=0
    for a in $(zk_servers); do
        [ "$a" != "$1" ] || continue
        m=$(zk_mode "$a")
        case $m in leader) leader=$((leader + 1)) ;; follower) ;; *) return 1 ;; esac
    done
    [ "$leader" = 1 ]
}

scenario_zk_leader_kill() {
    local "$@"
    local secs=${secs:-10} hist=$dir/history.jsonl leader id pid t_kill elected=-1 load_pid p alive=0
    stack_read "$stack" || return 1
    zk_stack || { SCN_OBSERVED="the stack has no ZooKeeper ensemble (deploy/up --zookeeper 3)"; return 1; }
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    leader=$(zk_leader) || { SCN_OBSERVED="no server says it leads (srvr: $(zk_modes))"; return 1; }
    id=$(zk_server_id "$leader")
    pid=$(zk_server_pid "$id") ||
        { SCN_OBSERVED="the leader $leader (server $id) has no pid file of ours (ZK_DIR '${ZK_DIR:-}')"; return 1; }
    mono_start
    "$BUILD_DIR/sale-load" --url "http://127.0.0.1:$NGINX_PORT/inventory/sale?item=$item" -c 20 \
        -d "$secs" --history "$hist" > "$dir/load.out" 2>&1 &
    load_pid=$!
    sleep "$(awk -v s="$secs" 'BEGIN { print s / 3 }')"
    kill -9 "$pid"
    t_kill=$(mono_now_ns)
    wait_until 20 "" zk_new_leader "$leader" && elected=$(( ($(mono_now_ns) - t_kill) / 1000000 ))
    wait "$load_pid" || { SCN_OBSERVED="sale-load failed: $(tail -n 3 "$dir/load.out")"; return 1; }
    sale_load_summary "$dir/load.out" > "$dir/wrk-load.out"
    history_judge "$item" "$stock" "$hist" "$t_kill" || return 1
    for p in $INSTANCE_PIDS; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
    [ "$elected" -ge 0 ] && [ "$alive" = "$INSTANCES" ] && [ "$GAP_MS" -le $(( elected + 5000 )) ] ||
        SCN_FLAW=1
    SCN_OBSERVED="leader $leader (server $id of $(zk_servers | wc -l)) killed -9 mid-load: another elected in $elected ms (srvr: $(zk_modes)); longest with no sale $GAP_MS ms (from $GAP_FROM_MS ms after the kill); instances alive after $alive of $INSTANCES; answers $(history_answers "$hist"); history $VERDICT; acknowledged sales lost $LOST; sold twice $SOLD_TWICE; oversold $OVERSOLD"
}
