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

enum { MOMENT_LABEL_W = 150, MOMENT_PLOT_W = 520, MOMENT_LANE_H = 20, MOMENT_AXIS_H = 18 };

/* One lane's marks: renewals as ticks, releases as thin black ticks (not on a busy lane:
 * they would hide its bars), then lost leases and refused writes as triangles, and on top
 * a release that deleted another's lock as a black cross. */
static void report_moment_marks(FILE *f, const json_t *marks, double span, int y, int busy)
{
    static const char *const layers[] = { "renewed", "released", "lost", "fenced", "deleted" };
    size_t i;
    const json_t *m;

    for (size_t layer = 0; layer < sizeof(layers) / sizeof(layers[0]); layer++)
    json_array_foreach(marks, i, m) {
        double t = json_number_value(json_array_get(m, 0));
        const char *kind = json_string_value(json_array_get(m, 1));
        double x = MOMENT_LABEL_W + MOMENT_PLOT_W * report_clamp(t / span, 0, 1);
        if (kind == NULL || strcmp(kind, layers[layer]) != 0 ||
            (busy && strcmp(kind, "released") == 0))
            continue;
        if (strcmp(kind, "renewed") == 0)
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"2\" height=\"%d\" fill=\"%s\"/>\n",
                    x - 1, y, MOMENT_LANE_H - 2, REPORT_COLOUR_RENEWED);
        else if (strcmp(kind, "released") == 0)
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"1\" height=\"%d\" fill=\"#222\"/>\n",
                    x, y + 2, MOMENT_LANE_H - 6);
        else if (strcmp(kind, "deleted") == 0)
            fprintf(f, "<path class=\"deleted\" d=\"M%.1f %d l10 %d m0 -%d l-10 %d\" stroke=\"#000\" "
                       "stroke-width=\"2.5\"><title>its DEL removed another's lock</title></path>\n",
                    x - 5, y + 3, MOMENT_LANE_H - 8, MOMENT_LANE_H - 8, MOMENT_LANE_H - 8);
        else
            fprintf(f, "<path d=\"M%.1f %d l-5 %d h10 z\" fill=\"%s\"><title>%s</title></path>\n",
                    x, y + 1, MOMENT_LANE_H - 4,
                    strcmp(kind, "fenced") == 0 ? REPORT_COLOUR_FENCED : REPORT_COLOUR_LOST,
                    strcmp(kind, "fenced") == 0 ? "write refused by the fence" : "lease lost");
    }
}

/* One moment as an SVG: a lane per instance and thread, critical sections as bars (red
 * where two overlap), the moment itself as a dashed line. */
static void report_moment_chart(FILE *f, const json_t *moment)
{
    const json_t *lanes = json_object_get(moment, "lanes"), *lane, *bar;
    double span = json_number_value(json_object_get(moment, "span_ms"));
    double at = json_number_value(json_object_get(moment, "at_ms"));
    int h = MOMENT_AXIS_H + (int)json_array_size(lanes) * MOMENT_LANE_H + 4;
    size_t i, j;

    if (span <= 0)
        span = 2000;
    fprintf(f, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
               "class=\"moment\">\n", MOMENT_LABEL_W + MOMENT_PLOT_W + 8, h,
            MOMENT_LABEL_W + MOMENT_PLOT_W + 8, h);
    for (int ms = (int)at % 400; ms <= (int)span; ms += 400) {   /* every 400 ms from the moment */
        double x = MOMENT_LABEL_W + MOMENT_PLOT_W * ms / span;
        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"12\" text-anchor=\"middle\">%+d ms</text>\n",
                x, MOMENT_AXIS_H - 4, x, h, x, ms - (int)at);
    }
    json_array_foreach(lanes, i, lane) {
        int y = MOMENT_AXIS_H + (int)i * MOMENT_LANE_H;
        fprintf(f, "<text class=\"label\" x=\"2\" y=\"%d\">", y + 14);
        report_escape(f, report_str(lane, "name") ? report_str(lane, "name") : "?");
        fputs("</text>\n", f);
        json_array_foreach(json_object_get(lane, "bars"), j, bar) {
            double s = json_number_value(json_array_get(bar, 0)) / span;
            double e = json_number_value(json_array_get(bar, 1)) / span;
            double x0 = MOMENT_LABEL_W + MOMENT_PLOT_W * report_clamp(s, 0, 1);
            double x1 = MOMENT_LABEL_W + MOMENT_PLOT_W * report_clamp(e, 0, 1);
            fprintf(f, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n",
                    x0, y + 3, x1 - x0 > 1 ? x1 - x0 : 1, MOMENT_LANE_H - 8,
                    json_is_true(json_array_get(bar, 2)) ? REPORT_COLOUR_OVERLAP : REPORT_COLOUR_HELD);
        }
        report_moment_marks(f, json_object_get(lane, "marks"), span, y,
                            json_array_size(json_object_get(lane, "bars")) > 12);
    }
    fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#000\" "
               "stroke-dasharray=\"4 3\"/>\n</svg>\n",
            MOMENT_LABEL_W + MOMENT_PLOT_W * at / span, MOMENT_AXIS_H - 4,
            MOMENT_LABEL_W + MOMENT_PLOT_W * at / span, h);
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

/* report_moment_section: for every flaw row that captured one, the moment it showed. */
void report_moment_section(FILE *f, const json_t *rows)
{
    static const struct { const char *kind, *what; } kinds[] = {
        { "overlap", "two critical sections at once (red): both read the same stock" },
        { "fenced", "the fence refused a stale holder's write (purple)" },
        { "lost", "a lease lost while its holder worked on (orange)" },
    };
    size_t i, seen = 0;
    const json_t *row;

    fputs("<div class=\"charts\">\n", f);
    json_array_foreach(rows, i, row) {
        const json_t *moment = json_object_get(row, "moment");
        const char *kind = report_str(moment, "kind"), *what = "";
        if (!json_is_object(moment) || kind == NULL)
            continue;
        for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++)
            if (strcmp(kind, kinds[k].kind) == 0)
                what = kinds[k].what;
        seen++;
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
    fputs("</div>\n", f);
    if (seen == 0)
        report_no_data(f, "no row captured the moment of its flaw (loadtest/run --moment)");
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
            json_is_object(json_object_get(row, "moment")))
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
        fputs(" broken, in the model</small></figcaption>\n", f);
        if (report_copy_file(f, svg) != 0)
            report_no_data(f, "its diagram is missing (run make model)");
        fputs("</figure>\n", f);
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
                                : "no model checker results (make model writes results/model.json)");
}
