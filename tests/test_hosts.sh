#!/usr/bin/env bash
# test_hosts.sh - Test hosts (deploy/hosts) and Jepsen's partition on them.
# Hosts h1..hN are network namespaces on a bridge of their own, 198.18.0.K, no route out;
# a cut drops silently (a connection attempt times out, it is not refused) and a heal
# restores; down removes every namespace and stops what still ran in them. Then the
# sentinel-partition scenario, short (a 4 s cut), for v8: the old master keeps selling on
# the minority side, the promoted replica forgets it, the checker counts each unit sold
# twice; and with the grant and the sale waiting on WAIT 2: nothing acknowledged is lost.
# Where namespaces cannot be made (not root, no nftables), every check is skipped, saying why.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

H=deploy/hosts
export HOSTS_PREFIX=invtest
CHECKS_HOSTS=15 CHECKS_PARTITION=10 CHECKS_RECIPE=5
if ! why=$($H check); then
    for _ in $(seq $((CHECKS_HOSTS + CHECKS_PARTITION + CHECKS_RECIPE))); do skip "test hosts" "$why"; done
    t_report; exit
fi
trap '$H down; t_cleanup' EXIT

# --- deploy/hosts -----------------------------------------------------------------------
$H up 3 > "$T_TMP/up.out" 2>&1
check_eq "up 3: three hosts at 198.18.0.1-3" "h1 198.18.0.1 h2 198.18.0.2 h3 198.18.0.3" "$($H list | paste -sd' ' -)"
check_eq "addr h2" 198.18.0.2 "$($H addr h2)"
check_eq "a host has no route out (its only route is the bridge's /24)" "198.18.0.0/24" \
    "$($H run h1 ip -4 route | awk '{ print $1 }' | paste -sd' ' -)"
check_eq "the bridge and its ports live in a namespace of their own (invtest-net), none here" "br0 0" \
    "$(ip netns exec invtest-net ip -br link show type bridge | awk '{ print $1 }') $(ip -br link | grep -c '^vh[0-9]')"
# A listener in h2 (a Redis: a real server), reached from h1 and h3.
$H run h2 redis-server --port 7000 --bind 198.18.0.2 --save '' --appendonly no --protected-mode no \
    > "$T_TMP/h2-redis.log" 2>&1 &
rpid=$!
T_PIDS="$T_PIDS $rpid"
ping_from() { timeout "${2:-2}" $H run "$1" redis-cli -h 198.18.0.2 -p 7000 ping 2>&1; }
check "h1 and h3 reach h2" wait_until 5 "" sh -c "[ \"\$(HOSTS_PREFIX=invtest $H run h1 redis-cli -h 198.18.0.2 -p 7000 ping)\" = PONG ] && [ \"\$(HOSTS_PREFIX=invtest $H run h3 redis-cli -h 198.18.0.2 -p 7000 ping)\" = PONG ]"
$H cut h1 h2
check_eq "cut h1 h2: listed" "h1 h2" "$($H cuts)"
ping_from h1 2 > /dev/null; rc=$?
check_eq "cut h1 h2: h1's connection to h2 hangs (no reset, no error: timeout ends it)" 124 "$rc"
check_eq "cut h1 h2: h3 still reaches h2" PONG "$(ping_from h3)"
$H heal h1 h2
check_eq "heal h1 h2: h1 reaches h2 again" PONG "$(ping_from h1)"
$H cut h1 h2; $H cut h3 h2
check_eq "two cuts listed" "h1 h2,h2 h3" "$($H cuts | paste -sd, -)"
$H heal
check_eq "heal (all): no cut left, h3 reaches h2" ":PONG" "$($H cuts):$(ping_from h3)"
$H run h9 true > /dev/null 2>&1; rc=$?
check_eq "run h9 (not made): fails, saying so" 1 "$rc"
$H cut h1 > /dev/null 2>&1; rc=$?
check_eq "cut with one host: bad usage (2)" 2 "$rc"
$H down
check_eq "down: no namespace of invtest left" "" "$(ip netns list | grep '^invtest-')"
check "down: the process left in h2 was stopped" wait_until 3 "" sh -c "! kill -0 $rpid 2>/dev/null"

# --- the recipe of "More than one host" (docs/operations.md), run: hosts-load ------------------
# Redis, replicas and sentinels on h1-h3, instances by deploy/up --sentinels on h4 and h5,
# nginx by deploy/up --upstream on h6, a load through it from h6.
on_hosts > "$T_TMP/before-load"
j=$(loadtest/run --lock v8 --scenario hosts-load -d 3 2> "$T_TMP/hosts-load.err" | tail -n 1)
echo "   $(jq -r .observed <<< "$j")"
check_eq "hosts-load v8: no flaw (history possible, all four instances sold)" false "$(jq .flaw <<< "$j")"
check "  every instance on h4 and h5 sold through nginx on h6" \
    grep -Eq 'sold by instance: h4-8081 [1-9][0-9]*, h4-8082 [1-9][0-9]*, h5-8081 [1-9][0-9]*, h5-8082 [1-9][0-9]*' <<< "$j"
check "  the stock adds up, one ledger entry per sale" jq -e '.invariant_ok and .ledger_ok and .ok > 0' <<< "$j"
check "  only 200s" grep -Eq 'answers 200 x [0-9]+"?$' <<< "$(jq -r .observed <<< "$j")"
check_eq "  nothing it started left running (Redis, sentinels, instances, nginx), no namespace left" ":" \
    "$(on_hosts | comm -13 "$T_TMP/before-load" - | paste -sd' ' -):$(ip netns list | grep '^invtest-')"

# --- sentinel-partition, short -----------------------------------------------------------
# run_partition NAME N: loadtest/run for v8 and scenario NAME, a 4 s cut, on test hosts of
# its own (invtestN-*). The two runs go side by side: they mostly wait (the cut, the
# sentinels' timers), and one after the other they took 57 s. partition_json NAME: its
# JSON line, once both are done.
run_partition() {
    HOSTS_PREFIX=invtest$2 loadtest/run --lock v8 --scenario "$1" -d 4 > "$T_TMP/$1.out" 2> "$T_TMP/$1.err"
}
partition_json() { tail -n 1 "$T_TMP/$1.out"; }
run_partition sentinel-partition 1 &
p1=$!
run_partition sentinel-partition-wait 2 &
p2=$!
wait "$p1" "$p2"
j=$(partition_json sentinel-partition)
echo "   $(jq -r .observed <<< "$j")"
check_eq "sentinel-partition v8: the flaw measured" true "$(jq .flaw <<< "$j")"
check "  the majority promoted a replica during the cut, and B sold on it" \
    grep -Eq 'the majority promoted 198\.18\.0\.3 [0-9]+ ms after the cut, B.s first sale [0-9]+ ms after that' <<< "$j"
check "  the old master sold during the cut (A, the minority side), also more than 1 s into it" \
    grep -Eq 'A sold [1-9][0-9]* on the old master during the cut \([1-9][0-9]* of them more than 1 s into it\)' <<< "$j"
check "  the sentinels demoted the old master after the heal" grep -Eq "old master's demotion \([0-9]+ ms after the heal\)" <<< "$j"
check "  acknowledged sales lost (> 0), each a unit sold twice, and the checker says impossible" \
    grep -Eq 'history impossible: .*acknowledged sales lost [1-9][0-9]*; sold twice [1-9][0-9]* \(the lost sale of each answered before the cut [0-9]+, during it [1-9][0-9]*, after the heal [0-9]+\)' <<< "$j"
echo "   (Redis at the end: oversold $(jq .oversold <<< "$j"), sold + remaining = stock: $(jq .invariant_ok <<< "$j"); v8 may also write a grant of the old master's on the new one)"
j=$(partition_json sentinel-partition-wait)
echo "   $(jq -r .observed <<< "$j")"
check_eq "sentinel-partition-wait v8 (--replicas 2): no flaw" false "$(jq .flaw <<< "$j")"
check "  history possible, nothing acknowledged lost, nothing sold twice" \
    grep -Eq 'history possible; acknowledged sales lost 0; sold twice 0' <<< "$j"
check "  the minority's sales more than 1 s into the cut: none answered 200" \
    grep -Eq 'on the old master during the cut \(0 of them more than 1 s into it\)' <<< "$j"
check "  the majority sold on the promoted replica in the end" \
    grep -Eq 'the majority promoted 198\.18\.0\.3 [0-9]+ ms after the cut, B.s first sale [0-9]+ ms after that' <<< "$j"
check "  Redis at the end: sold + remaining = stock, nothing oversold" jq -e '.invariant_ok and .oversold == 0' <<< "$j"
t_report
