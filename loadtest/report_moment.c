/* report_moment.c - evolution-report's pictures of what happened: the moment each flaw
 * showed in a run (a row's "moment", loadtest/moment.jq), drawn as the live page draws
 * it, and the model checker's counterexamples (model/check's sequence diagrams), each
 * next to the run that shows the same flaw. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "loadtest/report_html.h"
#include "loadtest/report_moment.h"

/* The live page's colours. */
#define REPORT_COLOUR_HELD     "#1f77b4"
#define REPORT_COLOUR_OVERLAP  "#d62728"
#define REPORT_COLOUR_RENEWED  "#2ca02c"
#define REPORT_COLOUR_LOST     "#ff7f0e"
#define REPORT_COLOUR_FENCED   "#9467bd"

/* Sized to fit a 420 px screen with its text (12, 13) above 10 px. */
enum { MOMENT_LABEL_W = 72, MOMENT_PLOT_W = 362, MOMENT_LANE_H = 22, MOMENT_AXIS_H = 20 };
enum { MOMENT_W = MOMENT_LABEL_W + MOMENT_PLOT_W + 26 };   /* room for the last tick's words */
enum { MOMENT_MAX_LANES = 64 };   /* moment.jq keeps 12 */

/* Every mark a moment draws (class="m-MARK"), for its legend. */
static const struct report_key moment_keys[] = {
    { "held", REPORT_SHAPE_BAR, REPORT_COLOUR_HELD,
      "a critical section: from the grant to the release being sent" },
    { "overlap", REPORT_SHAPE_BAR, REPORT_COLOUR_OVERLAP, "a critical section while another ran" },
    { "renewed", REPORT_SHAPE_TICK, REPORT_COLOUR_RENEWED, "the lease renewed (the watchdog)" },
    { "released", REPORT_SHAPE_TICK, "#222", "a release (not drawn on a busy lane)" },
    { "lost", REPORT_SHAPE_TRIANGLE, REPORT_COLOUR_LOST,
      "a lease lost while its holder worked on" },
    { "fenced", REPORT_SHAPE_TRIANGLE, REPORT_COLOUR_FENCED, "a write refused by the fence" },
    { "deleted", REPORT_SHAPE_CROSS, "#000", "a release that deleted another's lock" },
    { "moment", REPORT_SHAPE_DASH, "#000", "the moment the flaw showed" },
};

/* report_moment_legend: the legend of every mark a moment draws. */
static void report_moment_legend(FILE *f)
{
    report_legend(f, moment_keys, sizeof moment_keys / sizeof moment_keys[0]);
}

/* report_moment_x: where t (ms into the window of span ms) is drawn. */
static double report_moment_x(double t, double span)
{
    return MOMENT_LABEL_W + MOMENT_PLOT_W * report_clamp(t / span, 0, 1);
}

/* One mark of a lane at y: a renewal's or a release's tick, a triangle for a lost lease or
 * a refused write, a cross for a release that deleted another's lock. */
static void report_moment_mark(FILE *f, const char *kind, double x, int y)
{
    if (strcmp(kind, "renewed") == 0)
        fprintf(f, "<rect class=\"m-renewed\" x=\"%.1f\" y=\"%d\" width=\"2\" height=\"%d\" "
                   "fill=\"%s\"/>\n", x - 1, y, MOMENT_LANE_H - 2, REPORT_COLOUR_RENEWED);
    else if (strcmp(kind, "released") == 0)
        fprintf(f, "<rect class=\"m-released\" x=\"%.1f\" y=\"%d\" width=\"1\" height=\"%d\" "
                   "fill=\"#222\"/>\n", x, y + 2, MOMENT_LANE_H - 6);
    else if (strcmp(kind, "deleted") == 0)
        fprintf(f, "<path class=\"m-deleted deleted\" d=\"M%.1f %d l10 %d m0 -%d l-10 %d\" "
                   "stroke=\"#000\" stroke-width=\"2.5\"><title>its DEL removed another's lock"
                   "</title></path>\n", x - 5, y + 3, MOMENT_LANE_H - 8, MOMENT_LANE_H - 8,
                MOMENT_LANE_H - 8);
    else if (strcmp(kind, "fenced") == 0)
        fprintf(f, "<path class=\"m-fenced\" d=\"M%.1f %d l-5 %d h10 z\" fill=\"%s\"><title>"
                   "write refused by the fence</title></path>\n", x, y + 1, MOMENT_LANE_H - 4,
                REPORT_COLOUR_FENCED);
    else if (strcmp(kind, "lost") == 0)
        fprintf(f, "<path class=\"m-lost\" d=\"M%.1f %d l-5 %d h10 z\" fill=\"%s\"><title>"
                   "lease lost</title></path>\n", x, y + 1, MOMENT_LANE_H - 4, REPORT_COLOUR_LOST);
}

/* One lane's marks: renewals, releases (not on a busy lane: they would hide its bars),
 * then lost leases and refused writes, and on top a release that deleted another's lock. */
static void report_moment_marks(FILE *f, const json_t *marks, double span, int y, int busy)
{
    static const char *const layers[] = { "renewed", "released", "lost", "fenced", "deleted" };
    size_t i;
    const json_t *m;

    for (size_t layer = 0; layer < sizeof(layers) / sizeof(layers[0]); layer++)
    json_array_foreach(marks, i, m) {
        const char *kind = json_string_value(json_array_get(m, 1));
        if (kind == NULL || strcmp(kind, layers[layer]) != 0 ||
            (busy && strcmp(kind, "released") == 0))
            continue;
        report_moment_mark(f, kind, report_moment_x(json_number_value(json_array_get(m, 0)), span),
                           y);
    }
}

/* report_lane_cmp: lanes in their names' numeric order ("x/2" before "x/11"). */
static int report_lane_cmp(const void *a, const void *b)
{
    const char *na = report_str(*(const json_t *const *)a, "name");
    const char *nb = report_str(*(const json_t *const *)b, "name");

    return report_natural_cmp(na ? na : "", nb ? nb : "");
}

/* report_lane_prefix: how much of every lane's name (of n) to leave out: what they all
 * begin with, up to its last '-' ("inventory-"); 0 when nothing. */
static size_t report_lane_prefix(const json_t *const *lanes, size_t n)
{
    const char *first = n ? report_str(lanes[0], "name") : NULL;
    size_t len, i;

    if (first == NULL)
        return 0;
    len = strlen(first);
    for (i = 1; i < n; i++) {
        const char *name = report_str(lanes[i], "name");
        size_t k = 0;
        if (name == NULL)
            return 0;
        while (k < len && name[k] == first[k])
            k++;
        len = k;
    }
    while (len > 0 && first[len - 1] != '-')
        len--;
    return len;
}

/* One lane at y: its name (short, the whole in a tooltip), its sections as bars (red
 * where another ran at once), its marks. */
static void report_moment_lane(FILE *f, const json_t *lane, size_t skip, double span, int y)
{
    const char *name = report_str(lane, "name");
    const json_t *bars = json_object_get(lane, "bars"), *bar;
    size_t j;

    fprintf(f, "<text class=\"lane\" x=\"2\" y=\"%d\"><title>", y + 15);
    report_escape(f, name ? name : "?");
    fputs("</title>", f);
    report_escape(f, name ? name + skip : "?");
    fputs("</text>\n", f);
    json_array_foreach(bars, j, bar) {
        double x0 = report_moment_x(json_number_value(json_array_get(bar, 0)), span);
        double x1 = report_moment_x(json_number_value(json_array_get(bar, 1)), span);
        int red = json_is_true(json_array_get(bar, 2));
        fprintf(f, "<rect class=\"m-%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" "
                   "fill=\"%s\"/>\n", red ? "overlap" : "held", x0, y + 3,
                x1 - x0 > 1 ? x1 - x0 : 1, MOMENT_LANE_H - 8,
                red ? REPORT_COLOUR_OVERLAP : REPORT_COLOUR_HELD);
    }
    report_moment_marks(f, json_object_get(lane, "marks"), span, y, json_array_size(bars) > 12);
}

/* report_moment_axis: a tick every 400 ms from the moment, counted from it. */
static void report_moment_axis(FILE *f, double span, double at, int h)
{
    for (int ms = (int)at % 400; ms <= (int)span; ms += 400) {
        double x = report_moment_x(ms, span);
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"13\" text-anchor=\"%s\">%+d ms</text>\n",
                x, MOMENT_AXIS_H - 4, x, h, x, x > MOMENT_W - 30 ? "end" : "middle", ms - (int)at);
    }
}

/* One moment as an SVG: a lane per instance and thread in numeric order, critical
 * sections as bars (red where two overlap), the moment itself as a dashed line. */
static void report_moment_chart(FILE *f, const json_t *moment)
{
    const json_t *lanes = json_object_get(moment, "lanes"), *sorted[MOMENT_MAX_LANES];
    size_t n = json_array_size(lanes), i, skip;
    double span = json_number_value(json_object_get(moment, "span_ms"));
    double at = json_number_value(json_object_get(moment, "at_ms"));
    int h;

    if (n > MOMENT_MAX_LANES)
        n = MOMENT_MAX_LANES;
    h = MOMENT_AXIS_H + (int)n * MOMENT_LANE_H + 4;
    if (span <= 0)
        span = 2000;
    for (i = 0; i < n; i++)
        sorted[i] = json_array_get(lanes, i);
    qsort(sorted, n, sizeof *sorted, report_lane_cmp);
    skip = report_lane_prefix(sorted, n);
    fprintf(f, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
               "class=\"moment\">\n", MOMENT_W, h, MOMENT_W, h);
    report_moment_axis(f, span, at, h);
    for (i = 0; i < n; i++)
        report_moment_lane(f, sorted[i], skip, span, MOMENT_AXIS_H + (int)i * MOMENT_LANE_H);
    fprintf(f, "<line class=\"m-moment\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
               "stroke=\"#000\" stroke-width=\"1.5\" stroke-dasharray=\"4 3\"/>\n</svg>\n",
            report_moment_x(at, span), MOMENT_AXIS_H - 4, report_moment_x(at, span), h);
}

/* The caption's words for a moment's "deleted" (moment.jq): whose release removed whose
 * lock; nothing when there is none. */
static void report_moment_deleted(FILE *f, const json_t *deleted)
{
    const char *by = report_str(deleted, "by"), *of = report_str(deleted, "of");

    if (by == NULL || of == NULL)
        return;
    fputs("; the release of ", f);
    report_escape(f, by);
    fputs(" (its DEL, black cross) removed the lock of ", f);
    report_escape(f, of);
    fputs(", whose lease still ran: the next grant came while it held", f);
}

/* report_has_moment: 1 when row captured the moment of its flaw. */
static int report_has_moment(const json_t *row)
{
    const json_t *moment = json_object_get(row, "moment");

    return json_is_object(moment) && report_str(moment, "kind") != NULL;
}

/* report_moment_figure: row's moment in its figure, the caption saying what it shows. */
static void report_moment_figure(FILE *f, const json_t *row)
{
    static const struct { const char *kind, *what; } kinds[] = {
        { "overlap", "two critical sections at once (red): both read the same stock" },
        { "fenced", "the fence refused a stale holder's write (purple triangle)" },
        { "lost", "a lease lost while its holder worked on (orange triangle)" },
    };
    const json_t *moment = json_object_get(row, "moment");
    const char *kind = report_str(moment, "kind"), *what = "";

    for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
        if (strcmp(kind, kinds[k].kind) == 0)
            what = kinds[k].what;
    fputs("<figure>\n<figcaption>", f);
    report_escape(f, report_str(row, "lock") ? report_str(row, "lock") : "?");
    fputs(" ", f);
    report_escape(f, report_str(row, "scenario") ? report_str(row, "scenario") : "?");
    fputs(" <small>", f);
    report_escape(f, what);
    report_moment_deleted(f, json_object_get(moment, "deleted"));
    fputs("</small></figcaption>\n", f);
    report_moment_chart(f, moment);
    fputs("</figure>\n", f);
}

/* report_moment_section: for every flaw row that captured one, the moment it showed,
 * after a legend of every mark. */
void report_moment_section(FILE *f, const json_t *rows)
{
    size_t i, seen = 0;
    const json_t *row;

    json_array_foreach(rows, i, row)
        seen += (size_t)report_has_moment(row);
    if (seen == 0) {
        report_no_data(f, "no row captured the moment of its flaw (loadtest/run --moment)");
        return;
    }
    report_moment_legend(f);
    fputs("<div class=\"charts\">\n", f);
    json_array_foreach(rows, i, row)
        if (report_has_moment(row))
            report_moment_figure(f, row);
    fputs("</div>\n", f);
}

/* The whole of a (small) file into f; 0, or -1 when it cannot be read. */
static int report_copy_file(FILE *f, const char *path)
{
    char buf[8192];
    size_t n;
    FILE *in = fopen(path, "r");

    if (in == NULL)
        return -1;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
        fwrite(buf, 1, n, f);
    fclose(in);
    return 0;
}

/* The evolution row of version v and scenario s that captured its moment; NULL if none. */
static const json_t *report_row_with_moment(const json_t *rows, const char *v, const char *s)
{
    size_t i;
    const json_t *row;

    json_array_foreach(rows, i, row) {
        const char *lock = report_str(row, "lock"), *scn = report_str(row, "scenario");
        if (lock && scn && strcmp(lock, v) == 0 && strcmp(scn, s) == 0 &&
            report_has_moment(row))
            return row;
    }
    return NULL;
}

/* report_traces_section: every counterexample of model that broke its property, as its
 * diagram, beside the row of the same version and scenario that captured its moment. */
void report_traces_section(FILE *f, const json_t *rows, const json_t *model)
{
    size_t i, seen = 0;
    const json_t *m;

    json_array_foreach(model, i, m) {
        const char *v = report_str(m, "version"), *fault = report_str(m, "fault");
        const char *prop = report_str(m, "property"), *trace = report_str(m, "trace");
        const json_t *row;
        char svg[512];
        size_t len;

        if (!v || !fault || !prop || !trace || json_is_true(json_object_get(m, "holds")) ||
            (len = strlen(trace)) < 4 || len >= sizeof(svg) || strcmp(trace + len - 4, ".txt") != 0)
            continue;
        snprintf(svg, sizeof(svg), "%.*s.svg", (int)(len - 4), trace);
        fputs("<div class=\"charts\">\n<figure>\n<figcaption>", f);
        report_escape(f, v);
        fputs(" ", f);
        report_escape(f, fault);
        fputs(": <small>", f);
        report_escape(f, prop);
        fputs(" broken, in the model</small></figcaption>\n<div class=\"scroll trace-box\">", f);
        if (report_copy_file(f, svg) != 0)   /* at its own size: its text stays readable */
            report_no_data(f, "its diagram is missing (run make model)");
        fputs("</div>\n</figure>\n", f);
        if ((row = report_row_with_moment(rows, v, fault)) != NULL) {
            fputs("<figure>\n<figcaption>", f);
            report_escape(f, v);
            fputs(" ", f);
            report_escape(f, fault);
            fputs(": <small>the same, for real (the run's moment)</small></figcaption>\n", f);
            report_moment_chart(f, json_object_get(row, "moment"));
            fputs("</figure>\n", f);
        }
        fputs("</div>\n", f);
        seen++;
    }
    if (seen == 0)
        report_no_data(f, model ? "the model checker found no counterexample"
                                : "no model checker results "
                                  "(make model writes results/model.json)");
}
