/* report.c - evolution-report: turns results/evolution.json into one self-contained HTML page. */
/*
 * Usage: evolution-report IN.json OUT.html
 *
 * The input, written by the evolution runner (loadtest/evolution):
 *
 *   {"generated": "2026-11-23T10:00:00Z", "runs": 1, "rows": [
 *     {"lock": "v4", "technique": "SET lock id NX PX ttl; DEL", "scenario": "long-work",
 *      "expect": "flaw", "fault": "lock", "shown": true,
 *      "observed": "one sale worked 1500 ms with a 500 ms lease; overlaps 3",
 *      "oversold": 2, "overlaps": 3, "timeouts": 0, "foreign_deletes": 1,
 *      "requests": 120, "ok": 60, "sold_out": 0, "errors": 0, "sold": 60, "remaining": 0,
 *      "rps": 812.5, "sales_per_s": 640, "p50_ms": 3.1, "p99_ms": 40.2,
 *      "timeline": [[0, 2000, 0], [100, 1990, 12], ...]    (optional: [t_ms, stock, sold])
 *     }, ...]}
 *
 * Rows come in version order (v1..v10, then others such as "fenced"); a version may have
 * several rows, one per scenario. "rows" must be an array of objects; every field of a
 * row is optional: a missing or mistyped one shows as "-" in the table and keeps the row
 * out of the chart that needs it. A chart with nothing to draw says "no data".
 *
 * A row's "fault" says whose a flaw of its scenario is: "lock" (the lock's own design:
 * long work, a pause, a crash of the holder...), or the store failing underneath: "redis"
 * (Redis or its deployment: a failover, a crash, a partition) or "zookeeper" (the
 * ensemble: its leader killed, a partition); loadtest/evolution's rows set it. A row
 * without it counts as the lock's.
 *
 * The page: the table of rows, oversold per version (max over its rows) in two charts,
 * the lock's own flaws apart from the store's failures, sales/s per version (mean over its
 * "load" rows), and one stock/sold timeline per "long-work" row.
 * Everything is inline (CSS and SVG); no scripts, no external assets.
 *
 * Exit status: 0 written, 1 unreadable or invalid input or output not written, 2 usage.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "loadtest/report_html.h"
#include "loadtest/report_moment.h"

/* Chart colours; tests/test_report.sh counts these pixels in a screenshot. */
#define REPORT_COLOUR_OVERSOLD "#d62728"
#define REPORT_COLOUR_RPS      "#1f77b4"
#define REPORT_COLOUR_STOCK    "#2ca02c"
#define REPORT_COLOUR_SOLD     "#ff7f0e"
#define REPORT_COLOUR_MISS     "#ffd7d7"   /* background of a "NOT shown" verdict */
#define REPORT_COLOUR_BENCH    "#9467bd"
#define REPORT_COLOUR_STORE    "#8c564b"   /* oversold when the store failed underneath */

/* One bar: a version and its value; count is how many rows went into it. */
struct report_bar {
    const char *label;   /* borrowed from the JSON document */
    double value;
    int count;
};

/* One timeline sample. */
struct report_point {
    double t_ms, stock, sold;
};

/* report_num: 1 with *out set when field key of row is a number, else 0. */
static int report_num(const json_t *row, const char *key, double *out)
{
    const json_t *v = json_object_get(row, key);

    if (!json_is_number(v))
        return 0;
    *out = json_number_value(v);
    return 1;
}

/* report_fmt: v in buf, as an integer when it is one, else with one decimal; returns buf. */
static const char *report_fmt(char *buf, size_t n, double v)
{
    if (v > -1e15 && v < 1e15 && v == (double)(long long)v)
        snprintf(buf, n, "%lld", (long long)v);
    else
        snprintf(buf, n, "%.1f", v);
    return buf;
}

/* report_axis_top: the axis end for values 0..v: a whole number of ticks, the tick
 * spacing (set in *step) being the smallest 1, 2 or 5 times a power of ten that needs
 * at most 6 intervals. An axis of 0..1 when v <= 0; absurd values are clamped (no hang). */
static double report_axis_top(double v, double *step)
{
    double p = 1, want, top;

    if (!(v > 1e-9))
        v = 1;
    if (v > 1e15)
        v = 1e15;
    want = v / 6;
    while (p * 10 <= want)
        p *= 10;
    while (p > want)
        p /= 10;
    if (p >= want)
        *step = p;
    else if (2 * p >= want)
        *step = 2 * p;
    else if (5 * p >= want)
        *step = 5 * p;
    else
        *step = 10 * p;
    for (top = *step; top < v * 0.9999; top += *step)
        ;
    return top;
}

/* report_bars_add: folds v into the bar for label (appended if new); keep_max chooses
 * max over rows, else a sum (divide by count for the mean). */
static void report_bars_add(struct report_bar *bars, size_t *n, const char *label, double v,
                            int keep_max)
{
    size_t i;

    for (i = 0; i < *n; i++)
        if (strcmp(bars[i].label, label) == 0)
            break;
    if (i == *n) {
        bars[i].label = label;
        bars[i].value = v;
        bars[i].count = 1;
        (*n)++;
        return;
    }
    if (keep_max)
        bars[i].value = v > bars[i].value ? v : bars[i].value;
    else
        bars[i].value += v;
    bars[i].count++;
}

/* report_y_axis: horizontal grid lines with their labels, for a plot area at (x0, y0)
 * of size w x h holding values 0..top. */
static void report_y_axis(FILE *f, int x0, int y0, int w, int h, double top, double step)
{
    char buf[32];
    int k;

    for (k = 0; k * step <= top * 1.0001; k++) {
        double y = y0 + h - k * step / top * h;
        fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" class=\"grid\"/>", x0, y,
                x0 + w, y);
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%s</text>\n",
                x0 - 6, y + 4, report_fmt(buf, sizeof buf, k * step));
    }
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>", x0, y0, x0,
            y0 + h);
    fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" class=\"axis\"/>\n", x0, y0 + h,
            x0 + w, y0 + h);
}

/* report_bar_chart: one SVG bar chart, a labelled bar per entry, values over the bars.
 * integers keeps the axis at whole numbers (at least 0..5). */
static void report_bar_chart(FILE *f, const char *title, const struct report_bar *bars,
                             size_t n, const char *colour, int integers)
{
    const int W = 540, H = 280, ML = 56, MR = 12, MT = 20, MB = 36;
    const int pw = W - ML - MR, ph = H - MT - MB;
    double max = 0, top, step, slot;
    char buf[32];
    size_t i;

    for (i = 0; i < n; i++)
        if (bars[i].value > max)
            max = bars[i].value;
    if (integers && max < 5)
        max = 5;
    top = report_axis_top(max, &step);
    slot = (double)pw / (double)n;

    fprintf(f, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
            W, H, W, H);
    report_escape(f, title);
    fputs("\">\n", f);
    report_y_axis(f, ML, MT, pw, ph, top, step);
    for (i = 0; i < n; i++) {
        double v = report_clamp(bars[i].value, 0, top);
        int bw = (int)(slot * 0.6), bh = (int)(v / top * ph + 0.5);
        int x = ML + (int)(slot * (double)i + (slot - bw) / 2), cx = x + bw / 2;

        if (bh > 0)
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"%s\"/>", x,
                    MT + ph - bh, bw, bh, colour);
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"value\" text-anchor=\"middle\">%s</text>", cx,
                MT + ph - bh - 5, report_fmt(buf, sizeof buf, bars[i].value));
        fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"label\" text-anchor=\"middle\">", cx,
                MT + ph + 18);
        report_escape(f, bars[i].label);
        fputs("</text>\n", f);
    }
    fputs("</svg>\n", f);
}

/* report_points: the well-formed [t_ms, stock, sold] samples of tl in a new array the
 * caller frees; returns how many (0, with *out NULL, when none). */
static size_t report_points(const json_t *tl, struct report_point **out)
{
    struct report_point *pts;
    size_t i, n = 0, len = json_array_size(tl);

    *out = NULL;
    if (len == 0)
        return 0;
    pts = calloc(len, sizeof *pts);
    if (pts == NULL)
        return 0;
    for (i = 0; i < len; i++) {
        const json_t *p = json_array_get(tl, i);
        const json_t *t = json_array_get(p, 0), *st = json_array_get(p, 1),
                     *so = json_array_get(p, 2);

        if (!json_is_number(t) || !json_is_number(st) || !json_is_number(so))
            continue;
        pts[n].t_ms = json_number_value(t);
        pts[n].stock = json_number_value(st);
        pts[n].sold = json_number_value(so);
        n++;
    }
    if (n == 0) {
        free(pts);
        return 0;
    }
    *out = pts;
    return n;
}

/* report_polyline: one series of pts (which = 0 stock, 1 sold) scaled into the plot area. */
static void report_polyline(FILE *f, const struct report_point *pts, size_t n, int which,
                            int x0, int y0, int w, int h, double t_lo, double t_span,
                            double top, const char *colour)
{
    size_t i;

    fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"3\" "
            "stroke-linejoin=\"round\" points=\"", colour);
    for (i = 0; i < n; i++) {
        double v = which == 0 ? pts[i].stock : pts[i].sold;
        double x = report_clamp(x0 + (pts[i].t_ms - t_lo) / t_span * w, -1e6, 1e6);
        double y = report_clamp(y0 + h - v / top * h, -1e6, 1e6);

        fprintf(f, "%s%.1f,%.1f", i ? " " : "", x, y);
    }
    fputs("\"/>\n", f);
}

/* report_line_chart: stock and sold over time for one row, with axes and a legend. */
static void report_line_chart(FILE *f, const char *title, const struct report_point *pts,
                              size_t n)
{
    const int W = 540, H = 250, ML = 56, MR = 16, MT = 30, MB = 40;
    const int pw = W - ML - MR, ph = H - MT - MB;
    double t_lo = 0, t_hi = 0, vmax = 0, top, step, t_span, t_step;
    char buf[32];
    size_t i;
    int k;

    for (i = 0; i < n; i++) {
        if (pts[i].t_ms < t_lo)
            t_lo = pts[i].t_ms;
        if (pts[i].t_ms > t_hi)
            t_hi = pts[i].t_ms;
        if (pts[i].stock > vmax)
            vmax = pts[i].stock;
        if (pts[i].sold > vmax)
            vmax = pts[i].sold;
    }
    top = report_axis_top(vmax < 5 ? 5 : vmax, &step);
    t_span = report_axis_top(t_hi - t_lo, &t_step);

    fprintf(f, "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
            W, H, W, H);
    report_escape(f, title);
    fputs("\">\n", f);
    report_y_axis(f, ML, MT, pw, ph, top, step);
    for (k = 0; k * t_step <= t_span * 1.0001; k++) {
        double x = ML + k * t_step / t_span * pw;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" class=\"axis\"/>", x,
                MT + ph, x, MT + ph + 4);
        fprintf(f, "<text x=\"%.1f\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">%s</text>\n",
                x, MT + ph + 16, report_fmt(buf, sizeof buf, t_lo + k * t_step));
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"tick\" text-anchor=\"middle\">time (ms)</text>\n",
            ML + pw / 2, H - 4);
    fprintf(f, "<text x=\"%d\" y=\"%d\" class=\"tick\">items</text>\n", 4, MT - 12);
    report_polyline(f, pts, n, 0, ML, MT, pw, ph, t_lo, t_span, top, REPORT_COLOUR_STOCK);
    report_polyline(f, pts, n, 1, ML, MT, pw, ph, t_lo, t_span, top, REPORT_COLOUR_SOLD);
    /* Legend, top right. */
    fprintf(f, "<rect x=\"%d\" y=\"6\" width=\"14\" height=\"14\" fill=\"%s\"/>"
            "<text x=\"%d\" y=\"18\" class=\"label\">stock</text>\n", W - 150, REPORT_COLOUR_STOCK,
            W - 132);
    fprintf(f, "<rect x=\"%d\" y=\"6\" width=\"14\" height=\"14\" fill=\"%s\"/>"
            "<text x=\"%d\" y=\"18\" class=\"label\">sold</text>\n", W - 80, REPORT_COLOUR_SOLD,
            W - 62);
    fputs("</svg>\n", f);
}

/* report_underneath: the store whose failing underneath the lock row's flaw is ("fault":
 * "redis": "Redis"; "zookeeper": "ZooKeeper"), NULL when it is the lock's own ("fault":
 * "lock", or no such field). */
static const char *report_underneath(const json_t *row)
{
    const char *fault = report_str(row, "fault");

    if (fault != NULL && strcmp(fault, "redis") == 0)
        return "Redis";
    if (fault != NULL && strcmp(fault, "zookeeper") == 0)
        return "ZooKeeper";
    return NULL;
}

/* report_cell_num: one table cell holding the number field key, "-" when missing. */
static void report_cell_num(FILE *f, const json_t *row, const char *key)
{
    char buf[32];
    double v;

    if (report_num(row, key, &v))
        fprintf(f, "<td class=\"num\">%s</td>", report_fmt(buf, sizeof buf, v));
    else
        fputs("<td class=\"num\">-</td>", f);
}

/* report_cell_str: one table cell holding the escaped string field key, "-" when missing. */
static void report_cell_str(FILE *f, const json_t *row, const char *key)
{
    const char *s = report_str(row, key);

    fputs("<td>", f);
    report_escape(f, s ? s : "-");
    fputs("</td>", f);
}

/* report_cell_store: the scenario's cell of a row where the store failed underneath, said
 * so. */
static void report_cell_store(FILE *f, const json_t *row)
{
    const char *s = report_str(row, "scenario");

    fputs("<td>", f);
    report_escape(f, s ? s : "-");
    fprintf(f, " <small class=\"fault\">(%s failed underneath)</small></td>", report_underneath(row));
}

/* report_table: the table of rows, one line per row, verdict last. */
static void report_table(FILE *f, const json_t *rows)
{
    size_t i;
    const json_t *row;

    if (json_array_size(rows) == 0) {
        report_no_data(f, "the input has no rows");
        return;
    }
    fputs("<table>\n<thead><tr><th>version</th><th>technique</th><th>scenario</th>"
          "<th>expected</th><th>observed</th><th class=\"num\">oversold</th>"
          "<th class=\"num\">overlaps</th><th class=\"num\">timeouts</th><th>verdict</th></tr></thead>\n<tbody>\n", f);
    json_array_foreach(rows, i, row) {
        int shown = json_is_true(json_object_get(row, "shown"));
        int skipped = json_is_true(json_object_get(row, "skipped"));

        fputs("<tr>", f);
        report_cell_str(f, row, "lock");
        report_cell_str(f, row, "technique");
        if (report_underneath(row))
            report_cell_store(f, row);
        else
            report_cell_str(f, row, "scenario");
        report_cell_str(f, row, "expect");
        report_cell_str(f, row, "observed");
        report_cell_num(f, row, "oversold");
        report_cell_num(f, row, "overlaps");
        report_cell_num(f, row, "timeouts");
        fputs(shown     ? "<td class=\"verdict\">shown</td>"
              : skipped ? "<td class=\"verdict\">skipped</td>"
                        : "<td class=\"verdict miss\">NOT shown</td>", f);
        fputs("</tr>\n", f);
    }
    fputs("</tbody>\n</table>\n", f);
}

/* One bar chart's figure: its caption (bold) and note (small), the title read out for
 * it, its colour, and what "no data" says when it has no bar. */
struct report_figure {
    const char *caption, *note, *title, *colour, *why;
    int integers;
};

/* report_bar_figure: the figure fig of bars (n of them), or its "no data". */
static void report_bar_figure(FILE *f, const struct report_figure *fig,
                              const struct report_bar *bars, size_t n)
{
    fputs("<figure>\n<figcaption>", f);
    report_escape(f, fig->caption);
    fputs(" <small>", f);
    report_escape(f, fig->note);
    fputs("</small></figcaption>\n", f);
    if (n)
        report_bar_chart(f, fig->title, bars, n, fig->colour, fig->integers);
    else
        report_no_data(f, fig->why);
    fputs("</figure>\n", f);
}

/* The section's three charts: oversold per version, the lock's own flaws apart from
 * the store's failures (so that a partition's losses do not pass for the worst lock), and
 * sales/s per version. */
static const struct report_figure report_fig_lock = {
    "Oversold per version: the lock's own flaws", "(max over its rows)",
    "oversold per version, the lock's own flaws", REPORT_COLOUR_OVERSOLD,
    "no row of the lock's own flaws has an oversold count", 1 };
static const struct report_figure report_fig_redis = {
    "Oversold per version: the store failing underneath", "(Redis or ZooKeeper; max over its rows)",
    "oversold per version, the store failing underneath", REPORT_COLOUR_STORE,
    "no row of the store failing underneath has an oversold count", 1 };
static const struct report_figure report_fig_rps = {
    "Sales/s per version", "(load scenario, mean over its rows)",
    "sales per second per version", REPORT_COLOUR_RPS,
    "no load row has a rate (sales_per_s or rps)", 0 };

/* report_bar_section: the bar charts: oversold per version, the lock's flaws and Redis's
 * failures apart, and sales/s per version. Returns 0, or -1 when memory ran out. */
static int report_bar_section(FILE *f, const json_t *rows)
{
    size_t n = json_array_size(rows), n_lock = 0, n_redis = 0, n_rps = 0, i;
    struct report_bar *lock_bars = calloc(n ? n : 1, sizeof *lock_bars);
    struct report_bar *redis_bars = calloc(n ? n : 1, sizeof *redis_bars);
    struct report_bar *rps = calloc(n ? n : 1, sizeof *rps);
    const json_t *row;
    int rc = -1;

    if (lock_bars == NULL || redis_bars == NULL || rps == NULL)
        goto out_free;
    json_array_foreach(rows, i, row) {
        const char *lock = report_str(row, "lock"), *scn = report_str(row, "scenario");
        double v;

        if (lock == NULL)
            lock = "?";
        if (report_num(row, "oversold", &v)) {
            if (report_underneath(row))
                report_bars_add(redis_bars, &n_redis, lock, v, 1);
            else
                report_bars_add(lock_bars, &n_lock, lock, v, 1);
        }
        /* Sales that went through per second; wrk's request rate counts the quick 409s
         * too, so it is only the fallback for rows without sales_per_s. */
        if (scn && strcmp(scn, "load") == 0 &&
            (report_num(row, "sales_per_s", &v) || report_num(row, "rps", &v)))
            report_bars_add(rps, &n_rps, lock, v, 0);
    }
    for (i = 0; i < n_rps; i++)
        rps[i].value /= rps[i].count;

    fputs("<div class=\"charts\">\n", f);
    report_bar_figure(f, &report_fig_lock, lock_bars, n_lock);
    report_bar_figure(f, &report_fig_redis, redis_bars, n_redis);
    report_bar_figure(f, &report_fig_rps, rps, n_rps);
    fputs("</div>\n", f);
    rc = 0;
out_free:
    free(lock_bars);
    free(redis_bars);
    free(rps);
    return rc;
}

/* report_timeline_section: one stock/sold chart per long-work row. */
static void report_timeline_section(FILE *f, const json_t *rows)
{
    size_t i, seen = 0;
    const json_t *row;

    fputs("<div class=\"charts\">\n", f);
    json_array_foreach(rows, i, row) {
        const char *lock = report_str(row, "lock"), *scn = report_str(row, "scenario");
        const char *tech = report_str(row, "technique");
        struct report_point *pts;
        size_t n;
        char title[256];

        if (scn == NULL || strcmp(scn, "long-work") != 0)
            continue;
        seen++;
        snprintf(title, sizeof title, "%s long-work: stock and sold over time",
                 lock ? lock : "?");
        fputs("<figure>\n<figcaption>", f);
        report_escape(f, lock ? lock : "?");
        fputs(" <small>", f);
        report_escape(f, tech ? tech : "");
        fputs("</small></figcaption>\n", f);
        n = report_points(json_object_get(row, "timeline"), &pts);
        if (n >= 2)
            report_line_chart(f, title, pts, n);
        else
            report_no_data(f, "fewer than two timeline samples");
        free(pts);
        fputs("</figure>\n", f);
    }
    fputs("</div>\n", f);
    if (seen == 0)
        report_no_data(f, "no long-work rows");
}

static const char report_css[] =
    "body{font-family:sans-serif;margin:24px;color:#222;background:#fff;max-width:1140px}\n"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px}\n"
    ".meta{color:#555;font-size:13px;margin:0 0 12px}\n"
    "table{border-collapse:collapse;font-size:12px;width:100%}\n"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}\n"
    "th{background:#f0f0f0}.num{text-align:right}\n"
    "td.verdict{font-weight:bold;white-space:nowrap}\n"
    "td.miss{background:" REPORT_COLOUR_MISS ";color:#900}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}\n"
    "figure{margin:0;border:1px solid #ddd;padding:6px}\n"
    "figcaption{font-size:14px;font-weight:bold;margin-bottom:4px}\n"
    "figcaption small{font-weight:normal;color:#555}\n"
    ".nodata{color:#777;font-style:italic;font-size:13px}\n"
    "svg{display:block;max-width:100%;height:auto}svg text{font-family:sans-serif}\n"
    ".scroll{overflow-x:auto}small.fault{color:#8c564b;white-space:nowrap}\n"
    "@media (max-width:600px){body{margin:8px}h1{font-size:18px}"
    "figure{padding:2px;max-width:100%}table{font-size:11px}}\n"
    ".grid{stroke:#e4e4e4;stroke-width:1}.axis{stroke:#444;stroke-width:1}\n"
    ".tick{font-size:11px;fill:#444}.label{font-size:12px;fill:#222}\n"
    ".value{font-size:11px;fill:#222;font-weight:bold}\n";

/* report_write: the whole page for doc into f. Returns 0, or -1 when memory ran out. */
static int report_bench_section(FILE *f, const json_t *bench);

static int report_write(FILE *f, const json_t *doc, const json_t *bench, const json_t *model)
{
    const json_t *rows = json_object_get(doc, "rows");
    const char *generated = report_str(doc, "generated");
    size_t i, shown = 0;
    const json_t *row;
    char buf[32];
    double runs;

    json_array_foreach(rows, i, row)
        shown += json_is_true(json_object_get(row, "shown"));

    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" "
          "content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>Lock evolution report</title>\n<style>\n", f);
    fputs(report_css, f);
    fputs("</style>\n</head>\n<body>\n<h1>Lock evolution: v1 to v10</h1>\n<p class=\"meta\">", f);
    fputs("generated ", f);
    report_escape(f, generated ? generated : "(unknown)");
    if (report_num(doc, "runs", &runs))
        fprintf(f, " &middot; runs %s", report_fmt(buf, sizeof buf, runs));
    fprintf(f, " &middot; %zu rows &middot; %zu shown as expected, %zu NOT shown</p>\n",
            json_array_size(rows), shown, json_array_size(rows) - shown);

    fputs("<h2>Scenarios</h2>\n<div class=\"scroll\">\n", f);
    report_table(f, rows);
    fputs("</div>\n", f);
    fputs("<h2>Oversold and throughput</h2>\n<p class=\"meta\">A flaw of the lock's own design "
          "(load, a crash of its holder, long work, a release, a nested call, a pause, its clock) "
          "is drawn apart from Redis or its deployment failing underneath (a failover, a Redis "
          "crash, a partition, a cluster's moves): what a failing Redis lost is not drawn as a "
          "flaw of the version that ran on it.</p>\n", f);
    if (report_bar_section(f, rows) < 0)
        return -1;
    fputs("<h2>long-work timelines</h2>\n", f);
    report_timeline_section(f, rows);
    fputs("<h2 id=\"moments\">The moment each flaw showed</h2>\n<p class=\"meta\">The live page's "
          "drawing, frozen: a lane per instance and thread, a bar per critical section (from "
          "the grant to the release being sent), black ticks for releases, green for renewals, "
          "a black cross for a release that deleted another's lock; the dashed line is the "
          "moment.</p>\n", f);
    report_moment_section(f, rows);
    fputs("<h2 id=\"traces\">The model checker's counterexamples</h2>\n<p class=\"meta\">What SPIN "
          "found for each version (make model), as a sequence: a lane per client, Redis and the "
          "stock; the last arrow, in red, is where the property breaks. Beside it, where a run "
          "showed the same flaw, its moment.</p>\n", f);
    report_traces_section(f, rows, model);
    if (bench && report_bench_section(f, bench) < 0)
        return -1;
    fputs("</body>\n</html>\n", f);
    return 0;
}

/* report_bench_section: sales/s per mode of loadtest/bench (bench.json), with each
 * mode's ratio to atomic and its p99, in one chart and one table. */
static int report_bench_section(FILE *f, const json_t *bench)
{
    const json_t *modes = json_object_get(bench, "modes"), *m;
    size_t n = json_array_size(modes), nb = 0, i;
    struct report_bar *bars;
    char buf[32];

    fputs("<h2>Speed under contention <small>(loadtest/bench)</small></h2>\n", f);
    if (n == 0) {
        report_no_data(f, "bench.json has no modes");
        return 0;
    }
    if ((bars = calloc(n, sizeof *bars)) == NULL)
        return -1;
    json_array_foreach(modes, i, m) {
        double v;
        const char *mode = report_str(m, "mode");
        if (mode && report_num(m, "sales_per_s", &v))
            report_bars_add(bars, &nb, mode, v, 1);
    }
    fputs("<div class=\"charts\">\n<figure>\n<figcaption>Sales/s per mode "
          "<small>(200s only, median of rounds)</small></figcaption>\n", f);
    if (nb)
        report_bar_chart(f, "sales per second per mode", bars, nb, REPORT_COLOUR_BENCH, 0);
    else
        report_no_data(f, "no mode has sales_per_s");
    fputs("</figure>\n</div>\n<table>\n<tr><th>mode</th><th>sales/s</th><th>ratio to atomic</th>"
          "<th>p99 ms</th><th>max ms</th><th>RSS MB</th><th>oversold</th></tr>\n", f);
    json_array_foreach(modes, i, m) {
        static const char *const keys[] = { "sales_per_s", "ratio_to_atomic", "p99_ms", "max_ms",
                                            "rss_mb", "oversold" };
        fputs("<tr><td>", f);
        report_escape(f, report_str(m, "mode") ? report_str(m, "mode") : "?");
        fputs("</td>", f);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            double v;
            fprintf(f, "<td>%s</td>", report_num(m, keys[k], &v) ? report_fmt(buf, sizeof buf, v) : "-");
        }
        fputs("</tr>\n", f);
    }
    fputs("</table>\n", f);
    free(bars);
    return 0;
}

/* report_check: NULL when doc has the shape described at the top, else what is wrong. */
static const char *report_check(const json_t *doc)
{
    const json_t *rows, *row;
    size_t i;

    if (!json_is_object(doc))
        return "the top level is not an object";
    rows = json_object_get(doc, "rows");
    if (!json_is_array(rows))
        return "\"rows\" is missing or not an array";
    json_array_foreach(rows, i, row)
        if (!json_is_object(row))
            return "a row is not an object";
    return NULL;
}

static void report_usage(FILE *f)
{
    fputs("usage: evolution-report IN.json OUT.html [BENCH.json] [MODEL.json]\n"
          "  Reads the evolution results (results/evolution.json) and writes one\n"
          "  self-contained HTML page: the table of rows, oversold per version (the\n"
          "  lock's own flaws apart from the store failing underneath: each row's \"fault\"),\n"
          "  sales/s per version, a stock/sold timeline per long-work row, the moment\n"
          "  each flaw showed; with BENCH.json (loadtest/bench's results), a chart and table of\n"
          "  sales/s per lock mode; with MODEL.json (model/check's), every counterexample\n"
          "  as a sequence diagram (the .svg beside its trace) next to the run that\n"
          "  shows the same flaw.\n", f);
}

/* The optional files after OUT.html: bench.json is an object, model.json an array. 0, or
 * -1 with the reason printed (and nothing loaded). */
static int report_load_extras(char **paths, int n, json_t **bench, json_t **model)
{
    json_error_t jerr;

    for (int i = 0; i < n; i++) {
        json_t *extra = json_load_file(paths[i], 0, &jerr);
        if (extra && json_is_array(extra) && *model == NULL) {
            *model = extra;
            continue;
        }
        if (extra && json_is_object(extra) && *bench == NULL) {
            *bench = extra;
            continue;
        }
        if (extra == NULL)
            fprintf(stderr, "evolution-report: %s: %s\n", paths[i], jerr.text);
        else
            fprintf(stderr, "evolution-report: %s: neither a bench (an object) nor a model "
                            "checker's results (an array), or one of them twice\n", paths[i]);
        json_decref(extra);
        json_decref(*bench);
        json_decref(*model);
        *bench = *model = NULL;
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    json_error_t jerr;
    json_t *doc, *bench = NULL, *model = NULL;
    const char *why;
    FILE *f;
    int rc;

    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        report_usage(stdout);
        return 0;
    }
    if (argc < 3 || argc > 5) {
        report_usage(stderr);
        return 2;
    }
    if (report_load_extras(argv + 3, argc - 3, &bench, &model) != 0)
        return 1;
    doc = json_load_file(argv[1], 0, &jerr);
    if (doc == NULL) {
        if (jerr.line > 0)
            fprintf(stderr, "evolution-report: %s: line %d: %s\n", argv[1], jerr.line, jerr.text);
        else
            fprintf(stderr, "evolution-report: %s: %s\n", argv[1], jerr.text);
        return 1;
    }
    why = report_check(doc);
    if (why != NULL) {
        fprintf(stderr, "evolution-report: %s: invalid input: %s\n", argv[1], why);
        json_decref(doc);
        return 1;
    }
    f = fopen(argv[2], "w");
    if (f == NULL) {
        fprintf(stderr, "evolution-report: %s: %s\n", argv[2], strerror(errno));
        json_decref(doc);
        return 1;
    }
    rc = report_write(f, doc, bench, model);
    if (ferror(f))
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    json_decref(doc);
    json_decref(bench);
    json_decref(model);
    if (rc < 0) {
        fprintf(stderr, "evolution-report: %s: not written (out of memory or disk)\n", argv[2]);
        unlink(argv[2]);
        return 1;
    }
    return 0;
}
