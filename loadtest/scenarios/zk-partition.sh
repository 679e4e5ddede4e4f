# zk-partition.sh - Jepsen's partition on ZooKeeper: v11's lock and stock when the network
# splits an instance and one server of the ensemble from the rest.
#
# Three test hosts (deploy/hosts; scenarios/hosts.sh):
#   h1: ZooKeeper server 1, instance A and its clients
#   h2: ZooKeeper server 2, instance B and its clients
#   h3: ZooKeeper server 3
# The instances' session timeout is 4 s. Each side's clients (build/sale-load, 8 keep-alive
# connections, every answer in a history) sell through their own instance. After 3 s the
# network is cut {h1} | {h2,h3} for SECS seconds (10), then healed; the loads go on 6 s
# more.
# Server 1 alone is no quorum: it stops serving, and A's session cannot be kept anywhere.
# A's sales fail (503; 409 lease_lost for a holder whose session ended): no write of A's
# commits without a quorum, so no 200 of A's goes unrecorded. The majority goes on (a new
# leader when server 1 led): B waits at most until A's session expires (its lock node
# deleted with it) and sells on. After the heal A takes a new session and sells again.
# This is the cut that loses Redis Sentinel the old master's acknowledged sales
# (sentinel-partition): here nothing is lost.
# Reported: the checker's verdict on both histories; acknowledged sales lost (200s beyond
# what ZooKeeper says was sold); units sold twice; A's 200s during the cut, and those more
# than a session into it; B's first sale after the cut; the longest time with no sale; A's
# first sale after the heal; answers by status.
# Verdict: the flaw when an acknowledged sale was lost, a unit sold twice, the history
# impossible, or A sold more than a session into the cut.
# (now_ms, sale_load_summary, mono_start, mono_now_ns: deploy/lib.sh's; history_report,
# history_check, history_answers: lib.sh's.)

defaults_zk_partition="wait=3000 stock=1000000 hosts=3 zk_session=4000"

ZK_MINORITY="h1" ZK_MAJORITY="h2 h3"

# zk_partition_stack RUN ITEM STOCK [INSTANCE_ARG...]: the layout above in the run
# directory RUN, ITEM's stock set to STOCK in the ensemble; INSTANCE_ARGs (instance_flags)
# go to both instances.
zk_partition_stack() {
    local run=$1 item=$2 stock=$3 h id=1; shift 3
    hosts_stack_up "$run" 3 "" || { SCN_OBSERVED="deploy/hosts up 3 failed"; return 1; }
    ZK_ON_HOSTS="h1 h2 h3"
    for h in $ZK_ON_HOSTS; do host_zookeeper "$h" "$id" 3; id=$((id + 1)); done
    wait_until 40 "" zk_hosts_quorum ||
        { SCN_OBSERVED="the three ZooKeeper servers did not elect a leader"; return 1; }
    for h in h1 h2; do
        host_instance "$h" --zk-session-ms "${ZK_SESSION:-4000}" "$@" ||
            { SCN_OBSERVED="instance $h did not start: $(tail -n 2 "$STACK_DIR/instance-$h.log")"; return 1; }
    done
    zk_admin --set-stock "$stock" --item "$item" > /dev/null ||
        { SCN_OBSERVED="the stock could not be set in ZooKeeper"; return 1; }
}

# zk_side_sales HISTORY FROM_NS TO_NS: the 200s of HISTORY answered between FROM_NS and TO_NS.
zk_side_sales() {
    jq -s --argjson a "$2" --argjson b "$3" \
        '[.[] | select(.status == 200 and .end_ns >= $a and .end_ns < $b)] | length' "$1"
}

scenario_zk_partition() {
    local "$@"
    local cut_s=${secs:-10} before_s=3 after_s=6 hist=$dir/history.jsonl session=${ZK_SESSION:-4000}
    local cut_ns in_ns heal_ns final verdict counts lost svc during late first_b first_a why
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    why=$(zk_check) || { SCN_OBSERVED="no ZooKeeper here: $why"; return 1; }
    mapfile -t svc < <(instance_flags "$@")
    zk_partition_stack "$stack" "$item" "$stock" "${svc[@]}" || return 1
    mono_start
    host_load "$dir" "$item" h1 $(( before_s + cut_s + after_s )) 8 A
    host_load "$dir" "$item" h2 $(( before_s + cut_s + after_s )) 8 B
    sleep "$before_s"
    # cut_ns: when the cut was asked; in_ns: when its links were all in place (on a busy
    # machine, a second later): "more than a session into the cut" counts from in_ns.
    cut_ns=$(mono_now_ns)
    hosts_cut "$ZK_MINORITY" "$ZK_MAJORITY"
    in_ns=$(mono_now_ns)
    sleep_until $(( cut_ns + cut_s * 1000000000 ))
    hosts_heal
    heal_ns=$(mono_now_ns)
    bg_wait
    loads_done "$dir" A B || return 1
    counts=$(item_counts "$item") || { SCN_OBSERVED="ZooKeeper did not answer for $item after the heal"; return 1; }
    final=${counts%% *}
    verdict=$(history_check "$hist" "$stock" $counts) ||
        { SCN_OBSERVED="check-history could not read the history: $verdict"; return 1; }
    set -- $(history_report "$hist" "$cut_ns")   # sales gap_ms gap_from_ms first_after_cut_ms sold_twice
    [ $# = 5 ] || { SCN_OBSERVED="the history could not be summed up ($*)"; return 1; }
    lost=$(acked_lost "$stock" "$1" "$final")
    during=$(zk_side_sales "$dir/history-A.jsonl" "$cut_ns" "$heal_ns")
    late=$(zk_side_sales "$dir/history-A.jsonl" $(( in_ns + session * 1000000 )) "$heal_ns")
    first_b=$(first_sale_after "$dir/history-B.jsonl" "$cut_ns" answered)
    first_a=$(first_sale_after "$dir/history-A.jsonl" "$heal_ns")
    SCN_FLAW=0
    [ "$lost" = 0 ] && [ "$5" = 0 ] && [ "$verdict" = possible ] && [ "$late" = 0 ] || SCN_FLAW=1
    SCN_OBSERVED="cut {h1}|{h2,h3} for ${cut_s} s (in place $(( (in_ns - cut_ns) / 1000000 )) ms after it was asked), sessions of $session ms: A sold $during during the cut ($late of them more than a session into it), B's first sale $first_b ms after the cut, A's first $first_a ms after the heal; history $verdict; acknowledged sales lost $lost; sold twice $5; longest with no sale $2 ms (from $3 ms after the cut); answers $(history_answers "$dir/history-A.jsonl" "$dir/history-B.jsonl")"
}

# --- a waiter that gives up during a cut ---------------------------------------------------
# zk-partition-giveup: the same layout, sessions of 10 s, a lock wait of 1 s. B (h2) takes
# the lock for a sale of 9 s of work; A's sale (h1) queues behind it (its node made); then
# h1 is cut from h2 and h3 for 8 s. A's sale gives up after its 1 s (503 lock_timeout), but
# its node's delete cannot reach the ensemble; the client gives the connection up after
# two thirds of the session, and A's session outlives the cut. After the heal A's retrier
# deletes the node; B's sale ends, and B's next sale is granted at once. Were the node
# left, it would block the item for as long as A's session lives (v3's flaw again).
# Reported: A's answer, B's held sale's, B's next sale's answer and time, and the lock's
# children at the end. Verdict: the flaw when B's next sale is not granted within a
# second (its wait limit), or a node is left under the lock.

defaults_zk_partition_giveup="wait=1000 stock=1000 hosts=3 zk_session=10000"

# host_sale H ITEM QUERY FILE: one sale of ITEM on H's instance, from H, QUERY added; its
# body in FILE; prints the HTTP status (000: none).
host_sale() {
    local a; a=$(host_addr "$1")
    in_host "$1" curl -s -m 30 -o "$4" -w '%{http_code}' \
        "http://$a:$H_INSTANCE_PORT/inventory/sale?item=$2${3:+&$3}" || true
}
# host_grants H: the locks H's instance was granted.
host_grants() {
    local a; a=$(host_addr "$1")
    in_host "$1" curl -s -m 2 "http://$a:$H_INSTANCE_PORT/metrics" |
        awk '$1 == "inventory_lock_acquisitions_total" { print $2 }'
}
# host_granted_more H N: H's instance was granted more than N locks.
host_granted_more() { local n; n=$(host_grants "$1"); [ "${n:-0}" -gt "$2" ]; }
# lock_children ITEM: how many nodes ITEM's lock path holds (0 when it is gone), read from
# h3 with kazoo (an independent client; the service has no command that lists them).
lock_children() {
    HOSTS_VIA=h3 in_net "$PYTHON" - "$ZK_CONNECT" "$1" <<'PY'
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=10)
p = "/inventory/%s/lock" % sys.argv[2]
print(len(zk.get_children(p)) if zk.exists(p) else 0)
zk.stop()
PY
}

# lock_has ITEM N: ITEM's lock path holds N nodes or more.
lock_has() { local n; n=$(lock_children "$1"); [ "${n:-0}" -ge "$2" ]; }

scenario_zk_partition_giveup() {
    local "$@"
    local svc b0 t_b a_code b_code next_code next_ms left why
    why=$(zk_check) || { SCN_OBSERVED="no ZooKeeper here: $why"; return 1; }
    "$PYTHON" -c 'import kazoo' 2>/dev/null ||
        { SCN_OBSERVED="python3-kazoo is missing (make deps): it lists the lock's nodes"; return 1; }
    mapfile -t svc < <(instance_flags "$@")
    zk_partition_stack "$stack" "$item" "$stock" "${svc[@]}" || return 1
    b0=$(host_grants h2)
    host_sale h2 "$item" work_ms=9000 "$dir/held.body" > "$dir/held.code" &
    t_b=$!
    wait_until 5 "" host_granted_more h2 "${b0:-0}" ||
        { SCN_OBSERVED="B's long sale never took the lock"; return 1; }
    host_sale h1 "$item" "" "$dir/gaveup.body" > "$dir/gaveup.code" &
    local t_a=$!
    wait_until 5 "" lock_has "$item" 2 ||   # A's node made, behind B's
        { SCN_OBSERVED="A's sale made no node behind B's"; return 1; }
    hosts_cut "$ZK_MINORITY" "$ZK_MAJORITY"
    sleep 8
    hosts_heal
    wait "$t_a"; wait "$t_b"
    a_code=$(cat "$dir/gaveup.code") b_code=$(cat "$dir/held.code")
    # B's next sale, timed by curl itself (in h2): on a busy machine entering the host's
    # namespace took a tenth of a second and more, beside the sale.
    read -r next_code next_ms < <(in_host h2 curl -s -m 30 -o "$dir/next.body" \
        -w '%{http_code} %{time_total}\n' "http://$(host_addr h2):$H_INSTANCE_PORT/inventory/sale?item=$item" |
        awk '{ printf "%s %d\n", $1, $2 * 1000 }')
    next_code=${next_code:-000} next_ms=${next_ms:-99999}
    left=$(lock_children "$item") || left="?"
    echo "$a_code $b_code $next_code" | tr ' ' '\n' >> "$dir/codes"
    SCN_FLAW=0
    [ "$next_code" = 200 ] && [ "$next_ms" -lt 1000 ] && [ "$left" = 0 ] || SCN_FLAW=1
    SCN_OBSERVED="A's sale behind B's gave up during an 8 s cut of h1: $a_code $(jq -r '.error // "sold"' "$dir/gaveup.body" 2>/dev/null); B's held sale (9 s of work): $b_code; after the heal B's next sale: $next_code in $next_ms ms; nodes left under the lock: $left"
}
