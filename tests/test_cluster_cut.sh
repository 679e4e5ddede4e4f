#!/usr/bin/env bash
# test_cluster_cut.sh - One instance cut from one master of a Redis Cluster, on test hosts:
# the cluster-cut scenario under v8, short (a 4 s cut). The instance's long sale on a
# healthy master must keep its lease while the renewal of its lease on the cut master
# waits (one renewal lane per server: with one watchdog renewing one lease after another,
# the healthy lease ran out, the other instance's sales entered beside it and v8's write
# lost them); the cut master is marked down and its items fail at once, at most half the
# workers ever wait on it, and the history shows nothing lost or sold twice.
# Where namespaces cannot be made (not root, no nftables), every check is skipped, saying why.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

CHECKS=6
if ! why=$(deploy/hosts check); then
    for _ in $(seq "$CHECKS"); do skip "test hosts" "$why"; done
    t_report; exit
fi
on_hosts > "$T_TMP/before"

out=$(CC_CUT_S=4 HOSTS_PREFIX=invtestcc loadtest/run --lock v8 --scenario cluster-cut 2> "$T_TMP/run.err"); rc=$?
obs=$(tail -n 1 <<< "$out" | jq -r '.observed // empty' 2>/dev/null)
echo "   ${obs:-$(tail -n 3 "$T_TMP/run.err")}"
check_eq "cluster-cut v8, short: the run was played" 0 "$rc"
check "  the long sale on a healthy master kept its lease (200, no lease_lost), nobody entered beside it" \
    grep -qE "on h2 \(item[0-9]+\) 200, .*B's sales inside beside A's on item[0-9]+: 0;" <<< "$obs"
check "  the cut master marked down, its items failing at once within 500 ms of the cut" \
    grep -qE "the first 503 within 100 ms ([0-9]{1,2}|[1-4][0-9]{2}) ms after the cut, .* h1 marked down [1-9]" <<< "$obs"
peak=$(sed -n 's/.*the most workers waiting on it \([0-9-]*\);.*/\1/p' <<< "$obs")
check "  at most half the workers (2 of 4) ever waited on it: ${peak:-none}" test "${peak:-9}" -le 2 2>/dev/null
check "  the history: possible, nothing acknowledged lost, nothing sold twice, nothing oversold" \
    grep -q 'acknowledged sales lost 0, sold twice 0, oversold 0; history possible;' <<< "$obs"
check_eq "  nothing it started left running, no namespace of invtestcc left" ":" \
    "$(on_hosts | comm -13 "$T_TMP/before" - | paste -sd' ' -):$(ip netns list | grep '^invtestcc-')"
t_report
