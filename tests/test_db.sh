#!/usr/bin/env bash
# test_db.sh - The database layer (db/) against a private mariadbd (tests/lib.sh's
# start_mariadb): build/test_db's checks, with a port nothing listens on, and the server
# killed once by the test (kill -9) and started again here on the same port and data.
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh

TEST_DB=${TEST_DB:-build/test_db}
if ! start_mariadb; then
    check "a private mariadbd starts" false
    t_report
    exit
fi
first_pid=$MARIADB_PID

# The test kills the server once: it is started again at once, as a supervisor would.
"$TEST_DB" "$MARIADB_PORT" "$MARIADB_PASSWORD_FILE" "$(free_port)" "$MARIADB_PID" \
    > "$T_TMP/unit.out" 2>&1 &
unit=$!
while running "$unit"; do
    if [ "$MARIADB_PID" = "$first_pid" ] && ! running "$MARIADB_PID"; then
        restart_mariadb || break
    fi
    sleep 0.1
done
wait "$unit"
sed 's/^/  /' "$T_TMP/unit.out"   # indented: its result line is not this suite's
line=$(tail -n 1 "$T_TMP/unit.out")
case $line in
*" passed, "*" failed")
    T_PASSED=$((T_PASSED + ${line%% *})); f=${line#*, }; T_FAILED=$((T_FAILED + ${f%% *})) ;;
*) T_FAILED=$((T_FAILED + 1)); echo "FAIL   $TEST_DB ended without a result" ;;
esac
check "the server was started again after the test killed it" test "$MARIADB_PID" != "$first_pid"
check "  and answers" mdb "SELECT 1"
t_report
