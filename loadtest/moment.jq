# moment.jq - The moment a flaw happened, cut out of a run's events (the live page's:
# one JSON object a line, each with its instance, as loadtest/run --moment captures them),
# for the report page's frozen timeline.
#
#   jq -s -c -f loadtest/moment.jq EVENTS.jsonl
#
# The moment is the first write refused (by the fence in Redis, or by a fenced holder that
# knew its lease lost: "fenced" and "refused"), else the first time two critical
# sections overlap, else the first lease found lost; null when there is none. Out:
#   {"kind": "fenced"|"overlap"|"lost", "at_ms": 400, "span_ms": 2000,
#    "lanes": [{"name": "inventory-8081/3", "bars": [[s, e, red]...],
#               "marks": [[t, "renewed"|"lost"|"fenced"|"released"|"deleted"]...]}...],
#    "deleted": {"by": LANE, "of": LANE, "at_ms": t}}     (only where it is known)
# with every time in ms from the window's start (at_ms before the moment: 400, or more where
# the deleting release came earlier).
# "deleted": the overlap's first holder B lost its key before its lease ran out and
# without giving it back, and between B's grant and the overlap the one release another
# lane X had answered "ok" (its DEL removed a key; v5's release is GET, then DEL): X's DEL
# removed B's lock. Marked on X's lane where X's release answered.
def lane: "\(.instance)/\(.th)";
def window_ms: 2000;
def before_ms: 400;

# Critical sections, from a grant to its release being sent: {lane, s, e} (µs). A section
# whose leave is missing (an instance drops events when its buffer is full: a busy
# machine) ends at its last event known to be inside it (its grant, or its sale), never
# at the lane's next grant: that would invent two holders.
def sections:
  reduce .[] as $e ({open: {}, out: []};
    ($e | lane) as $l
    | if $e.ev == "acquired" then
        (if .open[$l] then .out += [.open[$l] + {e: .open[$l].last}] else . end)
        | .open[$l] = {lane: $l, s: $e.t, last: $e.t, until: ($e.t + ($e.lease_ms // 0) * 1000)}
      elif $e.ev == "sale" and .open[$l] then
        .open[$l].last = $e.t
      elif $e.ev == "leave" and .open[$l] then
        .out += [.open[$l] + {e: $e.t}] | del(.open[$l])
      else . end)
  | .out | map(del(.last)) | sort_by(.s);

# The first start of a section while one of another lane is still open (µs), or null.
# One pass: the two lanes whose sections end last (ends only grow), a and b, a != b.
def first_overlap:
  reduce .[] as $x ({a: null, ea: 0, b: null, eb: 0, hit: null};
    if .hit then .
    elif (if .a != $x.lane then .ea else .eb end) > $x.s then .hit = $x.s
    elif .a == $x.lane then .ea = ([.ea, $x.e] | max)
    elif $x.e > .ea then .b = .a | .eb = .ea | .a = $x.lane | .ea = $x.e
    elif .b == $x.lane or $x.e > .eb then .b = $x.lane | .eb = ([.eb, $x.e] | max)
    else . end)
  | .hit;

# Of a lane's sections in the window, the 40 nearest the moment.
def nearest($at): sort_by((.s - $at) | fabs) | .[:40] | sort_by(.s);

def lost: .ev == "lost" or (.ev == "released" and (.result == "expired" or .result == "stolen"));

# At an overlap at $t: the section it broke into (B's: still open, its lease still
# running), and the one release of another lane answered "ok" since B's grant: {by, of,
# t}, or null.
def deleted($events; $t):
  ([.[] | select(.s == $t)][0].lane) as $c
  | [.[] | select(.lane != $c and .s < $t and .e > $t and .until > $t)][0] as $b
  | if $b == null then null else
      [$events[] | select(.ev == "released" and .result == "ok" and .t > $b.s and .t < $t
                          and lane != $b.lane and lane != $c)] as $x
      | if ($x | length) == 1 then {by: ($x[0] | lane), of: $b.lane, t: $x[0].t} else null end
    end;

# The first 20,000 events are enough to find the first moment (and keep jq quick).
sort_by(.t) | .[:20000] as $events
| ($events | sections) as $secs
| ([$events[] | select(.ev == "fenced" or .ev == "refused")][0].t) as $fenced
| ($secs | first_overlap) as $overlap
| ([$events[] | select(lost)][0].t) as $lost
| (if $overlap then $secs | deleted($events; $overlap) else null end) as $deleted
| (if $fenced then {kind: "fenced", t: $fenced}
   elif $overlap then {kind: "overlap", t: $overlap}
   elif $lost then {kind: "lost", t: $lost}
   else null end) as $m
| if $m == null then null else
    # the window opens before_ms before the moment, or earlier where the release that
    # deleted the lock came earlier still (a busy machine), so that its lane is shown
    ([$m.t - before_ms * 1000] + (if $deleted then [$deleted.t - 100000] else [] end) | min) as $w0
    | ($w0 + window_ms * 1000) as $w1
    | def ms: ((. - $w0) / 1000 | if . < 0 then 0 elif . > window_ms then window_ms else . end
                                 | . * 10 | round / 10);
      [$secs[] | select(.e > $w0 and .s < $w1)] as $all
    # at most 40 sections a lane, those nearest the moment (a busy load has hundreds)
    | [$all | group_by(.lane)[] | nearest($m.t)[]] as $in
    | [$events[] | select(.t >= $w0 and .t <= $w1)
       | select(.ev == "renewed" or .ev == "fenced" or .ev == "refused" or .ev == "released"
                or lost)] as $marks
    # 12 lanes: those busy nearest the moment (the overlap's, the refused write's)
    | ([($in[] | {lane, d: ((.s - $m.t) | fabs)}), ($marks[] | {lane: lane, d: ((.t - $m.t) | fabs)})]
       | group_by(.lane) | map({lane: .[0].lane, d: (map(.d) | min)})
       | map(if $deleted and .lane == $deleted.by then .d = -1 else . end)   # X's lane shown
       | sort_by(.d) | .[:12] | map(.lane) | sort) as $names
    | [$in[] | select(.lane as $l | $names | index($l))] as $shown
    | { kind: $m.kind, at_ms: ($m.t | ms), span_ms: window_ms,
        lanes: [ $names[] as $n
          | [$shown[] | select(.lane == $n)] as $mine
          | [$shown[] | select(.lane != $n)] as $others
          | { name: $n,
              bars: [ $mine[] | . as $x
                      | [($x.s | ms), ($x.e | ms), any($others[]; .s < $x.e and $x.s < .e)] ],
              marks: [ $marks[] | select(lane == $n)
                       | select(.ev != "released" or ($mine | length) <= 12
                                or ($deleted and .t == $deleted.t))
                       | [(.t | ms), (if lost then "lost" elif .ev == "refused" then "fenced"
                                      elif $deleted and .ev == "released" and .t == $deleted.t
                                           and $n == $deleted.by then "deleted"
                                      else .ev end)] ] } ] }
      + (if $deleted and ($names | index($deleted.of)) and ($names | index($deleted.by))
         then {deleted: {by: $deleted.by, of: $deleted.of, at_ms: ($deleted.t | ms)}} else {} end)
  end
