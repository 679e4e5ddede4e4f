/* report_bars.h - evolution-report's bar chart (report_bars.c): a line per version (or
 * mode), up to two bars on each, the value and where it was seen after each bar. */
#ifndef LOADTEST_REPORT_BARS_H
#define LOADTEST_REPORT_BARS_H

#include <stddef.h>
#include <stdio.h>

#include "loadtest/report_html.h"

/* One series' value on a line: measured or not, the scenario of the row it came from (or
 * other words to say after the value; borrowed), and whether that row declares the
 * chart's measure as its own (its bar is outlined). */
struct report_bar_cell {
    double v;
    const char *scenario;
    int measured, declared;
};

/* One line: a label and its bars; or a heading (label NULL, its words in text); or a
 * note in place of the bars (note: its mark, "short" or "nm", and text says why). label
 * and group are borrowed; group says which group of lines it is in (data-group). */
struct report_bar_line {
    const char *label, *group, *note;
    char text[96];
    struct report_bar_cell cell[2];
};

/* A chart: its measure (id and data-measure), words, unit after each value, a log scale
 * or a linear one, its series (one or two: a mark, colour and words each), and the width
 * of its labels' column. */
struct report_bar_chart {
    const char *measure, *title, *note, *unit;
    int log_scale, n_series, label_w;
    int decimals;                       /* a value's decimals: 0 for report_fmt's own */
    struct report_key series[2];
};

/* Chart c of the n lines in its figure: caption, the SVG and a legend of every mark it
 * drew. */
void report_bar_figure(FILE *f, const struct report_bar_chart *c,
                       const struct report_bar_line *lines, size_t n);

#endif
