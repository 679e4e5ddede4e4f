#!/usr/bin/env bash
# test_model.sh - the SPIN models: every version's flaw found by the model checker and the
# next version's fix holding (model/check --quick), results/model.json well formed, and a
# readable sequence for every broken property. No servers.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

OUT="$T_TMP/model-results"
MODEL_OUT="$OUT" model/check --quick > "$T_TMP/check.out" 2>&1
rc=$?
cat "$T_TMP/check.out"
check_eq "model/check --quick: every row as expected" 0 "$rc"
check "results/model.json parses as an array of rows" jq -e 'type == "array" and length > 0' "$OUT/model.json"
check "every row has version, fault, property, holds and states" \
    jq -e 'all(.[]; (.version | type) == "string" and (.fault | type) == "string" and
                    (.property | type) == "string" and (.holds | type) == "boolean" and
                    (.states | type) == "number" and .states > 0)' "$OUT/model.json"

# outcome VERSION FAULT PROPERTY: "holds", "broken", or "missing", from model.json.
outcome() {
    jq -r --arg v "$1" --arg f "$2" --arg p "$3" \
        '[.[] | select(.version == $v and .fault == $f and .property == $p)] |
         if length == 0 then "missing" elif .[0].holds then "holds" else "broken" end' \
        "$OUT/model.json" 2>/dev/null || echo missing
}
# expect VERSION FAULT PROPERTY OUTCOME WHY
expect() { check_eq "$1 $2: $3 $4 ($5)" "$4" "$(outcome "$1" "$2" "$3")"; }

expect v3  crash       progress          broken "a dead holder's key never expires: deadlock"
expect v4  crash       progress          holds  "its lease runs out"
expect v4  long-work   mutex             broken "work outlasts the lease"
expect v4  long-work   no-foreign-delete broken "the first holder's DEL deletes the second's lock"
expect v5  release-gap no-foreign-delete broken "the lease runs out between GET and DEL"
expect v5  release-gap mutex             broken "a third client enters beside the second"
expect v6  release-gap no-foreign-delete holds  "compare-and-delete in one script"
expect v6  release-gap mutex             holds  "compare-and-delete in one script"
expect v6  nested      reentrant         broken "a nested acquire waits on itself"
expect v6  nested      nested-refused    holds  "it never succeeds"
expect v7  nested      reentrant         holds  "the hash counts the holder's grants"
expect v7  nested      nested-refused    broken "it always succeeds"
expect v7  long-work   mutex             broken "no renewal"
expect v8  long-work   mutex             holds  "the watchdog renews"
expect v8  short-pause mutex             holds  "a pause shorter than the lease"
expect v8  pause       mutex             broken "a pause longer than the lease stops the watchdog too"
expect v9  pause       mutex             broken "the paused holder and the next hold at once"
expect v9  pause       no-stale-write    holds  "the paused holder does not write"
expect v9  pause       no-oversell       holds  "the paused holder does not write"
expect v9  late-pause  no-oversell       holds  "paused after its lease check: older than the last token issued, refused"
expect v9  late-pause  no-stale-write    broken "a lone late write, with no grant since, still lands (harmless)"
expect v10 master-down mutex             holds  "one master of three lost"
expect v10 restart     mutex             broken "a master restarts empty before the lease ends"
expect v10 restart     no-oversell       holds  "the older token's write is refused once the newer was issued"
expect v11 pause           mutex          broken "the paused holder's session expires: the next holds beside it"
expect v11 pause           no-stale-write holds  "the multi's check finds the paused holder's node gone: nothing written"
expect v11 pause           no-oversell    holds  "the multi's check finds the paused holder's node gone: nothing written"
expect v11 short-pause     mutex          holds  "a pause shorter than the session"
expect v11 long-work       mutex          holds  "the heartbeats keep the session"
expect v11 crash           progress       holds  "the dead holder's session expires, its node with it"
expect v11 pause+unguarded no-oversell    broken "no check, sets with version -1: the stale write lands"
expect v11 pause+unguarded no-stale-write broken "no check, sets with version -1: the stale write lands"
expect v11 pause+no-check  no-oversell    holds  "the version alone stops the lost update"
expect v11 pause+no-check  no-stale-write broken "without the check a write lands without the lock (on a read its version proves fresh)"
expect v13 pause              mutex          broken "the paused holder's lock_until passes: the next takes the row beside it"
expect v13 pause              no-stale-write broken "the sale's write does not look at the row"
expect v13 pause              no-oversell    broken "the paused holder's write lands on its old read"
expect v13 short-pause        mutex          holds  "a pause shorter than the lease"
expect v13 clock-jump-forward mutex          broken "a client's clock ahead takes a live lease"
expect v13 clock-jump-forward no-oversell    broken "a client's clock ahead takes a live lease"
expect v13 crash              progress       holds  "the dead holder's lock_until passes"
expect v14 pause              mutex          broken "the paused holder and the next hold at once"
expect v14 pause              no-stale-write holds  "the paused holder's lease check stops it"
expect v14 pause              no-oversell    holds  "the paused holder's lease check stops it"
expect v14 late-pause         no-oversell    holds  "paused after its lease check: its transaction finds the row names another"
expect v14 late-pause         no-stale-write broken "a lone late write, the row still naming it, lands (harmless)"
expect v14 late-pause+no-check no-oversell   broken "without the row's check the stale write lands"
expect v14 txn-pause          no-oversell    holds  "the transaction locks the row: the next take waits for its commit"
expect v14 clock-jump-forward mutex          holds  "the lease's times on the database's clock"
expect v14 clock-jump-db      mutex          broken "the database's clock jumps: the holder's lease passes"
expect v14 clock-jump-db      no-oversell    holds  "the transaction's check of the row refuses the stale write"
expect v14 crash              progress       holds  "the dead holder's lock_until passes"

# Every broken row: a readable sequence beside it, ending with the break.
broken=$(jq -r '.[] | select(.holds | not) | "\(.version)-\(.fault)-\(.property)"' "$OUT/model.json" 2>/dev/null)
check "some rows are broken" test -n "$broken"
for row in $broken; do
    f="$OUT/model/$row.txt"
    check "$row: a readable sequence (client steps, then the break)" \
        sh -c "grep -qE '^[A-C]: ' '$f' && tail -n 1 '$f' | grep -q '^=> .* is broken'"
done
# ... and its sequence diagram (model/diagram): an arrow per step a client sends, a note
# per step of its own or of Redis, the break in red, XML that parses.
for row in $broken; do
    f="$OUT/model/$row.txt" svg="$OUT/model/$row.svg"
    sends=$(grep -cE '^[A-Z]: ' "$f")
    own=$(grep -cE '^[A-Z]: (works|paused|resumes|release gap|lease check)' "$f")
    check_eq "$row: a diagram, an arrow per step sent" $((sends - own)) "$(grep -c 'marker-end=' "$svg" 2>/dev/null)"
    # (a cycle, "then, for ever", breaks with its whole loop: no one step is red)
    check "$row: the diagram parses, its break said in red (and its last step, but for a cycle)" sh -c \
        "$PYTHON -c 'import sys, xml.dom.minidom; xml.dom.minidom.parse(sys.argv[1])' '$svg' && grep -q 'class=\"broken\"' '$svg' && { grep -q '^then, for ever:' '$f' || grep -q 'stroke=\"#d62728\"' '$svg'; }"
done
check "v5 release-gap's diagram: the DEL of B's lock is an arrow to Redis, C's grant the red one" sh -c \
    "grep -q '>A: DEL deletes B&apos;s lock<\|>A: DEL deletes B.s lock<' '$OUT/model/v5-release-gap-mutex.svg' && grep 'stroke=\"#d62728\"' -A0 '$OUT/model/v5-release-gap-mutex.svg' | grep -q 'C: acquire ok'"
check "v4's sequence: A's DEL deletes B's lock" grep -q "^A: DEL deletes B's lock" \
    "$OUT/model/v4-long-work-no-foreign-delete.txt"
check "v9 late-pause's sequence: A's late write lands with no grant after its pause (harmless)" \
    awk '/^A: resumes/ { r = 1 } r && / acquire ok/ { bad = 1 } END { exit !(r && !bad) }' \
    "$OUT/model/v9-late-pause-no-stale-write.txt"
check "v3's sequence: B refused for ever" sh -c \
    "grep -A1 '^then, for ever:' '$OUT/model/v3-crash-progress.txt' | grep -q 'B: acquire refused'"
check "v11 pause's sequence: A's session expires, its node with it, and B's watch lets B in" \
    awk '/^A: acquire ok/ { a = 1 } a && /^A: paused/ { p = 1 } p && /^A.s session expires: its node/ { e = 1 }
         e && /B.s watch fires/ { w = 1 } w && /^B: acquire ok/ { b = 1 } /^A: (resumes|multi)/ { bad = 1 }
         END { exit !(b && !bad) }' "$OUT/model/v11-pause-mutex.txt"
check "v11 unguarded's sequence: A's multi, on its read from before B's write, lands after it" \
    awk '/^A: read stock 2 \(version 0\)/ { r = 1 } r && /^B: read stock 2 \(version 0\)/ { rb = 1 }
         rb && /^B: multi writes stock 1/ { wb = 1 } wb && /^A: multi writes stock 1 / { wa = 1 }
         END { exit !wa }' "$OUT/model/v11-pause+unguarded-no-oversell.txt"
check "v11 no-check's sequence: a multi lands after its client's session expired" \
    awk '/^A.s session expires/ { e = 1 } e && /^A: multi writes/ { w = 1 } END { exit !w }' \
    "$OUT/model/v11-pause+no-check-no-stale-write.txt"
check "v11's diagrams name ZooKeeper's lane, the others Redis's" sh -c \
    "grep -q '>ZooKeeper</text>' '$OUT/model/v11-pause-mutex.svg' && ! grep -q '>Redis</text>' '$OUT/model/v11-pause-mutex.svg' && grep -q '>Redis</text>' '$OUT/model/v4-long-work-mutex.svg'"
check "v13 pause's sequence: A's lease passes while it is paused, B takes the row and sells, then A writes on its old read" \
    awk '/^A: read stock 2$/ { r = 1 } r && /^A: paused/ { p = 1 } p && /^A.s lease expires/ { e = 1 }
         e && /^B: acquire ok/ { b = 1 } b && /^B: write stock 1/ { wb = 1 } wb && /^A: write stock 1/ { wa = 1 }
         END { exit !wa }' "$OUT/model/v13-pause-no-oversell.txt"
check "v14 late-pause+no-check's sequence: A's write, unchecked, lands after B's" \
    awk '/^A: lease check ok/ { c = 1 } c && /^A: paused/ { p = 1 } p && /^B: write stock 1/ { wb = 1 }
         wb && /^A: write stock 1/ { wa = 1 } END { exit !wa }' \
    "$OUT/model/v14-late-pause+no-check-no-oversell.txt"
check "v13's and v14's diagrams name MariaDB's lane" sh -c \
    "grep -q '>MariaDB</text>' '$OUT/model/v13-pause-no-oversell.svg' && grep -q '>MariaDB</text>' '$OUT/model/v14-clock-jump-db-mutex.svg' && ! grep -q '>Redis</text>' '$OUT/model/v13-pause-no-oversell.svg'"

t_report
