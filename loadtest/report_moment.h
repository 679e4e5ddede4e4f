/* report_moment.h - evolution-report's pictures of what happened (report_moment.c), which
 * the page (report.c) places. */
#ifndef LOADTEST_REPORT_MOMENT_H
#define LOADTEST_REPORT_MOMENT_H

#include <stdio.h>

#include <jansson.h>

/* The moment each flaw showed: one frozen timeline per row that captured one. */
void report_moment_section(FILE *f, const json_t *rows);
/* Every counterexample of model (model/check's model.json: an array of rows; NULL: none)
 * as its sequence diagram (the .svg beside its trace), next to the evolution row of the
 * same version and scenario when it captured its moment. */
void report_traces_section(FILE *f, const json_t *rows, const json_t *model);

#endif
