#!/usr/bin/env bash
# test_fuzz.sh - the fuzz target (tests/fuzz_parse.c: every parser of service/parse.c under
# libFuzzer, ASan and UBSan) for a bounded time: no promise broken, no sanitizer report.
# make fuzz runs it longer (FUZZ_SECONDS, default 300).
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
trap t_cleanup EXIT

SECS=${FUZZ_TEST_SECONDS:-20}
check "the fuzz target builds (clang, libFuzzer)" make -s build/fuzz_parse
mkdir -p "$T_TMP/corpus"
build/fuzz_parse -max_total_time="$SECS" -print_final_stats=1 "$T_TMP/corpus" tests/fuzz_corpus \
    > "$T_TMP/fuzz.log" 2>&1
rc=$?
grep -E 'Done [0-9]+ runs|ERROR|broken' "$T_TMP/fuzz.log" | sed 's/^/    /'
check_eq "fuzzed for ${SECS} s: no finding (exit 0)" 0 "$rc"
runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$T_TMP/fuzz.log")
check "  and it ran: $runs inputs (more than 10,000)" test "${runs:-0}" -gt 10000
t_report
