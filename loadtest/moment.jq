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
#               "marks": [[t, "renewed"|"lost"|"fenced"|"released"]...]}...]}
# with every time in ms from the window's start (at_ms before the moment).
def lane: "\(.instance)/\(.th)";
def window_ms: 2000;
def before_ms: 400;

# Critical sections, from a grant to its release being sent: {lane, s, e} (µs).
def sections:
  reduce .[] as $e ({open: {}, out: []};
    ($e | lane) as $l
    | if $e.ev == "acquired" then
        (if .open[$l] then .out += [{lane: $l, s: .open[$l], e: $e.t}] else . end)
        | .open[$l] = $e.t
      elif $e.ev == "leave" and .open[$l] then
        .out += [{lane: $l, s: .open[$l], e: $e.t}] | del(.open[$l])
      else . end)
  | .out | sort_by(.s);

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

# The first 20,000 events are enough to find the first moment (and keep jq quick).
sort_by(.t) | .[:20000] as $events
| ($events | sections) as $secs
| ([$events[] | select(.ev == "fenced" or .ev == "refused")][0].t) as $fenced
| ($secs | first_overlap) as $overlap
| ([$events[] | select(lost)][0].t) as $lost
| (if $fenced then {kind: "fenced", t: $fenced}
   elif $overlap then {kind: "overlap", t: $overlap}
   elif $lost then {kind: "lost", t: $lost}
   else null end) as $m
| if $m == null then null else
    ($m.t - before_ms * 1000) as $w0
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
       | group_by(.lane) | map({lane: .[0].lane, d: (map(.d) | min)}) | sort_by(.d) | .[:12]
       | map(.lane) | sort) as $names
    | [$in[] | select(.lane as $l | $names | index($l))] as $shown
    | { kind: $m.kind, at_ms: before_ms, span_ms: window_ms,
        lanes: [ $names[] as $n
          | [$shown[] | select(.lane == $n)] as $mine
          | [$shown[] | select(.lane != $n)] as $others
          | { name: $n,
              bars: [ $mine[] | . as $x
                      | [($x.s | ms), ($x.e | ms), any($others[]; .s < $x.e and $x.s < .e)] ],
              marks: [ $marks[] | select(lane == $n)
                       | select(.ev != "released" or ($mine | length) <= 12)
                       | [(.t | ms), (if lost then "lost" elif .ev == "refused" then "fenced"
                                      else .ev end)] ] } ] }
  end
