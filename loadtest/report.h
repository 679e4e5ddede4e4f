/* report.h - what report.c (the page) shares with report_moment.c (its pictures of what
 * happened). */
#ifndef LOADTEST_REPORT_H
#define LOADTEST_REPORT_H

#include <stdio.h>

#include <jansson.h>

/* row[key] as a string; NULL when missing or not a string. */
const char *report_str(const json_t *row, const char *key);
/* s, HTML-escaped, into f. */
void report_escape(FILE *f, const char *s);
double report_clamp(double v, double lo, double hi);
/* A chart's place when there is nothing to draw, and why. */
void report_no_data(FILE *f, const char *why);

/* The moment each flaw showed: one frozen timeline per row that captured one. */
void report_moment_section(FILE *f, const json_t *rows);
/* Every counterexample of model (model/check's model.json: an array of rows; NULL: none)
 * as its sequence diagram (the .svg beside its trace), next to the evolution row of the
 * same version and scenario when it captured its moment. */
void report_traces_section(FILE *f, const json_t *rows, const json_t *model);

#endif
