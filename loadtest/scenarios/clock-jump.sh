# clock-jump.sh - A clock jumps 10 s mid-lease: one instance's, or the Redis server's.
# What a lease is worth when the clock it is measured on is stepped.
#
# Test hosts (deploy/hosts; scenarios/hosts.sh):
#   h1: the data Redis
#   h2: instance A and its client (build/sale-load, 2 keep-alive connections; each sale
#       works 2 TTLs inside the lock, so that its lease must be renewed to last)
#   h3: instance B and its client (4 connections, 50 ms of work a sale)
#   h4, h5, h6: redlock's three lock masters, when the lock has them (v10)
# Every answer goes into a history. A second in, as soon as a sale of A has entered the
# lock (the overlap probe, probe:{I}, names it), a clock is moved by 10 s, once; the loads
# go on for SECS seconds (-d, default 10) or a little more after it. A short form for a
# test: --ttl-ms 500 -d 2 (about 7 s a run).
#
# How a clock is moved, for one process:
#   an instance: libfaketime (LD_PRELOAD, FAKETIME_TIMESTAMP_FILE holding "+0", rewritten
#     to "-10" or "+10"; FAKETIME_NO_CACHE=1 so that it is read at each call, not every
#     10 s; FAKETIME_DONT_FAKE_MONOTONIC=1 so that the wall clock jumps alone), after
#     build/clockstep.so, which makes a condition wait's deadline follow the jump as the
#     kernel does for a real step (libfaketime fixes a wait's length when it begins);
#   a Redis server: build/clockstep.so alone steps its wall clock (libfaketime hangs
#     Debian's redis-server at start: jemalloc; loadtest/clockstep.c says why).
#
# Variants:
#   clock-jump            A's wall clock 10 s back. A wait on the wall clock (a deadline
#                         on CLOCK_REALTIME) then lasts 10 s longer. The watchdog waited
#                         so until it moved to CLOCK_MONOTONIC: it slept through its
#                         renewals, A's leases ran out under its sales, B entered, two
#                         held at once (v8 oversold). Now the step changes nothing.
#   clock-jump-forward    A's wall clock 10 s ahead: such a wait ends at once (a renewal
#                         early); nothing is lost, before the move or after.
#   clock-jump-monotonic  A's wall and monotonic clocks 10 s back (no
#                         FAKETIME_DONT_FAKE_MONOTONIC): what a lock that measured leases
#                         on a clock that can be set would do. Renewal waits and lease
#                         ends (v10's validity: TTL - elapsed - drift) are on the
#                         monotonic clock: the watchdog sleeps 10 s, and A counts 10 s
#                         more on the lease it holds: it writes after Redis let it go.
#   clock-jump-redis      the wall clock of the Redis server that holds the lock (h1; with
#                         lock masters, the first of them, h4) 10 s ahead. Redis keeps a
#                         key's expiry as an absolute unix time: the held lock expires at
#                         once while A's sale works; B walks in.
# Reported: overlaps (overlaps:{I}), oversold (Redis), A's renewals and lost leases
# (its /metrics), the checker's verdict on both histories, acknowledged sales lost (200s
# beyond what the stock says was sold), stock sold twice (two 200s with one remaining),
# the longest time with no sale, answers by status.
# Verdict: the flaw when the data shows it: oversold, acknowledged sales lost, stock sold
# twice, or a history the checker finds impossible. Two holders whose stale write a fence
# refuses (409 lease_lost) are reported (overlaps), not the flaw: as in pause.sh.
# (now_ms, sale_load_summary, mono_start, mono_now_ns: deploy/lib.sh's; history_report,
# history_check, history_answers: lib.sh's; host_*: hosts.sh's.)

defaults_clock_jump="ttl=1000 wait=3000 stock=100000 hosts=6"
defaults_clock_jump_forward=$defaults_clock_jump
defaults_clock_jump_monotonic=$defaults_clock_jump
defaults_clock_jump_redis=$defaults_clock_jump

scenario_clock_jump() { clock_play instance -10 wall "$@"; }
scenario_clock_jump_forward() { clock_play instance +10 wall "$@"; }
scenario_clock_jump_monotonic() { clock_play instance -10 monotonic "$@"; }
scenario_clock_jump_redis() { clock_play redis +10 wall "$@"; }

# faketime_lib: the path of Debian's libfaketime (FAKETIME_LIB overrides); fails without.
faketime_lib() {
    local f
    for f in ${FAKETIME_LIB:-} /usr/lib/*/faketime/libfaketimeMT.so.1; do
        [ -f "$f" ] && { echo "$f"; return 0; }
    done
    return 1
}

# set_clock FILE STEP: the clock file says STEP now ("+0", "-10", "+10"), replaced whole so
# that no reader sees it half written.
set_clock() { echo "$2" > "$1.new" && mv "$1.new" "$1"; }

# clock_stack WHO CLOCKS FILE RUN FSYNC ITEM STOCK [INSTANCE_ARG...]: the layout above in
# the run directory RUN, ITEM's stock set to STOCK; the process WHO names (instance: A;
# redis: the lock's Redis) reads its clock through FILE (CLOCKS: wall, or monotonic too);
# INSTANCE_ARGs (instance_flags, --lock first) go to both instances.
clock_stack() {
    local who=$1 clocks=$2 file=$3 run=$4 fsync=$5 item=$6 stock=$7 lib wrap_a="" wrap_r="" masters=0 h
    shift 7
    set_clock "$file" +0
    if [ "$who" = instance ]; then
        lib=$(faketime_lib) || { SCN_OBSERVED="libfaketime not found (Debian: libfaketime)"; return 1; }
        wrap_a="env LD_PRELOAD=$BUILD_DIR/clockstep.so:$lib FAKETIME_TIMESTAMP_FILE=$file FAKETIME_NO_CACHE=1"
        [ "$clocks" = monotonic ] || wrap_a="$wrap_a FAKETIME_DONT_FAKE_MONOTONIC=1"
    else
        wrap_r="env LD_PRELOAD=$BUILD_DIR/clockstep.so CLOCKSTEP_FILE=$file"
    fi
    case $2 in v10|redlock) masters=3 ;; esac   # (--lock V) as deploy/up: redlock's own servers
    hosts_stack_up "$run" $(( 3 + masters )) "$fsync" || { SCN_OBSERVED="deploy/hosts up failed"; return 1; }
    REDIS_WRAP=$([ "$masters" = 0 ] && echo "$wrap_r") host_redis h1 ||
        { SCN_OBSERVED="the Redis on h1 did not start: $(tail -n 2 "$STACK_DIR/redis.log")"; return 1; }
    for h in $(seq 4 $(( 3 + masters ))); do
        REDIS_WRAP=$([ "$h" = 4 ] && echo "$wrap_r") host_lock_master "h$h" ||
            { SCN_OBSERVED="the lock master on h$h did not start"; return 1; }
    done
    INSTANCE_WRAP=$wrap_a host_instance h2 "$@" ||
        { SCN_OBSERVED="instance A did not start: $(tail -n 2 "$STACK_DIR/instance-h2.log")"; return 1; }
    host_instance h3 "$@" || { SCN_OBSERVED="instance B did not start: $(tail -n 2 "$STACK_DIR/instance-h3.log")"; return 1; }
    item_set "$item" "$stock" >/dev/null && rcli del "$(item_key sold "$item")" "$(item_key orders "$item")" >/dev/null
}

# a_in_probe ITEM: the probe's entry of the sale of A inside ITEM's lock now (its
# instance's name, its owner, a sequence number), if any.
a_in_probe() { rcli smembers "$(item_key probe "$1")" | grep '^inventory-h2:' | head -n 1; }
# a_entry_new ITEM OLD SECS SINCE: waits (SECS at most) until a sale of A is inside the
# lock, and not the one of entry OLD (read from SINCE, mono ns, on); its entry in A_ENTRY,
# when it was seen in A_SEEN_NS, and in A_SINCE_NS when the read began that did not show it
# yet: it entered after that. Fails when none came.
a_entry_new() {
    local end=$(( $(mono_now_ns) + $3 * 1000000000 )) t
    A_SINCE_NS=$4
    while [ "$(mono_now_ns)" -lt "$end" ]; do
        t=$(mono_now_ns)
        A_ENTRY=$(a_in_probe "$1")
        A_SEEN_NS=$(mono_now_ns)
        [ -z "$A_ENTRY" ] || [ "$A_ENTRY" = "$2" ] || return 0
        A_SINCE_NS=$t
        nap 0.02
    done
    return 1
}

# host_metric H NAME: the metric NAME of H's instance (nothing when it does not answer).
host_metric() {
    in_host "$1" curl -s -m 2 "http://$(host_addr "$1"):$H_INSTANCE_PORT/metrics" |
        awk -v m="$2" '$1 == m { print $2 }'
}

# clock_play WHO STEP CLOCKS WORD...: plays the scenario (the words: scenarios/lib.sh's):
# WHO's clock (instance A's, or the lock's Redis's) moved by STEP seconds, its wall clock
# only or (CLOCKS monotonic) its monotonic one too.
clock_play() {
    local who=$1 step=$2 clocks=$3; shift 3
    local "$@"
    local before_s=1 after_s=${secs:-10} hist=$dir/history.jsonl
    local file=$stack/clock total enter_s jump_ns renewals lost_leases what svc entry seen_ns work
    [ -x "$BUILD_DIR/sale-load" ] && [ -f "$BUILD_DIR/clockstep.so" ] ||
        { SCN_OBSERVED="build/sale-load or build/clockstep.so not built (make)"; return 1; }
    mapfile -t svc < <(instance_flags "$@")
    clock_stack "$who" "$clocks" "$file" "$stack" "$fsync" "$item" "$stock" "${svc[@]}" || return 1
    mono_start
    # Long enough for a sale of A to enter after before_s, then after_s more (the loads
    # end after_s after the jump: loads_stop). A's two
    # connections wait for the lock among B's four: a new sale of A may take a few of its
    # sales' work to get in (on a slow machine more than one), so the wait allows three.
    work=$(( ttl_ms * 2 ))
    enter_s=$(( (work * 3 + 999) / 1000 + 1 ))
    total=$(( before_s + enter_s + after_s ))
    host_load "$dir" "$item" h2 "$total" 2 A "work_ms=$work"
    host_load "$dir" "$item" h3 "$total" 4 B "work_ms=50"
    sleep "$before_s"
    # Just after a sale of A entered: the whole of its work is still ahead of it. The clock
    # moves as soon as the probe shows the entry, nothing read between, and this shell
    # (the looks, the step) runs from here at nice -10, ahead of the loads and instances:
    # on two busy cores a look at the probe took 2 s at nice 0, and a 1 s sale had left.
    renice -n -10 -p "$BASHPID" > /dev/null 2>&1 || true
    seen_ns=$(mono_now_ns)
    entry=$(a_in_probe "$item")
    a_entry_new "$item" "$entry" "$enter_s" "$seen_ns" ||
        { bg_wait; SCN_OBSERVED="not played: no sale of A entered the lock in $enter_s s"; return 1; }
    set_clock "$file" "$step"
    jump_ns=$(mono_now_ns)
    entry=$A_ENTRY
    # The story needs A inside at the jump. Its sale works $work ms inside the lock from
    # its entry, which came after A_SINCE_NS: inside for sure when the step came sooner
    # than that (on two busy cores a look at the probe after the step took up to 1.3 s);
    # else its entry must be in the probe still.
    if [ $(( jump_ns - A_SINCE_NS )) -ge $(( work * 1000000 )) ] &&
       [ "$(rcli sismember "$(item_key probe "$item")" "$entry")" != 1 ]; then
        seen_ns=$(mono_now_ns)
        loads_stop "$dir"; bg_wait
        SCN_OBSERVED="not played: A's sale had left the lock when the clock moved (its entry seen $(( (A_SEEN_NS - A_SINCE_NS) / 1000000 )) ms after the look before, the step $(( (jump_ns - A_SEEN_NS) / 1000000 )) ms later, and gone $(( (seen_ns - jump_ns) / 1000000 )) ms after the step)"; return 1
    fi
    # after_s of load after the jump, then the loads end (their time, total, is the most
    # the wait above could take).
    sleep_until $(( jump_ns + after_s * 1000000000 ))
    loads_stop "$dir"
    bg_wait
    loads_done "$dir" A B || return 1
    renewals=$(host_metric h2 inventory_lock_renewals_total)
    lost_leases=$(host_metric h2 inventory_lock_lost_leases_total)
    # The Redis clock moved under A's lease: A found it lost (its watchdog, or its
    # release). Not once: the step did not reach A's lease, and there is no story to judge.
    if [ "$who" = redis ] && [ -z "$MASTER_PORTS" ] && [ "${lost_leases:-0}" = 0 ]; then
        SCN_OBSERVED="not played: A never found a lease lost (renewed ${renewals:-?} times): the Redis clock's step did not reach A's lease"
        return 1
    fi
    history_judge "$item" "$stock" "$hist" "$jump_ns" || return 1
    if [ "$who" = instance ]; then
        what="instance A's $([ "$clocks" = monotonic ] && echo "wall and monotonic clocks" || echo "wall clock (monotonic left alone)")"
    elif [ -n "$MASTER_PORTS" ]; then
        what="the wall clock of lock master h4 (one of $(echo $MASTER_PORTS | wc -w))"
    else
        what="the wall clock of the Redis holding the lock (h1)"
    fi
    SCN_OBSERVED="$what moved ${step} s as a sale of A entered the lock (lease ${ttl_ms} ms; A: 2 connections, $work ms of work a sale; B: 4, 50 ms; load for ${after_s} s or more after the jump): overlaps $OVERLAPS; oversold $OVERSOLD; A renewed ${renewals:-?} times, lost ${lost_leases:-?} leases; history $VERDICT; acknowledged sales lost $LOST; sold twice $SOLD_TWICE; longest with no sale $GAP_MS ms (from $GAP_FROM_MS ms after the jump); answers $(history_answers "$dir/history-A.jsonl" "$dir/history-B.jsonl")"
}
