#!/usr/bin/env bash
# test_bench.sh - loadtest/bench --quick: every mode runs through nginx and sells
# correctly (nothing oversold, every 200 in the ledger); with MariaDB, three of its modes
# beside them (v15's row lock, v14's fenced lease with --combine on 1,000 items, the atomic
# sale) and build/db-ceiling's figures. It asserts no speed: timing goals live in the
# benchmark's own numbers, not in a test.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh
. deploy/up-mysql.sh   # mysql_check

out=$T_TMP/bench.json
quick=atomic,v8-poll,v8-notify,v8-notify-combine
DB_MODES=db-v15,db-v14-combine-1k,db-atomic
if why=$(mysql_check); then modes=$quick,$DB_MODES; else
    skip "the db-* modes (the atomic sale, v14 and v15 on MariaDB)" "$why"; modes=$quick; DB_MODES=""
fi
loadtest/bench --quick --modes "$modes" --out "$out" > "$T_TMP/bench.out" 2>&1; rc=$?
tail -n 15 "$T_TMP/bench.out"
check_eq "loadtest/bench --quick ran every mode" 0 "$rc"
check_eq "  every mode in bench.json" "$(echo "$modes" | tr ',' '\n' | sort | paste -sd' ' -)" \
    "$(jq -r '[.modes[].mode] | sort | join(" ")' "$out" 2>/dev/null)"
check_eq "  no mode oversold" 0 "$(jq '[.modes[] | select(.oversold != 0)] | length' "$out" 2>/dev/null)"
check_eq "  every 200 has its ledger entry, in every mode" true "$(jq '[.modes[].ledger_ok] | all' "$out" 2>/dev/null)"
check_eq "  every mode sold something" true "$(jq '[.rows[] | .ok > 0 and .sold >= .ok] | all' "$out" 2>/dev/null)"
check_eq "  atomic's ratio to itself is 1" 1 "$(jq '.modes[] | select(.mode == "atomic") | .ratio_to_atomic' "$out" 2>/dev/null)"
check "  it recorded the machine, Redis, nginx and wrk" \
    jq -e '.machine.cores > 0 and (.machine.redis | length) > 0 and (.machine.nginx | length) > 0 and (.machine.wrk | length) > 0' "$out"
check "  RSS of each instance was sampled" jq -e '[.rows[].rss_mb | length == 2] | all' "$out"
echo '{"rows":[{"lock":"v8","scenario":"load","oversold":0,"sales_per_s":5}]}' > "$T_TMP/evo.json"
build/evolution-report "$T_TMP/evo.json" "$T_TMP/page.html" "$out"
check "the report page takes bench.json: its section" grep -q "Speed under contention" "$T_TMP/page.html"
check_eq "  a bar per mode" "$(echo "$modes" | tr ',' '\n' | wc -l)" \
    "$(grep -o 'fill="#9467bd"' "$T_TMP/page.html" | wc -l)"
check "  and v8-notify-combine's row" grep -q "<td>v8-notify-combine</td>" "$T_TMP/page.html"
if [ -n "$DB_MODES" ]; then
    check "the db-* modes: a ratio to atomic's each, 1,000 items for -1k" jq -e '
        [.modes[] | select(.mode | startswith("db-"))
         | .ratio_to_atomic > 0 and .items == (if .mode | endswith("-1k") then 1000 else 0 end)]
        | length == 3 and all' "$out"
    check_eq "  their store the database (mysql), the others' Redis" "mysql mysql mysql redis" \
        "$(jq -r '[.modes[] | select(.mode | startswith("db-") or . == "atomic") | .store] | sort
                  | join(" ")' "$out")"
    check "  db-ceiling: 1 connection on its own row, 64 on their own rows, 64 on one row" jq -e '
        [.db_ceiling[] | "\(.connections) \(.rows)"] == ["1 own", "64 own", "64 one"]
        and ([.db_ceiling[] | .commits_per_s > 0 and .failed == 0] | all)' "$out"
    check "  printed under the table" grep -q "^MariaDB alone (build/db-ceiling" "$T_TMP/bench.out"
    check "  the server's version recorded" jq -e '.machine.mariadb | test("^[0-9]+[.]")' "$out"
fi
loadtest/bench --modes nonsense > /dev/null 2>&1; rc=$?
check_eq "an unknown mode: bad usage" 2 "$rc"
loadtest/bench --modes wx-atomic > /dev/null 2>&1; rc=$?
check_eq "a workers mode without a number (wx-atomic): bad usage" 2 "$rc"
check "nothing left running (instances, nginx, Redis, mariadbd)" \
    test -z "$(pgrep -f 'bench\.[A-Za-z0-9]+/' || true)"

# loadtest/profile: one stack, where the time goes (its figures are the machine's; only
# that they are there and sane is checked).
prof=$T_TMP/profile
loadtest/profile -d 3 -c 10 --items 20 --out "$prof" -- --lock v8 --wait notify --combine 8 \
    --workers 3 --data-replicas 1 > "$T_TMP/profile.out" 2>&1 & PROF_PID=$!
workers_seen=""
for _ in $(seq 100); do   # deploy/up passes --workers to the instances
    pgrep -f "inventory-service .*--workers 3 .*$prof/" >/dev/null && { workers_seen=yes; break; }
    sleep 0.1
done
wait "$PROF_PID"; rc=$?
cat "$T_TMP/profile.out"
check_eq "loadtest/profile ran" 0 "$rc"
check_eq "  deploy/up --workers 3 reached the instances" yes "$workers_seen"
check "  one master, one replica" grep -q "; 1 master(s), 1 replica(s); items 20" "$T_TMP/profile.out"
check "  sales/s above 0" awk '$1 == "sales/s" && $2 > 0 { ok = 1 } END { exit !ok }' "$T_TMP/profile.out"
check "  the masters' commands per sale: at least 2 (acquire and write)" \
    awk '/commands per sale/ && $NF >= 2 { ok = 1 } END { exit !ok }' "$T_TMP/profile.out"
check_eq "  CPU per sale of the four groups, each above 0" 4 \
    "$(grep -cE '^(redis masters|redis replicas|instances|nginx) +[1-9][0-9]* us CPU per sale' "$T_TMP/profile.out")"
check "  its stack taken down" test -z "$(pgrep -f "$prof/" || true)"
loadtest/profile --items ten > /dev/null 2>&1; rc=$?
check_eq "loadtest/profile --items ten: bad usage" 2 "$rc"
# loadtest/redis-ratio: Redis alone, one master against a cluster (figures the machine's:
# only that they are there is checked), its servers stopped by pid.
loadtest/redis-ratio --runs 2:1,2:2 -n 2000 --rounds 2 > "$T_TMP/ratio.out" 2>&1; rc=$?
cat "$T_TMP/ratio.out"
check_eq "loadtest/redis-ratio ran" 0 "$rc"
check_eq "  a row per run, each with its ratio and the rounds'" 2 \
    "$(grep -cE '^[0-9]+ +[0-9]+ +[1-9][0-9]* +[1-9][0-9]* +[0-9]+\.[0-9]{2}  [0-9]+\.[0-9]{2},[0-9]+\.[0-9]{2}$' "$T_TMP/ratio.out")"
ports=$(sed -n '2s/[^:]*:\([0-9]*\)[^:]*/\1 /gp' "$T_TMP/ratio.out")
check_eq "  eight servers named" 8 "$(echo $ports | wc -w)"
check "  its servers stopped" sh -c "! pgrep -f 'redis-server 127.0.0.1:($(echo $ports | tr ' ' '|'))( |\$)'"
loadtest/redis-ratio --runs 8 > /dev/null 2>&1; rc=$?
check_eq "loadtest/redis-ratio --runs 8 (no pipeline depth): bad usage" 2 "$rc"
t_report
