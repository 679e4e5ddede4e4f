/* report_html.c - evolution-report's shared helpers: a row's fields, HTML escaping, a chart's "no data". */
#include <stdio.h>

#include <jansson.h>

#include "loadtest/report_html.h"

/* report_str: the string field key of row, or NULL when missing or not a string. */
const char *report_str(const json_t *row, const char *key)
{
    const json_t *v = json_object_get(row, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
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

/* report_no_data: the placeholder for a chart with nothing to draw. */
void report_no_data(FILE *f, const char *why)
{
    fputs("<p class=\"nodata\">no data: ", f);
    report_escape(f, why);
    fputs("</p>\n", f);
}
