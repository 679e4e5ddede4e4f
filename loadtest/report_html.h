/* report_html.h - evolution-report's shared helpers: a row's fields, HTML escaping, a chart's
 * "no data". Used by report.c (the page) and report_moment.c (its pictures); calls neither. */
#ifndef LOADTEST_REPORT_HTML_H
#define LOADTEST_REPORT_HTML_H

#include <stdio.h>

#include <jansson.h>

/* row[key] as a string; NULL when missing or not a string. Borrowed from row. */
const char *report_str(const json_t *row, const char *key);
/* s, HTML-escaped, into f. */
void report_escape(FILE *f, const char *s);
/* v limited to lo..hi (hi for NaN), so that absurd input stays drawable. */
double report_clamp(double v, double lo, double hi);
/* A chart's place when there is nothing to draw, and why. */
void report_no_data(FILE *f, const char *why);

#endif
