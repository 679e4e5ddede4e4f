#!/usr/bin/env bash
# test_dblock.sh - The database's lock versions, v12 to v15, on a private mariadbd
# (start_mariadb): build/test_dblock against it, as the user inventory (its password read
# from the file start_mariadb wrote, never on a command line). With libfaketime (Debian:
# libfaketime), a second process whose clock runs a minute ahead tries v13 and v14.
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh

if ! [ -x build/test_dblock ]; then
    check "build/test_dblock is built (make)" false
    t_report
    exit
fi
if ! start_mariadb; then
    check "a private mariadbd starts" false
    t_report
    exit
fi
FAKETIME_LIB=$(ls /usr/lib/*/faketime/libfaketimeMT.so.1 2>/dev/null | head -n 1)
# The C test's last line is the suite's result ("N passed, N failed").
build/test_dblock "$MARIADB_PORT" "$MARIADB_PASSWORD_FILE" ${FAKETIME_LIB:+"$FAKETIME_LIB"}
