# clock-ahead.sh - v13's second flaw: a client whose wall clock runs ahead takes a live lease.
#
# In the database (v13, v14: a leases row; deploy/up --mysql). The scenario starts a third
# instance of its own on the same database, with the stack's lock settings, its wall clock
# read through build/clockstep.so (LD_PRELOAD, CLOCKSTEP_FILE holding "+0"). Instance 1's
# sale takes the lock for three leases of work (its watchdog renews the lease); once the
# database shows it inside (the probe names it, the leases row names the same owner with
# its lease running by the database's clock), the third instance's clock is stepped 60 s
# ahead (the file says "+60": more than a lease) and it sells once (half a lease of
# work). v13 reads a lease's
# end on its own client's clock: 60 s ahead, the third finds instance 1's live lease over
# and takes it; both sales then write (stock from their own reads: a unit sold twice).
# v14 reads it on the database's clock: the third waits like anyone, and its wait runs
# out while instance 1 holds (503 lock_timeout). Both sales recorded in a history.
# Verdict: the flaw when the database shows anything oversold (two orders rows with the
# same remaining, the stale write landed), anything lost, or a history the checker finds
# impossible. Played only when the third's sale was answered while instance 1's was still
# inside (else: "not played").
# Rows in loadtest/evolution: v13 shows it, v14 does not. (build/clockstep.so: make;
# loadtest/clockstep.c says how it steps a clock.)

# A lease of a second (renewed every third), a wait limit shorter than the slow sale's work.
defaults_clock_ahead="ttl=1000 wait=1000 stock=100"

scenario_clock_ahead() {
    local "$@"
    local a c cpid owner hist=$dir/history.jsonl file=$dir/clock left taken=no t_a t_c
    local answer_a answer_c
    stack_read "$stack" || return 1
    db_playable || return 1
    [ "$(db_lock_table "$lock")" = leases ] ||
        { SCN_OBSERVED="not played: a lease in the database only (--lock v13 or v14)"; return 1; }
    [ -f "$BUILD_DIR/clockstep.so" ] ||
        { SCN_OBSERVED="build/clockstep.so not built (make)"; return 1; }
    a=$(port_of 1)
    echo +0 > "$file"
    if ! c=$(ahead_instance_start "$file" "$@"); then
        SCN_OBSERVED="the third instance did not start:"
        SCN_OBSERVED="$SCN_OBSERVED $(tail -n 2 "$STACK_DIR/instance-ahead.log")"
        return 1
    fi
    cpid=${c#* } c=${c%% *}
    mono_start
    sale_hist "$dir" "$item" "$a" "work_ms=$((ttl_ms * 3))" "$dir/slow.jsonl" > /dev/null &
    BG_PIDS="$BG_PIDS $!"
    if ! owner=$(db_wait_held "$item" "$a" "$lock"); then
        bg_wait; ahead_instance_stop "$c" "$cpid"
        SCN_OBSERVED="not played: the database never showed instance 1's sale inside the lock"
        return 1
    fi
    left=$(db_row leases "$item"); left=${left%% *}
    set_step "$file" +60
    sale_hist "$dir" "$item" "$c" "work_ms=$((ttl_ms / 2))" "$dir/ahead.jsonl" > /dev/null &
    BG_PIDS="$BG_PIDS $!"
    # The third's grant, as the database shows it: the leases row names another owner than
    # instance 1's (a lease running), while instance 1's sale is still inside (its answer
    # not yet in); looked for until the third's sale is answered.
    t_c=$(( $(mono_now_ns) + (wait_ms + ttl_ms + 2000) * 1000000 ))
    until [ -s "$dir/ahead.jsonl" ] || [ "$(mono_now_ns)" -gt "$t_c" ]; do
        if db_row_other "$item" leases "$owner"; then
            [ -s "$dir/slow.jsonl" ] || taken=yes
            break
        fi
        nap 0.02
    done
    bg_wait
    ahead_instance_stop "$c" "$cpid"
    [ -s "$dir/slow.jsonl" ] && [ -s "$dir/ahead.jsonl" ] ||
        { SCN_OBSERVED="not played: a sale was not answered"; return 1; }
    t_a=$(jq -r .end_ns "$dir/slow.jsonl") t_c=$(jq -r .end_ns "$dir/ahead.jsonl")
    if [ "$t_c" -ge "$t_a" ]; then
        SCN_OBSERVED="not played: the third instance's sale was answered after instance 1's left"
        return 1
    fi
    cat "$dir/slow.jsonl" "$dir/ahead.jsonl" > "$hist"
    history_judge "$item" "$stock" "$hist" "$(jq -r .start_ns "$dir/slow.jsonl")" || return 1
    answer_a=$(jq -r '"\(.status) \(.error // "sold")"' "$dir/slow.jsonl")
    answer_c=$(jq -r '"\(.status) \(.error // "sold")"' "$dir/ahead.jsonl")
    SCN_OBSERVED="a third instance's wall clock stepped 60 s ahead while instance 1's slow sale"
    SCN_OBSERVED="$SCN_OBSERVED held a live $ttl_ms ms lease (${left:-?} ms left by the database's"
    SCN_OBSERVED="$SCN_OBSERVED clock): the leases row named the third while instance 1 was"
    SCN_OBSERVED="$SCN_OBSERVED inside: $taken; the third's sale answered $answer_c, instance 1's"
    SCN_OBSERVED="$SCN_OBSERVED $answer_a; orders rows by remaining: $(db_orders_twice "$item");"
    SCN_OBSERVED="$SCN_OBSERVED overlaps $OVERLAPS; history $VERDICT; acknowledged sales lost"
    SCN_OBSERVED="$SCN_OBSERVED $LOST; oversold $OVERSOLD"
}

# set_step FILE STEP: the clock file says STEP now ("+0", "+60"), replaced whole.
set_step() { echo "$2" > "$1.new" && mv "$1.new" "$1"; }

# ahead_instance_start FILE WORD...: a third instance of the service on the stack's
# database, with the run's lock settings among the WORDs (--faults on), its wall clock read
# through build/clockstep.so with CLOCKSTEP_FILE=FILE; its pid file in STACK_DIR as
# deploy/up writes one (deploy/down stops it), its log STACK_DIR/instance-ahead.log.
# Prints "PORT PID" once it answers /health; fails when it does not within 10 s.
ahead_instance_start() {
    local file=$1 p pid bin=$BUILD_DIR/inventory-service flags=()
    shift
    local lock="" ttl_ms="" wait_ms="" retry_ms="" wait_policy=""
    local "$@"
    p=$(free_port) || return 1
    flags=(--lock "$lock" --mysql "$MYSQL_CONNECT" --faults)
    [ -z "${MYSQL_PASSWORD_FILE:-}" ] || flags+=(--mysql-password-file "$MYSQL_PASSWORD_FILE")
    [ -z "$ttl_ms" ] || flags+=(--ttl-ms "$ttl_ms")
    [ -z "$wait_ms" ] || flags+=(--wait-ms "$wait_ms")
    [ -z "$retry_ms" ] || flags+=(--retry-ms "$retry_ms")
    [ -z "$wait_policy" ] || flags+=(--wait "$wait_policy")
    setsid env LD_PRELOAD="$BUILD_DIR/clockstep.so" CLOCKSTEP_FILE="$file" \
        "$bin" --port "$p" --name "inventory-$p" "${flags[@]}" \
        </dev/null >> "$STACK_DIR/instance-ahead.log" 2>&1 &
    pid=$!
    printf '%s\n%s \n--port %s \n' "$pid" "$bin" "$p" > "$STACK_DIR/instance-$p.pid"
    wait_until 10 "$pid" curl -sf -m 1 -o /dev/null "http://127.0.0.1:$p/health" || return 1
    echo "$p $pid"
}
# ahead_instance_stop PORT PID: the third instance stopped (by its pid, still ours), its
# pid file removed.
ahead_instance_stop() {
    is_ours "$2" "$BUILD_DIR/inventory-service " "--port $1 " && kill -TERM "$2" 2>/dev/null
    wait_until 10 "" pid_gone "$2"
    rm -f "$STACK_DIR/instance-$1.pid"
}
# db_orders_twice ITEM: ITEM's orders rows that share their remaining with another ("R x N"
# each), or "each its own" when none does.
db_orders_twice() {
    local r
    r=$(db_sql "SELECT CONCAT('remaining ', remaining, ' x ', COUNT(*)) FROM inventory.orders
                WHERE item = $(db_lit "$1") AND status = 200
                GROUP BY remaining HAVING COUNT(*) > 1")
    echo "${r:-each its own}" | paste -sd, - | sed 's/,/, /g'
}
