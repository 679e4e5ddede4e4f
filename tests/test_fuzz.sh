#!/usr/bin/env bash
# test_fuzz.sh - the fuzz targets, each for a bounded time under libFuzzer, ASan and UBSan:
# tests/fuzz_parse.c (every parser of service/parse.c) and tests/fuzz_answer.c (the load
# client's HTTP answer parser, loadtest/answer.c, whole and in pieces): no promise broken,
# no sanitizer report. make fuzz runs them longer (FUZZ_SECONDS, default 300).
set -u
cd "$(dirname "$0")/.." || exit 1
source tests/lib.sh
trap t_cleanup EXIT

SECS=${FUZZ_TEST_SECONDS:-20}

# fuzz NAME SEEDS WHAT: builds build/NAME, runs it SECS seconds from the seeds in SEEDS.
fuzz() {
    local name=$1 seeds=$2 what=$3 rc runs
    check "$name: the fuzz target builds (clang, libFuzzer)" make -s "build/$name"
    mkdir -p "$T_TMP/corpus-$name"
    "build/$name" -max_total_time="$SECS" -print_final_stats=1 "$T_TMP/corpus-$name" "$seeds" \
        > "$T_TMP/$name.log" 2>&1
    rc=$?
    grep -E 'Done [0-9]+ runs|ERROR|broken' "$T_TMP/$name.log" | sed 's/^/    /'
    check_eq "$name: $what fuzzed for ${SECS} s: no finding (exit 0)" 0 "$rc"
    runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$T_TMP/$name.log")
    check "$name:   and it ran: $runs inputs (more than 10,000)" test "${runs:-0}" -gt 10000
}

fuzz fuzz_parse tests/fuzz_corpus "the service's parsers"
fuzz fuzz_answer tests/fuzz_corpus_answer "the load client's answer parser"
t_report
