# lib.sh - shell helpers shared by deploy/, loadtest/ and the tests. Source it; it defines
# functions (and DEPLOY_DIR, where it is; PROG, the name the sourcing script goes by).

DEPLOY_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# The service's defaults, for the scripts that speak of them: the item a request that
# names none is about (common/item.h ITEM_DEFAULT) and the lease of a lock given none
# (lock/lock.h LOCK_TTL_DEFAULT_MS); tests/test_structure.sh holds them equal.
ITEM_DEFAULT=inventory001
TTL_DEFAULT_MS=30000

# --- a script's messages, usage and checks of its arguments ------------------------------
# PROG: the script as its messages name it, its folder and its file (deploy/up, loadtest/run).
case $0 in */*) PROG=${0%/*}; PROG=${PROG##*/}/${0##*/} ;; *) PROG=$0 ;; esac
# die MESSAGE...: says it on stderr after PROG's name; exit 1.
die() { echo "$PROG: $*" >&2; exit 1; }
# bad_usage MESSAGE...: the same, and where the usage is; exit 2.
bad_usage() { echo "$PROG: $*" >&2; echo "try $PROG --help" >&2; exit 2; }
# say MESSAGE...: a line on stderr, unless QUIET is 1.
say() { [ "${QUIET:-0}" = 1 ] || echo "$*" >&2; }
# usage [STATUS]: the script's usage text (USAGE, which it sets) on stdout; with STATUS,
# exits with it.
usage() { printf '%s\n' "$USAGE"; [ -z "${1:-}" ] || exit "$1"; }
# is_uint S, is_port S: S is a whole number; a port number (1 to 65535).
is_uint() { case $1 in ''|*[!0-9]*) return 1 ;; *) return 0 ;; esac; }
is_port() { is_uint "$1" && [ "$1" -ge 1 ] && [ "$1" -le 65535 ]; }
# PYTHON: Debian's python3 (deploy/install-deps installs it, with python3-kazoo) where it
# is, whatever comes first in PATH: a pyenv shim there took 2 s a call on two busy cores
# (0.2 s for /usr/bin/python3), and a virtualenv's lacks Debian's modules. The project's
# Python tools name /usr/bin/python3 in their first line for the same reason.
if [ -x /usr/bin/python3 ]; then PYTHON=/usr/bin/python3; else PYTHON=python3; fi
# now_ms: the wall clock in ms, read by the shell itself (EPOCHREALTIME, whatever the
# locale's decimal point). Polls and timelines read it many times a second, and on two
# busy cores a process per read (date) cost more than what it timed.
now_ms() { echo $(( ${EPOCHREALTIME//[!0-9]/} / 1000 )); }
# nap SECONDS: sleeps SECONDS (whole or decimal) without starting a process: read's
# time-out on a pipe this shell holds both ends of, so that nothing ever comes (opened
# once per script; its subshells share it).
nap() {
    [ -n "${NAP_FD:-}" ] || exec {NAP_FD}<> <(:)
    read -r -t "$1" -u "$NAP_FD" _ || :
}
# mono_offset_ns: realtime minus monotonic, in ns, on this host: date +%s%N minus it is
# CLOCK_MONOTONIC (build/sale-load's histories' clock). mono_start: measures it once
# (MONO_OFFSET); mono_now_ns: the monotonic clock now, in ns, without a process per read.
mono_offset_ns() { "$PYTHON" -c 'import time; print(time.time_ns() - time.monotonic_ns())'; }
mono_start() { MONO_OFFSET=$(mono_offset_ns); }
mono_now_ns() { echo $(( ${EPOCHREALTIME//[!0-9]/} * 1000 - MONO_OFFSET )); }

# in_net CMD...: CMD here, or in the test host HOSTS_VIA when it is set (deploy/hosts: a
# stack on test hosts is reached from one of them; this machine has no route to them).
in_net() {
    if [ -n "${HOSTS_VIA:-}" ]; then "$DEPLOY_DIR/hosts" run "$HOSTS_VIA" "$@"; else "$@"; fi
}
# at_host ADDR DEFAULT_HOST: "HOST PORT" of ADDR, a port (on DEFAULT_HOST) or HOST:PORT.
at_host() { case $1 in *:*) echo "${1%:*} ${1##*:}" ;; *) echo "$2 $1" ;; esac; }
# local_host ADDR: the address to reach a listener bound to ADDR from this host.
local_host() { [ "$1" = 0.0.0.0 ] && echo 127.0.0.1 || echo "$1"; }

# free_port [ROOM [SPAN]]: prints a TCP port P such that nobody listens on P..P+SPAN-1
# (SPAN: 1), nor, with ROOM, on P+ROOM..P+ROOM+SPAN-1 (a cluster node's bus port is its
# port + 10000), on 127.0.0.1. Drawn below the kernel's ephemeral range
# (ip_local_port_range), where outgoing connections take their ports.
# Every port it names is also reserved for as long as the process that drew it lives
# (port_reserve): stacks that come up side by side (loadtest/evolution --jobs) never draw
# the same port between the look and the bind, nor a port whose server is down for a
# moment (a Redis killed and started again on it, a failover's old master).
PORT_RESERVE_DIR=${PORT_RESERVE_DIR:-${TMPDIR:-/tmp}/inventory-ports}
# port_listens PORT: something accepts connections on 127.0.0.1:PORT (asked by the shell
# itself: no process started).
port_listens() {
    local fd
    { exec {fd}<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || return 1
    exec {fd}>&-
}
free_port() {
    local p lo=32768 room=${1:-0} span=${2:-1} all q i
    read -r lo _ < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || true
    [ "$lo" -gt $((12000 + room + span)) ] || lo=32768
    [ -d "$PORT_RESERVE_DIR" ] || mkdir -p "$PORT_RESERVE_DIR" 2>/dev/null
    # (In the shell itself, no process started but port_reserve's mkdir: a stack draws a
    # dozen ports, and on two busy cores each process costs tens of ms.)
    for ((i = 0; i < 100; i++)); do
        p=$(( 10000 + (RANDOM * 32768 + RANDOM) % (lo - room - span - 10000 + 1) ))
        all=""
        for ((q = p; q < p + span; q++)); do all+=" $q"; done
        [ "$room" = 0 ] || for ((q = p + room; q < p + room + span; q++)); do all+=" $q"; done
        for q in $all; do
            ! port_listens "$q" || continue 2
            ! port_drawn "$q" || continue 2
        done
        for q in $all; do port_reserve "$q" || continue 2; done
        echo "$p"
        return 0
    done
    return 1
}
# nginx_connections C: nginx's worker_connections for a load of C client connections (each
# also takes one to an instance), at least 1024; for deploy/up's NGINX_CONNECTIONS.
nginx_connections() { echo $(( $1 * 2 + 64 > 1024 ? $1 * 2 + 64 : 1024 )); }
# stack_up ERR_FILE INSTANCES DEPLOY_UP_ARG...: deploy/up on ports drawn (and reserved)
# here: nginx's (STACK_NGINX_PORT when set), a span of 12 from the Redis port for what
# deploy/up lays out after it (redlock's masters, the replicas, the sentinels; with
# --cluster N, its 2N nodes, each with its bus port + 10000; with --zookeeper N, the
# ensemble's 3N ports instead of any Redis: --zk-port; with --mysql, the database
# server's port instead: --mysql-port), and one per instance.
# Another run may take a port between the look and the bind (deploy/up's exit 3): then
# other ports, three tries in all. deploy/up's stderr goes to ERR_FILE, its stdout is
# the caller's. Returns deploy/up's exit code.
stack_up() {
    local err=$1 n=$2 a prev="" span=12 room=0 nginx redis ports rc=0 at=--redis-port; shift 2
    for a in "$@"; do
        [ "$prev" != --cluster ] || { room=10000; [ $((2 * a)) -le "$span" ] || span=$((2 * a)); }
        [ "$prev" != --zookeeper ] || { at=--zk-port; ! is_uint "$a" || [ $((3 * a)) -le "$span" ] || span=$((3 * a)); }
        [ "$a" != --mysql ] || { at=--mysql-port; span=1; }
        prev=$a
    done
    for _ in 1 2 3; do
        nginx=${STACK_NGINX_PORT:-$(free_port)} && redis=$(free_port "$room" "$span") || nginx=""
        ports=""
        for _ in $(seq "$n"); do
            a=$(free_port) || { nginx=""; break; }
            ports=$ports${ports:+,}$a
        done
        [ -n "$nginx" ] || { echo "stack_up: no free port left to draw" > "$err"; return 1; }
        rc=0
        "$DEPLOY_DIR/up" "$@" --port "$nginx" "$at" "$redis" --instance-ports "$ports" \
            2> "$err" || rc=$?
        [ "$rc" = 3 ] || break
    done
    return "$rc"
}
# port_drawn PORT: this process (PORT_OWNER) reserved PORT already: a port it drew before,
# whose server may not listen yet (a stack's ports are drawn before any starts: drawn twice,
# two of its servers got one port, and the second did not start).
port_drawn() {
    local owner=""
    read -r owner 2>/dev/null < "$PORT_RESERVE_DIR/$1/owner"
    [ "$owner" = "${PORT_OWNER:-$$}" ]
}
# port_reserve PORT: reserves PORT for the process PORT_OWNER (default $$: the script
# that sourced this file, also inside $(...)): a directory in PORT_RESERVE_DIR made by
# mkdir (one caller wins), with the owner's pid in it. 1 when another owner holds it: a
# live one, or one still writing its pid (a directory younger than a minute without
# one). An owner gone, or a directory an hour old without a pid, is taken over: one
# test run's reservations end with it, and a long run no longer runs out of ports.
# Without a reservation directory, every port is free.
port_reserve() {
    local d=$PORT_RESERVE_DIR/$1 me=${PORT_OWNER:-$$} owner=""
    [ -d "$PORT_RESERVE_DIR" ] || return 0
    if ! mkdir "$d" 2>/dev/null; then
        read -r owner 2>/dev/null < "$d/owner" || true
        case $owner in
            "$me") return 0 ;;
            ''|*[!0-9]*) [ -n "$(find "$d" -maxdepth 0 -mmin +60 2>/dev/null)" ] || return 1 ;;
            *) [ ! -d "/proc/$owner" ] || return 1 ;;
        esac
    fi
    echo "$me" > "$d/owner" 2>/dev/null || true
}

# is_ours PID PATTERN...: the process lives and its command line contains every PATTERN
# (a pid file's pid is trusted only then: a stale one may now belong to a stranger).
is_ours() {
    local pid=$1 cmd pat; shift
    case $pid in ''|*[!0-9]*) return 1 ;; esac
    cmd=$(tr '\0' ' ' 2>/dev/null < "/proc/$pid/cmdline") || return 1
    [ -n "$cmd" ] || return 1            # a zombie: already gone
    cmd="$cmd "
    for pat in "$@"; do
        case $cmd in *"$pat"*) ;; *) return 1 ;; esac
    done
}

# pid_gone PID: no process PID runs: none, or a zombie (its command line empties before
# that, while it exits: is_ours is false then, but it still holds its ports and files).
pid_gone() {
    local stat
    IFS= read -r stat 2>/dev/null < "/proc/$1/stat" || return 0
    stat=${stat##*) }
    case ${stat%% *} in Z|X) return 0 ;; *) return 1 ;; esac
}

# wait_until SECONDS PID COMMAND...: polls COMMAND every 20 ms until it succeeds; fails
# when SECONDS (whole or decimal) pass or the process PID (if not empty) has exited. The
# poll itself starts no process (the clock and the sleep are the shell's): only COMMAND's.
wait_until() {
    local whole=${1%%.*} frac="" end pid=$2
    [[ $1 != *.* ]] || frac=${1#*.}
    frac=${frac}000000
    end=$(( ${EPOCHREALTIME//[!0-9]/} + ${whole:-0} * 1000000 + 10#${frac:0:6} )); shift 2
    until "$@" >/dev/null 2>&1; do
        [ -z "$pid" ] || kill -0 "$pid" 2>/dev/null || return 1
        [ "${EPOCHREALTIME//[!0-9]/}" -lt "$end" ] || return 1
        nap 0.02
    done
}

# metrics_all: the /metrics of every instance of stack.env (INSTANCE_PORTS: ports on
# INSTANCE_HOST, or HOST:PORT) that answers, one after another.
metrics_all() {
    local p
    for p in $INSTANCE_PORTS; do
        set -- $(at_host "$p" "${INSTANCE_HOST:-127.0.0.1}")
        in_net curl -s -m 2 "http://$1:$2/metrics" 2>/dev/null || true
    done
}
# metric_sum NAME: NAME summed over the instances that answer /metrics; prints nothing
# when none answers. With METRICS_READ set (a file of metrics_all's), read from there:
# a run's figures, once nothing is in flight, from one read of each instance.
metric_sum() {
    { if [ -n "${METRICS_READ:-}" ]; then cat "$METRICS_READ"; else metrics_all; fi; } |
        awk -v m="$1" '$1 == m { n += $2; seen = 1 } END { if (seen) print n }'
}

# fit_lines WIDTH [FILE...]: each line of FILE (or stdin) cut to at most WIDTH characters,
# at a word boundary when there is one (a line a terminal of WIDTH columns shows whole).
fit_lines() {
    local w=$1; shift
    awk -v w="$w" 'length($0) > w {
        s = substr($0, 1, w + 1)
        if (!sub(/ +[^ ]*$/, "", s) || s == "") s = substr($0, 1, w)
        sub(/[ ,;:(]+$/, "", s)
        $0 = s
    } { print }' "$@"
}

# json_field KEY [FILE...]: KEY of each JSON object in FILE (or on stdin), one line each: a
# string as it is, any other value as JSON (a number, true, false, null); nothing for an
# object without KEY.
json_field() {
    local k=$1; shift
    jq -r --arg k "$k" 'select(has($k)) | .[$k]' "$@"
}

# rcli [-p PORT | -s SOCKET] ARG...: redis-cli to the stack's Redis, or to another server
# of the stack on PORT (on REDIS_HOST; or HOST:PORT) or on the unix socket SOCKET. The stack's Redis is
# its master now: with sentinels (SENTINEL_PORTS), the one they name and that says it is
# a master (current_master; rcli fails, saying so, while there is none, as during a
# failover); on a cluster (CLUSTER_PORTS), a node that answers, redirects followed
# (redis-cli -c: an item's keys are read where its slot is); else REDIS_HOST (default
# 127.0.0.1) and REDIS_PORT. When REDIS_PASSWORD_FILE
# names a file (stack.env does for a Redis deploy/up started), the password, its first
# line, goes to redis-cli through REDISCLI_AUTH: never in argv.
rcli() {
    local to=(-h "${REDIS_HOST:-127.0.0.1}" -p "${REDIS_PORT:-6379}") at
    case ${1:-} in
    -p) set -- $(at_host "$2" "${REDIS_HOST:-127.0.0.1}") "${@:3}"
        to=(-h "$1" -p "$2"); shift 2 ;;
    -s) to=(-s "$2"); shift 2 ;;
    *)  if [ -n "${SENTINEL_PORTS:-}" ]; then
            at=$(current_master) ||
                { echo "rcli: no server the sentinels name is a master now (a failover?)" >&2; return 1; }
            to=(-h "${at%:*}" -p "${at##*:}")
        elif [ -n "${CLUSTER_PORTS:-}" ]; then
            at=$(cluster_node) || { echo "rcli: no node of the cluster answers" >&2; return 1; }
            set -- $(at_host "$at" "${REDIS_HOST:-127.0.0.1}") "$@"
            to=(-c -h "$1" -p "$2"); shift 2
        fi ;;
    esac
    if [ "${to[0]}" = -c ]; then
        # Following a redirect, redis-cli says so on stdout: not a reply, left out.
        rcli_to "${to[@]}" "$@" | grep -v '^-> Redirected to slot'
        return "${PIPESTATUS[0]}"
    fi
    rcli_to "${to[@]}" "$@"
}
# rcli_to ARG...: redis-cli with the stack's password (REDISCLI_AUTH, never argv).
rcli_to() {
    if [ -n "${REDIS_PASSWORD_FILE:-}" ]; then
        REDISCLI_AUTH=$(head -n 1 "$REDIS_PASSWORD_FILE") in_net redis-cli "$@"
    else
        in_net redis-cli "$@"
    fi
}

# cluster_node: the first node of CLUSTER_PORTS (a port on REDIS_HOST, or HOST:PORT) that
# answers PING.
cluster_node() {
    local p
    for p in $CLUSTER_PORTS; do
        redis_pings "$p" && { echo "$p"; return 0; }
    done
    return 1
}

# mark_log LOG: a line in LOG that starts this start's part of it ("--- PROG TIME").
mark_log() { echo "--- $PROG $(date -u +%Y-%m-%dT%H:%M:%SZ)" >> "$1"; }
# fail_with_log WHAT LOG: exits 1, saying WHAT did not start and showing LOG from its last
# mark_log on (at most 20 lines).
fail_with_log() {
    echo "$PROG: $1 did not start; from $2:" >&2
    awk '/^--- [^ ]+ [0-9-]+T[0-9:]+Z$/ { n = 0; next } { line[n++] = $0 }
         END { for (i = (n > 20 ? n - 20 : 0); i < n; i++) print "  " line[i] }' "$2" >&2 2>/dev/null || true
    exit 1
}

# redis_start PORT BIND FSYNC DIR LOG PIDFILE [ARG...]: starts redis-server in its own
# session (AOF with appendfsync FSYNC, or no AOF when FSYNC is off; no RDB but one a BGSAVE
# asks for; data in DIR, output appended to LOG) and
# writes PIDFILE: the pid, then the patterns deploy/down checks before a kill. Sets
# REDIS_STARTED_PID, and adds it to STARTED_PIDS (every server this shell started, for a
# caller that stops them by pid: the tests). The process title is "redis-server ADDR:PORT". When REDIS_CONF
# names a file (deploy/up writes one holding the password), it is the server's
# configuration file: the password never shows in argv. REDIS_LAUNCH (an array, may be
# unset) goes before the command: a test host's `deploy/hosts run H`, a clock faker; each
# execs the next, so the pid is still the server's.
redis_start() {
    local port=$1 bind=$2 fsync=$3 dir=$4 log=$5 pidfile=$6 aof; shift 6
    aof=(--appendonly yes --appendfsync "$fsync")
    [ "$fsync" != off ] || aof=(--appendonly no)
    mkdir -p "$dir"
    setsid ${REDIS_LAUNCH[@]+"${REDIS_LAUNCH[@]}"} "${REDIS_SERVER_BIN:-redis-server}" \
        ${REDIS_CONF:+"$REDIS_CONF"} --port "$port" --bind "$bind" \
        "${aof[@]}" --save '' --dir "$dir" \
        --daemonize no "$@" </dev/null >>"$log" 2>&1 &
    REDIS_STARTED_PID=$!
    STARTED_PIDS="${STARTED_PIDS:-} $REDIS_STARTED_PID"
    printf '%s\nredis-server\n:%s \n' "$REDIS_STARTED_PID" "$port" > "$pidfile"
}

# cluster_ok PORT: the cluster node on PORT says cluster_state:ok and knows every slot.
cluster_ok() {
    rcli -p "$1" cluster info 2>/dev/null | tr -d '\r' |
        awk -F: '$1 == "cluster_state" { s = $2 } $1 == "cluster_slots_ok" { n = $2 }
                 END { exit !(s == "ok" && n == 16384) }'
}
# cluster_linked PORT: the server on PORT is a master, or a replica whose link is up (a
# cluster node or not).
cluster_linked() {
    rcli -p "$1" info replication 2>/dev/null | tr -d '\r' |
        awk -F: '$1 == "role" { r = $2 } $1 == "master_link_status" { l = $2 }
                 END { exit !(r == "master" || l == "up") }'
}

# replica_acks HOST PORT [N]: true once a write on the master at HOST:PORT reaches N
# replicas (default 1) and is acknowledged within 100 ms (WAIT). "state=online" in INFO is
# not enough: after a full sync the master streams writes only from the replica's first
# acknowledgement.
replica_acks() {
    local n=${3:-1} acked
    acked=$(printf 'SET replica:probe 1\nDEL replica:probe\nWAIT %s 100\n' "$n" |
            REDIS_HOST=$1 rcli -p "$2" 2>/dev/null | tail -n 1)
    [ "${acked:-0}" -ge "$n" ] 2>/dev/null
}

# --- Sentinel (a stack from deploy/up --sentinel: SENTINEL_PORTS, SENTINEL_MASTER,
# SENTINEL_PASSWORD_FILE in stack.env) ---------------------------------------------------

# sentinel_cli PORT ARG...: redis-cli to the stack's sentinel on PORT (on REDIS_HOST; or
# HOST:PORT), with the sentinels' password (SENTINEL_PASSWORD_FILE's first line, through
# REDISCLI_AUTH).
sentinel_cli() {
    local at; at=($(at_host "$1" "${REDIS_HOST:-127.0.0.1}")); shift
    if [ -n "${SENTINEL_PASSWORD_FILE:-}" ]; then
        REDISCLI_AUTH=$(head -n 1 "$SENTINEL_PASSWORD_FILE") in_net redis-cli -h "${at[0]}" -p "${at[1]}" "$@"
    else
        in_net redis-cli -h "${at[0]}" -p "${at[1]}" "$@"
    fi
}

# sentinel_names PORT: HOST:PORT of the master the sentinel on PORT names for
# SENTINEL_MASTER now (SENTINEL get-master-addr-by-name); fails when it does not answer.
sentinel_names() {
    local a
    a=$(sentinel_cli "$1" sentinel get-master-addr-by-name "$SENTINEL_MASTER" 2>/dev/null | paste -sd: -)
    case $a in *:*[0-9]) echo "$a" ;; *) return 1 ;; esac
}

# role_of HOST:PORT: what the server says it is (ROLE's first word: master, slave), or
# nothing when it does not answer.
role_of() { rcli -p "$1" role 2>/dev/null | head -n 1; }

# current_master: HOST:PORT of the stack's master now. Without sentinels, REDIS_HOST and
# REDIS_PORT. With them, as the instances find it: the address a sentinel names (each of
# SENTINEL_PORTS in turn), once that server confirms it is a master (ROLE). Fails,
# printing nothing, when none does: the master is down and not yet replaced, or the
# sentinels name a server that is still a replica.
current_master() {
    local p at
    if [ -z "${SENTINEL_PORTS:-}" ]; then
        echo "${REDIS_HOST:-127.0.0.1}:${REDIS_PORT:-6379}"
        return 0
    fi
    for p in $SENTINEL_PORTS; do
        at=$(sentinel_names "$p") || continue
        [ "$(role_of "$at")" != master ] || { echo "$at"; return 0; }
    done
    return 1
}

# redis_pings [PORT | -s SOCKET]: true when the stack's Redis (or its server on PORT, or on
# the unix socket SOCKET) answers PONG.
redis_pings() {
    case ${1:-} in
    '') rcli ping ;;
    -s) rcli -s "$2" ping ;;
    *) rcli -p "$1" ping ;;
    esac 2>/dev/null | grep -q PONG
}

# --- an item's keys -----------------------------------------------------------------------
# Every key of item I carries the hash tag {I} (one cluster slot): stock:{I}, sold:{I},
# orders:{I} (the ledger), lock:{I}, fence:{I}, written:{I}, probe:{I} and overlaps:{I}
# (--faults), events:{I}, idem:{I}:K. Formatted here only; the service's C and Lua agree.

# item_key KIND ITEM...: the key KIND:{ITEM} of each ITEM, one a line.
item_key() {
    local kind=$1; shift
    [ $# -gt 0 ] || return 1
    printf "${kind//%/%%}:{%s}\n" "$@"
}
# item_get [-p PORT | -s SOCKET] KIND ITEM: the value of ITEM's KIND key (a string: stock,
# sold, fence, overlaps) on the stack's Redis, or on its server on PORT or SOCKET (rcli).
item_get() {
    local to=()
    case $1 in -p|-s) to=("$1" "$2"); shift 2 ;; esac
    rcli "${to[@]}" get "$(item_key "$1" "$2")"
}
# item_set [-p PORT | -s SOCKET] ITEM N: ITEM's stock set to N, nothing else (deploy/stock
# starts an item afresh); prints Redis's answer.
item_set() {
    local to=()
    case $1 in -p|-s) to=("$1" "$2"); shift 2 ;; esac
    rcli "${to[@]}" set "$(item_key stock "$1")" "$2"
}
# item_state [-p PORT | -s SOCKET] ITEM: "STOCK SOLD LEDGER" of ITEM (the ledger's length;
# an empty word for a key that is missing).
item_state() {
    local to=()
    case $1 in -p|-s) to=("$1" "$2"); shift 2 ;; esac
    echo "$(rcli "${to[@]}" get "$(item_key stock "$1")") $(rcli "${to[@]}" get "$(item_key sold "$1")")" \
         "$(rcli "${to[@]}" xlen "$(item_key orders "$1")")"
}
# item_reset_commands N ITEM...: the commands that start each ITEM afresh: stock N, sold 0,
# no ledger, lock or fault probe (the fencing token goes on growing).
item_reset_commands() {
    local n=$1; shift
    paste -d' ' <(item_key stock "$@") <(item_key sold "$@") <(item_key orders "$@") \
        <(item_key lock "$@") <(item_key probe "$@") <(item_key overlaps "$@") |
        awk -v n="$n" '{ print "SET " $1 " " n; print "SET " $2 " 0"; print "DEL " $3 " " $4 " " $5 " " $6 }'
}
# items_read K FILE: every item's "NAME STOCK SOLD LEDGER" of item0001..K into FILE, a line
# each, read in one pipeline (rcli: on a cluster, each where its slot is; on ZooKeeper,
# zk_admin --get-stock; in the database, db_admin --get-stock); the names in FILE.names.
# Fails when the store did not answer for every item.
items_read() {
    seq -f "item%04g" 1 "$1" > "$2.names"
    if [ -n "${MYSQL_CONNECT:-}" ] || [ -n "${ZK_CONNECT:-}" ]; then
        if [ -n "${MYSQL_CONNECT:-}" ]; then
            db_admin --get-stock --items "$1" > "$2" || return 1
        else
            zk_admin --get-stock --items "$1" > "$2" || return 1
        fi
        [ "$(wc -l < "$2")" = "$1" ]
        return
    fi
    paste -d' ' <(item_key stock $(cat "$2.names")) <(item_key sold $(cat "$2.names")) \
        <(item_key orders $(cat "$2.names")) | awk '{ print "MGET " $1 " " $2; print "XLEN " $3 }' |
        rcli | paste -d' ' - - - | paste -d' ' "$2.names" - > "$2"
    [ "$(wc -l < "$2")" = "$1" ]
}

# --- ZooKeeper (a stack from deploy/up --zookeeper N or --zookeepers LIST: ZK_CONNECT,
# ZK_PORTS, ZK_DIR in stack.env) ------------------------------------------------------------
# An item lives at /inventory/I/stock, /inventory/I/sold and /inventory/I/orders (the
# ledger); the service reads and sets them (--get-stock, --set-stock): no other client.

# zk_srvr HOST:PORT: what the ZooKeeper server there says to the four-letter word srvr
# (its version, zxid, mode, node count, a line each); fails when it does not answer in 2 s.
zk_srvr() {
    in_net timeout 2 bash -c 'exec 3<>"/dev/tcp/${1%:*}/${1##*:}" && printf srvr >&3 && cat <&3' \
        _ "$1" 2>/dev/null
}
# zk_mode HOST:PORT: the server's mode (srvr's Mode: leader, follower, standalone); nothing
# when it does not answer, or answers without serving ("This ZooKeeper instance is not
# currently serving requests": no quorum).
zk_mode() { zk_srvr "$1" | sed -n 's/^Mode: //p'; }
# zk_servers: HOST:PORT of each server of ZK_CONNECT, one a line.
zk_servers() { echo "$ZK_CONNECT" | tr ',' '\n'; }
# zk_modes: each server's mode, in ZK_CONNECT's order, on one line ("-" for one that does
# not answer or does not serve).
zk_modes() {
    local a m
    for a in $(zk_servers); do m=$(zk_mode "$a"); echo "${m:--}"; done | paste -sd' ' -
}
# zk_quorum N: true when the N servers of ZK_CONNECT serve: one says leader and every other
# follower (a lone server: standalone).
zk_quorum() {
    local want="standalone"
    [ "$1" = 1 ] || want="leader $(printf 'follower %.0s' $(seq $(($1 - 1))))"
    [ "$(zk_modes | tr ' ' '\n' | sort -r | paste -sd' ' -)" = "${want% }" ]
}
# zk_serving: true when a server of ZK_CONNECT serves (a leader, a follower, standalone).
zk_serving() { zk_modes | grep -qE 'leader|follower|standalone'; }
# zk_leader: HOST:PORT of the server of ZK_CONNECT that says it leads; fails when none does.
zk_leader() {
    local a
    for a in $(zk_servers); do
        [ "$(zk_mode "$a")" != leader ] || { echo "$a"; return 0; }
    done
    return 1
}
# zk_admin ARG...: the service's store operations on ZK_CONNECT's ensemble, run from the
# command line (build/inventory-service --zookeeper ZK_CONNECT ARG...: --set-stock N,
# --get-stock, with --item I or --items K); stdout as it prints it ("ITEM STOCK SOLD
# LEDGER" a line for --get-stock), its errors on stderr (its INFO log lines left out).
# Returns its exit status.
zk_admin() {
    local rc
    { in_net "${SERVICE_BIN:-${DEPLOY_DIR%/*}/build/inventory-service}" --zookeeper "$ZK_CONNECT" "$@" \
          2>&1 1>&3 3>&- | grep -v '^[0-9TZ:-]* INFO ' >&2; rc=${PIPESTATUS[0]}; } 3>&1
    return "$rc"
}
# zk_item_state ITEM: "STOCK SOLD LEDGER" of ITEM on ZooKeeper, as item_state gives it on
# Redis; fails when the ensemble does not answer or ITEM has no stock.
zk_item_state() {
    local line
    line=$(zk_admin --get-stock --item "$1") || return 1
    set -- $line
    echo "$2 $3 $4"
}

# --- MariaDB (a stack from deploy/up --mysql or --mysqls H:P: MYSQL_CONNECT,
# MYSQL_PASSWORD_FILE, MYSQL_DIR in stack.env) ----------------------------------------------
# An item is a row of items (item, stock, sold), each sale a row of orders, in the database
# inventory; the service reads and sets them (--get-stock, --set-stock). The server deploy/up
# starts runs from RUN_DIR/mysql/my.cnf (deploy/up-mysql.sh writes it), its pid file
# RUN_DIR/mysql.pid, its error log RUN_DIR/mysql.log; root has no password over TCP there.

# mysql_server_bin: the mariadbd to run (MARIADBD_BIN; else the one on PATH, else Debian's
# /usr/sbin/mariadbd, which a user's PATH may leave out).
mysql_server_bin() { echo "${MARIADBD_BIN:-$(command -v mariadbd || echo /usr/sbin/mariadbd)}"; }
# mysql_server_run DIR: starts mariadbd in its own session from DIR/mysql/my.cnf as it is
# (also to start again a server that was killed: its port and data are in that file), its
# output appended to DIR/mysql.log; writes DIR/mysql.pid: the pid, then the pattern
# deploy/down checks before a kill. Sets MYSQL_STARTED_PID, adds it to STARTED_PIDS.
# MYSQL_LAUNCH (an array, may be unset) goes before the command, as REDIS_LAUNCH does.
mysql_server_run() {
    local cnf=$1/mysql/my.cnf
    [ -f "$cnf" ] || { echo "$PROG: no $cnf: no server was ever started in $1" >&2; return 1; }
    setsid ${MYSQL_LAUNCH[@]+"${MYSQL_LAUNCH[@]}"} "$(mysql_server_bin)" --defaults-file="$cnf" \
        </dev/null >>"$1/mysql.log" 2>&1 &
    MYSQL_STARTED_PID=$!
    STARTED_PIDS="${STARTED_PIDS:-} $MYSQL_STARTED_PID"
    printf '%s\nmariadbd --defaults-file=%s \n' "$MYSQL_STARTED_PID" "$cnf" > "$1/mysql.pid"
}
# mysql_pings [HOST:PORT]: true when the server of MYSQL_CONNECT (or HOST:PORT) answers
# root's ping (mariadb-admin).
mysql_pings() {
    local at=${1:-$MYSQL_CONNECT}
    in_net mariadb-admin --no-defaults -h "${at%:*}" -P "${at##*:}" -uroot --connect-timeout=2 \
        ping >/dev/null 2>&1
}
# mdb_sql [SQL]: SQL (else the statements on stdin) run by the mariadb client as root on
# the server of MYSQL_CONNECT (MDB_AT=HOST:PORT: another), no database chosen (name
# inventory.items); rows on stdout, tab-separated, no header. Returns the client's status.
# For the servers deploy/up starts, and the tests' (root without a password over TCP);
# a statement holding a secret goes on stdin, never in argv.
mdb_sql() {
    local at=${MDB_AT:-$MYSQL_CONNECT}
    set -- mariadb --no-defaults -h "${at%:*}" -P "${at##*:}" -uroot --connect-timeout=5 -N -B \
        ${1+-e "$*"}
    in_net "$@"
}
# db_admin ARG...: the service's store operations on MYSQL_CONNECT's database, run from the
# command line (build/inventory-service --mysql MYSQL_CONNECT, the password by
# MYSQL_PASSWORD_FILE, ARG...: --set-stock N, --get-stock, with --item I or --items K);
# stdout as it prints it ("ITEM STOCK SOLD LEDGER" a line for --get-stock), its errors on
# stderr (its INFO log lines left out). Returns its exit status.
db_admin() {
    local rc pw=()
    [ -z "${MYSQL_PASSWORD_FILE:-}" ] || pw=(--mysql-password-file "$MYSQL_PASSWORD_FILE")
    [ -z "${MYSQL_DIR:-}" ] || pw+=(--mysql-user inventory)   # the run's own server's user
    { in_net "${SERVICE_BIN:-${DEPLOY_DIR%/*}/build/inventory-service}" --mysql "$MYSQL_CONNECT" \
          "${pw[@]}" "$@" 2>&1 1>&3 3>&- | grep -v '^[0-9TZ:-]* INFO ' >&2
      rc=${PIPESTATUS[0]}; } 3>&1
    return "$rc"
}
# db_item_state ITEM: "STOCK SOLD LEDGER" of ITEM in the database, as item_state gives it
# on Redis; fails when the database does not answer or ITEM has no row.
db_item_state() {
    local line
    line=$(db_admin --get-stock --item "$1") || return 1
    set -- $line
    echo "$2 $3 $4"
}
# mysql_ours: the pid of the mariadbd the stack's deploy/up started (MYSQL_DIR/mysql.pid),
# when it runs; fails otherwise.
mysql_ours() {
    local pid
    pid=$(head -n 1 "${MYSQL_DIR:-/nonexistent}/mysql.pid" 2>/dev/null) &&
        is_ours "$pid" "mariadbd --defaults-file=$MYSQL_DIR/mysql/my.cnf" && echo "$pid"
}
# mysql_kill9: the stack's mariadbd killed -9 (a crash: what InnoDB had not synced is
# lost), waited for until it is gone; fails when it was not running.
mysql_kill9() {
    local pid
    pid=$(mysql_ours) || { echo "$PROG: no mariadbd of ${MYSQL_DIR:-?} runs" >&2; return 1; }
    kill -KILL "$pid" 2>/dev/null
    wait_until 10 "" pid_gone "$pid"
}
# mysql_restart: the stack's mariadbd started again on its port and data directory (after
# mysql_kill9: it recovers from its redo log), waited for until it answers
# (MYSQL_START_WAIT_S, default 30). Fails when it does not.
mysql_restart() {
    [ -n "${MYSQL_DIR:-}" ] ||
        { echo "$PROG: the stack's mariadbd is not ours (no MYSQL_DIR)" >&2; return 1; }
    mark_log "$MYSQL_DIR/mysql.log"
    mysql_server_run "$MYSQL_DIR" || return 1
    wait_until "${MYSQL_START_WAIT_S:-30}" "$MYSQL_STARTED_PID" mysql_pings ||
        { echo "$PROG: mariadbd did not answer again; see $MYSQL_DIR/mysql.log" >&2; return 1; }
}

# item_counts ITEM: "STOCK SOLD LEDGER" of ITEM now, in Redis (its stock and sold in one
# MGET, then the ledger's length), on ZooKeeper (zk_item_state) or in the database
# (db_item_state); a sold or ledger that is missing as 0. Fails when the store does not
# answer or ITEM has no stock.
item_counts() {
    local v stock sold ledger
    if [ -n "${MYSQL_CONNECT:-}" ]; then
        v=$(db_item_state "$1") || return 1
        read -r stock sold ledger <<< "$v"
    elif [ -n "${ZK_CONNECT:-}" ]; then
        v=$(zk_item_state "$1") || return 1
        read -r stock sold ledger <<< "$v"
    else
        v=$(rcli mget "$(item_key stock "$1")" "$(item_key sold "$1")") || return 1
        IFS=, read -r stock sold <<< "$(echo "$v" | paste -sd, -)"
        ledger=$(rcli xlen "$(item_key orders "$1")") || return 1
    fi
    is_uint "${stock:-}" || return 1
    echo "$stock ${sold:-0} ${ledger:-0}"
}

# history_verdict_of STATUS OUTPUT: the verdict of a loadtest/check-history run that
# exited STATUS and printed OUTPUT: "possible", or "impossible: " and its first line, with
# "; also: " and its first ALSO line's message (rule 5: the store's stock, sold and
# ledger disagree, found after another rule broke). For a history it could not read,
# OUTPUT's first line, and status 1.
history_verdict_of() {
    local also
    case $1 in
    0) echo possible ;;
    1) also=$(echo "$2" | sed -n 's/^ALSO [^:]*: //p' | head -n 1)
       echo "impossible: $(echo "$2" | head -n 1)${also:+; also: $also}" ;;
    *) echo "$2" | head -n 1; return 1 ;;
    esac
}

# sale_load_summary FILE: the last JSON line build/sale-load wrote to FILE, in the fields
# wrk's line has (loadtest/sale.lua), which loadtest/run's summary reads and a scenario's
# sum adds up.
sale_load_summary() {
    grep '^{' "$1" | tail -n 1 | jq -c '{requests,
        ok: (.by_status["200"] // 0), sold_out: (.by_status["409"] // 0),
        unavailable: (.by_status["503"] // 0), lock_timeout: (.by_error.lock_timeout // 0),
        other: (.requests - (.by_status["200"] // 0) - (.by_status["409"] // 0)
                - (.by_status["503"] // 0) - .no_answer),
        socket_errors: .no_answer, timeouts: 0, rps, p50_ms, p99_ms}'
}

# stock_set N ARG...: the stock of the items ARG names (--item I, --items K) set to N,
# afresh, on the stack of RUN_DIR (deploy/stock: in Redis, ZooKeeper or MariaDB). Tried a
# second time, saying so, when the store did not do it (it may time out on a busy machine:
# a ZooKeeper ledger of thousands of entries is deleted one by one); setting is idempotent.
stock_set() {
    local try
    for try in 1 2; do
        [ "$try" = 1 ] || { echo "${0##*/}: setting the stock again" >&2; sleep 1; }
        "$DEPLOY_DIR/stock" "$@" --run-dir "$RUN_DIR" > /dev/null && return 0
    done
    return 1
}
