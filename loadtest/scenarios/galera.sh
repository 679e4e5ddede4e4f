# galera.sh - The database past one machine: a Galera cluster of three MariaDB nodes on
# test hosts, two instances each on its own node, and Jepsen's cut, or two nodes selling
# one item at once.
#
# Three test hosts (deploy/hosts; scenarios/hosts.sh), one Galera node in each:
#   h1: node 1 (bootstrapped the cluster), instance A and its clients
#   h2: node 2, instance B and its clients
#   h3: node 3 (what the scenario and loadtest/run read: the stock, sold and ledger)
# A node runs as deploy/up runs its mariadbd (its run directory STACK_DIR/H: mysql/my.cnf,
# mysql/data, mysql.pid, mysql.log, a stack.env so that hosts_stack_down's deploy/down
# stops it by pid), clients on 127.0.0.1:3306 of its host only, Galera's group traffic on
# the host's address (4567; 4568 for IST, 4444 for a joiner's rsync SST). As root it runs
# as the user mysql (a state transfer's rsync daemon, run by root, writes as nobody): the
# run directory is opened to others for passing through (o+x), and every directory above
# it must let mysql through too (a test's own temporary directory: chmod 711).
# Node 1 bootstraps the cluster (wsrep-new-cluster, then left out of its my.cnf: a
# restart joins); the user inventory@127.0.0.1 is made there, with its password in h1's
# mysql/password (mode 600, root's); nodes 2 and 3 join by a state transfer (rsync) and
# the cluster is up when every node says Primary, size 3, Synced. An instance uses its
# own host's node (hosts.sh's host_instance, MYSQL_ON_HOSTS). GALERA_CNF_EXTRA: lines
# added to every node's my.cnf (general-log=1, wsrep-log-conflicts=1: to look closer).
# The group's timers are short, so that a cut is seen in seconds (Galera's rule:
# keepalive_period <= inactive_check_period <= suspect_timeout <= inactive_timeout <=
# install_timeout): a node is suspected after 2 s of silence and declared gone after 4 s.
#
# galera-partition: each side's clients (build/sale-load, 4 keep-alive connections, every
#   answer in a history) sell through their own instance. After 3 s the network is cut
#   {h1} | {h2,h3} for SECS seconds (10), then healed, and the loads go on until 2 s after
#   node 1 is back (Primary, size 3, Synced; 30 s at most). Node 1 alone is no primary
#   component: it takes no statements (1047), so A answers 503 store_unavailable; its
#   commits in flight at the cut wait for the view to change, then fail (1180), though
#   the majority may have committed them. The majority goes on once its view of two
#   nodes is installed. After the heal node 1 rejoins (IST: the
#   writes it missed) and A sells again.
#   Reported: when node 1 left the primary component and when the majority's formed; A's
#   200s during the cut (and those sent after its node said non-Primary); each side's
#   longest answer during the cut and its answers then; B's first sale after the cut;
#   node 1's rejoin and A's first sale after the heal; the checker's verdict against the
#   database's stock, sold and ledger; acknowledged sales lost (and those with no ledger
#   row at all); units sold twice; the sales answered 500 error (and those whose ledger
#   row is there all the same); the longest time with no sale; answers by status.
#   Verdict: the flaw when an acknowledged sale was lost, a unit sold twice, the history
#   impossible, or A sold a sale it sent after its node said non-Primary.
# galera-row-lock: no cut; both instances sell one item at once for SECS seconds (10),
#   4 keep-alive connections each, and in h1 and h2 sales by curl, one after the other
#   (recorded in the history too), until one is refused: its body, the service's message.
#   A row lock (v15's SELECT ... FOR UPDATE) is its node's own: both instances hold "the
#   lock" at once, each on its node (the probe counts it). Galera settles some of the
#   conflicts at commit (certification: the later writer is rolled back, 1213, its sale
#   answered 503), not all: a transaction is certified against the writes its node had
#   not applied when it commits, not when it read, so a sale that read the stock plainly
#   just before the other node's write was applied would write a stale stock and pass: a
#   unit sold twice. The store reads the stock's row FOR UPDATE in v15's transaction: the
#   write applied from the other node then aborts the reader (1213, 503). v14's lease
#   row is written when taken, so the take is certified, and its node has applied every
#   earlier sale before the take commits: one seller at a time.
#   Reported: sales tried and answered 503 store_unavailable (their share), the
#   instances' deadlocks (1213, every statement), the nodes' certification failures and
#   brute-force aborts, the probe's overlaps, oversold, the checker's verdict, acknowledged
#   sales lost (and those with no ledger row at all), units sold twice, the 500s (and
#   those whose row is there), a refused sale's message, answers.
#   Verdict: the flaw when anything was oversold or lost, a unit sold twice, an
#   acknowledged sale has no ledger row, or the history is impossible.
# (now_ms, mono_start, mono_now_ns, item_counts, db_admin, mdb_sql, mysql_server_run:
# deploy/lib.sh's; history_report, history_check, history_answers, acked_lost,
# first_sale_after, sleep_until: lib.sh's; the hosts' helpers: hosts.sh's.)

. "$DEPLOY_DIR/up-mysql.sh"   # mysql_check, mysql_user: as deploy/up makes them

defaults_galera_partition="ttl=2000 wait=3000 stock=1000000 hosts=3"
defaults_galera_row_lock="ttl=2000 wait=3000 stock=1000000 hosts=3"

GALERA_PROVIDER=${GALERA_PROVIDER:-/usr/lib/galera/libgalera_smm.so}
GALERA_HOSTS="h1 h2 h3"
GALERA_MINORITY="h1" GALERA_MAJORITY="h2 h3"
# The group's timers (evs.*), short: a cut seen in about 2 s, a silent node gone after 4 s.
GALERA_EVS="evs.keepalive_period=PT0.5S;evs.inactive_check_period=PT0.5S"
GALERA_EVS="$GALERA_EVS;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT4S"
GALERA_EVS="$GALERA_EVS;evs.install_timeout=PT4S;evs.join_retrans_period=PT0.5S"

# galera_check: true when a Galera node can be started here; else says why and fails.
galera_check() {
    mysql_check || return 1
    [ -f "$GALERA_PROVIDER" ] ||
        { echo "no Galera library $GALERA_PROVIDER (Debian package galera-4; make deps)"
          return 1; }
    command -v rsync >/dev/null ||
        { echo "rsync not found (a joining node's state transfer)"; return 1; }
    [ "$(id -u)" != 0 ] || id mysql >/dev/null 2>&1 ||
        { echo "no user mysql to run the nodes as (Debian's mariadb-server makes it)"; return 1; }
}
# galera_reachable DIR: as root, DIR opened for passing through, and the user mysql can
# reach it; else says why and fails.
galera_reachable() {
    [ "$(id -u)" = 0 ] || return 0
    chmod o+x "$1" && runuser -u mysql -- test -x "$1" ||
        { echo "the user mysql cannot reach $1: a directory above it lets nobody else" \
               "through (chmod o+x, or TMPDIR elsewhere)"; return 1; }
}

# galera_conf H NEW: node H's configuration, to stdout, in its run directory STACK_DIR/H;
# with NEW (1), it bootstraps a new cluster.
galera_conf() {
    local h=$1 dir=$STACK_DIR/$1/mysql addrs="" k sock
    for k in $GALERA_HOSTS; do addrs="$addrs${addrs:+,}$(host_addr "$k")"; done
    sock=$dir/sock
    [ ${#sock} -le 100 ] || sock=/tmp/mariadbd-$HOSTS_PREFIX-$h.sock
    cat <<EOF
# my.cnf - a Galera node of a scenario on test hosts (loadtest/scenarios/galera.sh)
[mariadbd]
$([ "$(id -u)" != 0 ] || echo "user=mysql")
datadir=$dir/data
port=$H_MYSQL_PORT
bind-address=127.0.0.1
socket=$sock
pid-file=$dir/mariadbd.pid
tmpdir=$dir/tmp
skip-name-resolve
innodb-flush-log-at-trx-commit=1
innodb-buffer-pool-size=64M
max-connections=400
binlog-format=ROW
innodb-autoinc-lock-mode=2
wsrep-on=ON
wsrep-provider=$GALERA_PROVIDER
wsrep-cluster-name=inventory
wsrep-cluster-address=gcomm://$addrs
wsrep-node-address=$(host_addr "$h")
wsrep-node-name=$h
wsrep-sst-method=rsync
wsrep-provider-options="$GALERA_EVS;gcache.size=64M"
$([ "$2" != 1 ] || echo "wsrep-new-cluster")
${GALERA_CNF_EXTRA:-}
EOF
}

# host_galera H NEW: node H started in its host (NEW 1: the cluster's first, from a data
# directory made by mariadb-install-db; else empty, filled by a state transfer). Its
# files in STACK_DIR/H; true once it runs (not yet synced: galera_is says when).
host_galera() {
    local h=$1 dir=$STACK_DIR/$1 user=()
    mkdir -p "$dir/mysql/data" "$dir/mysql/tmp" || return 1
    echo "# $h: a Galera node (scenarios/galera.sh); deploy/down stops it" > "$dir/stack.env"
    galera_conf "$h" "$2" > "$dir/mysql/my.cnf" || return 1
    [ "$(id -u)" != 0 ] || { user=(--user=mysql); chown -R mysql: "$dir/mysql" || return 1; }
    if [ "$2" = 1 ]; then
        mark_log "$dir/mysql.log"
        TMPDIR=$dir/mysql/tmp "$MYSQL_INSTALL_BIN" --no-defaults "${user[@]}" \
            --datadir="$dir/mysql/data" --auth-root-authentication-method=normal \
            --skip-test-db >> "$dir/mysql.log" 2>&1 || return 1
    fi
    # (its own temporary directory: TMPDIR may be one the user mysql cannot write)
    local MYSQL_LAUNCH=("$HOSTS_BIN" run "$h" env "TMPDIR=$dir/mysql/tmp")
    mark_log "$dir/mysql.log"
    mysql_server_run "$dir"
}

# galera_state H: "STATUS SIZE STATE" of node H, asked in H (wsrep_cluster_status,
# wsrep_cluster_size, wsrep_local_state_comment: "Primary 3 Synced"); fails when it does
# not answer. SHOW STATUS is answered outside the primary component too.
galera_state() {
    HOSTS_VIA=$1 MDB_AT=127.0.0.1:$H_MYSQL_PORT mdb_sql "SHOW GLOBAL STATUS WHERE Variable_name IN
        ('wsrep_cluster_status', 'wsrep_cluster_size', 'wsrep_local_state_comment')" |
        awk '{ v[$1] = $2 } END { if (v["wsrep_cluster_status"] == "") exit 1
              print v["wsrep_cluster_status"], v["wsrep_cluster_size"], v["wsrep_local_state_comment"] }'
}
# galera_is H PATTERN: node H's state (galera_state) matches the shell PATTERN.
galera_is() {
    local s; s=$(galera_state "$1") || return 1
    # shellcheck disable=SC2254  # (PATTERN is a pattern)
    case $s in $2) ;; *) return 1 ;; esac
}
# galera_all_synced: every node says Primary, size 3, Synced.
galera_all_synced() {
    local h
    for h in $GALERA_HOSTS; do galera_is "$h" "Primary 3 Synced" || return 1; done
}
# galera_states: each node's state (galera_state), "H STATE; " each.
galera_states() {
    local h
    for h in $GALERA_HOSTS; do printf '%s %s; ' "$h" "$(galera_state "$h")"; done
}
# galera_settled: every node has committed the same writes (wsrep_last_committed): what
# one of them reads then is what all hold (a node applies the others' writes a little
# after they are certified, and a read does not wait for them).
galera_settled() {
    local h n seen=""
    for h in $GALERA_HOSTS; do
        n=$(HOSTS_VIA=$h MDB_AT=127.0.0.1:$H_MYSQL_PORT mdb_sql \
            "SHOW GLOBAL STATUS LIKE 'wsrep_last_committed'" | awk '{ print $2 }') || return 1
        [ -n "$n" ] && [ "${seen:-$n}" = "$n" ] || return 1
        seen=$n
    done
}
# galera_conflicts H...: the nodes' certification failures and brute-force aborts, summed
# (wsrep_local_cert_failures: a local transaction that failed certification; and
# wsrep_local_bf_aborts: one rolled back by a replicated write that needed its locks).
galera_conflicts() {
    local h
    for h in "$@"; do
        HOSTS_VIA=$h MDB_AT=127.0.0.1:$H_MYSQL_PORT mdb_sql "SHOW GLOBAL STATUS WHERE Variable_name IN
            ('wsrep_local_cert_failures', 'wsrep_local_bf_aborts')"
    done | awk '{ n += $2 } END { print n + 0 }'
}

# galera_stack RUN ITEM STOCK [INSTANCE_ARG...]: the layout above in the run directory
# RUN, ITEM's stock set to STOCK in the database (from h3); INSTANCE_ARGs (instance_flags)
# go to both instances. Sets MYSQL_ON_HOSTS, MYSQL_CONNECT (127.0.0.1:3306, read through
# HOSTS_VIA, h3) and MYSQL_PASSWORD_FILE. Fails, saying why in SCN_OBSERVED.
galera_stack() {
    local run=$1 item=$2 stock=$3 h why; shift 3
    why=$(galera_check) || { SCN_OBSERVED="no Galera here: $why"; return 1; }
    hosts_stack_up "$run" 3 "" || { SCN_OBSERVED="deploy/hosts up 3 failed"; return 1; }
    why=$(galera_reachable "$STACK_DIR") || { SCN_OBSERVED=$why; return 1; }
    host_galera h1 1 && wait_until 30 "$MYSQL_STARTED_PID" galera_is h1 "Primary 1 Synced" ||
        { SCN_OBSERVED="node 1 did not bootstrap: $(tail -n 2 "$STACK_DIR/h1/mysql.log")"; return 1; }
    galera_conf h1 0 > "$STACK_DIR/h1/mysql/my.cnf"   # a restart joins, never bootstraps again
    ( RUN_DIR=$STACK_DIR/h1 HOSTS_VIA=h1 MDB_AT=127.0.0.1:$H_MYSQL_PORT
      mysql_user "$STACK_DIR/h1/mysql" ) 2> "$STACK_DIR/user.err" ||
        { SCN_OBSERVED="the user inventory could not be made: $(tail -n 1 "$STACK_DIR/user.err")"; return 1; }
    MYSQL_PASSWORD_FILE=$STACK_DIR/h1/mysql/password
    for h in h2 h3; do
        host_galera "$h" 0 || { SCN_OBSERVED="node $h did not start"; return 1; }
    done
    wait_until 60 "" galera_all_synced ||
        { SCN_OBSERVED="the three nodes did not come to Primary, size 3, Synced: $(galera_states)"
          return 1; }
    MYSQL_ON_HOSTS=$GALERA_HOSTS MYSQL_CONNECT=127.0.0.1:$H_MYSQL_PORT
    for h in h1 h2; do
        host_instance "$h" "$@" ||
            { SCN_OBSERVED="instance $h did not start: $(tail -n 2 "$STACK_DIR/instance-$h.log")"; return 1; }
    done
    db_admin --set-stock "$stock" --item "$item" > /dev/null 2> "$STACK_DIR/stock.err" ||
        { SCN_OBSERVED="the stock could not be set: $(tail -n 1 "$STACK_DIR/stock.err")"; return 1; }
}

# galera_ledger ITEM: ITEM's ledger rows of sales (status 200) by remaining, "REMAINING
# COUNT" a line, read on h3 as root; fails when ITEM is not a plain name or h3 does not
# answer.
galera_ledger() {
    [[ $1 =~ ^[A-Za-z0-9_.:-]+$ ]] || return 1
    MDB_AT=127.0.0.1:$H_MYSQL_PORT mdb_sql "SELECT remaining, COUNT(*) FROM inventory.orders
        WHERE item = '$1' AND status = 200 GROUP BY remaining"
}
# galera_unrecorded HISTORY ITEM: the 200s of HISTORY with no ledger row in the database (for
# each remaining, the 200s that answered it beyond the rows that hold it): acknowledged
# sales the database does not hold at all. "?" when the ledger cannot be read.
galera_unrecorded() {
    galera_ledger "$2" > "$1.ledger" || { echo "?"; return 0; }
    jq -rs --rawfile rows "$1.ledger" '
        ($rows | split("\n") | map(select(. != "") | split("\t")) | map({(.[0]): (.[1] | tonumber)})
         | add // {}) as $l
        | [.[] | select(.status == 200) | .remaining | tostring] | group_by(.)
        | map(length - ($l[.[0]] // 0) | if . > 0 then . else 0 end) | add // 0' "$1"
}
# galera_errors_written ITEM: the sales of ITEM the instances answered 500 error (each logs
# its request id) and, of those, the ones whose ledger row is in the database (a write
# that failed to answer, yet committed): "N WRITTEN". WRITTEN is "?" when h3 does not answer.
galera_errors_written() {
    local ids n w
    ids=$(sed -n "s/.* WARN .* request \([A-Za-z0-9-]*\): sale of $1: error: .*/\1/p" \
          "$STACK_DIR"/instance-h*.log | sort -u)
    n=$(echo "$ids" | grep -c . || true)
    [ "$n" -gt 0 ] || { echo "0 0"; return 0; }
    w=$(MDB_AT=127.0.0.1:$H_MYSQL_PORT mdb_sql "SELECT COUNT(DISTINCT request_id) FROM
        inventory.orders WHERE request_id IN ($(echo "$ids" | sed "s/.*/'&'/" | paste -sd, -))") ||
        w="?"
    echo "$n $w"
}

# --- galera-partition ----------------------------------------------------------------------

# galera_mark_when H PATTERN FILE SECS: in the background (its pid in BG_PIDS), the time
# (mono_now_ns) node H first says PATTERN (galera_is), written to FILE; nothing when it
# does not within SECS.
galera_mark_when() {
    ( wait_until "$4" "" galera_is "$1" "$2" && mono_now_ns > "$3" ) &
    BG_PIDS="$BG_PIDS $!"
}
# galera_ms_after FILE T_NS: ms from T_NS to the time FILE holds (galera_mark_when's); -1: none.
galera_ms_after() {
    local t; t=$(cat "$1" 2>/dev/null) || t=""
    [ -n "$t" ] && echo $(( (t - $2) / 1000000 )) || echo -1
}
# galera_side_sales HISTORY FROM_NS TO_NS [SENT]: the 200s of HISTORY answered between FROM_NS and
# TO_NS (with SENT: sent between them).
galera_side_sales() {
    jq -s --argjson a "$2" --argjson b "$3" --arg by "${4:+start_ns}" \
        '[.[] | select(.status == 200) | (if $by == "" then .end_ns else .start_ns end) as $t
         | select($t >= $a and $t < $b)] | length' "$1"
}
# galera_longest_answer HISTORY FROM_NS TO_NS: the longest answer (ms) of the requests of HISTORY
# in flight at some time between FROM_NS and TO_NS, and how many of them got no answer:
# "MS UNANSWERED".
galera_longest_answer() {
    jq -rs --argjson a "$2" --argjson b "$3" '
        [.[] | select(.start_ns < $b and (.end_ns // $b) >= $a)] as $r
        | ([$r[] | select(.status != 0) | (.end_ns - .start_ns) / 1e6 | floor] | max // 0) as $ms
        | "\($ms) \([$r[] | select(.status == 0)] | length)"' "$1"
}
# galera_answers_between HISTORY FROM_NS TO_NS: the answers by status (history_answers) of the
# requests of HISTORY sent between FROM_NS and TO_NS.
galera_answers_between() {
    jq -c --argjson a "$2" --argjson b "$3" 'select(.start_ns >= $a and .start_ns < $b)' "$1" \
        > "$1.between"
    if [ -s "$1.between" ]; then history_answers "$1.between"; else echo none; fi
}

scenario_galera_partition() {
    local "$@"
    local cut_s=${secs:-10} before_s=3 hist=$dir/history.jsonl svc counts final verdict lost
    local cut_ns heal_ns left_ms maj_ms back_ms during after_np first_b first_a a_long b_long
    local unrec errs
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    mapfile -t svc < <(instance_flags "$@")
    galera_stack "$stack" "$item" "$stock" "${svc[@]}" || return 1
    mono_start
    host_load "$dir" "$item" h1 $(( before_s + cut_s + 40 )) 4 A
    host_load "$dir" "$item" h2 $(( before_s + cut_s + 40 )) 4 B
    sleep "$before_s"
    cut_ns=$(mono_now_ns)
    hosts_cut "$GALERA_MINORITY" "$GALERA_MAJORITY"
    galera_mark_when h1 "non-Primary*" "$dir/left" "$cut_s"
    galera_mark_when h2 "Primary 2 *" "$dir/majority" "$cut_s"
    sleep_until $(( cut_ns + cut_s * 1000000000 ))
    hosts_heal
    heal_ns=$(mono_now_ns)
    wait_until 30 "" galera_all_synced && back_ms=$(( ($(mono_now_ns) - heal_ns) / 1000000 )) ||
        back_ms=-1
    sleep 2
    loads_stop "$dir"
    bg_wait
    loads_done "$dir" A B || return 1
    wait_until 10 "" galera_settled || true
    counts=$(item_counts "$item") ||
        { SCN_OBSERVED="the database did not answer for $item after the heal"; return 1; }
    final=${counts%% *}
    verdict=$(history_check "$hist" "$stock" $counts) ||
        { SCN_OBSERVED="check-history could not read the history: $verdict"; return 1; }
    set -- $(history_report "$hist" "$cut_ns")   # sales gap_ms gap_from_ms first_after_cut_ms sold_twice
    [ $# = 5 ] || { SCN_OBSERVED="the history could not be summed up ($*)"; return 1; }
    lost=$(acked_lost "$stock" "$1" "$final") unrec=$(galera_unrecorded "$hist" "$item")
    errs=$(galera_errors_written "$item")
    left_ms=$(galera_ms_after "$dir/left" "$cut_ns") maj_ms=$(galera_ms_after "$dir/majority" "$cut_ns")
    during=$(galera_side_sales "$dir/history-A.jsonl" "$cut_ns" "$heal_ns")
    after_np=0
    [ "$left_ms" -lt 0 ] ||
        after_np=$(galera_side_sales "$dir/history-A.jsonl" "$(cat "$dir/left")" "$heal_ns" sent)
    first_b=$(first_sale_after "$dir/history-B.jsonl" "$cut_ns")
    first_a=$(first_sale_after "$dir/history-A.jsonl" "$heal_ns")
    a_long=$(galera_longest_answer "$dir/history-A.jsonl" "$cut_ns" "$heal_ns")
    b_long=$(galera_longest_answer "$dir/history-B.jsonl" "$cut_ns" "$heal_ns")
    SCN_FLAW=0
    [ "$lost" = 0 ] && [ "$5" = 0 ] && [ "$verdict" = possible ] && [ "$after_np" = 0 ] || SCN_FLAW=1
    [ "$unrec" = 0 ] || [ "$unrec" = "?" ] || SCN_FLAW=1
    SCN_OBSERVED="cut {h1}|{h2,h3} for ${cut_s} s: node 1 left the primary component \
$(galera_when "$left_ms"), the majority's (h2, h3) formed $(galera_when "$maj_ms"); A sold \
$during during the cut ($after_np of them sent after its node said non-Primary), its longest \
answer then ${a_long% *} ms (${a_long#* } unanswered), its answers sent during the cut: \
$(galera_answers_between "$dir/history-A.jsonl" "$cut_ns" "$heal_ns"); B's first sale sent after the \
cut answered $first_b ms after it, its longest answer during it ${b_long% *} ms (${b_long#* } \
unanswered); after the heal node 1 was back (Primary, size 3, Synced) \
$([ "$back_ms" -ge 0 ] && echo "$back_ms ms after it" || echo "not within 30 s"), A's first \
sale $first_a ms after it; history $verdict; acknowledged sales lost $lost (with no ledger \
row $unrec); sold twice $5; answered 500 error ${errs% *} (${errs#* } of them written); \
longest with no sale $2 ms (from $3 ms after the cut); answers \
$(history_answers "$dir/history-A.jsonl" "$dir/history-B.jsonl")"
}
# galera_when MS: "N ms after the cut", or "not during the cut" (-1).
galera_when() { [ "$1" -ge 0 ] && echo "$1 ms after the cut" || echo "not during the cut"; }

# --- galera-row-lock -----------------------------------------------------------------------

# galera_samples DIR H ITEM END_NS: sales of ITEM by curl in H, one after the other until
# the time END_NS (mono_now_ns) or one answered 503 store_unavailable: its body then in
# DIR/refused-H.json. One shell in H runs them all (a process per sale but curl's: on two
# busy cores a sale's own shell, clock reads and jq took a second, and only two were sent
# in 3 s); afterwards each is recorded as build/sale-load records one (times on
# mono_now_ns's clock, read in H just before and after: a little wider than the real
# interval) in DIR/history-S-H-N.jsonl, its body in DIR/S-H-N.json.
galera_samples() {
    local dir=$1 h=$2 item=$3 url i s e code
    url="http://$(host_addr "$h"):$H_INSTANCE_PORT/inventory/sale?item=$item"
    in_host "$h" bash -c '
        i=0
        while [ "${EPOCHREALTIME//[!0-9]/}000" -lt "$3" ]; do
            i=$((i + 1)); s=${EPOCHREALTIME//[!0-9]/}000
            c=$(curl -s -o "$1/S-$4-$i.json" -m 30 -w "%{http_code}" "$2") || c=${c:-000}
            echo "$i $s ${EPOCHREALTIME//[!0-9]/}000 $c" >> "$1/S-$4.times"
            if grep -q "\"error\": *\"store_unavailable\"" "$1/S-$4-$i.json" 2>/dev/null; then
                cp "$1/S-$4-$i.json" "$1/refused-$4.json"; break
            fi
        done' sh "$dir" "$url" "$(( $4 + MONO_OFFSET ))" "$h"
    while read -r i s e code; do
        echo "$code" >> "$dir/codes"
        jq -c --argjson s "$(( s - MONO_OFFSET ))" --argjson e "$(( e - MONO_OFFSET ))" \
            --argjson st "$((10#$code))" --arg item "$item" '
            {start_ns: $s, end_ns: $e, status: $st, item: $item} + if $st == 0 then {} else
            {error: (.error // ""), instance: (.instance // "")}
            + if .remaining then {remaining} else {} end end' "$dir/S-$h-$i.json" \
            > "$dir/history-S-$h-$i.jsonl" 2>/dev/null ||
            jq -nc --argjson s "$(( s - MONO_OFFSET ))" --arg item "$item" \
                '{start_ns: $s, status: 0, item: $item}' > "$dir/history-S-$h-$i.jsonl"
    done < <(cat "$dir/S-$h.times" 2>/dev/null)
}

scenario_galera_row_lock() {
    local "$@"
    local secs=${secs:-10} hist=$dir/history.jsonl svc counts final verdict lost oversold
    local c0 c1 d0 d1 tried refused samples n msg overlaps unrec errs
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    mapfile -t svc < <(instance_flags "$@")
    galera_stack "$stack" "$item" "$stock" "${svc[@]}" || return 1
    c0=$(galera_conflicts h1 h2) d0=$(galera_deadlocks)
    mono_start
    host_load "$dir" "$item" h1 "$secs" 4 A
    host_load "$dir" "$item" h2 "$secs" 4 B
    for n in h1 h2; do
        galera_samples "$dir" "$n" "$item" $(( $(mono_now_ns) + (secs - 1) * 1000000000 )) &
        BG_PIDS="$BG_PIDS $!"
    done
    bg_wait
    loads_done "$dir" A B || return 1
    cat "$dir"/history-S-*.jsonl >> "$hist" 2>/dev/null
    samples=$(find "$dir" -name 'history-S-*.jsonl' | wc -l)
    wait_until 10 "" galera_settled || true
    c1=$(galera_conflicts h1 h2) d1=$(galera_deadlocks)
    counts=$(item_counts "$item") || { SCN_OBSERVED="the database did not answer for $item"; return 1; }
    final=${counts%% *}
    oversold=$(( $(echo "$counts" | awk '{ print $2 }') - (stock - final) ))
    verdict=$(history_check "$hist" "$stock" $counts) ||
        { SCN_OBSERVED="check-history could not read the history: $verdict"; return 1; }
    set -- $(history_report "$hist" 0)   # sales gap_ms gap_from_ms first_after_ms sold_twice
    [ $# = 5 ] || { SCN_OBSERVED="the history could not be summed up ($*)"; return 1; }
    lost=$(acked_lost "$stock" "$1" "$final") unrec=$(galera_unrecorded "$hist" "$item")
    errs=$(galera_errors_written "$item")
    tried=$(jq -s 'length' "$hist")
    refused=$(jq -s '[.[] | select(.status == 503 and .error == "store_unavailable")] | length' "$hist")
    overlaps=$(metric_sum inventory_overlaps_total)
    msg=$(cat "$dir"/refused-*.json 2>/dev/null | jq -rs '.[0].message // empty') && [ -n "$msg" ] ||
        msg="none refused in $samples sales by curl"
    SCN_FLAW=0
    [ "$oversold" -le 0 ] && [ "$lost" = 0 ] && [ "$5" = 0 ] && [ "$verdict" = possible ] || SCN_FLAW=1
    [ "$unrec" = 0 ] || [ "$unrec" = "?" ] || SCN_FLAW=1
    SCN_OBSERVED="two nodes selling $item for ${secs} s (A on h1, B on h2): $tried sales tried, \
$1 sold, $refused answered 503 store_unavailable \
($(awk -v r="$refused" -v t="$tried" 'BEGIN { printf "%.1f", t ? 100 * r / t : 0 }') % aborted); \
the instances' deadlocks (1213) $(( d1 - d0 )), the nodes' certification failures and \
brute-force aborts $(( c1 - c0 )); the probe's overlaps ${overlaps:-?}; oversold $oversold; \
history $verdict; acknowledged sales lost $lost (with no ledger row $unrec); sold twice $5; \
answered 500 error ${errs% *} (${errs#* } of them written); the answer of a sale refused: \
\"$msg\"; answers $(history_answers "$hist")"
}
# galera_deadlocks: the instances' statements that failed as a deadlock (1213: Galera's
# certification, or a brute-force abort), summed.
galera_deadlocks() {
    local n; n=$(metric_sum 'inventory_db_statement_failures_total{fault="deadlock"}')
    echo "${n:-0}"
}
