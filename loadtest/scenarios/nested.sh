# nested.sh - v6's flaw: not reentrant, a nested acquire by the same owner waits on itself.
#
# Five sales through nginx, one after another, each with nested=1: the sale calls a
# helper that takes the same lock again (the classic reentrancy test).
# Verdict: the flaw when none of the five sold and all five answered 503 (lock_timeout).
# v7's hash {owner: count} lets the owner in again: all five sell.
# On ZooKeeper (v11, reentrant as v7) and in the database (v12..v15) the five sales are
# also recorded and the history checked against the stock the store holds: a history the
# checker finds impossible, or anything oversold or lost, is a flaw too (nested_checked);
# in the database, the five must also have moved sold (its items row) by what they sold.
# Rows in loadtest/evolution: v6 shows it, v7 and v11 do not; v12 shows it, v13 and v15 do
# not.

# A short wait limit: each stuck sale costs 1 s.
defaults_nested="ttl=2000 wait=1000"

scenario_nested() {
    local "$@"
    local i ok=0 timeouts=0 code
    stack_read "$stack" || return 1
    if zk_stack || db_stack; then nested_checked "$@"; return; fi
    for i in 1 2 3 4 5; do
        code=$(sale_fg "$dir" "$item" "$NGINX_PORT" "nested=1")
        [ "$code" = 200 ] && ok=$((ok+1))
        [ "$code" = 503 ] && timeouts=$((timeouts+1))
    done
    SCN_FLAW=0
    [ "$ok" = 0 ] && [ "$timeouts" = 5 ] && SCN_FLAW=1
    SCN_OBSERVED="5 nested sales: $ok sold, $timeouts lock_timeout"
}

# nested_checked WORD...: the nested sales on ZooKeeper or in the database, with
# scenario_nested's words: the same five, each recorded in DIR/history.jsonl (sale_hist).
# Sets SCN_FLAW and SCN_OBSERVED.
nested_checked() {
    local "$@"
    local i ok=0 timeouts=0 code t0 hist=$dir/history.jsonl sold0=0 moved=""
    if db_stack; then
        db_playable || return 1
        sold0=$(sold_now "$item")
    fi
    mono_start
    t0=$(mono_now_ns)
    for i in 1 2 3 4 5; do
        code=$(sale_hist "$dir" "$item" "$NGINX_PORT" "nested=1" "$hist")
        [ "$code" = 200 ] && ok=$((ok+1))
        [ "$code" = 503 ] && timeouts=$((timeouts+1))
    done
    history_judge "$item" "$stock" "$hist" "$t0" || return 1
    [ "$ok" != 0 ] || [ "$timeouts" != 5 ] || SCN_FLAW=1
    if db_stack; then
        moved=$(( $(sold_now "$item") - sold0 ))
        [ "$moved" = "$ok" ] || SCN_FLAW=1
        moved="; sold in the database moved by $moved"
    fi
    SCN_OBSERVED="5 nested sales: $ok sold, $timeouts lock_timeout$moved; history $VERDICT;"
    SCN_OBSERVED="$SCN_OBSERVED acknowledged sales lost $LOST; oversold $OVERSOLD"
}
