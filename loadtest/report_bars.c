/* report_bars.c - evolution-report's bar chart: a line per version, on a log scale or not. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "loadtest/report_bars.h"
#include "loadtest/report_html.h"

/* Sized so that on a 420 px screen its smallest text (12) stays above 10 px. */
enum { BARS_W = 460, BARS_LEN = 200, BARS_TOP = 26, BARS_HEAD_H = 24 };

static const struct report_key bars_key_declared = {
    "declared", REPORT_SHAPE_OUTLINE, "#fff", "outlined: the measure the row's flaw is about" };
static const struct report_key bars_key_nm = {
    "nm", REPORT_SHAPE_EMPTY, NULL, "not measured by this run (never drawn as 0)" };
static const struct report_key bars_key_short = {
    "short", REPORT_SHAPE_EMPTY, NULL, "sales over in under a second: too short to be a rate" };

/* bars_top: the scale's end: a power of ten (at least 10, *step 10) on a log scale,
 * else report_axis_top's. */
static double bars_top(double v, int log_scale, double *step)
{
    double top = 10;

    if (!log_scale)
        return report_axis_top(v, step);
    while (top < v && top < 1e12)
        top *= 10;
    *step = 10;
    return top;
}

/* bars_x: how far along the bar's length v goes (0..1) on a scale ending at top. */
static double bars_x(double v, double top, int log_scale)
{
    v = report_clamp(v, 0, top);
    return log_scale ? log10(1 + v) / log10(1 + top) : v / top;
}

/* bars_tick: a tick's words: 1k for 1000, 1.5k for 1500, 1M for a million. */
static const char *bars_tick(char *buf, size_t n, double t)
{
    char v[32];

    if (t >= 1e6)
        snprintf(buf, n, "%sM", report_fmt(v, sizeof v, t / 1e6));
    else if (t >= 1e3)
        snprintf(buf, n, "%sk", report_fmt(v, sizeof v, t / 1e3));
    else
        report_fmt(buf, n, t);
    return buf;
}

/* bars_axis: the ticks along the top and their grid lines down to the bottom (h), for a
 * plot starting at x0. */
static void bars_axis(FILE *f, int x0, double top, double step, int log_scale, int h)
{
    char buf[32];
    double t = 0;

    while (t <= top * 1.0001) {
        double x = x0 + BARS_LEN * bars_x(t, top, log_scale);

        fprintf(f, "<line class=\"grid\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                   "<text class=\"tick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                x, BARS_TOP - 6, x, h - 2, x, BARS_TOP - 10, bars_tick(buf, sizeof buf, t));
        t = log_scale ? (t == 0 ? 1 : t * step) : t + step;
    }
}

/* bars_attrs: a mark's line and group, as attributes (tests find a version's marks by
 * them). */
static void bars_attrs(FILE *f, const struct report_bar_line *l)
{
    fputs(" data-line=\"", f);
    report_escape(f, l->label);
    fprintf(f, "\" data-group=\"%s\"", l->group);
}

/* bars_empty: the dashed empty box of mark (a note: "nm", "short") at x, y and its words. */
static void bars_empty(FILE *f, const struct report_bar_line *l, const char *mark, int x, double y,
                       double h, const char *words)
{
    fprintf(f, "<rect class=\"m-%s\"", mark);
    bars_attrs(f, l);
    fprintf(f, " x=\"%d\" y=\"%.1f\" width=\"14\" height=\"%.1f\" fill=\"none\" stroke=\"#888\" "
               "stroke-dasharray=\"3 2\"/><text class=\"note\" x=\"%d\" y=\"%.1f\">", x, y, h,
            x + 18, y + h / 2 + 4);
    report_escape(f, words);
    fputs("</text>\n", f);
}

/* bars_cell_draw: one series of a line at y (height bh): its bar (outlined when its row
 * declares the chart's measure), its value and scenario; or "not measured". */
static void bars_cell_draw(FILE *f, const struct report_bar_chart *c,
                           const struct report_bar_line *l, int s, double top, double y, double bh)
{
    const struct report_bar_cell *cell = &l->cell[s];
    double len = BARS_LEN * bars_x(cell->v, top, c->log_scale);
    char buf[32];

    if (!cell->measured) {
        bars_empty(f, l, "nm", c->label_w, y, bh, "not measured");
        return;
    }
    if (len > 0) {
        fprintf(f, "<rect class=\"m-%s%s\"", c->series[s].mark,
                cell->declared ? " m-declared" : "");
        bars_attrs(f, l);
        fprintf(f, " x=\"%d\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s/>",
                c->label_w, y, len, bh, c->series[s].colour,
                cell->declared ? " stroke=\"#000\" stroke-width=\"2\"" : "");
    }
    fprintf(f, "<text class=\"value%s\"", cell->declared ? " own" : "");
    bars_attrs(f, l);
    if (c->decimals > 0)
        snprintf(buf, sizeof buf, "%.*f", c->decimals, cell->v);
    else
        report_fmt(buf, sizeof buf, cell->v);
    fprintf(f, " x=\"%.1f\" y=\"%.1f\">%s%s", c->label_w + len + 4, y + bh / 2 + 4, buf,
            c->unit);
    if (cell->scenario) {
        fputs(" <tspan class=\"where\">", f);
        report_escape(f, cell->scenario);
        fputs("</tspan>", f);
    }
    fputs("</text>\n", f);
}

/* bars_line_h: the height of line l in chart c. */
static int bars_line_h(const struct report_bar_chart *c, const struct report_bar_line *l)
{
    return l->label == NULL ? BARS_HEAD_H : c->n_series == 2 && !l->note ? 32 : 22;
}

/* bars_line_draw: line l at y: a heading, or its label and its bars (or its note). */
static void bars_line_draw(FILE *f, const struct report_bar_chart *c,
                           const struct report_bar_line *l, double top, int y)
{
    if (l->label == NULL) {
        fprintf(f, "<text class=\"group\" x=\"2\" y=\"%d\">", y + 17);
        report_escape(f, l->text);
        fputs("</text>\n", f);
        return;
    }
    fprintf(f, "<text class=\"label\" x=\"2\" y=\"%d\">", y + 15);
    report_escape(f, l->label);
    fputs("</text>", f);
    if (l->note) {
        bars_empty(f, l, l->note, c->label_w, y + 4, 14, l->text);
        return;
    }
    for (int s = 0; s < c->n_series; s++)
        bars_cell_draw(f, c, l, s, top, y + 4 + s * 13, c->n_series == 2 ? 11 : 14);
}

/* bars_draw: chart c of the n lines, as an SVG. */
static void bars_draw(FILE *f, const struct report_bar_chart *c,
                      const struct report_bar_line *lines, size_t n)
{
    double max = 0, top, step;
    int h = BARS_TOP + 4, y = BARS_TOP, measured = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        for (int s = 0; s < c->n_series; s++) {
            measured |= lines[i].label && !lines[i].note && lines[i].cell[s].measured;
            if (lines[i].cell[s].measured && lines[i].cell[s].v > max)
                max = lines[i].cell[s].v;
        }
        h += bars_line_h(c, &lines[i]);
    }
    top = bars_top(max, c->log_scale, &step);
    fprintf(f, "<svg class=\"bars\" data-measure=\"%s\" width=\"%d\" height=\"%d\" "
               "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"", c->measure, BARS_W, h,
            BARS_W, h);
    report_escape(f, c->title);
    fputs("\">\n", f);
    if (measured)   /* an axis with no bar on it says nothing */
        bars_axis(f, c->label_w, top, step, c->log_scale, h);
    for (i = 0; i < n; i++) {
        bars_line_draw(f, c, &lines[i], top, y);
        y += bars_line_h(c, &lines[i]);
    }
    fputs("</svg>\n", f);
}

/* bars_used: which of the optional marks the lines use: 1 the outline, 2 "not measured",
 * 4 "too short". */
static int bars_used(const struct report_bar_chart *c, const struct report_bar_line *lines,
                     size_t n)
{
    int used = 0;

    for (size_t i = 0; i < n; i++) {
        if (lines[i].label == NULL)
            continue;
        if (lines[i].note) {
            used |= strcmp(lines[i].note, "nm") == 0 ? 2 : 4;
            continue;
        }
        for (int s = 0; s < c->n_series; s++) {
            used |= lines[i].cell[s].declared && lines[i].cell[s].v > 0 ? 1 : 0;
            used |= lines[i].cell[s].measured ? 0 : 2;
        }
    }
    return used;
}

/* report_bar_figure: see report_bars.h; the legend has the outline, "not measured" and "too
 * short" where they were used. */
void report_bar_figure(FILE *f, const struct report_bar_chart *c,
                       const struct report_bar_line *lines, size_t n)
{
    struct report_key keys[5];
    size_t k = 0;
    int used = bars_used(c, lines, n);

    fprintf(f, "<figure class=\"chart\" id=\"chart-%s\">\n<figcaption>", c->measure);
    report_escape(f, c->title);
    fputs(" <small>", f);
    report_escape(f, c->note);
    fputs("</small></figcaption>\n", f);
    bars_draw(f, c, lines, n);
    for (int s = 0; s < c->n_series; s++)
        keys[k++] = c->series[s];
    if (used & 1)
        keys[k++] = bars_key_declared;
    if (used & 2)
        keys[k++] = bars_key_nm;
    if (used & 4)
        keys[k++] = bars_key_short;
    report_legend(f, keys, k);
    fputs("</figure>\n", f);
}

