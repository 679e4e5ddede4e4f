/* report_measures.h - evolution-report's bar charts of the rows (report_measures.c), which
 * the page (report.c) places: each measure per version, sales/s per version, the bench's
 * sales/s per mode. */
#ifndef LOADTEST_REPORT_MEASURES_H
#define LOADTEST_REPORT_MEASURES_H

#include <stdio.h>

#include <jansson.h>

/* One chart per measure (oversold, lost, overlaps, stuck, the longest gap, refused), a
 * line per version on a log scale, the lock's own flaws apart from the store's failing. */
void report_measure_section(FILE *f, const json_t *rows);
/* Sales/s per version from its load rows, a rate only where the sales lasted a second. */
void report_rate_section(FILE *f, const json_t *rows);
/* Sales/s per mode of loadtest/bench (bench.json), a chart and a table. */
void report_bench_section(FILE *f, const json_t *bench);

#endif
