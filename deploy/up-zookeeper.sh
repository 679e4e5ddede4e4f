# up-zookeeper.sh - deploy/up's ZooKeeper ensemble: N servers (the distribution's
# QuorumPeerMain, started here, never its system service), each with its own configuration
# and data directory under the run directory; ready once srvr names one leader and N - 1
# followers.
# Sourced by deploy/up (and by the tests that start an ensemble the same way, after
# deploy/lib.sh); functions only. They read ZK_CLIENT_PORTS, ZK_QUORUM_PORTS and
# ZK_ELECTION_PORTS (a port each per server, in server order), ZK_BIND (or ZK_ADDRS: an
# address each per server, for servers on test hosts), ZK_LAUNCH (an optional command
# prefix: an array, e.g. deploy/hosts run H), RUN_DIR and ZK_START_WAIT_S; set ZK_CONNECT
# and ZK_PORTS, which stack.env records; add every server they start to STARTED_PIDS (a
# test's cleanup stops them by pid); and exit through
# deploy/lib.sh's die, or zk_fail with the servers' logs, when the ensemble does not come
# up: deploy/up's rollback then stops what was started.

ZK_JAVA=${ZK_JAVA:-java}
ZK_CLASSPATH=${ZK_CLASSPATH:-/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-simple.jar}
ZK_MAIN=org.apache.zookeeper.server.quorum.QuorumPeerMain
# A small heap (a test's ensemble holds a few thousand nodes) and one GC thread: three
# servers share two cores with everything else. The log lines carry their time of day
# (mark_log's line before each start gives the date).
ZK_JAVA_OPTS=${ZK_JAVA_OPTS:--Xmx128m -XX:+UseSerialGC -Dorg.slf4j.simpleLogger.showDateTime=true -Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS}
ZK_START_WAIT_S=${ZK_START_WAIT_S:-40}

# zk_check: true when an ensemble can be started here; else says why (what is missing and
# its Debian package) on stdout and fails.
zk_check() {
    local jar
    command -v "$ZK_JAVA" >/dev/null ||
        { echo "$ZK_JAVA not found (Debian package default-jre-headless; make deps)"; return 1; }
    for jar in ${ZK_CLASSPATH//:/ }; do
        [ -r "$jar" ] ||
            { echo "$jar not found (Debian packages zookeeper and libslf4j-java; make deps)"; return 1; }
    done
}

# nth N WORD...: the Nth of the words (1-based).
nth() { local n=$1; shift; echo "${!n}"; }

# zk_addr ID: server ID's address: the IDth of ZK_ADDRS, else ZK_BIND.
zk_addr() { local a; a=$(nth "$1" ${ZK_ADDRS:-}); echo "${a:-$ZK_BIND}"; }

# write_zk_conf ID: server ID's configuration, to stdout: its data directory
# RUN_DIR/zk-ID/data, its client port and address, and every server's quorum and election
# ports.
write_zk_conf() {
    local id=$1 i=1 p
    cat <<EOF
# zoo.cfg - server $id of the ZooKeeper ensemble deploy/up started in this run directory.
# Short ticks, for tests: one tick is 200 ms (ZooKeeper's example is 2000), so a follower
# joins within initLimit (4 s), one silent for syncLimit (2 s) is dropped, and a new
# leader is elected in about a second. A session lasts what its client asks (the
# service's --zk-session-ms, v11's lease), within these bounds.
tickTime=200
initLimit=20
syncLimit=10
minSessionTimeout=2000
maxSessionTimeout=20000
# Every write is in the write-ahead log, synced to disk, before the server acknowledges
# it (forceSync, ZooKeeper's default: left on). Log files are preallocated 4 MB at a
# time (not 64), snapshots past the last three purged every hour.
dataDir=$RUN_DIR/zk-$id/data
preAllocSize=4096
autopurge.snapRetainCount=3
autopurge.purgeInterval=1
clientPort=$(nth "$id" $ZK_CLIENT_PORTS)
clientPortAddress=$(zk_addr "$id")
# No admin web server; of the four-letter words, those a status needs (srvr: the mode).
admin.enableServer=false
4lw.commands.whitelist=srvr,ruok,mntr,stat
EOF
    for p in $ZK_CLIENT_PORTS; do
        echo "server.$i=$(zk_addr "$i"):$(nth "$i" $ZK_QUORUM_PORTS):$(nth "$i" $ZK_ELECTION_PORTS)"
        i=$((i + 1))
    done
}

# zk_server_start ID: server ID (1-based) started with its configuration written afresh to
# RUN_DIR/zk-ID/zoo.cfg, its data (and myid) kept in RUN_DIR/zk-ID/data (zk_server_run).
zk_server_start() {
    local id=$1 dir=$RUN_DIR/zk-$1
    { mkdir -p "$dir/data" && echo "$id" > "$dir/data/myid" && write_zk_conf "$id" > "$dir/zoo.cfg"; } ||
        die "cannot write $dir/zoo.cfg"
    zk_server_run "$id"
}

# zk_server_run ID: starts server ID in its own session from RUN_DIR/zk-ID/zoo.cfg as it is
# (also to start again a server that was killed: its ports and data are in that file), its
# output appended to RUN_DIR/zk-ID.log; writes RUN_DIR/zk-ID.pid: the pid, then the
# patterns deploy/down checks before a kill. Sets ZK_STARTED_PID, adds it to STARTED_PIDS.
zk_server_run() {
    local id=$1 dir=$RUN_DIR/zk-$1
    [ -f "$dir/zoo.cfg" ] || die "no $dir/zoo.cfg: server $id was never started in $RUN_DIR"
    mark_log "$RUN_DIR/zk-$id.log"
    # shellcheck disable=SC2086  # ZK_JAVA_OPTS: words
    setsid ${ZK_LAUNCH[@]+"${ZK_LAUNCH[@]}"} "$ZK_JAVA" $ZK_JAVA_OPTS -cp "$ZK_CLASSPATH" "$ZK_MAIN" "$dir/zoo.cfg" \
        </dev/null >>"$RUN_DIR/zk-$id.log" 2>&1 &
    ZK_STARTED_PID=$!
    STARTED_PIDS="${STARTED_PIDS:-} $ZK_STARTED_PID"
    printf '%s\n%s \n%s \n' "$ZK_STARTED_PID" "$ZK_MAIN" "$dir/zoo.cfg" > "$RUN_DIR/zk-$id.pid"
}

# zk_fail WHY: exits 1, saying WHY, each server's mode now and the tail of its log (from
# its last start on).
zk_fail() {
    local id=1 p
    echo "$PROG: the ZooKeeper ensemble did not come up: $1" >&2
    for p in $ZK_CLIENT_PORTS; do
        echo "$PROG: server $id ($ZK_BIND:$p) says mode '$(zk_mode "$ZK_BIND:$p")'; from $RUN_DIR/zk-$id.log:" >&2
        awk '/^--- [^ ]+ [0-9-]+T[0-9:]+Z$/ { n = 0; next } { line[n++] = $0 }
             END { for (i = (n > 12 ? n - 12 : 0); i < n; i++) print "  " line[i] }' \
            "$RUN_DIR/zk-$id.log" >&2 2>/dev/null || true
        id=$((id + 1))
    done
    exit 1
}

# start_zookeeper: the ensemble: a server for each of ZK_CLIENT_PORTS, waited for until
# srvr names a leader and every other server a follower (a lone server: standalone), for
# ZK_START_WAIT_S at most. Sets ZK_CONNECT (HOST:PORT,... of the clients' ports) and
# ZK_PORTS (the client ports, spaced).
start_zookeeper() {
    local n i=1 pids=""
    n=$(echo $ZK_CLIENT_PORTS | wc -w)
    for _ in $ZK_CLIENT_PORTS; do
        zk_server_start "$i"
        pids="$pids $ZK_STARTED_PID"
        i=$((i + 1))
    done
    ZK_CONNECT=$(for p in $ZK_CLIENT_PORTS; do printf '%s:%s\n' "$ZK_BIND" "$p"; done | paste -sd, -)
    ZK_PORTS=$(echo $ZK_CLIENT_PORTS)
    local end=$(( $(date +%s) + ZK_START_WAIT_S ))
    until zk_quorum "$n"; do
        for p in $pids; do
            kill -0 "$p" 2>/dev/null || zk_fail "a server exited (pid $p)"
        done
        [ "$(date +%s)" -lt "$end" ] ||
            zk_fail "no leader with $((n - 1)) followers after ${ZK_START_WAIT_S} s (srvr: $(zk_modes))"
        sleep 0.1
    done
}
