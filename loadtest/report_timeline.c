/* report_timeline.c - evolution-report's stock and sold over time, to the row's final figures. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "loadtest/report_html.h"
#include "loadtest/report_timeline.h"

#define TL_COLOUR_STOCK "#2ca02c"   /* tests/test_report.sh counts these pixels */
#define TL_COLOUR_SOLD  "#ff7f0e"
#define TL_COLOUR_RISE  "#7b4173"

/* The chart's size and plot area; its text (12) stays above 10 px on a 420 px screen. */
enum { TL_W = 460, TL_H = 220, TL_ML = 46, TL_MR = 12, TL_MT = 14, TL_MB = 36 };
enum { TL_PW = TL_W - TL_ML - TL_MR, TL_PH = TL_H - TL_MT - TL_MB };

/* One sample. */
struct tl_point {
    double t_ms, stock, sold;
};

/* A row's samples, the last one its final figures (settled: 1) when the row has them,
 * and the scales. */
struct tl {
    struct tl_point *pts;
    size_t n;
    int settled;
    double t_lo, t_span, t_step, top, step;
};

static const struct report_key tl_keys[] = {
    { "stock", REPORT_SHAPE_LINE, TL_COLOUR_STOCK, "stock left" },
    { "sold", REPORT_SHAPE_LINE, TL_COLOUR_SOLD, "units sold" },
    { "settled", REPORT_SHAPE_DOT, "#000", "the run's final figures (the table's)" },
    { "rise", REPORT_SHAPE_DASH, TL_COLOUR_RISE, "the stock went back up" },
};

/* tl_samples: the well-formed [t_ms, stock, sold] samples of row's timeline, then its
 * final figures (sold, remaining) at elapsed_ms (or a step after the last sample), into
 * tl->pts, which the caller frees. Returns how many samples; (size_t)-1 when memory ran
 * out. */
static size_t tl_samples(struct tl *tl, const json_t *row)
{
    const json_t *arr = json_object_get(row, "timeline"), *p;
    size_t i, n = 0;
    double sold, left, end;

    tl->pts = calloc(json_array_size(arr) + 1, sizeof *tl->pts);
    if (tl->pts == NULL)
        return (size_t)-1;
    json_array_foreach(arr, i, p) {
        const json_t *t = json_array_get(p, 0), *st = json_array_get(p, 1);
        const json_t *so = json_array_get(p, 2);
        if (json_is_number(t) && json_is_number(st) && json_is_number(so))
            tl->pts[n++] = (struct tl_point){ json_number_value(t), json_number_value(st),
                                             json_number_value(so) };
    }
    tl->n = n;
    if (n >= 2 && report_num(row, "sold", &sold) && report_num(row, "remaining", &left)) {
        double step = (tl->pts[n - 1].t_ms - tl->pts[0].t_ms) / (double)(n - 1);
        if (!report_num(row, "elapsed_ms", &end) || end <= tl->pts[n - 1].t_ms)
            end = tl->pts[n - 1].t_ms + (step > 0 ? step : 1);
        tl->pts[tl->n++] = (struct tl_point){ end, left, sold };
        tl->settled = 1;
    }
    return n;
}

/* tl_scale: the time axis and the items axis of tl's samples (and the stock at start). */
static void tl_scale(struct tl *tl, double stock0)
{
    double t_hi = tl->pts[0].t_ms, vmax = stock0;

    tl->t_lo = tl->pts[0].t_ms < 0 ? tl->pts[0].t_ms : 0;
    for (size_t i = 0; i < tl->n; i++) {
        t_hi = tl->pts[i].t_ms > t_hi ? tl->pts[i].t_ms : t_hi;
        vmax = tl->pts[i].stock > vmax ? tl->pts[i].stock : vmax;
        vmax = tl->pts[i].sold > vmax ? tl->pts[i].sold : vmax;
    }
    tl->top = report_axis_top(vmax < 5 ? 5 : vmax, &tl->step);
    tl->t_span = report_axis_top(t_hi - tl->t_lo, &tl->t_step);
}

static double tl_x(const struct tl *tl, double t)
{
    return report_clamp(TL_ML + (t - tl->t_lo) / tl->t_span * TL_PW, -1e6, 1e6);
}

static double tl_y(const struct tl *tl, double v)
{
    return report_clamp(TL_MT + TL_PH - v / tl->top * TL_PH, -1e6, 1e6);
}

/* tl_axes: grid lines and ticks: items up the left, seconds along the bottom. */
static void tl_axes(FILE *f, const struct tl *tl)
{
    char buf[32];
    int k;

    for (k = 0; k * tl->step <= tl->top * 1.0001; k++) {
        double y = tl_y(tl, k * tl->step);
        fprintf(f, "<line class=\"grid\" x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\"/>"
                   "<text class=\"tick\" x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                TL_ML, y, TL_ML + TL_PW, y, TL_ML - 5, y + 4,
                report_fmt(buf, sizeof buf, k * tl->step));
    }
    for (k = 0; k * tl->t_step <= tl->t_span * 1.0001; k++) {
        double x = TL_ML + k * tl->t_step / tl->t_span * TL_PW;
        fprintf(f, "<line class=\"axis\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                x, TL_MT + TL_PH, x, TL_MT + TL_PH + 4, x, TL_MT + TL_PH + 17,
                report_fmt(buf, sizeof buf, (tl->t_lo + k * tl->t_step) / 1000));
    }
    fprintf(f, "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
               "<line class=\"axis\" x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\"/>"
               "<text class=\"tick\" x=\"%d\" y=\"%d\" text-anchor=\"middle\">time (s)</text>\n",
            TL_ML, TL_MT, TL_ML, TL_MT + TL_PH, TL_ML, TL_MT + TL_PH, TL_ML + TL_PW, TL_MT + TL_PH,
            TL_ML + TL_PW / 2, TL_H - 3);
}

/* tl_v: a sample's value of series which (0 stock, 1 sold). */
static double tl_v(const struct tl_point *p, int which)
{
    return which ? p->sold : p->stock;
}

/* tl_series: one series (which: 0 stock, 1 sold) as sampled, then a dashed step to the
 * final figures and a dot there. */
static void tl_series(FILE *f, const struct tl *tl, int which, const char *mark,
                      const char *colour)
{
    size_t last = tl->n - (size_t)tl->settled, i;
    const struct tl_point *p = &tl->pts[last - 1], *q = &tl->pts[tl->n - 1];

    fprintf(f, "<polyline class=\"m-%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"3\" "
               "stroke-linejoin=\"round\" points=\"", mark, colour);
    for (i = 0; i < last; i++)
        fprintf(f, "%s%.1f,%.1f", i ? " " : "", tl_x(tl, tl->pts[i].t_ms),
                tl_y(tl, tl_v(&tl->pts[i], which)));
    fputs("\"/>\n", f);
    if (!tl->settled)
        return;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
               "stroke-width=\"2\" stroke-dasharray=\"4 3\"/><circle class=\"m-settled\" "
               "cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"#000\"/>\n",
            tl_x(tl, p->t_ms), tl_y(tl, tl_v(p, which)), tl_x(tl, q->t_ms),
            tl_y(tl, tl_v(q, which)), colour, tl_x(tl, q->t_ms), tl_y(tl, tl_v(q, which)));
}

/* tl_rises: a dashed line where the stock went up from one sample to the next; returns
 * how many. */
static int tl_rises(FILE *f, const struct tl *tl)
{
    int n = 0;

    for (size_t i = 1; i < tl->n; i++) {
        double x = tl_x(tl, tl->pts[i].t_ms);
        if (tl->pts[i].stock <= tl->pts[i - 1].stock)
            continue;
        fprintf(f, "<line class=\"m-rise\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
                   "stroke=\"%s\" stroke-width=\"2\" stroke-dasharray=\"5 3\"/>\n",
                x, TL_MT, x, TL_MT + TL_PH, TL_COLOUR_RISE);
        n++;
    }
    return n;
}

/* tl_chart: the SVG of tl, titled title; returns how many rises it marked. */
static int tl_chart(FILE *f, const struct tl *tl, const char *title)
{
    int rises;

    fprintf(f, "<svg class=\"timeline\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
               "role=\"img\" aria-label=\"", TL_W, TL_H, TL_W, TL_H);
    report_escape(f, title);
    fputs("\">\n", f);
    tl_axes(f, tl);
    rises = tl_rises(f, tl);
    tl_series(f, tl, 0, "stock", TL_COLOUR_STOCK);
    tl_series(f, tl, 1, "sold", TL_COLOUR_SOLD);
    fputs("</svg>\n", f);
    return rises;
}

/* tl_say_end: the caption's words for the final figures, the table's: sold, left of the
 * stock, oversold. */
static void tl_say_end(FILE *f, const json_t *row, const struct tl *tl, double stock0)
{
    const struct tl_point *p = &tl->pts[tl->n - 1];
    char a[32], b[32], c[32], d[32];
    double over;

    if (!tl->settled)
        return;
    fprintf(f, " It ends at the run's figures (the dots, as in the table): %s sold, %s left of %s",
            report_fmt(a, sizeof a, p->sold), report_fmt(b, sizeof b, p->stock),
            report_fmt(c, sizeof c, stock0));
    if (report_num(row, "oversold", &over))
        fprintf(f, ", oversold %s", report_fmt(d, sizeof d, over));
    fputs(".", f);
}

/* tl_say_rises: the caption's words for the first two times the stock went back up: a
 * lost update while sold went on, or the store forgetting its writes when sold fell too. */
static void tl_say_rises(FILE *f, const struct tl *tl)
{
    int said = 0;
    char t[32], s0[32], s1[32], d0[32], d1[32];

    for (size_t i = 1; i < tl->n && said < 2; i++) {
        const struct tl_point *p = &tl->pts[i - 1], *q = &tl->pts[i];
        if (q->stock <= p->stock)
            continue;
        fprintf(f, " At %s s the stock went back up, from %s to %s",
                report_fmt(t, sizeof t, q->t_ms / 1000), report_fmt(s0, sizeof s0, p->stock),
                report_fmt(s1, sizeof s1, q->stock));
        if (q->sold < p->sold)
            fprintf(f, ", and sold fell from %s to %s: the store lost its latest writes.",
                    report_fmt(d0, sizeof d0, p->sold), report_fmt(d1, sizeof d1, q->sold));
        else
            fputs(" while sales went on: a holder wrote the stock it had read before "
                  "another's sale (a lost update); each unit put back sells again.", f);
        said++;
    }
}

/* tl_figure: row's timeline chart in its figure, with its caption and legend. */
static void tl_figure(FILE *f, const json_t *row, struct tl *tl)
{
    const char *lock = report_str(row, "lock"), *scn = report_str(row, "scenario");
    const char *tech = report_str(row, "technique"), *obs = report_str(row, "observed");
    struct report_key keys[4];
    size_t k = 0;
    double stock0;
    char title[256];
    int rises;

    if (!report_num(row, "stock", &stock0))
        stock0 = tl->pts[0].stock + tl->pts[0].sold;
    tl_scale(tl, stock0);
    snprintf(title, sizeof title, "%s %s: stock and sold over time", lock ? lock : "?",
             scn ? scn : "?");
    fputs("<figure class=\"chart tl\">\n<figcaption>", f);
    report_escape(f, lock ? lock : "?");
    fputs(" ", f);
    report_escape(f, scn ? scn : "?");
    fputs(" <small>", f);
    report_escape(f, tech ? tech : "");
    fputs("</small></figcaption>\n", f);
    rises = tl_chart(f, tl, title);
    keys[k++] = tl_keys[0];
    keys[k++] = tl_keys[1];
    if (tl->settled)
        keys[k++] = tl_keys[2];
    if (rises)
        keys[k++] = tl_keys[3];
    report_legend(f, keys, k);
    fputs("<p class=\"what\">", f);
    if (obs && *obs) {
        fputs("What happened: ", f);
        report_escape(f, obs);
        fputs(obs[strlen(obs) - 1] == '.' ? "" : ".", f);
    }
    tl_say_end(f, row, tl, stock0);
    tl_say_rises(f, tl);
    fputs("</p>\n</figure>\n", f);
}

/* report_timeline_section: see report_timeline.h. */
int report_timeline_section(FILE *f, const json_t *rows)
{
    size_t i, seen = 0;
    const json_t *row;

    fputs("<div class=\"charts\">\n", f);
    json_array_foreach(rows, i, row) {
        struct tl tl = { 0 };

        if (!json_is_array(json_object_get(row, "timeline")))
            continue;
        seen++;
        if (tl_samples(&tl, row) == (size_t)-1)
            return -1;
        if (tl.n >= 2) {
            tl_figure(f, row, &tl);
        } else {
            fputs("<figure class=\"chart tl\">\n<figcaption>", f);
            report_escape(f, report_str(row, "lock") ? report_str(row, "lock") : "?");
            fputs("</figcaption>\n", f);
            report_no_data(f, "fewer than two timeline samples");
            fputs("</figure>\n", f);
        }
        free(tl.pts);
    }
    fputs("</div>\n", f);
    if (seen == 0)
        report_no_data(f, "no row sampled its stock over time");
    return 0;
}
