/* report_html.c - evolution-report's helpers: a row's measures, its versions, HTML, legends. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "loadtest/report_html.h"

/* report_str: the string field key of row, or NULL when missing or not a string. */
const char *report_str(const json_t *row, const char *key)
{
    const json_t *v = json_object_get(row, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* report_num: 1 with *out set when field key of row is a number, else 0. */
int report_num(const json_t *row, const char *key, double *out)
{
    const json_t *v = json_object_get(row, key);

    if (!json_is_number(v))
        return 0;
    *out = json_number_value(v);
    return 1;
}

/* report_fmt: v in buf, as an integer when it is one, else with one decimal; returns buf. */
const char *report_fmt(char *buf, size_t n, double v)
{
    if (v > -1e15 && v < 1e15 && v == (double)(long long)v)
        snprintf(buf, n, "%lld", (long long)v);
    else
        snprintf(buf, n, "%.1f", v);
    return buf;
}

/* report_escape: writes s to f with the five HTML-special characters escaped. */
void report_escape(FILE *f, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default: fputc(*s, f);
        }
    }
}

/* report_clamp: v limited to lo..hi (hi for NaN), so that absurd input stays drawable. */
double report_clamp(double v, double lo, double hi)
{
    if (v < lo)
        return lo;
    return v <= hi ? v : hi;
}

/* report_axis_top: see report_html.h; absurd values are clamped (no hang). */
double report_axis_top(double v, double *step)
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

/* report_no_data: the placeholder for a chart with nothing to draw. */
void report_no_data(FILE *f, const char *why)
{
    fputs("<p class=\"nodata\">no data: ", f);
    report_escape(f, why);
    fputs("</p>\n", f);
}

/* report_natural_cmp: as strcmp, but a run of digits in both compares by its value (its
 * length without leading zeros, then its digits). */
int report_natural_cmp(const char *a, const char *b)
{
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            size_t na, nb;
            int c;

            while (*a == '0' && isdigit((unsigned char)a[1]))
                a++;
            while (*b == '0' && isdigit((unsigned char)b[1]))
                b++;
            for (na = 0; isdigit((unsigned char)a[na]); na++)
                ;
            for (nb = 0; isdigit((unsigned char)b[nb]); nb++)
                ;
            if (na != nb)
                return na < nb ? -1 : 1;
            if ((c = strncmp(a, b, na)) != 0)
                return c;
            a += na;
            b += nb;
            continue;
        }
        if (*a != *b)
            return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
        a++;
        b++;
    }
    return *a ? 1 : *b ? -1 : 0;
}

/* report_is_vn: 1 when name is a numbered version ("v" and digits only). */
static int report_is_vn(const char *name)
{
    if (name[0] != 'v' || !isdigit((unsigned char)name[1]))
        return 0;
    for (name++; *name; name++)
        if (!isdigit((unsigned char)*name))
            return 0;
    return 1;
}

/* report_version_before: 1 when a comes before b on the page: vN in numeric order, then
 * the rest (0 between two of the rest: they keep the order they came in). */
static int report_version_before(const char *a, const char *b)
{
    int va = report_is_vn(a), vb = report_is_vn(b);

    if (va && vb)
        return report_natural_cmp(a, b) < 0;
    return va && !vb;
}

/* report_versions: see report_html.h. An insertion sort: a stable one, and n is small. */
size_t report_versions(const json_t *rows, const char **out, size_t max)
{
    size_t i, n = 0;
    const json_t *row;

    json_array_foreach(rows, i, row) {
        const char *lock = report_str(row, "lock");
        size_t k;

        if (lock == NULL)
            continue;
        for (k = 0; k < n && strcmp(out[k], lock) != 0; k++)
            ;
        if (k < n || n == max)
            continue;
        for (k = n++; k > 0 && report_version_before(lock, out[k - 1]); k--)
            out[k] = out[k - 1];
        out[k] = lock;
    }
    return n;
}

/* report_underneath: "fault" "redis": "Redis"; "zookeeper": "ZooKeeper"; "database":
 * "MariaDB"; else NULL. */
const char *report_underneath(const json_t *row)
{
    const char *fault = report_str(row, "fault");

    if (fault != NULL && strcmp(fault, "redis") == 0)
        return "Redis";
    if (fault != NULL && strcmp(fault, "zookeeper") == 0)
        return "ZooKeeper";
    if (fault != NULL && strcmp(fault, "database") == 0)
        return "MariaDB";
    return NULL;
}

/* report_measure: from "measures" when the row has it (null or absent: not measured);
 * else from the fields an older row has: oversold, overlaps, stuck as its lock timeouts,
 * 503s as its "unavailable" answers; the others were not measured then. */
int report_measure(const json_t *row, const char *key, double *out)
{
    static const struct { const char *key, *old, *older; } older[] = {
        { "oversold", "oversold", NULL },   { "overlaps", "overlaps", NULL },
        { "stuck", "lock_timeouts", "timeouts" }, { "refused_503", "unavailable", NULL },
    };
    const json_t *m = json_object_get(row, "measures");

    if (json_is_object(m))
        return report_num(m, key, out);
    for (size_t i = 0; i < sizeof older / sizeof older[0]; i++) {
        if (strcmp(key, older[i].key) != 0)
            continue;
        if (report_num(row, older[i].old, out))
            return 1;
        return older[i].older != NULL && report_num(row, older[i].older, out);
    }
    return 0;
}

/* report_declared: the row's "measure", NULL when it has none. */
const char *report_declared(const json_t *row)
{
    return report_str(row, "measure");
}

/* Each shape's swatch, around its colour: a styled colour, not a fill attribute, so that a
 * count of a chart's fill attributes counts its marks only. */
#define REPORT_SWATCH_RECT(x, y, w, h) \
    "<rect x=\"" #x "\" y=\"" #y "\" width=\"" #w "\" height=\"" #h "\" "
static const struct { const char *pre, *post; } report_swatches[] = {
    [REPORT_SHAPE_BAR] = { REPORT_SWATCH_RECT(1, 2, 16, 10) "style=\"fill:", "\"/>" },
    [REPORT_SHAPE_OUTLINE] = { REPORT_SWATCH_RECT(2, 2, 14, 10) "style=\"fill:",
                               ";stroke:#000;stroke-width:2\"/>" },
    [REPORT_SHAPE_EMPTY] = { REPORT_SWATCH_RECT(1.5, 2.5, 15, 9) "style=\"fill:none;stroke:",
                             ";stroke-dasharray:3 2\"/>" },
    [REPORT_SHAPE_LINE] = { "<path d=\"M1 7h16\" style=\"stroke-width:3;stroke:", "\"/>" },
    [REPORT_SHAPE_DASH] = { "<path d=\"M9 0v14\" style=\"stroke-width:2;stroke-dasharray:3 2;"
                            "stroke:",
                            "\"/>" },
    [REPORT_SHAPE_TICK] = { REPORT_SWATCH_RECT(8, 1, 2, 12) "style=\"fill:", "\"/>" },
    [REPORT_SHAPE_TRIANGLE] = { "<path d=\"M9 1l-6 12h12z\" style=\"fill:", "\"/>" },
    [REPORT_SHAPE_CROSS] = { "<path d=\"M4 2l10 10m0-10l-10 10\" style=\"stroke-width:2.5;stroke:",
                             "\"/>" },
    [REPORT_SHAPE_DOT] = { "<circle cx=\"9\" cy=\"7\" r=\"4\" style=\"fill:", "\"/>" },
};

/* report_legend: a list of the keys, each its swatch and its words. */
void report_legend(FILE *f, const struct report_key *keys, size_t n)
{
    fputs("<ul class=\"legend\">", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<li data-mark=\"%s\"><svg class=\"sw\" width=\"18\" height=\"14\" "
                   "viewBox=\"0 0 18 14\" aria-hidden=\"true\">%s%s%s</svg>", keys[i].mark,
                report_swatches[keys[i].shape].pre, keys[i].colour ? keys[i].colour : "#222",
                report_swatches[keys[i].shape].post);
        report_escape(f, keys[i].text);
        fputs("</li>", f);
    }
    fputs("</ul>\n", f);
}
