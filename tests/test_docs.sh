#!/usr/bin/env bash
# test_docs.sh - The docs, held to what they promise: the lesson (docs/evolution.md) at
# most 40 KB, one section of at most 40 lines per version, in version order; every other
# page of docs/ at most 30 KB; each count (versions, the evolution's rows, the demo's rows,
# make test's checks) stated in one place and equal to what the tools print; every flag of
# --help in operations.md's flag table and every metric the service exports in its metrics
# list; no commit hashes in the docs; and nowhere in the repository words that belong to
# the material the project was made from rather than to the project.
# Needs a build (make) for --help and --list-versions; runs no server.
set -u
cd "$(dirname "$0")/.."
source tests/lib.sh

SVC=${SERVICE_BIN:-build/inventory-service}
EVO=docs/evolution.md OPS=docs/operations.md README=README.md
KB=1024

# --- sizes ---
check "docs/evolution.md is at most 40 KB" test "$(wc -c < "$EVO")" -le $((40 * KB))
for f in docs/*.md; do
    [ "$f" = "$EVO" ] && continue
    check "$f is at most 30 KB" test "$(wc -c < "$f")" -le $((30 * KB))
done

# --- the lesson: one section per version, in order, each one screen ---
# A version's section runs from its heading ("## vN — ..." or "## NAME — ...") to the next
# heading of level 2; its lines are counted whole, blank ones too.
if [ -x "$SVC" ]; then
    versions=$("$SVC" --list-versions | cut -f1)
else
    versions=""
    check "the service is built ($SVC: make), for --list-versions and --help" false
fi
check "--list-versions names versions (the checks below read the right list)" \
    test "$(echo "$versions" | grep -c '^v[0-9]')" -ge 10
sections=$(grep -oE '^## [a-z0-9]+ — ' "$EVO" | sed -E 's/^## //; s/ — $//')
check_eq "evolution.md: the versions' sections in --list-versions' order (v1, v2, ...)" \
    "$(echo "$versions" | grep '^v[0-9]' | tr '\n' ' ')" \
    "$(echo "$sections" | grep '^v[0-9]' | tr '\n' ' ')"
section() {   # section NAME: the lines of NAME's section, its heading first
    awk -v h="## $1 — " 'index($0, h) == 1 { on = 1; print; next } /^## / { on = 0 } on' "$EVO"
}
for v in $versions; do
    check_eq "evolution.md: one section for $v" 1 "$(echo "$sections" | grep -cx "$v")"
    n=$(section "$v" | wc -l)
    check "evolution.md: $v's section is at most 40 lines, blank ones counted ($n)" test "$n" -le 40
    case $v in v[0-9]*)
        check "evolution.md: $v's section gives the command that shows it" \
            sh -c "awk -v h='## $v — ' 'index(\$0, h) == 1 { on = 1; next } /^## / { on = 0 } on' $EVO |
                   grep -qE -- '(--lock|--only) $v\\b'" ;;
    esac
    case $v in v[3-9]|v10)
        check "evolution.md: $v's section has the model checker's finding, linked to models.md" \
            sh -c "awk -v h='## $v — ' 'index(\$0, h) == 1 { on = 1; next } /^## / { on = 0 } on' $EVO |
                   grep -q 'models.md'" ;;
    esac
done

# --- words of the source material, not of the project ---
# Searched in every file git knows or would add (code, tests, scripts, docs). Allowed:
# Redis Cluster's seed nodes and the load tool's --seed, an upstream project's own issue
# number (libfaketime's), a fuzzer's seeds. The patterns are bracketed so that this file does
# not match them.
words='[i]ssues? #?[0-9]+|\b(the|this|our|per the) [b]rief\b([^a-z]|$| (says|asks|wants|said|names))|[b]rief\.md|\b[b]riefs\b|\b[b]rief'"'"'s\b|(in|of|as) the [s]eeds\b|the [s]eeds?'"'"'|\b[s]eeds/|the [s]eeds (do|does|say|says|show|shows|hold|holds|use|uses|wait|code|test|tests)\b'
hits=$(git grep --untracked -nIiE "$words" -- . ':!results' ':!build' ':!run' 2>/dev/null |
       sed -E 's/libfaketime [i]ssue #[0-9]+//Ig' | grep -iE "$words" | cut -c1-120)
check_eq "no source-material words (an issue number, the b-word, the s-word) anywhere" \
    "" "$hits"

# --- no commit hashes in the docs ---
# A word of 7 to 40 hex digits (a digit and a letter among them) on a line that, or whose
# neighbour, names a commit, a build, a worktree, git or a date.
ctx='commit|[Bb]uild|worktree|git |old-bin|[0-9]{4}-[0-9]{2}-[0-9]{2}'
hashes=$(for f in "$README" docs/*.md; do
    grep -noE '(^|[^0-9A-Za-z_])[0-9a-f]{7,40}([^0-9A-Za-z_-]|$)' "$f" | while IFS=: read -r n m; do
        w=$(echo "$m" | tr -cd '0-9a-f')
        case $w in *[0-9]*) ;; *) continue ;; esac
        case $w in *[a-f]*) ;; *) continue ;; esac
        sed -n "$((n > 1 ? n - 1 : 1)),$((n + 1))p" "$f" | grep -qE "$ctx" && echo "$f:$n: $w"
    done
done)
check_eq "no commit hashes in README.md and docs/ (git history keeps the builds)" "" "$hashes"

# --- each count in one place, equal to what the tools say ---
rows=$(loadtest/evolution --list | wc -l)
demo_rows=$(loadtest/evolution --demo --list | awk 'NF == 0 { exit } { n++ } END { print n + 0 }')
nver=$(echo "$versions" | grep -c '^v[0-9]')
check "loadtest/evolution --list gives rows, the demo fewer (the counts below are real)" \
    test "$rows" -gt "$demo_rows" -a "$demo_rows" -gt 0
all_docs="$README docs/*.md"
check_eq "README.md states the full run's rows: all $rows rows" \
    1 "$(grep -c "all $rows rows" "$README")"
check_eq "README.md states the demo's rows: the demo's $demo_rows rows" \
    1 "$(grep -c "the demo's $demo_rows rows" "$README")"
check_eq "README.md and docs/: no other count of the full run's or the demo's rows" "" \
    "$(grep -noE "(all|the demo's) [0-9]+ rows" $all_docs |
       grep -vE ":(all $rows|the demo's $demo_rows) rows$" | tr '\n' ' ')"
# A number of versions, in words or digits (five and up: "two versions share a step" is
# no count), is the number of versions --list-versions gives.
words_to_n='one 1 two 2 three 3 four 4 five 5 six 6 seven 7 eight 8 nine 9 ten 10 eleven 11
            twelve 12 thirteen 13 fourteen 14 fifteen 15 sixteen 16 seventeen 17'
stale=$(grep -noiE "\b([a-z]+|[0-9]+)[ -](lock )?versions?\b" $all_docs | while IFS= read -r m; do
    w=$(echo "${m##*:}" | awk '{ print tolower($1) }' | sed 's/-.*//')
    n=$(echo "$words_to_n" | tr -s ' \n' '\n' | paste - - -d' ' | awk -v w="$w" '$1 == w { print $2 }')
    case $w in [0-9]*) n=$w ;; esac
    [ -n "$n" ] && [ "$n" -ge 5 ] && [ "$n" != "$nver" ] && echo "$m"
done | tr '\n' ' ')
check_eq "README.md and docs/: every number of versions is $nver (--list-versions)" "" "$stale"
nver_word=$(echo "$words_to_n" | tr -s ' \n' '\n' | paste - - -d' ' | awk -v n="$nver" '$2 == n { print $1 }')
check "README.md says how many versions the lock comes in" \
    grep -qiE "comes in (${nver_word:-$nver}|$nver) versions" "$README"
# make test's checks: the README's "about N checks", near the last whole run's sum
# (tests/run writes results/last-test.txt at its end; a run of this suite reads the run
# before, so within 5%). Nowhere else a count of them.
said=$(grep -oE 'about [0-9,]+ checks' "$README" | head -1 | tr -dc 0-9)
check "README.md says about how many checks make test runs" test -n "$said"
if [ -f results/last-test.txt ]; then
    last=$(awk '{ print $1 + $3 + $5 }' results/last-test.txt)
    check "README.md's about $said checks is within 5% of the last whole run's $last" \
        awk -v a="${said:-0}" -v b="$last" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d * 20 <= b) }'
else
    skip "README.md's count of checks against the last whole run" \
        "no results/last-test.txt (tests/run writes it after a whole run)"
fi
check_eq "docs/: no count of make test's checks (README.md has it)" "" \
    "$(grep -noE '\b[0-9],?[0-9]{3} (checks|passed)\b' docs/*.md | tr '\n' ' ')"

# --- operations.md: every flag in its table, every metric in its list ---
help_flags=$([ -x "$SVC" ] && "$SVC" --help | sed '/^Lock versions:/,$d' | grep -oE -- '--[a-z][a-z-]*[a-z]' | sort -u)
table=$(awk '/^\| flag \| what it sets \|/ { on = 1 } on && !/^\|/ { exit } on' "$OPS")
check "operations.md has the flag table (| flag | what it sets |)" test -n "$table"
missing=""
for fl in $help_flags; do echo "$table" | grep -qE -- "$fl([^a-z-]|$)" || missing="$missing $fl"; done
check "--help prints flags (the check reads the right text)" test "$(echo "$help_flags" | wc -w)" -ge 30
check_eq "operations.md's flag table names every flag --help prints" "" "${missing# }"
extra=""
for fl in $(echo "$table" | awk -F'|' '{ print $2 }' | grep -oE -- '--[a-z][a-z-]*[a-z]' | sort -u); do
    echo "$help_flags" | grep -qx -- "$fl" || extra="$extra $fl"
done
check_eq "operations.md's flag table names no flag --help does not print" "" "${extra# }"
metrics=$(grep -rhoE '"[^"]*inventory_[a-z0-9_]+' service lock redis zk common --include=*.c --include=*.h |
          grep -oE 'inventory_[a-z0-9_]+' | sort -u)
check "the sources export metrics (the check reads the right files)" test "$(echo "$metrics" | wc -w)" -ge 30
missing=""
for m in $metrics; do grep -qE "\b$m\b" "$OPS" || missing="$missing $m"; done
check_eq "operations.md names every inventory_* metric the service exports" "" "${missing# }"

# --- every link reaches its file, and its heading ---
# A relative link of README.md or docs/ names a file that exists and, after '#', a heading
# of it (GitHub's anchors: lower case, punctuation dropped, spaces as hyphens).
cat > "$T_TMP/links.py" <<'PY'
import os, re, sys
def slug(h):
    return re.sub(r'[^\w\- ]', '', h.strip().lower()).replace(' ', '-')
def anchors(path):
    out, seen, code = set(), {}, False
    for line in open(path, encoding='utf-8'):
        if line.lstrip().startswith('```'):
            code = not code
        m = None if code else re.match(r'^#{1,6} (.*)', line)
        if m:
            s = slug(m.group(1)); n = seen.get(s, 0); seen[s] = n + 1
            out.add(s if n == 0 else '%s-%d' % (s, n))
    return out
for f in sys.argv[1:]:
    text = re.sub(r'```.*?```', '', open(f, encoding='utf-8').read(), flags=re.S)
    for target in re.findall(r'\]\(([^)\s]+)\)', text):
        if re.match(r'^[a-z]+:', target):
            continue
        path, _, frag = target.partition('#')
        full = os.path.normpath(os.path.join(os.path.dirname(f), path)) if path else f
        if not os.path.exists(full):
            print('%s: %s (no such file)' % (f, target))
        elif frag and full.endswith('.md') and frag not in anchors(full):
            print('%s: %s (no such heading)' % (f, target))
PY
check_eq "every relative link of README.md and docs/ reaches its file and heading" "" \
    "$("$PYTHON" "$T_TMP/links.py" "$README" docs/*.md)"

# --- the README's doors ---
for d in docs/evolution.md docs/operations.md docs/performance.md docs/models.md docs/design.md; do
    check "README.md links to $d" grep -qF "]($d" "$README"
done
if [ -f docs/choosing.md ]; then
    check "README.md links to docs/choosing.md (which lock for which need)" grep -qF "](docs/choosing.md" "$README"
fi
for f in docs/*.md; do
    [ "$f" = docs/choosing.md ] && continue
    check "README.md links to $f (every page of docs/ has a door)" grep -qF "]($f" "$README"
done

t_report
