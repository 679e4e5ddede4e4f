/* report_html.h - evolution-report's shared helpers: a row's fields and measures, the
 * versions on the page, HTML escaping, legends, a chart's "no data". Used by report.c (the
 * page) and the files that draw its pictures; calls none of them. */
#ifndef LOADTEST_REPORT_HTML_H
#define LOADTEST_REPORT_HTML_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

/* The most versions (distinct "lock" values) the page draws; more are left out of charts. */
#define REPORT_MAX_VERSIONS 64

/* row[key] as a string; NULL when missing or not a string. Borrowed from row. */
const char *report_str(const json_t *row, const char *key);
/* row[key] as a number: 1 with *out set, 0 when missing or not a number. */
int report_num(const json_t *row, const char *key, double *out);
/* v into buf (n bytes): an integer when it is one, else one decimal. Returns buf. */
const char *report_fmt(char *buf, size_t n, double v);
/* s, HTML-escaped, into f. */
void report_escape(FILE *f, const char *s);
/* v limited to lo..hi (hi for NaN), so that absurd input stays drawable. */
double report_clamp(double v, double lo, double hi);
/* The end of a linear axis for values 0..v: a whole number of ticks, the tick spacing (in
 * *step) 1, 2 or 5 times a power of ten, at most 6 intervals; 0..1 when v <= 0. */
double report_axis_top(double v, double *step);
/* A chart's place when there is nothing to draw, and why. */
void report_no_data(FILE *f, const char *why);

/* strcmp with runs of digits compared as numbers: "v2" < "v11", "x/2" < "x/11". */
int report_natural_cmp(const char *a, const char *b);
/* The distinct "lock" values of rows into out (borrowed), the versions vN in numeric order
 * first, then the others (atomic, none...) as they first appear. Returns how many (at most
 * max). */
size_t report_versions(const json_t *rows, const char **out, size_t max);

/* The store whose failing underneath is the row's flaw ("fault": "redis", "zookeeper" or
 * "database"): "Redis", "ZooKeeper" or "MariaDB"; NULL for the lock's own flaw (the
 * default). */
const char *report_underneath(const json_t *row);
/* The row's measure key ("oversold", "sold_short", "lost", "overlaps", "stuck", "gap_ms",
 * "refused_409", "refused_503", "jain"): 1 with *out set when the run measured it, 0 when
 * it did not (null or absent). A row without "measures" falls back to its older fields. */
int report_measure(const json_t *row, const char *key, double *out);
/* The one measure the row's flaw is about ("oversold", "lost", "overlaps", "stuck", "gap",
 * "refused", "fairness"); NULL when the row declares none. Borrowed from row. */
const char *report_declared(const json_t *row);

/* The shape of a legend's swatch: what the mark looks like in the chart. */
enum report_shape {
    REPORT_SHAPE_BAR,        /* a filled bar */
    REPORT_SHAPE_OUTLINE,    /* a bar outlined in black */
    REPORT_SHAPE_EMPTY,      /* a dashed empty box (not measured, not a rate) */
    REPORT_SHAPE_LINE,       /* a line of the colour */
    REPORT_SHAPE_DASH,       /* a dashed vertical line */
    REPORT_SHAPE_TICK,       /* a thin vertical tick */
    REPORT_SHAPE_TRIANGLE,   /* a triangle pointing up */
    REPORT_SHAPE_CROSS,      /* a black cross */
    REPORT_SHAPE_DOT,        /* a round dot */
};

/* One legend entry: the mark's class in the charts (they draw it as class="m-MARK"), its
 * swatch, colour and words. */
struct report_key {
    const char *mark;
    enum report_shape shape;
    const char *colour;
    const char *text;
};

/* A legend (<ul class="legend">) of the n keys, each <li data-mark="MARK">. */
void report_legend(FILE *f, const struct report_key *keys, size_t n);

#endif
