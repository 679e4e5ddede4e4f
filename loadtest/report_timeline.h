/* report_timeline.h - evolution-report's stock and sold over time (report_timeline.c), which
 * the page (report.c) places. */
#ifndef LOADTEST_REPORT_TIMELINE_H
#define LOADTEST_REPORT_TIMELINE_H

#include <stdio.h>

#include <jansson.h>

/* One chart per row with a "timeline" ([t_ms, stock, sold] samples): stock and sold as
 * sampled, ending at the row's own figures (the table's), each time the stock went back
 * up marked, and a caption that says what happened. 0, or -1 when memory ran out. */
int report_timeline_section(FILE *f, const json_t *rows);

#endif
