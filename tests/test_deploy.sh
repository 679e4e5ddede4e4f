#!/usr/bin/env bash
# test_deploy.sh - deploy/up, status, stock and down on free loopback ports: sales through
# nginx reach both instances, a second up restarts cleanly with the data kept (AOF), down
# leaves no process behind, and a taken port, a missing binary or a failed start leave
# nothing running; deploy/up --sentinel (a master, two replicas, three sentinels) sells
# through nginx and comes down whole.
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh

RUN=$T_TMP/run
RUN4=$T_TMP/run4
# The port reservations below: twice 22,769 of them (a directory and a file each), in
# memory where /dev/shm is (on disk they took 5.4 s of the kernel's time a fill, in
# memory 2 s).
RES=$(mktemp -d /dev/shm/invtest-ports.XXXXXX 2>/dev/null) || RES=$T_TMP/ports
trap 'deploy/down --run-dir "$RUN" --quiet >/dev/null 2>&1; deploy/down --run-dir "$RUN4" --quiet >/dev/null 2>&1; rm -rf "$RES"; t_cleanup' EXIT

# procs_with STRING: pids of live processes whose command line contains STRING.
procs_with() {
    local d args
    for d in /proc/[0-9]*; do
        mapfile -d '' args 2>/dev/null < "$d/cmdline" || continue
        case "${args[*]} " in *"$1"*) running "${d#/proc/}" && echo "${d#/proc/}" ;; esac
    done
    true
}
# stack_pids [DIR]: every pid the stack in DIR (default $RUN) recorded, and nginx's workers.
stack_pids() {
    local f master dir=${1:-$RUN}
    for f in "$dir"/*.pid; do [ -f "$f" ] && head -n 1 "$f"; done
    master=$(head -n 1 "$dir/nginx.pid" 2>/dev/null) && ps -o pid= --ppid "$master" 2>/dev/null
    true
}
# nothing_on PORT...: no live process of ours listens on any of these ports.
nothing_on() {
    local p
    for p in "$@"; do
        [ -z "$(procs_with "--port $p ")" ] && [ -z "$(procs_with "127.0.0.1:$p ")" ] || return 1
    done
    [ -z "$(procs_with "$RUN/nginx")" ]
}

# --- port reservations: held while their owner lives ------------------------------------
# reserved_by DIR PORT: the owner pid recorded for PORT in the reservation directory DIR.
reserved_by() { cat "$1/$2/owner" 2>/dev/null; }
mkdir -p "$RES"
sleep 60 & HOLDER=$!
( PORT_RESERVE_DIR=$RES PORT_OWNER=$HOLDER port_reserve 20001 )
check_eq "port_reserve records its owner" "$HOLDER" "$(reserved_by "$RES" 20001)"
check "a port whose owner lives is not reserved again" \
    bash -c '. deploy/lib.sh; PORT_RESERVE_DIR=$1; ! port_reserve 20001' _ "$RES"
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null
check "a port whose owner is gone is taken over" \
    bash -c '. deploy/lib.sh; PORT_RESERVE_DIR=$1; port_reserve 20001 && [ "$(cat "$1/20001/owner")" = $$ ]' _ "$RES"
mkdir "$RES/20002"
check "a reservation without an owner yet holds" \
    bash -c '. deploy/lib.sh; PORT_RESERVE_DIR=$1; ! port_reserve 20002' _ "$RES"
touch -d '2 hours ago' "$RES/20002"
check "one without an owner an hour old is taken over" \
    bash -c '. deploy/lib.sh; PORT_RESERVE_DIR=$1; port_reserve 20002' _ "$RES"
# Every port a cluster draw may take (10000 up to the ephemeral range) reserved by a dead
# owner, as a long test run used to leave them for an hour: a draw still finds a span.
sleep 0 & DEAD=$!; wait "$DEAD"
lo=32768; read -r lo _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
mkdir -p "$RES/full"
(cd "$RES/full" && seq 10000 "$lo" | xargs mkdir -p && for d in $(seq 10000 "$lo"); do echo "$DEAD" > "$d/owner"; done)
check "a cluster's span is drawn among reservations whose owners are gone" \
    bash -c '. deploy/lib.sh; PORT_RESERVE_DIR=$1; p=$(free_port 10000 12) && [ "$(cat "$1/$p/owner")" = $$ ]' _ "$RES/full"
# A process never draws a port it drew before (a stack's ports are all drawn before its
# servers start: one drawn twice went to two of them): with every port reserved by the
# drawing process already, free_port finds none.
sleep 60 & ME=$!
mkdir -p "$RES/mine"
(cd "$RES/mine" && seq 10000 "$lo" | xargs mkdir -p && for d in $(seq 10000 "$lo"); do echo "$ME" > "$d/owner"; done)
check "a port this process drew before is not drawn again (every port drawn: none left)" \
    bash -c '. deploy/lib.sh; PORT_RESERVE_DIR=$1 PORT_OWNER=$2; ! free_port' _ "$RES/mine" "$ME"
kill "$ME"; wait "$ME" 2>/dev/null
rm -rf "$RES"

NGINX_P=$(free_port); REDIS_P=$(free_port); A=$(free_port); B=$(free_port)
# dep_up ARG...: deploy/up on this test's ports (RUN, NGINX_P, REDIS_P, A and B), ARGs added.
dep_up() { deploy/up --run-dir "$RUN" --port "$NGINX_P" --redis-port "$REDIS_P" --instance-ports "$A,$B" "$@"; }
# dep_cli ARG...: redis-cli to the stack's Redis, with the password deploy/up set (in run/).
dep_cli() { REDIS_PORT=$REDIS_P REDIS_PASSWORD_FILE=${PW_FILE:-$RUN/redis.pass} rcli "$@"; }

# --- up, sales through nginx --------------------------------------------------------------
check "up: a 2-instance v8 stack comes up" dep_up --lock v8
check "status: everything runs" deploy/status --run-dir "$RUN"
check "stock: sets 10" deploy/stock 10 --item dep --run-dir "$RUN"
names="" codes=""
for _ in 1 2 3 4 5 6; do
    codes="$codes $(curl -s -o "$T_TMP/sale.json" -w '%{http_code}' "http://127.0.0.1:$NGINX_P/inventory/sale?item=dep")"
    names="$names $(json_field instance "$T_TMP/sale.json")"
done
check_eq "six sales through nginx answer 200" " 200 200 200 200 200 200" "$codes"
check_eq "both instances answer (round robin)" 2 "$(echo $names | tr ' ' '\n' | sort -u | wc -l)"
check_eq "stock and sold after six sales" '{"item":"dep","stock":4,"sold":6}' \
    "$(curl -s "http://127.0.0.1:$NGINX_P/inventory?item=dep")"
check_eq "nginx talks to the instances on 127.0.0.1" "" \
    "$(grep -E '^ *(listen|server) +[^ {]+;' "$RUN/nginx.conf" | grep -v ' 127\.0\.0\.1:' || true)"
check "nginx: no retry of a sale on another instance" grep -q 'proxy_next_upstream off;' "$RUN/nginx.conf"
check "nginx: upstream keepalive" grep -q 'keepalive [0-9]' "$RUN/nginx.conf"

# --- the password deploy/up sets on its Redis ------------------------------------------------
check_eq "the password file and redis.conf: mode 600" "600 600" \
    "$(stat -c %a "$RUN/redis.pass" "$RUN/redis.conf" | tr '\n' ' ' | sed 's/ $//')"
check "Redis refuses a client without the password" \
    sh -c "redis-cli -p $REDIS_P get '$(item_key stock dep)' 2>&1 | grep -q NOAUTH"
check_eq "with it (rcli, REDISCLI_AUTH): the stock" 4 "$(dep_cli get "$(item_key stock dep)")"
pw=$(cat "$RUN/redis.pass")
leaks=""
for pid in $(stack_pids); do
    tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$pw" && leaks="$leaks $pid"
done
check_eq "the password is in no process's argv" "" "$leaks"
check "the password is in no log or pid file" sh -c "! grep -rqF -- '$pw' '$RUN'/*.log '$RUN'/*.pid '$RUN'/stack.env"
check "the instances got it by file" grep -q -- "--redis-password-file $RUN/redis.pass" \
    <(for p in $(stack_pids); do tr '\0' ' ' < "/proc/$p/cmdline"; echo; done)

# --- a second up restarts cleanly and keeps the data --------------------------------------
old=$(stack_pids)
check "up again (--fsync always): restarts" dep_up --lock v8 --fsync always
check "the first stack's processes are gone" none_running $old
check "status: everything runs after the restart" deploy/status --run-dir "$RUN"
check_eq "Redis kept the stock over the restart (AOF)" "4 6" \
    "$(dep_cli mget "$(item_key stock dep)" "$(item_key sold dep)" | tr '\n' ' ' | sed 's/ $//')"
check_eq "--fsync always reaches Redis" "always" \
    "$(dep_cli config get appendfsync | tail -n 1)"
check_eq "the ledger kept its six entries" 6 "$(dep_cli xlen "$(item_key orders dep)")"
check "stock: resets sold and the ledger" deploy/stock 3 --item dep --run-dir "$RUN"
check_eq "after deploy/stock 3" "3 0 0" \
    "$(dep_cli mget "$(item_key stock dep)" "$(item_key sold dep)" | tr '\n' ' ')$(dep_cli xlen "$(item_key orders dep)")"

# --- down ---------------------------------------------------------------------------------
pids=$(stack_pids)
check_eq "the stack has redis, 2 instances, nginx and its worker" 5 "$(echo $pids | wc -w)"
check "down: stops the stack" deploy/down --run-dir "$RUN"
check "down: every pid is gone" none_running $pids
check "down: no process left on the stack's ports" nothing_on "$NGINX_P" "$REDIS_P" "$A" "$B"
check "down: no pid file left" test -z "$(ls "$RUN"/*.pid 2>/dev/null)"
check "status after down: nothing runs (exit 1)" test "$(deploy/status --run-dir "$RUN" >/dev/null; echo $?)" = 1
check "down twice: nothing to do, exit 0" deploy/down --run-dir "$RUN"

# --- a stale pid file never kills a stranger ----------------------------------------------
sleep 30 & stranger=$!
printf '%s\ninventory-service\n--port %s \n' "$stranger" "$A" > "$RUN/instance-$A.pid"
deploy/down --run-dir "$RUN" >/dev/null 2>&1
check "down: a stale pid file naming another program leaves it alone" running "$stranger"
kill "$stranger"; wait "$stranger" 2>/dev/null

# --- failures leave nothing running ---------------------------------------------------------
start_redis || exit 1          # a stranger on a port: the throwaway Redis of lib.sh
out=$(dep_up --lock v8 --port "$REDIS_PORT" 2>&1); rc=$?
echo "$out" | sed 's/^/    /'
check_eq "a taken nginx port: exit 3" 3 "$rc"
check "a taken nginx port: the message names the port" grep -q "port $REDIS_PORT .*taken" <<<"$out"
check "a taken nginx port: nothing running" nothing_on "$REDIS_P" "$A" "$B"

out=$(deploy/up --run-dir "$RUN" --port "$NGINX_P" --redis-port "$REDIS_P" \
          --instance-ports "$A,$REDIS_PORT" 2>&1); rc=$?
check_eq "a taken instance port: exit 3" 3 "$rc"
check "a taken instance port: nothing running" nothing_on "$NGINX_P" "$REDIS_P" "$A"

out=$(SERVICE_BIN=$T_TMP/no-such-binary dep_up 2>&1); rc=$?
echo "$out" | sed 's/^/    /'
check_eq "a missing binary: exit 1" 1 "$rc"
check "a missing binary: the message says to run make" grep -q "run make" <<<"$out"
check "a missing binary: nothing running" nothing_on "$NGINX_P" "$REDIS_P" "$A" "$B"

out=$(dep_up --lock no-such-version 2>&1); rc=$?
echo "$out" | sed 's/^/    /'
check_eq "an instance that fails to start: exit 1" 1 "$rc"
check "an instance that fails to start: its log is shown" grep -q "unknown lock version" <<<"$out"
check "an instance that fails to start: Redis stopped again, nothing running" \
    nothing_on "$NGINX_P" "$REDIS_P" "$A" "$B"
check "an instance that fails to start: no pid file left" test -z "$(ls "$RUN"/*.pid 2>/dev/null)"

# --- the multi-host recipe, on one host: Redis alone, instances alone, nginx in front ----------
RUN2=$T_TMP/run2 RUN3=$T_TMP/run3
check "up --instances 0 --no-nginx: only a Redis" \
    deploy/up --run-dir "$RUN3" --instances 0 --no-nginx --redis-port "$REDIS_P"
out=$(deploy/up --run-dir "$RUN2" --no-nginx --redis "127.0.0.1:$REDIS_P" --instance-ports "$B" 2>&1)
check "up --redis without its password: refused, and says how to give it" \
    grep -q -- "--redis-password-file" <<<"$out"
check "up --no-nginx --redis: instances only, on that Redis (its password by file)" \
    deploy/up --run-dir "$RUN2" --no-nginx --redis "127.0.0.1:$REDIS_P" --instance-ports "$B" \
        --lock v8 --name-prefix hostb --redis-password-file "$RUN3/redis.pass"
check "up --instances 0 --upstream: nginx in front of the other \"host's\" instance" \
    deploy/up --run-dir "$RUN" --port "$NGINX_P" --lock v8 --instances 0 \
        --redis "127.0.0.1:$REDIS_P" --upstream "127.0.0.1:$B" --redis-password-file "$RUN3/redis.pass"
check "stock: on the Redis-only stack" deploy/stock 5 --item multi --run-dir "$RUN3"
check_eq "a sale through nginx reaches the upstream instance" "hostb-$B" \
    "$(curl -s "http://127.0.0.1:$NGINX_P/inventory/sale?item=multi" | json_field instance)"
deploy/down --run-dir "$RUN" --quiet; deploy/down --run-dir "$RUN2" --quiet
check "the Redis of another stack is left running by down" env PW_FILE="$RUN3/redis.pass" bash -c ". deploy/lib.sh; REDIS_PORT=$REDIS_P REDIS_PASSWORD_FILE=\$PW_FILE rcli ping | grep -q PONG"
deploy/down --run-dir "$RUN3" --quiet
check "all three down: nothing running" nothing_on "$NGINX_P" "$REDIS_P" "$B"

# --- deploy/up --sentinel ---------------------------------------------------------------------
# Its replicas and sentinels take the five ports after --redis-port: another draw if one is taken.
for _ in 1 2 3; do
    SRP=$(free_port)
    deploy/up --run-dir "$RUN4" --sentinel --port "$NGINX_P" --redis-port "$SRP" \
        --instance-ports "$A,$B" --lock v8 > "$T_TMP/up4" 2>&1; rc=$?
    [ "$rc" = 3 ] || break
done
check_eq "up --sentinel: a master, two replicas, three sentinels, the instances and nginx" 0 "$rc"
[ "$rc" = 0 ] || sed 's/^/    /' "$T_TMP/up4"
check "  stock, through the sentinels' master" deploy/stock 5 --item sen --run-dir "$RUN4"
check_eq "  a sale through nginx" 200 \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGINX_P/inventory/sale?item=sen")"
deploy/status --run-dir "$RUN4" > "$T_TMP/status4"; rc=$?
check_eq "  status: everything runs" 0 "$rc"
check "  status names the master" grep -q "master now: 127.0.0.1:$SRP " "$T_TMP/status4"
check_eq "  status shows two replicas and three sentinels naming it" "2 3" \
    "$(grep -c '^  replica .*replica of 127.0.0.1:'"$SRP" "$T_TMP/status4") $(grep -c "names 127.0.0.1:$SRP master" "$T_TMP/status4")"
check "  the instances ask the sentinels, with their password by file" grep -q -- "--sentinel-password-file $RUN4/sentinel.pass" \
    <(for p in $(stack_pids "$RUN4"); do tr '\0' ' ' < "/proc/$p/cmdline"; echo; done)
check_eq "  the sentinels' password file and configuration: mode 600" "600 600" \
    "$(stat -c %a "$RUN4/sentinel.pass" "$RUN4/sentinel-$((SRP + 3))/sentinel.conf" | paste -sd' ' -)"
# After a failover, up again starts the master from the promoted replica's data.
kill -9 "$(head -n 1 "$RUN4/redis.pid")"
master_moved() { (. "$RUN4/stack.env"; at=$(current_master) && [ "${at##*:}" != "$SRP" ]); }
check "the master killed: the sentinels promote a replica" wait_until 20 "" master_moved
sold_one() { [ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$NGINX_P/inventory/sale?item=sen")" = 200 ]; }
check "  a sale through nginx, on the promoted replica" wait_until 10 "" sold_one
check "  up again: restarts" deploy/up --run-dir "$RUN4" --sentinel --port "$NGINX_P" --redis-port "$SRP" \
    --instance-ports "$A,$B" --lock v8
check_eq "  the master is back on its port with the promoted replica's data: stock 3, sold 2" \
    "127.0.0.1:$SRP 3 2" "$(. "$RUN4/stack.env"; echo "$(current_master) $(rcli mget "$(item_key stock sen)" "$(item_key sold sen)" | paste -sd' ' -)")"
# Instances on "another host", given those sentinels (--sentinels): no Redis started there.
RUN5=$T_TMP/run5 C=$(free_port)
SENTS=$(for p in $(seq $((SRP + 3)) $((SRP + 5))); do printf '127.0.0.1:%s,' "$p"; done); SENTS=${SENTS%,}
check "up --sentinels (sentinels elsewhere): instances only, no Redis of its own" \
    deploy/up --run-dir "$RUN5" --no-nginx --instance-ports "$C" --lock v8 --sentinels "$SENTS" \
        --sentinel-password-file "$RUN4/sentinel.pass" --redis-password-file "$RUN4/redis.pass"
check_eq "  a sale there, on the sentinels' master" "200 2" \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$C/inventory/sale?item=sen") $(. "$RUN4/stack.env"; item_get stock sen)"
check_eq "  one process (the instance), no pid file of a Redis or sentinel" "1 0" \
    "$(stack_pids "$RUN5" | wc -w) $(ls "$RUN5"/redis.pid "$RUN5"/sentinel-*.pid 2>/dev/null | wc -l)"
deploy/status --run-dir "$RUN5" > "$T_TMP/status5"
check "  status: the three sentinels, not ours, each naming the master" \
    test "$(grep -c "^  sentinel .*not ours .*names 127.0.0.1:$SRP master" "$T_TMP/status5")" = 3
deploy/down --run-dir "$RUN5" --quiet
pids=$(stack_pids "$RUN4")
check_eq "  neither password in any process's argv" "" \
    "$(for p in $pids; do tr '\0' ' ' < "/proc/$p/cmdline"; echo; done | grep -F -f "$RUN4/sentinel.pass" -f "$RUN4/redis.pass")"
check_eq "  10 processes: redis, 2 replicas, 3 sentinels, 2 instances, nginx and its worker" 10 "$(echo $pids | wc -w)"
check "down: stops it" deploy/down --run-dir "$RUN4" --quiet
check "  every pid is gone" none_running $pids
check "  nothing on its ports" nothing_on "$NGINX_P" "$A" "$B" $(seq "$SRP" $((SRP + 5)))

# --- deploy/up --cluster ----------------------------------------------------------------------
RUN6=$T_TMP/run6
out=$(deploy/up --run-dir "$RUN6" --cluster 2 --port "$NGINX_P" 2>&1); rc=$?
check_eq "up --cluster 2: refused (redis-cli --cluster create wants 3 masters)" 2 "$rc"
check "  saying why" sh -c "echo '$out' | grep -q 'at least 3 masters'"
out=$(deploy/up --run-dir "$RUN6" --cluster 3 --sentinel --port "$NGINX_P" 2>&1); rc=$?
check_eq "up --cluster with --sentinel: refused" 2 "$rc"
# Its nodes take the six ports from --redis-port (and each port + 10000): another draw if taken.
for _ in 1 2 3; do
    CRP=$(free_port 10000 6)
    deploy/up --run-dir "$RUN6" --cluster 3 --port "$NGINX_P" --redis-port "$CRP" \
        --instance-ports "$A,$B" --lock v8 > "$T_TMP/up6" 2>&1; rc=$?
    [ "$rc" = 3 ] || break
done
check_eq "up --cluster 3: six nodes, the instances and nginx" 0 "$rc"
[ "$rc" = 0 ] || sed 's/^/    /' "$T_TMP/up6"
c6() { REDIS_PASSWORD_FILE=$RUN6/redis.pass rcli -p "$@"; }
roles=$(for p in $(seq "$CRP" $((CRP + 5))); do c6 "$p" role | head -n 1; done | sort | uniq -c | awk '{ print $2 ":" $1 }' | paste -sd' ')
check_eq "  3 masters and 3 replicas" "master:3 slave:3" "$roles"
check "  every slot served, cluster_state ok (on every node)" sh -c "
    for p in \$(seq $CRP $((CRP + 5))); do
        REDISCLI_AUTH=\$(cat $RUN6/redis.pass) redis-cli -p \$p cluster info | tr -d '\\r' |
            grep -qx 'cluster_state:ok' || exit 1
    done; REDISCLI_AUTH=\$(cat $RUN6/redis.pass) redis-cli -p $CRP cluster info | tr -d '\\r' | grep -qx 'cluster_slots_ok:16384'"
check_eq "  AOF on every node" "yes yes yes yes yes yes" \
    "$(for p in $(seq "$CRP" $((CRP + 5))); do c6 "$p" config get appendonly | tail -n 1; done | paste -sd' ')"
check_eq "  a password on every node (NOAUTH without it)" NOAUTH \
    "$(redis-cli -p "$((CRP + 3))" get x 2>&1 | awk '{ print $1 }')"
check "  the instances' seeds are the masters (--redis-cluster)" sh -c "ps -o args= -p \$(head -n 1 $RUN6/instance-$A.pid) | grep -q -- '--redis-cluster 127.0.0.1:'"
check "  stock of 20 items" deploy/stock 7 --items 20 --run-dir "$RUN6"
vals=$(for i in $(seq -f %04g 1 20); do (. "$RUN6/stack.env"; rcli mget "$(item_key stock "item$i")" "$(item_key sold "item$i")" | paste -sd/); done | sort | uniq -c | awk '{ print $2 ":" $1 }')
check_eq "  each item stock 7, sold 0, read where its slot is" "7/0:20" "$vals"
spread=$(for i in $(seq -f %04g 1 20); do for p in $(seq "$CRP" $((CRP + 2))); do
    [ "$(c6 "$p" exists "$(item_key stock "item$i")")" = 1 ] && echo "$p"; done; done | sort -u | wc -l)
check "  on more than one master (by EXISTS on each)" test "$spread" -ge 2
codes=$(for i in 0003 0011 0019; do curl -s -o /dev/null -w '%{http_code} ' "http://127.0.0.1:$NGINX_P/inventory/sale?item=item$i"; done)
check_eq "  sales of three items through nginx" "200 200 200 " "$codes"
deploy/status --run-dir "$RUN6" > "$T_TMP/status6"; rc=$?
check_eq "  status: all up" 0 "$rc"
check "  status: six nodes, three masters with their slots" test "$(grep -c '^  node .*master, [0-9]* slots, cluster_state ok' "$T_TMP/status6")" = 3
check "  up again in the same directory: the cluster restarts from its nodes.conf and data" \
    deploy/up --run-dir "$RUN6" --cluster 3 --port "$NGINX_P" --redis-port "$CRP" \
        --instance-ports "$A,$B" --lock v8
check_eq "    the stock kept, where its slot is (item0003 sold one of 7)" 6 \
    "$(. "$RUN6/stack.env"; item_get stock item0003)"
pids=$(stack_pids "$RUN6")
check_eq "  10 processes: 6 nodes, 2 instances, nginx and its worker" 10 "$(echo $pids | wc -w)"
check "down: stops it" deploy/down --run-dir "$RUN6" --quiet
check "  every pid is gone" none_running $pids
check "  nothing on its ports" nothing_on "$NGINX_P" "$A" "$B" $(seq "$CRP" $((CRP + 5)))

t_report
