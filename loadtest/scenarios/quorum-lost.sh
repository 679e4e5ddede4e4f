# quorum-lost.sh - v10 (redlock) without a quorum: it must fail fast, and recover.
#
# One sale; then two lock masters of three are killed -9 and five sales follow, one after
# another, alternating between the instances; then both masters are restarted from their
# own files and five more sales follow. Redlock stacks only (MASTER_PIDS).
# Verdict: the flaw unless all five sales without a quorum answered 503 with error
# lock_unavailable, the slowest in less than half the wait limit (failing fast, not
# waiting it out), all five after the restart answered 200, and Redis shows nothing
# oversold.
# Rows in loadtest/evolution: v10, which must not show it.

# A stock large enough that the sales never sell out.
defaults_quorum_lost="ttl=2000 wait=3000 stock=100000"

scenario_quorum_lost() {
    local "$@"
    local i code t0 ms slowest=0 failed=0 resumed=0 n=5
    stack_read "$stack" || return 1
    [ -n "${MASTER_PIDS:-}" ] || { SCN_OBSERVED="no lock masters in this stack (redlock only)"; return 1; }
    sale_fg "$dir" "$item" "$(port_of 1)" >/dev/null
    kill_master 1; kill_master 2
    for i in $(seq $n); do
        t0=$(date +%s%N)
        code=$(curl -s -o "$dir/lost.json" -m 60 -w '%{http_code}' \
            "http://127.0.0.1:$(port_of $(( i % 2 + 1 )))/inventory/sale?item=$item") || code=000
        echo "$code" >> "$dir/codes"
        ms=$(( ($(date +%s%N) - t0) / 1000000 )); [ "$ms" -gt "$slowest" ] && slowest=$ms
        [ "$code" = 503 ] && jq -e '.error == "lock_unavailable"' "$dir/lost.json" >/dev/null 2>&1 &&
            failed=$((failed+1))
    done
    restart_master 1 && restart_master 2
    for i in $(seq $n); do [ "$(sale_fg "$dir" "$item" "$(port_of $(( i % 2 + 1 )))")" = 200 ] && resumed=$((resumed+1)); done
    SCN_FLAW=0
    [ "$failed" = "$n" ] && [ "$slowest" -lt $(( ${wait_ms:-3000} / 2 )) ] && [ "$resumed" = "$n" ] &&
        [ "$(oversold_now "$item" "$stock")" = 0 ] || SCN_FLAW=1
    SCN_OBSERVED="two lock masters of three killed: $failed of $n sales answered 503 lock_unavailable, the slowest in $slowest ms (wait limit ${wait_ms:-3000} ms); masters restarted: $resumed of $n sold; oversold $(oversold_now "$item" "$stock")"
}
