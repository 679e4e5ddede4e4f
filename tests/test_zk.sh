#!/usr/bin/env bash
# test_zk.sh - v11 and the stock on ZooKeeper: one ensemble for the suite (deploy/up
# --zookeeper 3, no instance), and on it the short versions of the evolution's v11 rows,
# each through loadtest/run on instances of its own (--zookeepers): a load, the holder
# killed, the holder paused past its session, a nested acquire, the leader killed mid-load;
# deploy/up, stock, status and down on ZooKeeper. Skipped, saying why, without java or the
# zookeeper package.
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
. deploy/up-zookeeper.sh   # zk_check, zk_server_run: as deploy/up starts a server

ENS=$T_TMP/ensemble
trap 'deploy/down --run-dir "$T_TMP/stack" --quiet >/dev/null 2>&1; deploy/down --run-dir "$ENS" --quiet >/dev/null 2>&1; t_cleanup' EXIT

if ! why=$(zk_check); then
    skip "the ZooKeeper suite" "$why"
    t_report
    exit
fi

# --- the suite's ensemble: three servers, as deploy/up starts them --------------------------
# ens_up: deploy/up --zookeeper 3 on a span of 9 free ports, no instance, no nginx, in ENS;
# another port drawn when one is taken between the look and the bind (exit 3).
ens_up() {
    local rc=0
    for _ in 1 2 3; do
        ZK_BASE=$(free_port 0 9) || return 1
        rc=0
        deploy/up --zookeeper 3 --zk-port "$ZK_BASE" --instances 0 --no-nginx --run-dir "$ENS" \
            > "$T_TMP/ens.out" 2> "$T_TMP/ens.err" || rc=$?
        [ "$rc" = 3 ] || break
    done
    return "$rc"
}
t0=$SECONDS
ens_up; rc=$?
check_eq "deploy/up --zookeeper 3: the ensemble comes up (in $((SECONDS - t0)) s)" 0 "$rc"
[ "$rc" = 0 ] || { cat "$T_TMP/ens.err"; t_report; exit; }
. "$ENS/stack.env"
ZK_LIST=$ZK_CONNECT
check_eq "  stack.env: three servers, their client ports, pids and run directory" \
    "3 3 3 $ENS" "$ZK_SERVERS $(echo $ZK_PORTS | wc -w) $(echo $ZK_PIDS | wc -w) $ZK_DIR"
check "  each pid is a QuorumPeerMain of its own configuration" \
    bash -c 'i=1; for p in $1; do
                 tr "\0" " " < /proc/$p/cmdline | grep -q "QuorumPeerMain $2/zk-$i/zoo.cfg" || exit 1
                 i=$((i + 1)); done' _ "$ZK_PIDS" "$ENS"
check_eq "  srvr: a leader and two followers" "follower follower leader" \
    "$(zk_modes | tr ' ' '\n' | sort | paste -sd' ' -)"
check "  each server's configuration: short ticks said, admin server off, srvr allowed, its own data and myid" \
    bash -c 'for i in 1 2 3; do c=$1/zk-$i/zoo.cfg
                 grep -q "^tickTime=200$" $c && grep -qi "^#.*short ticks" $c &&
                 grep -q "^admin.enableServer=false$" $c && grep -q "^4lw.commands.whitelist=.*srvr" $c &&
                 grep -q "^dataDir=$1/zk-$i/data$" $c && [ "$(cat $1/zk-$i/data/myid)" = $i ] || exit 1
             done' _ "$ENS"
check "  the write-ahead log is synced: forceSync not turned off" \
    bash -c '! grep -qi "^forceSync *= *no" "$1"/zk-*/zoo.cfg' _ "$ENS"
check "deploy/status: every server answers, one leads" \
    bash -c 'out=$(deploy/status --run-dir "$1") && echo "$out" | grep -q "leader now: 127.0.0.1:"' _ "$ENS"

# --- deploy/up on an ensemble elsewhere: stock, status, a sale, a nested one, down ------------
RUN=$T_TMP/stack
NG=$(free_port); A=$(free_port); B=$(free_port)
check "deploy/up --zookeepers: two v11 instances and nginx on the ensemble" \
    deploy/up --zookeepers "$ZK_LIST" --zk-run-dir "$ENS" --faults --run-dir "$RUN" --port "$NG" \
        --instance-ports "$A,$B"
check_eq "  its stack.env: the ensemble, not its own" "v11 0 $ENS" \
    "$(. "$RUN/stack.env"; echo "$LOCK $OWN_ZK $ZK_DIR")"
check "deploy/stock 7 on ZooKeeper" deploy/stock 7 --item zdep --run-dir "$RUN"
check "deploy/status: the servers, the instances, nginx and the item's stock" \
    bash -c 'out=$(deploy/status --run-dir "$1" --item zdep) &&
             [ "$(echo "$out" | grep -c "^  zookeeper .* running *\(leader\|follower\)$")" = 3 ] &&
             echo "$out" | grep -q "item zdep *stock 7, sold 0, ledger 0"' _ "$RUN"
a_grants() { metric "$A" inventory_lock_acquisitions_total; }
check_eq "a sale through nginx: 200" 200 "$(sale "$NG" zdep)"
check "  answered by v11" jq -e '.lock == "v11" and .remaining == 6' "$T_TMP/body"
g1=$(a_grants)
check_eq "a nested sale on one instance: 200" 200 "$(sale "$A" zdep nested=1)"
check_eq "  two grants on one node (reentrant): acquisitions +2" "2" "$(( $(a_grants) - g1 ))"
check_eq "--get-stock: stock 5, sold 2, two ledger entries" "zdep 5 2 2" "$(zk_admin --get-stock --item zdep)"
check "deploy/down stops the instances and nginx" deploy/down --run-dir "$RUN" --quiet
check "  and leaves the ensemble alone: a leader and two followers" zk_quorum 3
check_eq "deploy/up --zookeeper 3 --lock v8: refused (exit 2)" 2 \
    "$(deploy/up --zookeeper 3 --lock v8 --run-dir "$T_TMP/bad" > /dev/null 2>&1; echo $?)"
check_eq "deploy/up --zookeeper 2: refused (exit 2)" 2 \
    "$(deploy/up --zookeeper 2 --run-dir "$T_TMP/bad" > /dev/null 2>&1; echo $?)"

# --- the store seam and the ZooKeeper layer on the ensemble (C) ------------------------------
build/test_store zookeeper "$ZK_LIST" "127.0.0.1:$(free_port)" > "$T_TMP/unit.out" 2>&1
sed 's/^/  /' "$T_TMP/unit.out"   # indented: its result line is not this suite's
line=$(tail -n 1 "$T_TMP/unit.out")
case $line in
*" passed, "*" failed") T_PASSED=$((T_PASSED + ${line%% *})); f=${line#*, }; T_FAILED=$((T_FAILED + ${f%% *})) ;;
*) T_FAILED=$((T_FAILED + 1)); echo "FAIL   build/test_store zookeeper ended without a result" ;;
esac

# --- Curator's recipe, as another client reads it: kazoo's lock beside v11's -----------------
# v11 names its nodes as Curator does (_c_UUID-lock-SEQ); kazoo, told that pattern, waits for
# them, and v11 waits for kazoo's: 40 grants each, 5 ms held, on one path.
if ! "$PYTHON" -c 'import kazoo' 2>/dev/null; then
    skip "kazoo's lock beside v11's" "python3-kazoo is missing (make deps)"
else
    build/zk_lock "$ZK_LIST" zinterop 40 5 > "$T_TMP/v11.grants" 2> "$T_TMP/v11.err" &
    tests/zk_interop.py "$ZK_LIST" zinterop 40 5 > "$T_TMP/kazoo.grants" 2> "$T_TMP/kazoo.err"
    wait $!
    check "kazoo's lock and v11's on one path: 40 grants each, no two at once, each waited on the other" \
        bash -c 'out=$(tests/zk_interop.py --check "$1" "$2") && echo "  $out" &&
                 echo "$out" | grep -q "grants a 40 b 40, overlaps 0"' _ "$T_TMP/v11.grants" "$T_TMP/kazoo.grants"
fi

# --- a waiter that gives up leaves no node to wait behind ------------------------------------
# A holds the lock 1.5 s (work_ms); B's sale waits 300 ms (--wait-ms) and gives up: 503
# lock_timeout. Its node is deleted (by B's retrier, as soon as its session answers): A's
# release hands the lock to nobody, and the next sale is granted at once.
RUN=$T_TMP/giveup
NG=$(free_port); A=$(free_port); B=$(free_port)
deploy/up --zookeepers "$ZK_LIST" --zk-run-dir "$ENS" --faults --wait-ms 300 --run-dir "$RUN" \
    --port "$NG" --instance-ports "$A,$B" > /dev/null 2>&1
zk_admin --set-stock 10 --item zgive > /dev/null
SALE_BODY=$T_TMP/held.body sale "$A" zgive work_ms=1500 > "$T_TMP/held.status" &
held=$!
sleep 0.4
check_eq "a waiter on B gives up after its 300 ms: 503 lock_timeout" "503 lock_timeout" \
    "$(SALE_BODY=$T_TMP/gave.body sale "$B" zgive) $(jq -r .error "$T_TMP/gave.body")"
wait "$held"
check_eq "  the holder on A sold" 200 "$(cat "$T_TMP/held.status")"
# The wait the instance measured (its histogram's sum and count around the sale): what
# curl measures here includes its own start, which on two busy cores took 400 ms.
w0=$(metric "$B" inventory_lock_wait_seconds_sum) n0=$(metric "$B" inventory_lock_wait_seconds_count)
t0=$(date +%s%N)
code=$(sale "$B" zgive)
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
wait_ms=$(awk -v a="$w0" -v b="$(metric "$B" inventory_lock_wait_seconds_sum)" 'BEGIN { printf "%d", (b - a) * 1000 }')
check_eq "  the next sale on B: granted" 200 "$code"
check "  at once, not behind the node of the waiter that gave up (its wait for the lock $wait_ms ms; answered in $ms ms)" \
    test "$(metric "$B" inventory_lock_wait_seconds_count)" = $((n0 + 1)) -a "$wait_ms" -lt 250
check_eq "  the lock's path holds no node after it" 0 \
    "$("$PYTHON" - "$ZK_LIST" <<'PY' 2>/dev/null
import sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1]); zk.start(timeout=10)
print(len(zk.get_children("/inventory/zgive/lock")) if zk.exists("/inventory/zgive/lock") else 0)
zk.stop()
PY
)"
deploy/down --run-dir "$RUN" --quiet

# zrun NAME ARG...: loadtest/run on the suite's ensemble (--zookeepers), its run directory
# kept in T_TMP/NAME; the JSON line in json, stdout and stderr in T_TMP/NAME.out and .err;
# returns loadtest/run's exit status.
zrun() {
    local name=$1 rc=0; shift
    LOADTEST_RUN_DIR=$T_TMP/$name loadtest/run --zookeepers "$ZK_LIST" --zk-run-dir "$ENS" "$@" \
        > "$T_TMP/$name.out" 2> "$T_TMP/$name.err" || rc=$?
    json=$(tail -n 1 "$T_TMP/$name.out")
    [ "$rc" = 0 ] || { tail -n 5 "$T_TMP/$name.err"; echo "$json"; }
    return "$rc"
}
# observed_ms TEXT: the number before " ms" after TEXT in the observed line.
observed_ms() { field observed | sed -n "s/.*$1 \(-\{0,1\}[0-9]*\) ms.*/\1/p"; }

# --- load: 60 units, 10 connections, 10 s, every answer recorded (a slow machine sells about
# 30 a second here while the JVMs warm, and 15 beside the other lane's loads: 58 in 4 s once;
# the stock sells out whatever the speed) --
zrun load --lock v11 --item zload --stock 60 -c 10 -d 10 --history "$T_TMP/load.jsonl"
check_eq "v11 load: done" 0 "$?"
check_eq "  sold the whole stock, none oversold: sold, remaining, oversold" "60 0 0" \
    "$(field sold) $(field remaining) $(field oversold)"
check_eq "  the invariant and the ledger hold" "true true" "$(field invariant_ok) $(field ledger_ok)"
check_eq "  60 answers 200, the history possible" "60 possible" "$(field ok) $(field history)"
check_eq "  --get-stock says what the summary says" "zload 0 60 60" "$(zk_admin --get-stock --item zload)"
check "  the summary reads ZooKeeper, a progress line each second" \
    bash -c 'grep -q "^  zookeeper sold 60, remaining 0, ledger 60" "$1.out" && grep -qE "^ +[0-9]+s +stock [0-9]+ +sold " "$1.err"' _ "$T_TMP/load"
check_eq "  JSON: lock and scenario; no probe (overlaps null)" "v11 load null" \
    "$(field lock) $(field scenario) $(field overlaps)"
zrun atomic --lock atomic --item zatomic --stock 60 -c 6 -d 2
check_eq "atomic on ZooKeeper (a version-checked multi, no lock): done" 0 "$?"
check_eq "  none oversold, sold + remaining == 60" "0 true" "$(field oversold) $(field invariant_ok)"
check "  it sold" test "$(field sold)" -gt 0

# --- crash: the holder killed -9; the next sale within the session timeout + 1 s -----------
zrun crash --lock v11 --item zcrash --stock 500 --scenario crash
check_eq "v11 crash: done" 0 "$?"
session=$(field observed | sed -n 's/.*(session timeout \([0-9]*\) ms).*/\1/p')
next=$(observed_ms "the next sale on the other instance")
check_eq "  the instances had the 2 s session asked for" 2000 "$session"
check "  the next sale came within the session + 1 s of the kill (${next:-?} ms)" \
    test "${next:--1}" -ge 0 -a "${next:--1}" -le $(( ${session:-0} + 1000 ))
check "  and not before half the session: the dead holder's lock held till then" \
    test "${next:--1}" -ge $(( ${session:-0} / 2 ))
check_eq "  no flaw: the history possible, none lost, none oversold" "false 0" "$(field flaw) $(field oversold)"
check "  the killed holder's sale had no answer (status 0 in the history)" \
    jq -e 'select(.status == 0)' "$T_TMP/crash/scenario/held.jsonl"

# --- pause: the holder stopped past its session; its write refused ---------------------------
zrun pause --lock v11 --item zpause --scenario pause
check_eq "v11 pause: done" 0 "$?"
check_eq "  the paused sale answered 409 lease_lost" "409 lease_lost" \
    "$(jq -r '"\(.status) \(.error)"' "$T_TMP/pause/scenario/paused.jsonl")"
check "  refused by ZooKeeper, or settled there: nothing was written (the write went out)" \
    jq -e '.message | test("nothing was written")' "$T_TMP/pause/scenario/paused.jsonl.body"
check "  the other instance sold while it was stopped" \
    test "$(field observed | sed -n 's/.*the other instance sold \([0-9]*\);.*/\1/p')" -gt 0
check_eq "  nothing oversold, the history possible, no flaw" "0 false" "$(field oversold) $(field flaw)"
check "  the history says possible" grep -q "history possible" <<< "$(field observed)"

# --- nested: reentrant, as v7 ---------------------------------------------------------------
zrun nested --lock v11 --item znested --scenario nested
check_eq "v11 nested: done" 0 "$?"
check "  5 nested sales: 5 sold, none timed out; the history possible" \
    grep -q "5 nested sales: 5 sold, 0 lock_timeout; history possible" <<< "$(field observed)"
check_eq "  no flaw, 5 sold" "false 5" "$(field flaw) $(field sold)"

# --- fairness: one client on instance 1, 49 on instance 2: each its fiftieth -----------------
zrun fairness --lock v11 --item zfair --scenario fairness -d 3
check_eq "v11 fairness: done" 0 "$?"
check "  Jain's index over the 50 clients at least 0.9 of the most its sales allow ($(jq -r '"\(.jain) of \(.jain_best)"' "$T_TMP/fairness/scenario/fairness.json" 2>/dev/null))" \
    jq -e '.jain >= 0.9 * .jain_best and .jain_best > 0' "$T_TMP/fairness/scenario/fairness.json"
lone=$(field observed | sed -n 's/.*instance 1 got \([0-9]*\) of \([0-9]*\) sales.*/\1 \2/p')
check "  the lone client of instance 1 got about its fiftieth (${lone% *} of ${lone#* }), not half" \
    awk -v a="${lone% *}" -v n="${lone#* }" 'BEGIN { exit !(n > 0 && a * 50 >= n / 2 && a * 50 <= n * 2) }'
check_eq "  no flaw; the invariant holds" "false true" "$(field flaw) $(field invariant_ok)"

# --- the leader killed -9 mid-load ---------------------------------------------------------
zrun leader --lock v11 --item zleader --scenario zk-leader-kill -d 8
check_eq "v11 zk-leader-kill: done" 0 "$?"
elected=$(observed_ms "another elected in")
gap=$(observed_ms "longest with no sale")
check "  another server was elected leader (in ${elected:-?} ms, srvr)" test "${elected:--1}" -ge 0
check "  the sales stopped no longer than the election and 3 s (${gap:-?} ms)" \
    test "${gap:-999999}" -le $(( ${elected:-0} + 3000 ))
check "  both instances lived through it" grep -q "instances alive after 2 of 2" <<< "$(field observed)"
check "  no acknowledged sale lost, none sold twice, the history possible" \
    grep -q "history possible; acknowledged sales lost 0; sold twice 0; oversold 0" <<< "$(field observed)"
check_eq "  no flaw" false "$(field flaw)"
# The killed server started again from its files: the ensemble whole for what follows.
for i in 1 2 3; do
    f=$ENS/zk-$i.pid
    is_ours "$(head -n 1 "$f")" "$(sed -n 2p "$f")" "$(sed -n 3p "$f")" || RUN_DIR=$ENS zk_server_run "$i"
done
check "the killed server, started again, rejoins: a leader and two followers" wait_until 30 "" zk_quorum 3

# --- Jepsen's partition on test hosts: {h1: server 1, A} | {h2: server 2, B; h3: server 3} ---
if ! why=$(deploy/hosts check); then
    skip "v11 zk-partition on test hosts" "$why"
else
    HOSTS_PREFIX=invzk LOADTEST_RUN_DIR=$T_TMP/partition loadtest/run --lock v11 --scenario zk-partition -d 6 \
        > "$T_TMP/partition.out" 2> "$T_TMP/partition.err"
    check_eq "v11 zk-partition (a 6 s cut): done" 0 "$?"
    json=$(tail -n 1 "$T_TMP/partition.out")
    check "  nothing lost, nothing sold twice, the history possible" \
        grep -q "history possible; acknowledged sales lost 0; sold twice 0" <<< "$(field observed)"
    check "  A sold nothing more than a session into the cut (no quorum on its side)" \
        grep -q "during the cut (0 of them more than a session into it)" <<< "$(field observed)"
    gap=$(observed_ms "longest with no sale")
    check "  the majority sold on: no gap longer than A's session and 3 s (${gap:-?} ms)" \
        test "${gap:-999999}" -le 7000
    after=$(observed_ms "A's first")
    check "  A sold again after the heal (${after:-?} ms after it)" test "${after:--1}" -ge 0
    check_eq "  no flaw; the invariant and the ledger hold" "false true true" \
        "$(field flaw) $(field invariant_ok) $(field ledger_ok)"
    check_eq "  its hosts removed" "" "$(ip netns list 2>/dev/null | grep '^invzk' || true)"
    HOSTS_PREFIX=invzk LOADTEST_RUN_DIR=$T_TMP/giveup-cut loadtest/run --lock v11 --scenario zk-partition-giveup \
        > "$T_TMP/giveup-cut.out" 2> "$T_TMP/giveup-cut.err"
    check_eq "v11 zk-partition-giveup (a waiter gives up during an 8 s cut): done" 0 "$?"
    json=$(tail -n 1 "$T_TMP/giveup-cut.out")
    check "  the waiter gave up: 503 lock_timeout" grep -q "gave up during an 8 s cut of h1: 503 lock_timeout" <<< "$(field observed)"
    next=$(field observed | sed -n 's/.*B.s next sale: 200 in \([0-9]*\) ms.*/\1/p')
    check "  after the heal no sale waits on its node: the next granted at once (${next:-?} ms)" \
        test "${next:-99999}" -lt 1000
    check "  no node left under the lock" grep -q "nodes left under the lock: 0" <<< "$(field observed)"
    check_eq "  no flaw" false "$(field flaw)"
    check_eq "  its hosts removed" "" "$(ip netns list 2>/dev/null | grep '^invzk' || true)"
fi

# --- the suite's ensemble down: nothing of it left ---------------------------------------------
pids=$(for i in 1 2 3; do head -n 1 "$ENS/zk-$i.pid"; done)
check "deploy/down stops the three servers" deploy/down --run-dir "$ENS" --quiet
check "  none of their pids runs" none_running $pids
t_report
