#!/usr/bin/env bash
# test_memcheck.sh - one instance at a time under valgrind's memcheck against a real
# redis-server: a short load (wrk on 127.0.0.1, 4 connections, 3 s) in atomic, v8 and
# v8 --combine 8, then SIGTERM. memcheck must report no error and no definite or
# indirect leak, and the instance must exit 0 (its graceful shutdown frees what it holds).
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
trap t_cleanup EXIT

command -v valgrind >/dev/null || { echo "FAIL   valgrind is missing (make deps installs it)"; exit 1; }
# A sanitizer build (make test SANITIZER=...) checks itself; valgrind cannot run it.
if [ -n "${SANITIZER:-}" ] || ldd build/inventory-service | grep -qE 'lib(asan|tsan|ubsan)'; then
    echo "skipped: build/inventory-service is a sanitizer build (memcheck runs on a plain one)"
    t_report; exit
fi
start_redis || exit 1
ITEM=memcheck

# The instance under memcheck: start_service runs this wrapper, so SVC_PID is valgrind's.
cat > "$T_TMP/memcheck" <<EOF
#!/bin/sh
exec valgrind --leak-check=full --show-leak-kinds=definite,indirect \\
    --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \\
    --log-file="\$VG_LOG" $PWD/build/inventory-service "\$@"
EOF
chmod +x "$T_TMP/memcheck"
exited() { ! running "$1"; }      # a zombie has exited (running: tests/lib.sh)

for mode in "atomic" "v8" "v8 --combine 8"; do
    set -- $mode
    log=$T_TMP/memcheck-${mode// /}.log
    item_set -p "$REDIS_PORT" "$ITEM" 1000000 >/dev/null
    VG_LOG=$log SERVICE_BIN=$T_TMP/memcheck start_service PORT \
        --redis "127.0.0.1:$REDIS_PORT" --lock "$@" --ttl-ms 5000 || { check "$mode: started under memcheck" false; continue; }
    pid=$SVC_PID
    wrk -t 1 -c 4 -d 3s --timeout 10s -s loadtest/sale.lua "http://127.0.0.1:$PORT" \
        -- "/inventory/sale?item=$ITEM" > "$T_TMP/wrk.out" 2>&1
    sold=$(grep '^{' "$T_TMP/wrk.out" | jq '.ok' 2>/dev/null)
    check "$mode: under memcheck, the load sold (${sold:-0} sales)" test "${sold:-0}" -gt 0
    kill -TERM "$pid"
    # Graceful shutdown under memcheck: a few seconds; a hang is a failure, not a wait.
    if wait_until 60 "" exited "$pid"; then wait "$pid"; rc=$?
    else kill -KILL "$pid"; wait "$pid"; rc=hung; fi
    check_eq "$mode: exit 0 after SIGTERM (99: memcheck found errors or leaks)" 0 "$rc"
    check "$mode: memcheck: no error" grep -q 'ERROR SUMMARY: 0 errors' "$log"
    check "$mode: memcheck: nothing definitely or indirectly lost" \
        sh -c "grep -q 'All heap blocks were freed' '$log' ||
               { grep -q 'definitely lost: 0 bytes' '$log' && grep -q 'indirectly lost: 0 bytes' '$log'; }"
    grep -E 'ERROR SUMMARY|definitely lost|indirectly lost|possibly lost|still reachable' "$log" | sed 's/^==[0-9]*== /    /'
    [ "$rc" = 0 ] || sed -n '1,80p' "$log"
done
t_report
