#!/usr/bin/env bash
# test_live.sh - the live page and its events: what /events streams (hello, each instance's
# events in order, heartbeats), its cap, its end when an instance stops (thread per
# connection and event loop), --no-events, nothing published while nobody listens; then
# through nginx in headless Chromium (tests/cdp.js): v4 under a lease shorter than its
# work draws red overlaps (counted by the page and in the screenshot's pixels), v8 draws
# none; the page reconnects by itself when the instances restart; left open 20 s under wrk
# its DOM and heap stop growing.
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh

RUN=$T_TMP/run
trap 'deploy/down --run-dir "$RUN" --quiet >/dev/null 2>&1; t_cleanup' EXIT
CHROMIUM=${CHROMIUM:-chromium}
C_RED=d62728 C_HELD=1f77b4 C_RENEWED=2ca02c

# stream PORT ITEM SECONDS FILE: /events of ITEM on PORT for SECONDS, in the background.
# (wait for it with: wait "$STREAM_PID"; a bare wait would wait for Redis and the services)
stream() { curl -sN -m "$3" "http://127.0.0.1:$1/events?item=$2" > "$4" 2>/dev/null & STREAM_PID=$!; }
# data_events FILE: every event in the stream's messages, one JSON object a line.
data_events() { sed -n 's/^data: //p' "$1" | jq -c 'select(.events) | .instance as $i | .events[] | . + {instance: $i}' 2>/dev/null; }

start_redis || exit 1
R="--redis 127.0.0.1:$REDIS_PORT"

# --- the page and the stream, from one instance ---
start_service P1 $R --lock v8 --faults --ttl-ms 600 || exit 1
P1_PID=$SVC_PID
code=$(curl -s -o "$T_TMP/live.html" -w '%{http_code} %{content_type}' "http://127.0.0.1:$P1/live")
check_eq "/live: 200, HTML" "200 text/html; charset=utf-8" "$code"
check "/live: the page's canvas and counters" grep -q 'id="overlaps"' "$T_TMP/live.html"
check "/live: self-contained (no http(s) URL, no src=)" bash -c \
    "! grep -Eiq 'https?://|[[:space:]]src[[:space:]]*=' '$T_TMP/live.html'"
check_eq "/events without a good item: 400" 400 \
    "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$P1/events?item=no%20such")"

curl -sN -m 5 -D "$T_TMP/ev.head" "http://127.0.0.1:$P1/events?item=quiet" > "$T_TMP/quiet.out" 2>/dev/null
check "/events: text/event-stream" grep -qi '^content-type: text/event-stream' "$T_TMP/ev.head"
check "/events: told not to be buffered by a proxy" grep -qi '^x-accel-buffering: no' "$T_TMP/ev.head"
check "/events: hello first, with the instance and the lock" \
    bash -c "sed -n 3,4p '$T_TMP/quiet.out' | grep -q '\"lock\":\"v8\",\"events\":true'"
check "/events: heartbeats while quiet (2 in 5 s)" \
    bash -c "[ \$(grep -c '^: heartbeat' '$T_TMP/quiet.out') -ge 2 ]"

item_set it1 100 >/dev/null
# streams_are PORT N: true once PORT has N streams open (within 5 s: a stream whose client
# left is noticed at its next write, a heartbeat at most).
streams_are() {
    for _ in $(seq 50); do [ "$(metric "$1" inventory_event_streams)" = "$2" ] && return 0; sleep 0.1; done
    return 1
}
check "the quiet stream's client left: the instance lets it go (within 5 s)" streams_are "$P1" 0
stream "$P1" it1 3 "$T_TMP/it1.out"
sleep 0.5
check_eq "a stream is counted in /metrics" 1 "$(metric "$P1" inventory_event_streams)"
curl -s -o /dev/null "http://127.0.0.1:$P1/inventory/sale?item=it1&work_ms=300"
wait "$STREAM_PID"
data_events "$T_TMP/it1.out" > "$T_TMP/it1.ev"
check_eq "one sale's events in order, on one lane" "acquired sale leave released" \
    "$(jq -r 'select(.ev != "renewed") | .ev' "$T_TMP/it1.ev" | paste -sd' ')"
check_eq "all on one thread's lane" 1 "$(jq -r .th "$T_TMP/it1.ev" | sort -u | wc -l)"
check_eq "the sale's event: the stock read, 1 sold" "100 1" "$(jq -r 'select(.ev == "sale") | "\(.stock) \(.sold)"' "$T_TMP/it1.ev")"
check "v8 held 300 ms under a 600 ms lease: renewed (the watchdog's event)" \
    bash -c "[ \$(grep -c renewed '$T_TMP/it1.ev') -ge 1 ]"
check "the section lasts the work (leave - acquired >= 300 ms)" \
    bash -c "jq -s '(map(select(.ev == \"leave\"))[0].t - map(select(.ev == \"acquired\"))[0].t) >= 300000' '$T_TMP/it1.ev' | grep -q true"

streams_are "$P1" 0
sleep 1.2   # the item's last message had a listener: quiet from the next one on
before=$(metric "$P1" inventory_events_published_total)
sold0=$(curl -s "http://127.0.0.1:$P1/inventory?item=it1" | jq .sold)
# The 30 sales from one curl, one after another on one connection: the item is quiet for a
# second after each message nobody heard, and 30 curls, a process each, once took over 3 s
# on busy cores (4 messages).
curl -s $(for _ in $(seq 30); do echo "-o /dev/null http://127.0.0.1:$P1/inventory/sale?item=it1"; done)
sleep 0.3
after=$(metric "$P1" inventory_events_published_total)
check_eq "nobody listening: the 30 sales sold" 30 "$(( $(curl -s "http://127.0.0.1:$P1/inventory?item=it1" | jq .sold) - sold0 ))"
check "  and published at most 3 messages (not 120 events): $((after - before))" \
    test $((after - before)) -le 3

# --- the cap, and --no-events ---
start_service P2 $R --lock v8 --max-streams 1 --no-events || exit 1
P2_PID=$SVC_PID
stream "$P2" it1 6 "$T_TMP/p2.out"
sleep 0.5
code=$(curl -s -o "$T_TMP/cap.body" -w '%{http_code}' -m 2 "http://127.0.0.1:$P2/events?item=it1")
check_eq "--max-streams 1: a second stream is refused" 503 "$code"
check "refused as too_many_streams" grep -q '"too_many_streams"' "$T_TMP/cap.body"
check "--no-events: its hello says so" bash -c "sleep 0.2; grep -q '\"events\":false' '$T_TMP/p2.out'"
curl -s -o /dev/null "http://127.0.0.1:$P2/inventory/sale?item=it1"
sleep 0.5
check_eq "--no-events: its own sale publishes nothing" 0 "$(data_events "$T_TMP/p2.out" | wc -l)"
curl -s -o /dev/null "http://127.0.0.1:$P1/inventory/sale?item=it1"
sleep 0.5
check "--no-events: its stream still carries another instance's events" \
    bash -c "sed -n 's/^data: //p' '$T_TMP/p2.out' | grep -q '\"instance\":\"inventory-$P1\"'"

# --- a stop ends every stream first: thread per connection (P2), event loop (P3) ---
start_service P3 $R --lock v8 --combine 8 || exit 1
P3_PID=$SVC_PID
stream "$P3" it1 30 "$T_TMP/p3.out"
sleep 0.5
for pair in "$P2_PID:p2" "$P3_PID:p3"; do
    pid=${pair%%:*} name=${pair#*:}
    start=$(date +%s%N)
    kill -TERM "$pid"
    for _ in $(seq 100); do running "$pid" || break; sleep 0.05; done
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    check "$name: stopped with a stream open, in ${ms} ms (under 3 s)" bash -c "! kill -0 $pid 2>/dev/null && [ $ms -lt 3000 ]"
    check "$name: the stream was told: event: end" grep -q '^event: end' "$T_TMP/$name.out"
done

# --- loadtest/run --live: the URL first, the stack kept up after the run until Enter ---
mkfifo "$T_TMP/enter"
loadtest/run --lock v8 -c 2 -d 1 --stock 20 --live < "$T_TMP/enter" > "$T_TMP/run.out" 2> "$T_TMP/run.err" &
RUN_PID=$!
exec 7> "$T_TMP/enter"   # held open: no Enter yet
for _ in $(seq 200); do grep -q "press Enter" "$T_TMP/run.err" && break; sleep 0.1; done
live_url=$(sed -n 's/^loadtest\/run: the live page: //p' "$T_TMP/run.err")
check "--live: the URL is printed as the stack comes up" grep -q "^http://127.0.0.1:[0-9]*/live?item=loadtest$" <<< "$live_url"
check "--live: after the run (its JSON line out), the stack is still up" \
    bash -c "grep -q '^{' '$T_TMP/run.out' && curl -sf -o /dev/null '$live_url'"
echo >&7; exec 7>&-
wait "$RUN_PID"
check "--live: Enter stops it" bash -c "! curl -s -o /dev/null -m 2 '$live_url'"

# --- through nginx, in a browser ---
if ! command -v "$CHROMIUM" >/dev/null || ! command -v node >/dev/null; then
    check "chromium and node installed (deploy/install-deps installs them)" false
    t_report; exit
fi
# live_up LOCK [PORT]: a stack of 2 instances behind nginx (on PORT), a lease of 300 ms,
# 1000 in stock.
live_up() {
    deploy/down --run-dir "$RUN" --quiet >/dev/null 2>&1
    deploy/up --lock "$1" --faults --ttl-ms 300 --run-dir "$RUN" --port "${2:-$(free_port)}" \
        --redis-port "$(free_port)" >"$T_TMP/up.log" 2>&1 || { cat "$T_TMP/up.log"; return 1; }
    . "$RUN/stack.env"
    deploy/stock 1000 --item it1 --run-dir "$RUN" >/dev/null
    URL="http://127.0.0.1:$NGINX_PORT"
}
# load SECONDS: 4 clients, each sale working 400 ms (longer than the lease), for SECONDS,
# or until load_stop.
load() {
    local end=$(( EPOCHSECONDS + $1 ))
    LOAD_PIDS=""
    rm -f "$T_TMP/load.stop"
    for _ in 1 2 3 4; do
        while [ "$EPOCHSECONDS" -lt "$end" ] && [ ! -e "$T_TMP/load.stop" ]; do
            curl -s -o /dev/null -m 5 "$URL/inventory/sale?item=it1&work_ms=400"
        done &
        LOAD_PIDS="$LOAD_PIDS $!"
    done
}
load_stop() { : > "$T_TMP/load.stop"; wait $LOAD_PIDS; }
# stop_load_at N NAME: in the background, stops the load once the page NAME has taken N
# samples (NAME.json), so that its last samples find the counts at rest: with sales still
# coming, the page's count could be one ahead of what its DOM showed in the same sample.
stop_load_at() {
    ( for _ in $(seq 240); do
          jq -e --argjson n "$1" '.samples | length >= $n' "$T_TMP/$2.json" >/dev/null 2>&1 && break
          nap 0.25
      done
      : > "$T_TMP/load.stop" ) &
}
# page SECONDS NAME: the page open for SECONDS; NAME.json (samples), NAME.png, NAME.stats.
page() {
    CHROMIUM=$CHROMIUM node tests/cdp.js "$URL/live?item=it1" "$1" \
        "$T_TMP/$2.json" "$T_TMP/$2.png" 1200x700 2>"$T_TMP/$2.err" || cat "$T_TMP/$2.err"
    "$PYTHON" tests/png_stats.py "$T_TMP/$2.png" $C_RED $C_HELD $C_RENEWED > "$T_TMP/$2.stats" 2>&1
}
# restart_instance PORT: stops the stack's instance on PORT (SIGTERM) and starts it again
# with the same command line; its pid file names the new one (deploy/down stops it).
restart_instance() {
    local pidf="$RUN/instance-$1.pid" pid args
    pid=$(head -n 1 "$pidf")
    mapfile -d '' args < "/proc/$pid/cmdline"
    kill -TERM "$pid"
    for _ in $(seq 300); do running "$pid" || break; sleep 0.05; done   # its sales finish
    setsid "${args[@]}" </dev/null >>"$RUN/instance-$1.log" 2>&1 &
    sed -i "1s/.*/$!/" "$pidf"
}
last() { jq -r ".samples[-1].$1" "$T_TMP/$2.json"; }

# --- make demo LIVE=check (loadtest/evolution --live-check): one page follows row after row ---
# It runs beside the v4 and v8 pages below (its stacks and its page are its own; it waits
# more than it computes), its checks after them.
LP=$(free_port)
LIVE_PORT=$LP LIVE_HOLD_S=2 loadtest/evolution --only v4 --quick --live-check --out "$T_TMP/evo" \
    > "$T_TMP/evo.out" 2> "$T_TMP/evo.err" &
EVO_PID=$!

live_up v4 || exit 1
curl -sN -m 2 "$URL/events?item=it1" > "$T_TMP/nginx.out" &
STREAM_PID=$!
sleep 0.3
curl -s -o /dev/null "$URL/inventory/sale?item=it1"
sleep 0.5
check "through nginx: an event arrives while the stream is open (not buffered)" \
    bash -c "sed -n 's/^data: //p' '$T_TMP/nginx.out' | grep -q acquired"
wait "$STREAM_PID"
load 60   # until the page's sixth sample (Chromium may take seconds to start)
stop_load_at 6 v4
page 8 v4
load_stop
check "v4, 400 ms of work under a 300 ms lease: the page counts overlaps" test "$(last live.overlaps v4)" -ge 1
check_eq "v4: the DOM shows the page's count" "$(last live.overlaps v4)" "$(last overlaps_dom v4)"
check "v4: red bars in the screenshot (>= 300 px)" test "$(px $C_RED "$T_TMP/v4.stats")" -ge 300
check "v4: lost leases marked" test "$(last live.lost v4)" -ge 1
echo "       v4: overlaps $(last live.overlaps v4), lost $(last live.lost v4), red px $(px $C_RED "$T_TMP/v4.stats"), frame $(last live.frameMs v4) ms"

live_up v8 || exit 1
load 60   # until the page's sixth sample (Chromium may take seconds to start)
stop_load_at 6 v8
page 8 v8
load_stop
check_eq "v8, the same load: no overlap" 0 "$(last live.overlaps v8)"
check_eq "v8: no red bar (the legend's 12 x 10 px key is the only red)" 120 "$(px $C_RED "$T_TMP/v8.stats")"
check "v8: sections drawn (>= 300 px)" test "$(px $C_HELD "$T_TMP/v8.stats")" -ge 300
check "v8: renewals drawn" test "$(px $C_RENEWED "$T_TMP/v8.stats")" -ge 150
echo "       v8: overlaps $(last live.overlaps v8), blue px $(px $C_HELD "$T_TMP/v8.stats"), green px $(px $C_RENEWED "$T_TMP/v8.stats"), frame $(last live.frameMs v8) ms"

wait "$EVO_PID"; rc=$?
check_eq "evolution --live-check: the rows ran" 0 "$rc"
check "evolution --live: the URL printed first" grep -q "open http://127.0.0.1:$LP/live?item=loadtest" "$T_TMP/evo.err"
check "evolution --live-check: the page's figures printed" grep -q "the live page, open [0-9]* s: DOM nodes" "$T_TMP/evo.err"
check "evolution --live: the one page saw the rows' stacks one after another (reconnects >= 2)" \
    test "$(jq -r '[.samples[].live.reconnects // 0] | max' "$T_TMP/evo/live-page.json" 2>/dev/null)" -ge 2
check "evolution --live: and v4 long-work's overlaps on it" \
    test "$(jq -r '[.samples[].live.overlaps // 0] | max' "$T_TMP/evo/live-page.json" 2>/dev/null)" -ge 1


# The instance the page streams from restarts while the page is open (short sales: a stop
# waits for the sales in flight); the page must find the other one by itself. Then that
# one restarts too, 3 s later: both have failed once within nginx's fail_timeout (10 s),
# and the page must still find the first one again. The sales go to the instances
# themselves, by turns: through nginx, each instance's failed sale as it stopped would
# rest it there 10 s (sales are never resent), and the page would have nothing to show.
end=$(( $(date +%s) + 17 ))   # past the page's 14 s (Chromium takes a while to start)
while [ "$(date +%s)" -lt "$end" ]; do
    for p in $INSTANCE_PORTS; do curl -s -o /dev/null -m 5 "http://127.0.0.1:$p/inventory/sale?item=it1"; done
    sleep 0.02
done &
LOAD_PIDS=$!
via_port() {   # the instance the page streams from now: its port (and its name noted)
    local via="" _
    # On a slow machine the page may not have said yet: wait for it, up to 5 s.
    for _ in $(seq 50); do
        via=$(jq -r '.samples[-1].via // ""' "$T_TMP/restart.json" 2>/dev/null)
        [[ $via =~ ^inventory-[0-9]+ ]] && break
        sleep 0.1
    done
    echo "$via" >> "$T_TMP/restart.via"
    via=${via#inventory-}; echo "${via%% *}"
}
( sleep 3; restart_instance "$(via_port)"; sleep 3; restart_instance "$(via_port)" ) &
RESTART_PID=$!
page 14 restart
wait $LOAD_PIDS "$RESTART_PID"
via1=$(sed -n 1p "$T_TMP/restart.via") via2=$(sed -n 2p "$T_TMP/restart.via")
check "the page streamed from an instance of the stack" grep -q "^inventory-[0-9]* (v8)" "$T_TMP/restart.via"
check "its instance restarted, then the other: the page reconnected each time" test "$(last live.reconnects restart)" -ge 2
check "  the first time to the other instance" test -n "$via2" -a "$via2" != "$via1"
check_eq "  the second time back to the first (down 3 s before: nginx did not rest it)" "$via1" "$(last via restart)"
check_eq "  and its stream is open again" open "$(last status restart)"
ev10=$(jq -r '.samples[9].live.events' "$T_TMP/restart.json")
check "  and events keep coming after both restarts (10 s -> 14 s)" test "$(last live.events restart)" -gt "$ev10"
echo "       restarts: $via1 -> $via2 -> $(last via restart), reconnects $(last live.reconnects restart), events at 10 s $ev10, at 14 s $(last live.events restart)"

# A holder killed in its section, then another stack on the same port, as the evolution's
# rows follow one another under one page: at the reconnect the page lets the dead
# holder's section go, and the next stack's sections are not red against it.
NP=$(free_port)
live_up v4 "$NP" || exit 1
CDP_EVAL='[...lanes.values()].filter((l) => l.open).length' page 20 dead &
PAGE_PID=$!
for _ in $(seq 200); do   # until the page's stream is open (Chromium takes a while to start)
    [ "$(jq -r '.samples[-1].status // ""' "$T_TMP/dead.json" 2>/dev/null)" = open ] && break
    sleep 0.1
done
A=${INSTANCE_PORTS%% *}
curl -s -m 10 -o /dev/null "http://127.0.0.1:$A/inventory/sale?item=it1&work_ms=5000" &
sleep 1.5
kill -9 "$(head -n 1 "$RUN/instance-$A.pid")"
live_up v8 "$NP" || exit 1
load 6
wait $LOAD_PIDS "$PAGE_PID"
check "a holder killed in its section: the page held its section open" \
    test "$(jq '[.samples[].eval | numbers] | max // 0' "$T_TMP/dead.json")" -ge 1
check "  another stack on the same port: the page reconnected to it" test "$(last live.reconnects dead)" -ge 1
check_eq "  and let the dead section go" 0 "$(last eval dead)"
check_eq "  the new stack's v8 sections: none red against it" 0 "$(last live.overlaps dead)"
check "  and they were drawn (events came)" test "$(last live.events dead)" -ge 20
echo "       dead holder: open sections seen $(jq '[.samples[].eval | numbers] | max // 0' "$T_TMP/dead.json"), at the end $(last eval dead), reconnects $(last live.reconnects dead), overlaps $(last live.overlaps dead), events $(last live.events dead)"

wrk -t 2 -c 16 -d 22s --timeout 10s "$URL/inventory/sale?item=it1" >/dev/null 2>&1 &
WRK_PID=$!
page 20 soak
wait "$WRK_PID"
# The page keeps 12 s of bars: from 13 s on it holds what it will hold (tests/cdp.js
# counts after a garbage collection: what the page keeps).
n13=$(jq -r '.samples[12].nodes' "$T_TMP/soak.json") n20=$(last nodes soak)
h13=$(jq -r '.samples[12].heap' "$T_TMP/soak.json") h20=$(last heap soak)
echo "       soak: events $(last live.events soak), DOM nodes $n13 -> $n20, JS heap $h13 -> $h20 bytes (13 s -> 20 s), frame $(last live.frameMs soak) ms"
check "20 s under wrk: the page saw the sales" test "$(last live.events soak)" -ge 1000
check "20 s under wrk: DOM nodes bounded (13 s -> 20 s: at most +25%)" test "$n20" -le $((n13 * 5 / 4 + 50))
check "20 s under wrk: JS heap bounded (13 s -> 20 s: at most 1.5x + 2 MB)" test "$h20" -le $((h13 * 3 / 2 + 2000000))

check_eq "no Chromium left behind (the pages' and the evolution's)" "" \
    "$(pgrep -f "remote-debugging-port=0 --user-data-dir=$T_TMP/.*cdp-")"

t_report
