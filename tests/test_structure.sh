#!/usr/bin/env bash
# test_structure.sh - The house's shape, checked on the code as it is: only the Redis layer
# (redis/) includes hiredis; no two files call each other in a loop (common/, redis/,
# lock/, service/ and loadtest/); no function longer than 70 lines or with a complexity of
# 20 (pmccabe); the sale scripts' KEYS and ARGV named once (in the Lua) and every name
# filled by the C side; no decision on an error message's text (no strstr); a grant's and
# a request's walk through the call graph; the README a short front door whose links and
# folder map name files that exist.
# Needs a build (make) for the call graph.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

C_DIRS="common redis zk db lock service service/* loadtest"   # every folder of C, each a layer
c_files() { for d in $C_DIRS; do ls "$d"/*.$1 2>/dev/null; done; }

# --- hiredis only in redis/ ---
includers=$(grep -l '#include <hiredis' $(c_files c) $(c_files h) | grep -v '^redis/' | tr '\n' ' ')
check_eq "only redis/ includes hiredis (common/, lock/, service/, loadtest/)" "" "$includers"
check "redis/ does include it (the check looks at the right files)" grep -q '#include <hiredis' redis/internal.h
includers=$(grep -l '#include <zookeeper' $(c_files c) $(c_files h) | grep -v '^zk/' | tr '\n' ' ')
check_eq "only zk/ includes zookeeper.h (common/, redis/, lock/, service/, loadtest/)" "" "$includers"
check "zk/ does include it (the check looks at the right files)" grep -q '#include <zookeeper/zookeeper.h>' zk/internal.h
includers=$(grep -lE '#include <(mysql|mariadb|errmsg)' $(c_files c) $(c_files h) | grep -v '^db/' | tr '\n' ' ')
check_eq "only db/ includes MariaDB's client (common/, redis/, zk/, lock/, service/, loadtest/)" "" "$includers"
check "db/ does include it (the check looks at the right files)" grep -q '#include <mysql.h>' db/internal.h

# --- no include that points up a layer ---
# The store is below the sale, and only the HTTP side knows libmicrohttpd: no file of
# service/store/ includes service/sale/ or service/http/, and no header outside
# service/http/ includes microhttpd.h (it would hand it to every file that includes it).
# up_includes DIR: those files under DIR, space-separated.
up_includes() {
    (cd "$1" && { grep -lE '#include *"service/(sale|http)/' service/store/*.[ch] 2>/dev/null
                  grep -l '#include *<microhttpd.h>' $(c_files h) 2>/dev/null | grep -v '^service/http/'
                } | tr '\n' ' ')
}
check_eq "no include points up a layer (store to sale or http; microhttpd.h outside http/)" "" \
    "$(up_includes .)"
check "service/http/ does include microhttpd.h (the check reads the right headers)" \
    grep -q '#include <microhttpd.h>' service/http/http.h
mkdir -p "$T_TMP/plant/service/store" "$T_TMP/plant/service/sale" "$T_TMP/plant/service/http"
echo '#include "service/sale/engine.h"' > "$T_TMP/plant/service/store/up.h"
echo '#include "service/http/http.h"' > "$T_TMP/plant/service/store/up.c"
echo '#include <microhttpd.h>' > "$T_TMP/plant/service/sale/up.h"
echo '#include <microhttpd.h>' > "$T_TMP/plant/service/http/fine.h"
check_eq "  a planted store header, store file and sale header that include up are found" \
    "service/store/up.c service/store/up.h service/sale/up.h " "$(up_includes "$T_TMP/plant")"

# --- no call loops between files ---
# Each object's defined and undefined symbols (nm) give the calls between files.
cat > "$T_TMP/loops.py" <<'PY'
import glob, subprocess, sys
objs = sorted(o for d in sys.argv[2:] for o in glob.glob(sys.argv[1] + '/' + d + '/*.o'))
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
out=$("$PYTHON" "$T_TMP/loops.py" build common redis zk db lock service service/config service/events \
    service/faults service/http service/metrics service/sale service/store)
check "the service's call graph covers common/, redis/, lock/ and service/ (over 50 objects)" \
    test "$(echo "$out" | head -1)" -gt 50
check_eq "no two files of the service call each other in a loop" "" "$(echo "$out" | tail -n +2)"
out=$("$PYTHON" "$T_TMP/loops.py" build loadtest common)
check "the load tools' call graph covers loadtest/ (3 objects or more)" test "$(echo "$out" | head -1)" -ge 3
check_eq "no two files of loadtest/ call each other in a loop" "" "$(echo "$out" | tail -n +2)"

# --- functions that fit on a screen ---
if command -v pmccabe >/dev/null; then
    long=$(pmccabe $(c_files c) 2>/dev/null | awk '$5 > 70 || $1 >= 20 { print $6, $7 }')
    check_eq "pmccabe: no function over 70 lines or of complexity 20 or more" "" "$long"
    check "pmccabe sees the sale (the check looks at the right files)" \
        sh -c "pmccabe service/sale/sale.c | grep -q sale_serve"
    check "pmccabe sees the load client (loadtest/*.c is checked too)" \
        sh -c "pmccabe loadtest/answer.c | grep -q answer_parse"
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
    for n in $names; do grep -q "\b$n\b" service/store/*.c || missing="$missing $n"; done
    check_eq "$s: the C side fills every KEYS and ARGV name the script declares" "" "$missing"
    check "$s: the Lua reads KEYS and ARGV only by name" \
        sh -c "! grep -nE 'KEYS\[[0-9]|ARGV\[[0-9]' service/store/scripts/$s.lua"
done
check "the idempotency prelude is in every keyed sale script (build/scripts)" \
    sh -c "grep -l 'local function idem_seen' build/scripts/sale_atomic.lua build/scripts/sale_write.lua build/scripts/sale_write_fenced.lua | wc -l | grep -qx 3"
check_eq "the prelude is written once" 1 "$(grep -l 'local function idem_seen' service/store/scripts/*.lua lock/scripts/*.lua | wc -l)"

# --- no decision on an error's text ---
check_eq "no strstr in any C folder" "" "$(grep -n 'strstr' $(c_files c))"
check "the generic error has no io flag (one fault enum)" sh -c "! grep -q 'int io' common/error.h lock/lock.h redis/redis.h"

# --- a grant's and a request's walk: few returns to a file already left ---
# The objects' call graph, built without optimisation (every function its own, calls in
# the order written) with their debug info (each function's parameters' types): from an
# entry, the walk follows every direct call to a function that takes the value (a grant,
# a sale request; or a struct holding a pointer to it), in the order written, each
# function opened once. A stay is a run of functions of one file; a return is a stay in a
# file the walk had already left. Indirect calls (a version's store, the store seam, an
# engine) are not followed: each side of them is walked from its own entry.
mkdir -p "$T_TMP/o0"
o0_ok=1
for f in $(for d in common redis zk lock service service/*/; do ls "${d%/}"/*.c; done); do
    mkdir -p "$T_TMP/o0/$(dirname "$f")"
    cc -O0 -g -std=c11 -D_GNU_SOURCE -pthread -Ibuild -I. $(pkg-config --cflags libmicrohttpd hiredis jansson) \
        -c -o "$T_TMP/o0/${f%.c}.o" "$f" 2>/dev/null || o0_ok=0
done
check "the objects for the walks build (-O0 -g)" test "$o0_ok" = 1
cat > "$T_TMP/walk.py" <<'PY'
# walk.py OBJDIR ENTRY TYPE FOLDER...: the walk of a TYPE value from function ENTRY.
import glob, os, pickle, re, subprocess, sys
objdir, entry, typename, folders = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
calls = {}    # (file, function) -> the names it calls, in the order written
takes = set() # (file, function) that takes the value: a parameter of type TYPE (or a
              # pointer to it), or of a struct with such a member (a holder)

def cached(o, kind, make):
    """make(o), kept beside o (the walks read the same objects: each parsed once)."""
    path = f'{o}.{kind}.pickle'
    if os.path.exists(path):
        with open(path, 'rb') as f:
            return pickle.load(f)
    v = make(o)
    with open(path, 'wb') as f:
        pickle.dump(v, f)
    return v

def dies_of(o):
    """Every DWARF entry of object o by offset: tag, name, type, children."""
    out = subprocess.run(['objdump', '--dwarf=info', o], capture_output=True, text=True).stdout
    dies, stack, cur = {}, [], None
    for line in out.splitlines():
        m = re.match(r'\s*<(\d+)><([0-9a-f]+)>: Abbrev Number: \d+ \((\w+)\)', line)
        if m:
            depth = int(m.group(1))
            cur = dies[int(m.group(2), 16)] = {'tag': m.group(3), 'depth': depth, 'children': []}
            while stack and stack[-1]['depth'] >= depth:
                stack.pop()
            if stack:
                stack[-1]['children'].append(cur)
            stack.append(cur)
            continue
        m = re.match(r'\s*<[0-9a-f]+>\s+(DW_AT_type|DW_AT_name)\s*:\s*(.*)$', line)
        if m and cur is not None:
            if m.group(1) == 'DW_AT_type':
                t = re.search(r'<0x([0-9a-f]+)>', m.group(2))
                cur['type'] = int(t.group(1), 16) if t else None
            else:
                cur['name'] = m.group(2).split(':')[-1].strip()
    return dies

def is_value(dies, t, holder=True):
    """1 when type t is TYPE, a pointer or array of it, or (holder) a struct holding one."""
    d, hops = dies.get(t), 0
    while d is not None and hops < 10:
        if d['tag'] == 'DW_TAG_structure_type':
            return d.get('name') == typename or (holder and any(
                c['tag'] == 'DW_TAG_member' and c.get('type') and is_value(dies, c['type'], False)
                for c in d['children']))
        if d['tag'] not in ('DW_TAG_pointer_type', 'DW_TAG_const_type', 'DW_TAG_volatile_type',
                            'DW_TAG_typedef', 'DW_TAG_array_type'):
            return False
        d, hops = dies.get(d.get('type')), hops + 1
    return False

def disassembly(o):
    """Object o's disassembly with its relocations, as lines."""
    return subprocess.run(['objdump', '-d', '-r', '--no-show-raw-insn', o],
                          capture_output=True, text=True).stdout.splitlines()

local = {}    # file -> its functions by name (a static one is found in its own file first)
for f in folders:
    for o in sorted(glob.glob(os.path.join(objdir, f, '*.o'))):
        src = os.path.relpath(o, objdir)[:-2] + '.c'
        dies = cached(o, 'dies', dies_of)
        for d in dies.values():
            if d['tag'] == 'DW_TAG_subprogram' and 'name' in d and any(
                    c['tag'] == 'DW_TAG_formal_parameter' and c.get('type') and is_value(dies, c['type'])
                    for c in d['children']):
                takes.add((src, d['name']))
        cur, local[src] = None, {}
        for line in cached(o, 'asm', disassembly):
            m = re.match(r'^[0-9a-f]+ <([^>]+)>:$', line)
            if m:
                cur = local[src][m.group(1)] = (src, m.group(1))
                calls[cur] = []
            elif cur and (m := re.search(r'R_X86_64_PLT32\s+([A-Za-z_]\w*)', line)):
                calls[cur].append(m.group(1))
            elif cur and (m := re.search(r'\tcall\s+[0-9a-f]+ <([A-Za-z_][\w.]*)>', line)):
                calls[cur].append(m.group(1))
public = {}
for key in calls:
    public.setdefault(key[1], key)
seq, seen = [], set()

def visit(key):
    """Enters key (a stay's part), then, the first time, what it calls with the value."""
    seq.append(key)
    if key in seen:
        return
    seen.add(key)
    for name in calls[key]:
        callee = local[key[0]].get(name) or public.get(name)
        if callee in takes:
            visit(callee)

visit(public[entry])
stays = []
for src, fn in seq:
    if stays and stays[-1][0] == src:
        stays[-1][1].append(fn)
    else:
        stays.append((src, [fn]))
left, returns = [], 0
for src, fns in stays:
    print(('RET ' if src in left else '    ') + src, ' '.join(fns))
    returns += src in left
    left.append(src)
print(f"{len(stays)} stays; {len(set(left))} files; {returns} returns")
PY
# walk ENTRY TYPE: "<stays> <files> <returns>" and the route, from the unoptimised objects.
walk() { "$PYTHON" "$T_TMP/walk.py" "$T_TMP/o0" "$1" "$2" common redis zk lock service service/config \
    service/events service/faults service/http service/metrics service/sale service/store; }
route=$(walk lock_acquire lock_grant)
set -- $(echo "$route" | tail -1)
check "a grant's walk from lock_acquire enters 4 files or more (the check sees the library)" test "${3:-0}" -ge 4
check "a grant's walk from lock_acquire returns to a file it left at most 3 times ($5 now)" test "${5:-99}" -le 3
[ "${5:-99}" -le 3 ] || echo "$route" | sed 's/^/       /'
for entry in thread_run sale_serve rs_sell rs_sell_atomic; do
    route=$(walk "$entry" sale_request)
    set -- $(echo "$route" | tail -1)
    check "a request's walk from $entry returns to a file it left at most 3 times ($5 now)" test "${5:-99}" -le 3
    [ "${5:-99}" -le 3 ] || echo "$route" | sed 's/^/       /'
done
route=$(walk sale_serve sale_request)
set -- $(echo "$route" | tail -1)
check "a request's walk from sale_serve enters the faults' file too (the check sees the sale)" test "${3:-0}" -ge 2

# --- the README: a front door, and its folder map true ---
# The README stays short and speaks of this repository only: the long tables and the
# measured history live in docs/. Every link and every path its folder map names must
# exist, so a file that moves fails this until the map follows it. The map is the
# section headed "Layout" or "... folders".
# The top level holds folders and the project's own files: a stray output (an awk whose
# "x > y" wrote a file named by a number, once committed) is found here.
check_eq "the repository's top level: folders and README.md, Makefile, .gitignore, .ci only" "" \
    "$(git ls-files | awk -F/ 'NF == 1 && $1 !~ /^(README\.md|Makefile|\.gitignore)$/' | tr '\n' ' ')"
readme=README.md
check "README.md is at most 15,360 bytes" test "$(wc -c < "$readme")" -le 15360
check "README.md is at most 200 lines" test "$(wc -l < "$readme")" -le 200
check_eq "README.md: no line over 120 characters outside code blocks (line numbers)" "" \
    "$(awk '/^ *```/ { code = !code; next } !code && length > 120 { printf "%s%d", sep, NR; sep = " " }' "$readme")"
check_eq "README.md: no issue numbers (issue N)" "" "$(grep -noiE 'issue [0-9]+' "$readme" | tr '\n' ' ')"
check_eq "README.md: no \"this session\" or \"session's\"" "" "$(grep -noiE "this session|session's" "$readme" | tr '\n' ' ')"
check_eq "README.md: no path to ../shared (outside the repository)" "" "$(grep -noF '../shared' "$readme" | tr '\n' ' ')"
check_eq "README.md: every link is relative to a file of the repository (no ](/, ](http, ](..)" "" \
    "$(grep -noE '\]\((/|https?:|\.\./)[^)]*\)' "$readme" | tr '\n' ' ')"
links=$(grep -oE '\]\([^)[:space:]]+\)' "$readme" | sed -E 's/^\]\(//; s/\)$//; s/#.*//' | grep -vE '^$|^[a-z]+:' | sort -u)
absent=""
for l in $links; do test -e "$l" || absent="$absent $l"; done
check_eq "README.md: every relative link's target exists (anchor stripped)" "" "${absent# }"
for d in docs/evolution.md docs/operations.md docs/performance.md docs/models.md; do
    check "README.md links to $d" grep -qF "]($d" "$readme"
done
map=$(awk '/^## / { in_map = ($0 ~ /Layout|[Ff]olders/); next } in_map' "$readme")
check "README.md has a folder map (a section headed Layout or ... folders)" test -n "$map"
map_paths=$(echo "$map" | grep -oE '[A-Za-z0-9_.-]*(/[A-Za-z0-9_.-]*)+|[A-Za-z0-9_-]+\.(c|h|sh|lua)\b' |
    sed -E 's/\.+$//' | sort -u)   # a sentence's full stop is not part of the path
check "the folder map names paths (the check reads the right section)" test -n "$map_paths"
absent=""
for f in $map_paths; do
    case $f in /* | *..*) absent="$absent $f(outside)"; continue ;; esac
    test -e "$f" || absent="$absent $f"
done
check_eq "README.md's folder map: every path it names exists" "" "${absent# }"
c_files=$(find . \( -path ./build -o -path ./.git -o -path ./tests \) -prune -o -name '*.c' -print | sed 's|^\./||')
versions=$(echo "$c_files" | grep -E '(^|/)v[0-9]+_[a-z0-9_]+\.c$' | sort)
check "the check finds the eleven version files (v1_mutex.c ... v11_zookeeper.c)" test "$(echo "$versions" | wc -w)" -ge 11
sale=$(grep -lE '^[a-z].*[ *]sale_serve\(' $c_files)
check "the check finds the sale's file (where sale_serve is defined)" test -n "$sale"
locators=$(grep -lE 'const struct rd_locator rd_[a-z_]+_locator = ' $c_files | sort)
check "the check finds the locators (the files that choose a key's server)" test -n "$locators"
unnamed=""
for f in $versions; do echo "$map_paths" | grep -qxF "$f" || unnamed="$unnamed $f"; done
check_eq "README.md's folder map names every version's file" "" "${unnamed# }"
unnamed=""
for f in $sale $locators; do echo "$map_paths" | grep -qxF "$f" || unnamed="$unnamed $f"; done
check_eq "README.md's folder map names the sale and the locators (where a key's server is chosen)" "" "${unnamed# }"

# --- the shell: a function written once; an item's keys formatted in one place ---
# Every shell file of deploy/, loadtest/, tests/, model/ and .ci/ (a *.sh, or a bash
# script); each function name defined (NAME() { or function NAME) in two of them is listed
# with the files; so is every line, but in deploy/lib.sh and comments, that formats a key
# of an item by hand (KIND:{ followed by a $).
shell_files=$(for f in deploy/* loadtest/* loadtest/scenarios/*.sh tests/*.sh tests/run model/check model/diagram .ci/run; do
    [ -f "$f" ] || continue
    case $f in *.sh) echo "$f" ;; *) head -n 1 "$f" | grep -q '^#!.*\bbash\b' && echo "$f" ;; esac
done)
check "the shell files found: over 60, deploy/lib.sh, loadtest/run, a scenario and tests/run among them" \
    test "$(echo "$shell_files" | wc -l)" -gt 60 -a \
         "$(echo "$shell_files" | grep -cxE 'deploy/lib.sh|loadtest/run|loadtest/scenarios/pause.sh|tests/run')" = 4
dups=$(for f in $shell_files; do
        sed -nE 's/^[[:space:]]*(function[[:space:]]+)?([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\(\)[[:space:]]*\{.*/\2/p
                 s/^[[:space:]]*function[[:space:]]+([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\{.*/\1/p' "$f" |
            sort -u | sed "s|\$| $f|"
    done | awk '{ n[$1]++; at[$1] = at[$1] " " $2 } END { for (k in n) if (n[k] > 1) print k ":" at[k] }' | sort)
check_eq "no shell function is defined twice under one name" "" "$dups"
keys=$(grep -nE '[a-z]+:\{\$' $shell_files | grep -v '^deploy/lib\.sh:' | grep -vE '^[^:]+:[0-9]+:[[:space:]]*#')
check_eq "no shell file but deploy/lib.sh formats an item's key by hand (item_key)" "" "$keys"

# --- the service's defaults, said once in C and once for the scripts, and equal ---
c_item=$(sed -n 's/^#define ITEM_DEFAULT "\(.*\)"$/\1/p' common/item.h)
c_ttl=$(sed -n 's/^#define LOCK_TTL_DEFAULT_MS \([0-9]*\)$/\1/p' lock/lock.h)
check "the C defaults are found (ITEM_DEFAULT, LOCK_TTL_DEFAULT_MS)" test -n "$c_item" -a -n "$c_ttl"
check_eq "deploy/lib.sh's ITEM_DEFAULT is the service's" "$c_item" "$(bash -c '. deploy/lib.sh; echo $ITEM_DEFAULT')"
check_eq "deploy/lib.sh's TTL_DEFAULT_MS is the service's" "$c_ttl" "$(bash -c '. deploy/lib.sh; echo $TTL_DEFAULT_MS')"
check_eq "no C file but common/item.h names the default item" "" \
    "$(grep -ln 'inventory001' $(c_files c) $(c_files h) | grep -v '^common/item.h$' | tr '\n' ' ')"

t_report
