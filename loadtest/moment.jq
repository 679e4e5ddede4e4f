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
def first_overlap:
  reduce .[] as $x ({ends: {}, hit: null};
    if .hit then .
    elif (.ends | to_entries | any(.key != $x.lane and .value > $x.s)) then .hit = $x.s
    else .ends[$x.lane] = ([.ends[$x.lane] // 0, $x.e] | max) end)
  | .hit;

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
      [$secs[] | select(.e > $w0 and .s < $w1)] as $in
    | [$events[] | select(.t >= $w0 and .t <= $w1)
       | select(.ev == "renewed" or .ev == "fenced" or .ev == "refused" or .ev == "released"
                or lost)] as $marks
    | ([$in[].lane] + [$marks[] | lane] | unique) as $names
    | { kind: $m.kind, at_ms: before_ms, span_ms: window_ms,
        lanes: [ $names[] as $n | {
          name: $n,
          bars: [ $in[] | select(.lane == $n) | . as $x
                  | [($x.s | ms), ($x.e | ms),
                     any($in[]; .lane != $n and .s < $x.e and $x.s < .e)] ],
          marks: [ $marks[] | select(lane == $n)
                   | [(.t | ms), (if lost then "lost" elif .ev == "refused" then "fenced"
                                  else .ev end)] ] } ]
          # the lanes of the moment first (red, or marked), then those busy nearest it
          | sort_by([(if any(.bars[]; .[2]) or any(.marks[]; .[1] != "released" and .[1] != "renewed")
                      then 0 else 1 end),
                     ([.bars[] | (.[0] - before_ms | fabs)] + [.marks[] | (.[0] - before_ms | fabs)] | min)])
          | .[:12] | sort_by(.name) }
  end
