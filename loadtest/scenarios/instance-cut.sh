# instance-cut.sh - One instance cut from Redis mid-lease, not from its clients: its
# watchdog cannot renew, the lease runs out on Redis and another instance takes the lock,
# while the first one's sale is still inside.
#
# Three test hosts (deploy/hosts; scenarios/hosts.sh):
#   h1: Redis
#   h2: instance A and its clients (build/sale-load, 4 keep-alive connections)
#   h3: instance B and its clients (the same)
# A's long sale (curl in h2, work_ms) takes the lock; its grant is seen in the overlap
# probe (probe:{I}). Some time into its work (its watchdog renewing meanwhile) h2 is cut
# from h1: dropped silently both ways, no reset, as a partition does. A's clients still
# reach A, and queue behind its sale. A's watchdog sends its next renewal into the cut and
# hears nothing; the lease runs out on Redis; B takes the lock and sells. Then the cut is
# healed, and A's sale decides on the stock it read before the cut:
#   instance-cut       its work (3.5 leases) ends a lease after the heal (the cut: one
#                      lease into the work, for 1.5 leases). v8 writes (two holders, the
#                      stock put back up: units sold twice, acknowledged sales overwritten);
#                      v9's holder knows its lease is lost and writes nothing: 409
#                      lease_lost, "nothing was sent".
#   instance-cut-late  its work (2 leases) ends during the cut, while its lease still runs
#                      on its own clock: it passes its lease check and sends its write into
#                      the cut. The cut comes once Redis shows the renewal A's watchdog sends
#                      4/3 of a lease into the work (its own clock then says its lease runs
#                      until 7/3, past the write at 2): anywhere in the 2/3 of a lease between
#                      that renewal and the write, however slow the machine. TCP resends the
#                      write; the heal comes 1.6 s after it was sent (between TCP's resends
#                      at about 1.4 s and 3 s, before the connection's 5 s timeout), and the
#                      write reaches Redis after B's sales. v8's lands; v9's is refused by
#                      Redis's fence (B's token is newer): 409 lease_lost, "Redis refused the
#                      write".
# The loads go on one lease after A's sale has answered. The timings are in leases:
# --ttl-ms shortens the scenario (the late heal's 1.6 s aside); -d is not used. Each step
# waits for what Redis shows (A's sale inside, its renewal), bounded; a run whose cut could
# not come where the story needs it (the machine too slow: A's write reached Redis before
# the cut) says "not played: ..." and fails, rather than judge a story that did not happen.
# The cut's and the heal's times are those they were asked at (a packet can cross no
# earlier), and the observed line says how long each took to be in place.
# Sampled during the run: every 20 ms on Redis (from h3) its clock, the lock's owners and
# PTTL, and the probe; every 100 ms A's /metrics (renewals, lost leases).
# Reported (ms from the cut): when Redis last set A's lease (its grant or a renewal) and
# when it ran out; when B held the lock and first sold; A's renewals by the cut and when
# A counted its lease lost (lost leases in /metrics); A's sale's answer; overlaps (sales
# that entered while another was inside, by the probe); oversold; the checker's verdict
# on every answer (both loads and A's sale); acknowledged sales lost; stock sold twice;
# the lease_lost answers; the longest time with no sale; answers by status.
# Verdict: the flaw when a write made under the lost lease shows: oversold > 0, sales
# acknowledged then lost, a unit sold twice, or a history the checker finds impossible.
# Two holders alone (overlaps) are no flaw where the stale one cannot write.
# (sale_load_summary, mono_start, mono_now_ns: deploy/lib.sh's; history_report: lib.sh's;
# host_long_sale: hosts.sh's.)

defaults_instance_cut="ttl=2000 wait=3000 stock=1000000 hosts=3"
defaults_instance_cut_late=$defaults_instance_cut

CUT_HOST=h2 CUT_FROM=h1
LATE_HEAL_MS=1600   # after the late write is sent: between TCP's resends at ~1.4 s and ~3 s, the
                    # latest of a busy machine's heals (up to a second to be in place) too

scenario_instance_cut() { cut_play after "$@"; }
scenario_instance_cut_late() { cut_play late "$@"; }

# cut_stack RUN FSYNC ITEM STOCK [INSTANCE_ARG...]: the layout above in the run directory
# RUN, ITEM's stock set to STOCK; INSTANCE_ARGs (instance_flags) go to both instances.
cut_stack() {
    local h run=$1 fsync=$2 item=$3 stock=$4; shift 4
    hosts_stack_up "$run" 3 "$fsync" || { SCN_OBSERVED="deploy/hosts up 3 failed"; return 1; }
    host_redis h1 || { SCN_OBSERVED="Redis on h1 did not start"; return 1; }
    for h in h2 h3; do
        host_instance "$h" "$@" || { SCN_OBSERVED="instance $h did not start: $(tail -n 2 "$STACK_DIR/instance-$h.log")"; return 1; }
    done
    item_set "$item" "$stock" >/dev/null &&
        rcli del "$(item_key sold "$item")" "$(item_key orders "$item")" "$(item_key overlaps "$item")" >/dev/null
}

# What Redis answers every 20 ms: "TIME_US PTTL OWNERS PROBE" (OWNERS: the lock's hash
# fields or string value, comma-separated, - for none; PROBE: the sales inside, or -).
CUT_SAMPLE_LUA="local t = redis.call('time')
local ty = redis.call('type', KEYS[1]).ok
local owners = '-'
if ty == 'hash' then owners = table.concat(redis.call('hkeys', KEYS[1]), ',')
elseif ty == 'string' then owners = redis.call('get', KEYS[1]) end
local probe = table.concat(redis.call('smembers', KEYS[2]), ',')
return t[1] .. string.format('%06d', t[2]) .. ' ' .. redis.call('pttl', KEYS[1]) .. ' ' ..
    owners .. ' ' .. (probe ~= '' and probe or '-')"

# samplers_start DIR ITEM: the sample above of ITEM's lock and probe every 20 ms into
# DIR/redis-samples (one redis-cli in h3, repeating); A's metrics every 100 ms into
# DIR/a-metrics ("REALTIME_NS RENEWALS LOST_LEASES", from h2). samplers_stop stops both.
samplers_start() {
    # deploy/hosts run, not in_host (a function: $! would be a subshell, and a kill would
    # leave its command running): it execs through to the command, whose pid $! is.
    REDISCLI_AUTH=$(head -n 1 "$REDIS_PASSWORD_FILE") "$HOSTS_BIN" run h3 redis-cli -h "$REDIS_HOST" \
        -p "$REDIS_PORT" -r -1 -i 0.02 EVAL "$CUT_SAMPLE_LUA" 2 "$(item_key lock "$2")" "$(item_key probe "$2")" \
        > "$1/redis-samples" 2>/dev/null &
    CUT_SAMPLERS=$!
    "$HOSTS_BIN" run "$CUT_HOST" bash -c 'while sleep 0.1; do
        m=$(curl -s -m 1 "http://$1/metrics") || continue
        echo "$(date +%s%N) $(echo "$m" | awk '\''$1 == "inventory_lock_renewals_total" { r = $2 }
            $1 == "inventory_lock_lost_leases_total" { l = $2 } END { print r + 0, l + 0 }'\'')"
        done' sampler "$(host_addr "$CUT_HOST"):$H_INSTANCE_PORT" > "$1/a-metrics" 2>/dev/null &
    CUT_SAMPLERS="$CUT_SAMPLERS $!"
}
samplers_stop() {
    local p
    for p in $CUT_SAMPLERS; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
    CUT_SAMPLERS=""
}

# held_by_a DIR MIN_MS: a sale of A (its probe id starts with inventory-h2:) has been
# inside for MIN_MS by Redis's clock (DIR's samples): prints "FIRST_SEEN_US PROBE_ID";
# fails when none has.
held_by_a() {
    awk -v p="inventory-$CUT_HOST:" -v min="$(( $2 * 1000 ))" '
        NF == 4 { n = split($4, m, ",")
                  for (i = 1; i <= n; i++) if (index(m[i], p) == 1) {
                      if (!(m[i] in first)) first[m[i]] = $1
                      if ($1 - first[m[i]] >= min) { print first[m[i]], m[i]; found = 1; exit } } }
        END { exit !found }' "$1/redis-samples"
}

# us_to_ns US: a Redis time (realtime, microseconds) on the monotonic clock, in ns.
us_to_ns() { echo $(( $1 * 1000 - MONO_OFFSET )); }
# rel_ms CUT_NS NS: a monotonic time NS as ms from the cut (CUT_NS).
rel_ms() { echo $(( ($2 - $1) / 1000000 )); }

# lease_report DIR TTL CUT_NS OWNER: from the Redis samples in DIR, "LAST_SET_US END_US
# TAKEN_US": when Redis last set OWNER's lease (its grant or a renewal: a sample's time
# less what the lease had run, TTL - PTTL), when that lease ended (+ TTL), and the first
# sample after the cut that shows another owner (0: none); "-1 -1 TAKEN_US" when OWNER was
# never seen.
lease_report() {
    awk -v o="$4" -v ttl="$2" -v cut="$(( ($3 + MONO_OFFSET) / 1000 ))" '
        NF == 4 { n = split($3, w, ","); mine = 0
                  for (i = 1; i <= n; i++) if (w[i] == o) mine = 1
                  if (mine && $2 > 0) { r = $1 - (ttl - $2) * 1000; if (r > last) last = r }
                  else if (!mine && $3 != "-" && $1 >= cut && !taken) taken = $1 }
        END { if (last) printf "%.0f %.0f %.0f\n", last, last + ttl * 1000, taken
              else printf "-1 -1 %.0f\n", taken }' "$1/redis-samples"
}

# a_metrics_report DIR CUT_NS HEAL_NS: from A's metrics samples in DIR, "RENEWALS_AT_CUT LAST_CHANGE_MS LOST_MS": the
# renewals counted by the cut, the first sample (ms from the cut) that showed A's last
# count before the heal, and the first sample after the cut where A's lost leases went up
# (-1: none).
a_metrics_report() {
    awk -v off="$MONO_OFFSET" -v cut="$2" -v heal="$3" '
        NF == 3 { t = ($1 - off - cut) / 1e6
                  if ($1 - off <= cut) { at_cut = $2; lost0 = $3 }
                  if ($1 - off <= heal && $2 != prev) { seen = t; prev = $2 }
                  if ($1 - off > cut && $3 > lost0 && lost == "") lost = t }
        END { printf "%d %d %d\n", at_cut, seen, (lost == "" ? -1 : lost) }' "$1/a-metrics"
}


# cut_play after|late WORD...: the scenario (above; the words: scenarios/lib.sh's): its
# timings in leases, the choreography, the verdict. Sets SCN_FLAW and SCN_OBSERVED. Its
# phases, cut_stage and cut_judge, share its locals (the words among them).
cut_play() {
    local mode=$1; shift
    local "$@"
    local ttl=$ttl_ms work into heal_after late_ms=0 svc
    local first_ns owner cut_ns cut_done_ns heal_ns heal_done_ns long_ns
    if [ "$mode" = late ]; then
        # The answer comes with TCP's resend after the heal: about 3 s after the send.
        work=$((ttl * 2)) into=$((ttl * 5 / 3)) heal_after=$((ttl / 3 + LATE_HEAL_MS)) late_ms=3500
    else
        work=$((ttl * 7 / 2)) into=$ttl heal_after=$((ttl * 3 / 2))
    fi
    [ -x "$BUILD_DIR/sale-load" ] || { SCN_OBSERVED="build/sale-load not built (make)"; return 1; }
    mapfile -t svc < <(instance_flags "$@")
    cut_stack "$stack" "$fsync" "$item" "$stock" "${svc[@]}" || return 1
    cut_stage || return 1
    cut_judge
}

# a_lease_set_since DIR OWNER SINCE_US: Redis's samples in DIR show OWNER's lease set (its
# grant or a renewal: a sample's time less what the lease had run) at SINCE_US (Redis's
# clock, µs) or later; prints that time.
a_lease_set_since() {
    awk -v o="$2" -v ttl="$ttl" -v since="$3" '
        NF == 4 { n = split($3, w, ",")
                  for (i = 1; i <= n; i++) if (w[i] == o && $2 > 0) {
                      r = $1 - (ttl - $2) * 1000
                      if (r >= since) { printf "%.0f\n", r; found = 1; exit } } }
        END { exit !found }' "$1/redis-samples"
}

# cut_stage: the loads, A's long sale, the cut and the heal (dir, item, ttl, work, into,
# heal_after, late_ms, mode from cut_play); sets first_ns (A's sale seen inside), owner (its
# lock owner id), cut_ns and heal_ns (when each was asked), cut_done_ns and heal_done_ns
# (in place), and long_ns (its answer), and leaves the histories in dir. Fails, "not
# played", when the cut cannot come where the story needs it.
cut_stage() {
    local before_ms=1000 total_s got probe s renewed write_ns
    mono_start
    samplers_start "$dir" "$item"
    # The loads: long enough for the long sale's wait (about a second at most), its work,
    # its late answer and a lease after it.
    total_s=$(( (before_ms + 1000 + work + late_ms + ttl + 999) / 1000 ))
    host_load "$dir" "$item" h2 "$total_s" 4 A
    host_load "$dir" "$item" h3 "$total_s" 4 B
    sleep "$(awk -v m="$before_ms" 'BEGIN { print m / 1000 }')"
    host_long_sale "$dir" "$CUT_HOST" "$item" "$work" L
    # Its grant: the first of A's sales seen inside for 200 ms (the others take a few ms).
    if ! wait_until $(( ttl * 2 / 1000 + 5 )) "$LONG_PID" held_by_a "$dir" 200; then
        samplers_stop; bg_wait
        SCN_OBSERVED="A's long sale never held the lock: $(cat "$dir/long-L.json" 2>/dev/null)"
        return 1
    fi
    got=$(held_by_a "$dir" 200); probe=${got#* }
    first_ns=$(us_to_ns "${got%% *}")
    owner=${probe#"inventory-$CUT_HOST:"}; owner=${owner%:*}
    write_ns=$(( first_ns + work * 1000000 ))   # when A's work ends (seen inside: a little later)
    if [ "$mode" = late ]; then
        # The renewal 4/3 of a lease in (a sixth of a lease early: the sale was seen inside
        # up to 20 ms after it entered, and renewals come every third of a lease).
        if ! wait_until $(( work / 1000 + 5 )) "$LONG_PID" a_lease_set_since "$dir" "$owner" \
                $(( ${got%% *} + (ttl * 7 / 6) * 1000 )); then
            samplers_stop; bg_wait
            SCN_OBSERVED="not played: Redis never showed A's renewal 4/3 of a lease into its sale"
            return 1
        fi
        renewed=$(a_lease_set_since "$dir" "$owner" $(( ${got%% *} + (ttl * 7 / 6) * 1000 )))
    else
        sleep_until $(( first_ns + into * 1000000 ))
    fi
    cut_ns=$(mono_now_ns)
    hosts_cut "$CUT_HOST" "$CUT_FROM"
    cut_done_ns=$(mono_now_ns)
    if [ "$mode" = late ] && [ "$cut_done_ns" -ge $(( write_ns - ttl * 1000000 / 10 )) ]; then
        # In place less than a tenth of a lease before the write: it may have crossed.
        hosts_heal; samplers_stop; bg_wait
        SCN_OBSERVED="not played: the cut was in place $(rel_ms "$first_ns" "$cut_done_ns") ms into A's sale (its renewal seen at $(rel_ms "$first_ns" "$(us_to_ns "$renewed")") ms), too near its write at $work ms: this machine is too slow for this lease (try a longer --ttl-ms)"
        return 1
    fi
    # late: the heal LATE_HEAL_MS after the write is sent (at the work's end); after: a
    # lease and a half after the cut.
    if [ "$mode" = late ]; then
        sleep_until $(( write_ns + LATE_HEAL_MS * 1000000 ))
    else
        sleep_until $(( cut_ns + heal_after * 1000000 ))
    fi
    heal_ns=$(mono_now_ns)
    hosts_heal
    heal_done_ns=$(mono_now_ns)
    wait "$LONG_PID" 2>/dev/null || true
    long_ns=$(jq '.end_ns // empty' "$dir/history-L.jsonl" 2>/dev/null)
    [ -n "$long_ns" ] || long_ns=$(mono_now_ns)
    sleep "$(awk -v m="$ttl" 'BEGIN { print m / 1000 }')"
    samplers_stop
    bg_wait
    loads_done "$dir" A B || return 1
    cat "$dir/history-L.jsonl" >> "$dir/history.jsonl"
}

# cut_judge: the verdict from Redis and the answers (every history and A's sale's), and
# the observed line (dir, item, stock, ttl and what cut_stage set, from cut_play).
cut_judge() {
    local hist=$dir/history.jsonl last end taken
    # The story needs A's lease to run out on Redis under the cut: a lock another took
    # before then was let go by A (its write crossed before the cut was in place).
    read -r last end taken <<< "$(lease_report "$dir" "$ttl" "$cut_ns" "$owner")"
    if [ "$last" != -1 ] && [ "$taken" != 0 ] && [ "$taken" -lt "$end" ]; then
        SCN_OBSERVED="not played: B held the lock $(rel_ms "$cut_ns" "$(us_to_ns "$taken")") ms after the cut was asked, before A's lease ran out on Redis ($(rel_ms "$cut_ns" "$(us_to_ns "$end")") ms): A let it go, its write in before the cut was in place ($(rel_ms "$cut_ns" "$cut_done_ns") ms)"
        return 1
    fi
    # Nor did it when A's sale answered before the heal was asked: an answer that came
    # through the cut was written before the cut was in place (a busy machine: the cut
    # asked late into the work, or slow to be in place).
    if [ "$long_ns" -lt "$heal_ns" ]; then
        SCN_OBSERVED="not played: A's sale answered $(rel_ms "$cut_ns" "$long_ns") ms after the cut was asked, before the heal ($(rel_ms "$cut_ns" "$heal_ns") ms): its write went before the cut was in place ($(rel_ms "$cut_ns" "$cut_done_ns") ms; A's sale inside $(rel_ms "$cut_ns" "$first_ns") ms): this machine is too slow for this lease (try a longer --ttl-ms)"
        return 1
    fi
    history_judge "$item" "$stock" "$hist" "$cut_ns" || return 1
    SCN_OBSERVED="A's sale inside $(rel_ms "$cut_ns" "$first_ns") ms; $CUT_HOST cut from $CUT_FROM (in place $(rel_ms "$cut_ns" "$cut_done_ns") ms), healed $(rel_ms "$cut_ns" "$heal_ns") ms (in place $(rel_ms "$cut_ns" "$heal_done_ns") ms), lease $ttl ms: $(cut_lease_line "$dir" "$ttl" "$cut_ns" "$owner") $(cut_a_line "$dir" "$cut_ns" "$heal_ns") A's sale answered $(rel_ms "$cut_ns" "$long_ns") ms: $(cut_long_answer "$dir"); overlaps $OVERLAPS; oversold $OVERSOLD; history $VERDICT; acknowledged sales lost $LOST; sold twice $SOLD_TWICE; lease_lost answers $(jq -s '[.[] | select(.error == "lease_lost")] | length' "$hist"); longest with no sale $GAP_MS ms (from $GAP_FROM_MS ms after the cut); answers $(history_answers "$hist")"
}

# cut_lease_line DIR TTL CUT_NS OWNER: what Redis saw of A's lease and B's first sale, one
# clause.
cut_lease_line() {
    local last end taken first_b cut=$3
    read -r last end taken <<< "$(lease_report "$1" "$2" "$3" "$4")"
    first_b=$(first_sale_after "$1/history-B.jsonl" "$cut" answered)
    if [ "$last" = -1 ]; then
        echo "Redis never showed A's lease; B's first sale $first_b ms;"
    else
        echo "Redis last set A's lease $(rel_ms "$cut" "$(us_to_ns "$last")") ms, it ran out" \
            "$(rel_ms "$cut" "$(us_to_ns "$end")") ms; $([ "$taken" = 0 ] && echo "nobody else held the lock" ||
            echo "B held the lock $(rel_ms "$cut" "$(us_to_ns "$taken")") ms"), B's first sale $first_b ms;"
    fi
}

# cut_a_line DIR CUT_NS HEAL_NS: what A's /metrics showed, one clause.
cut_a_line() {
    set -- $(a_metrics_report "$1" "$2" "$3")
    echo "A's metrics: $1 renewals by the cut (the last seen $2 ms), its lease counted lost" \
        "$([ "$3" = -1 ] && echo "never" || echo "$3 ms");"
}

# cut_long_answer DIR: A's long sale's answer: status (its history line's), error or
# remaining, lease_lost, message.
cut_long_answer() {
    jq -r --argjson code "$(jq '.status' "$1/history-L.jsonl" 2>/dev/null || echo 0)" \
        '"\(if .ok then "200 sold, remaining \(.remaining)" else "\($code) \(.error)" end)"
        + (if .lease_lost then " with lease_lost true" else "" end)
        + (if .message then " (\(.message))" else "" end)' "$1/long-L.json" 2>/dev/null ||
        echo "no answer"
}

