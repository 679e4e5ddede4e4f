#!/usr/bin/env bash
# test_structure.sh - The shape issue 18 asked for, checked on the code as it is: only the
# Redis layer includes hiredis; no two files of lock/ or service/ (nor of the report page,
# loadtest/report*.c) call each other in a loop; no function longer than 70 lines or with
# a complexity of 20 (pmccabe; the C of loadtest/ too); the sale scripts' KEYS and ARGV
# named once (in the Lua) and every name filled by the C side; no decision on an error
# message's text (no strstr, loadtest/ too). Needs a build (make) for the call graph.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

# --- hiredis only in lock/redis/ ---
includers=$(grep -l '#include <hiredis' lock/*.c lock/*.h service/*.c service/*.h 2>/dev/null | tr '\n' ' ')
check_eq "only lock/redis/ includes hiredis (lock/, service/)" "" "$includers"
check "lock/redis/ does include it (the check looks at the right files)" grep -q '#include <hiredis' lock/redis/internal.h

# --- no call loops between files ---
# Each object's defined and undefined symbols (nm) give the calls between files.
cat > "$T_TMP/loops.py" <<'PY'
import glob, subprocess, sys
pats = sys.argv[2:] or ['lock/*.o', 'lock/redis/*.o', 'service/*.o']
objs = sorted(o for p in pats for o in glob.glob(sys.argv[1] + '/' + p))
srcs = {o: o[len(sys.argv[1]) + 1:-2] + '.c' for o in objs}
objs = [o for o in objs if __import__('os').path.exists(srcs[o])]   # stale objects out
defs, uses = {}, {}
for o in objs:
    for line in subprocess.run(['nm', o], capture_output=True, text=True).stdout.splitlines():
        p = line.split()
        if len(p) == 3 and p[1] in 'TDBR':
            defs[p[2]] = o
        elif len(p) == 2 and p[0] == 'U':
            uses.setdefault(o, set()).add(p[1])
g = {o: {defs[u] for u in uses.get(o, ()) if u in defs and defs[u] != o} for o in objs}
index, low, stack, on, loops = {}, {}, [], set(), []
def visit(v):
    index[v] = low[v] = len(index); stack.append(v); on.add(v)
    for w in g[v]:
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        comp = []
        while True:
            w = stack.pop(); on.discard(w); comp.append(srcs[w])
            if w == v:
                break
        if len(comp) > 1:
            loops.append(' '.join(sorted(comp)))
for v in objs:
    if v not in index:
        visit(v)
print(len(objs))
for l in loops:
    print(l)
PY
out=$(python3 "$T_TMP/loops.py" build)
check "the call graph covers lock/, lock/redis/ and service/ (over 30 objects)" test "$(echo "$out" | head -1)" -gt 30
check_eq "no two files call each other in a loop" "" "$(echo "$out" | tail -n +2)"
# The report page's files: the page calls its pictures, both call the HTML helpers, never back.
out=$(python3 "$T_TMP/loops.py" build 'loadtest/report*.o')
check "the call graph covers loadtest/report*.c (3 objects or more)" test "$(echo "$out" | head -1)" -ge 3
check_eq "no two of loadtest/report*.c call each other in a loop" "" "$(echo "$out" | tail -n +2)"

# --- functions that fit on a screen ---
if command -v pmccabe >/dev/null; then
    long=$(pmccabe lock/*.c lock/redis/*.c service/*.c loadtest/*.c 2>/dev/null | awk '$5 > 70 || $1 >= 20 { print $6, $7 }')
    check_eq "pmccabe: no function over 70 lines or of complexity 20 or more" "" "$long"
    check "pmccabe sees the sale (the check looks at the right files)" \
        sh -c "pmccabe service/sale.c | grep -q sale_serve"
    check "pmccabe sees the load client (loadtest/*.c is checked too)" \
        sh -c "pmccabe loadtest/load.c | grep -q answer_parse"
else
    echo "skip   pmccabe is not installed (make deps installs it)"
    check "pmccabe is installed" false
fi

# --- the sale scripts' KEYS and ARGV: named in the Lua, every name filled in C ---
for s in sale_atomic sale_write sale_write_fenced; do
    up=$(echo "$s" | tr a-z A-Z)
    names=$(grep -oE "${up}_(KEY|ARG)_[A-Z_]+" build/script_args.h | sort -u)
    check "$s: its names are in build/script_args.h" test -n "$names"
    missing=""
    for n in $names; do grep -q "\b$n\b" service/*.c || missing="$missing $n"; done
    check_eq "$s: the C side fills every KEYS and ARGV name the script declares" "" "$missing"
    check "$s: the Lua reads KEYS and ARGV only by name" \
        sh -c "! grep -nE 'KEYS\[[0-9]|ARGV\[[0-9]' service/scripts/$s.lua"
done
check "the idempotency prelude is in every keyed sale script (build/scripts)" \
    sh -c "grep -l 'local function idem_seen' build/scripts/sale_atomic.lua build/scripts/sale_write.lua build/scripts/sale_write_fenced.lua | wc -l | grep -qx 3"
check_eq "the prelude is written once" 1 "$(grep -l 'local function idem_seen' service/scripts/*.lua lock/scripts/*.lua | wc -l)"

# --- no decision on an error's text ---
check_eq "no strstr in lock/, service/ or loadtest/" "" "$(grep -n 'strstr' lock/*.c lock/redis/*.c service/*.c loadtest/*.c)"
check "lock_error has no io flag (one fault enum)" sh -c "! grep -q 'int io' lock/error.h lock/lock.h"

t_report
