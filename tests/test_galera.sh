#!/usr/bin/env bash
# test_galera.sh - The database past one machine: a Galera cluster of three MariaDB nodes
# on test hosts (loadtest/scenarios/galera.sh), short.
# Two runs side by side, each on hosts of its own: galera-partition for v14 (a 5 s cut of
# {h1} from {h2,h3}): the cluster comes up on three hosts, node 1 leaves the primary
# component and A answers 503 store_unavailable within a bound, B sells on the majority,
# nothing acknowledged is lost, node 1 rejoins after the heal and A sells again; and
# galera-row-lock for v15 (4 s, two instances selling one item on two nodes): the row
# lock is each node's own, certification failures are counted and answered 503 with a
# message that says so, and nothing is oversold (the stock's row read FOR UPDATE: a write
# of it applied from the other node aborts the stale reader). Where test hosts or Galera cannot be had, every check is skipped,
# saying why. Nothing is left behind (loadtest/run removes its hosts: deploy/hosts down).
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

CHECKS=16
why=$(deploy/hosts check) || why="test hosts: $why"
if [ -z "$why" ]; then
    for b in mariadbd mariadb-install-db rsync; do
        command -v "$b" >/dev/null || PATH=$PATH:/usr/sbin command -v "$b" >/dev/null ||
            { why="$b not found (make deps)"; break; }
    done
    [ -n "$why" ] || [ -f /usr/lib/galera/libgalera_smm.so ] || why="no Galera library (galera-4)"
    [ -n "$why" ] || id mysql > /dev/null 2>&1 || why="no user mysql to run the nodes as"
fi
if [ -n "$why" ]; then
    for _ in $(seq "$CHECKS"); do skip "galera" "$why"; done
    t_report; exit
fi
# The nodes run as the user mysql, their data in the runs' directories: those go under a
# directory of this test's that mysql may pass through (T_TMP may lie in one it may not).
G_TMP=$(mktemp -d /tmp/invtest-galera.XXXXXX)
chmod 711 "$G_TMP"
trap 'for p in 1 2; do HOSTS_PREFIX=invtestg$p deploy/hosts down; done; rm -rf "$G_TMP"; t_cleanup' EXIT

# run_galera V SCENARIO SECS N: loadtest/run of SCENARIO for V, SECS, on hosts invtestgN-*.
run_galera() {
    TMPDIR=$G_TMP HOSTS_PREFIX=invtestg$4 loadtest/run --lock "$1" --scenario "$2" -d "$3" \
        > "$T_TMP/$2.out" 2> "$T_TMP/$2.err"
}
t0=$SECONDS
run_galera v14 galera-partition 5 1 &
p1=$!
run_galera v15 galera-row-lock 4 2 &
p2=$!
wait "$p1" "$p2"
echo "   (both runs took $((SECONDS - t0)) s)"

# --- the cut: {h1} | {h2,h3} -----------------------------------------------------------------
j=$(tail -n 1 "$T_TMP/galera-partition.out")
o=$(jq -r '.observed // ""' <<< "$j" 2>/dev/null)
echo "   $o"
[ -n "$j" ] || { j='{}'; tail -n 3 "$T_TMP/galera-partition.err"; }
check "galera-partition v14: the cluster came up on three hosts and the run was played" \
    jq -e '.scenario == "galera-partition"' <<< "$j"
check "  node 1 left the primary component during the cut, the majority formed its own" \
    grep -Eq 'node 1 left the primary component [0-9]+ ms after the cut, the majority.s \(h2, h3\) formed [0-9]+ ms after the cut' <<< "$o"
check "  A (node 1) answered 503 store_unavailable during the cut" \
    grep -Eq 'its answers sent during the cut: .*503 x [1-9][0-9]* \([^)]*store_unavailable [1-9]' <<< "$o"
a_long=$(grep -oE 'its longest answer then [0-9]+ ms \([0-9]+ unanswered' <<< "$o" | grep -oE '[0-9]+' | paste -sd' ')
check "  A's answers bounded: the longest under 8 s (Galera's 4 s to declare a node gone), none unanswered" \
    awk -v a="$a_long" 'BEGIN { split(a, x, " "); exit !(x[1] != "" && x[1] < 8000 && x[2] == 0) }'
check "  A sold nothing it sent after its node said non-Primary" \
    grep -Eq '\(0 of them sent after its node said non-Primary\)' <<< "$o"
check "  B (the majority) sold during the cut" \
    grep -Eq "B's first sale sent after the cut answered [0-9]+ ms after it" <<< "$o"
check "  nothing acknowledged lost (none without its ledger row), nothing sold twice" \
    grep -Eq 'acknowledged sales lost 0 \(with no ledger row 0\); sold twice 0;' <<< "$o"
check "  nothing oversold: one lease across the nodes (the database at the end)" \
    jq -e '.oversold == 0 and .invariant_ok == true' <<< "$j"
check "  node 1 rejoined after the heal (Primary, size 3, Synced) and A sold again" \
    grep -Eq "node 1 was back \(Primary, size 3, Synced\) [0-9]+ ms after it, A's first sale [0-9]+ ms after it" <<< "$o"
# A commit out at the cut fails on node 1 (1180) and may still commit on the majority: the
# store answers it 500 error, which the checker reads as sold nothing (db/error.c maps
# 1180 as no outcome known). The history is possible, or impossible only by that.
check "  history possible, or impossible only by a 500 whose sale the majority committed" \
    grep -Eq 'history possible|history impossible: .*stock sold that no answer accounts for.*answered 500 error [1-9][0-9]* \([1-9][0-9]* of them written\)' <<< "$o"

# --- the row lock across two nodes -----------------------------------------------------------
j=$(tail -n 1 "$T_TMP/galera-row-lock.out")
[ -n "$j" ] || { j='{}'; tail -n 3 "$T_TMP/galera-row-lock.err"; }
o=$(jq -r '.observed // ""' <<< "$j" 2>/dev/null)
echo "   $o"
check "galera-row-lock v15: two instances sold one item on two nodes" \
    grep -Eq 'two nodes selling [^ ]+ for 4 s \(A on h1, B on h2\): [1-9][0-9]* sales tried, [1-9][0-9]* sold' <<< "$o"
check "  certification failures counted (the nodes' and the instances' deadlocks), some sales aborted" \
    grep -Eq "[1-9][0-9]* answered 503 store_unavailable .*the instances' deadlocks \(1213\) [1-9][0-9]*, the nodes' certification failures and brute-force aborts [1-9][0-9]*" <<< "$o"
check "  an aborted sale's answer says a conflicting write was certified first on another node" \
    grep -Eq 'the answer of a sale refused: ".*conflicting write certified first on another node' <<< "$o"
# Two holders at once, each on its node: the probe sees them (its row is written through
# Galera too, so its own write may be the one certification rolls back), or certification
# does, rolling back one of two transactions that wrote the item at once.
check "  both held the lock at once, each on its node (the probe's overlaps, or certification's aborts)" \
    grep -Eq "certification failures and brute-force aborts [1-9][0-9]*; the probe's overlaps|the probe's overlaps [1-9]" <<< "$o"
# The stock's row is read FOR UPDATE in v15's transaction: a write of it applied from the
# other node aborts the stale reader (read plainly, the stale read passed certification
# and oversold).
check "  nothing oversold, nothing sold twice: the stale reader aborted, not its write certified" \
    jq -e '.flaw == false and .oversold == 0' <<< "$j"
check_eq "  no namespace of either run left" "" "$(ip netns list | grep -E '^invtestg[12]-')"
t_report
