# cluster.sh - What the Redis Cluster scenarios share (cluster-reshard, cluster-failover):
# where an item's slot is, the state of many items read in one pipeline, and a history
# judged per item. Sourced by their files; the stack is deploy/up --cluster (stack.env:
# CLUSTER_PORTS, CLUSTER_SEEDS; rcli follows the cluster's redirects).

# cluster_cli PORT ARG...: redis-cli to one node (the stack's password, never in argv).
cluster_cli() { rcli -p "$@"; }
# cluster_node_pid PORT: the pid of the node on PORT (deploy/up's pid file in STACK_DIR).
cluster_node_pid() { head -n 1 "$STACK_DIR/node-$1.pid" 2>/dev/null | grep .; }
# load_item_args K S: build/sale-load's arguments that spread its sales over item0001..K,
# Zipf S (none when S is empty or 0).
load_item_args() {
    echo "--item-count $1"
    case ${2:-0} in 0|'') ;; *) echo "--zipf $2" ;; esac
}

# cluster_masters: the ports of the masters now, each as its own ROLE says (another
# node's CLUSTER NODES may not know yet that one was made a replica).
cluster_masters() {
    local p
    for p in $CLUSTER_PORTS; do
        [ "$(cluster_cli "$p" role 2>/dev/null | head -n 1)" != master ] || echo "$p"
    done
}

# item_slot ITEM: the hash slot of ITEM's keys.
item_slot() { cluster_cli "${CLUSTER_PORTS%% *}" cluster keyslot "$(item_key stock "$1")"; }

# slot_owner SLOT: the port of the master serving SLOT now (as the first node that answers
# says).
slot_owner() {
    local p
    for p in $CLUSTER_PORTS; do
        cluster_cli "$p" --json cluster slots 2>/dev/null |
            jq -r --argjson s "$1" '.[] | select(.[0] <= $s and $s <= .[1]) | .[2][1]' | grep . && return 0
    done
    return 1
}

# master_slots PORT N: the first N slots the master on PORT serves, comma-separated.
master_slots() {
    cluster_cli "$1" --json cluster slots |
        jq -r --argjson p "$1" --argjson n "$2" '
            [.[] | select(.[2][1] == $p) | range(.[0]; .[1] + 1)] | .[:$n] | map(tostring) | join(",")'
}

# items_judge HISTORY K STOCK OUT: every item's state (deploy/lib.sh's items_read: one
# pipeline) and what the history says of each. Writes OUT.final (item -> {stock, sold,
# ledger}, for history_verdict: the checker's rule 5 too); prints one line "oversold
# items_oversold ledger_off lost sold_twice":
# units sold beyond the stock (summed), items oversold, items whose ledger length is not
# their sold, acknowledged sales lost (200s beyond what each item's stock says was sold),
# units sold twice (200s of one item sharing a remaining).
items_judge() {
    local hist=$1 k=$2 s=$3 out=$4
    items_read "$k" "$out.state" ||   # "NAME STOCK SOLD LEDGER" a line
        { echo "items_judge: Redis did not answer for every item" >&2; return 1; }
    "$PYTHON" - "$hist" "$s" "$out" "$ITEM_DEFAULT" <<'EOF'
import json, sys
hist, stock, out, item_default = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
final, oversold, items_over, ledger_off = {}, 0, 0, 0
for line in open(out + ".state"):
    name, left, sold, ledger = line.split()
    left, sold, ledger = int(left or 0), int(sold or 0), int(ledger or 0)
    final[name] = {"stock": left, "sold": sold, "ledger": ledger}
    over = sold - (stock - left)
    oversold += max(0, over)
    items_over += over > 0
    ledger_off += ledger != sold
json.dump(final, open(out + ".final", "w"))
sales, seen, twice = {}, set(), 0
for line in open(hist):
    r = json.loads(line)
    if r.get("status") != 200:
        continue
    it = r.get("item", item_default)
    sales[it] = sales.get(it, 0) + 1
    key = (it, r.get("remaining"))
    twice += key in seen
    seen.add(key)
lost = sum(max(0, n - ((stock - final[it]["stock"]) if it in final else 0))
           for it, n in sales.items())
print(oversold, items_over, ledger_off, lost, twice)
EOF
}

# history_verdict HISTORY STOCK OUT: the checker's verdict per item (each from STOCK)
# against OUT.final (stock, sold and ledger): possible, or impossible and its first line
# (history_verdict_of), or unreadable and why.
history_verdict() {
    local rc=0
    "$LOADTEST_TOOLS/check-history" "$1" --stock "$2" --final-file "$3.final" > "$3.verdict" 2>&1 ||
        rc=$?
    if [ "$rc" -le 1 ]; then
        history_verdict_of "$rc" "$(cat "$3.verdict")"
    else
        echo "unreadable: $(head -n 1 "$3.verdict")"
    fi
}

# window_p99 HISTORY FROM_NS TO_NS: the p99 and the count of answers to sales sent in
# [FROM_NS, TO_NS): "p99_ms n".
window_p99() {
    jq -rs --argjson a "$2" --argjson b "$3" '
        [.[] | select(.start_ns >= $a and .start_ns < $b and .status > 0) | (.end_ns - .start_ns) / 1e6] | sort
        | if length == 0 then "- 0" else "\(.[(length * 0.99 | floor)] * 10 | round / 10) \(length)" end' "$1"
}

# slow_answers HISTORY FROM_NS TO_NS MS: answers to sales sent in [FROM_NS, TO_NS) that took
# MS or more.
slow_answers() {
    jq -s --argjson a "$2" --argjson b "$3" --argjson ms "$4" '
        [.[] | select(.start_ns >= $a and .start_ns < $b and .status > 0 and (.end_ns - .start_ns) >= $ms * 1e6)] | length' "$1"
}
