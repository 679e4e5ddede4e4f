/* report_measures.c - evolution-report's bar charts: each measure, sales/s, the bench. */
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "loadtest/report_bars.h"
#include "loadtest/report_html.h"
#include "loadtest/report_measures.h"

#define BARS_MAX_LINES (2 * REPORT_MAX_VERSIONS + 2)
#define BARS_COLOUR_BENCH "#9467bd"   /* tests/test_bench.sh counts these bars */

/* The measure charts, each on a log scale: its measure (what a row declares), and the
 * keys of a row's "measures" it draws. */
#define BARS_MEASURE(m, t, n, u) .measure = m, .title = t, .note = n, .unit = u, .log_scale = 1, \
                                 .label_w = 58
static const struct report_bar_chart bars_measures[] = {
    { BARS_MEASURE("oversold", "Oversold", "units sold beyond the stock, or gone unsold", ""),
      .n_series = 2,
      .series = { { "oversold", REPORT_SHAPE_BAR, "#d62728",
                    "oversold: units sold beyond the stock" },
                  { "sold_short", REPORT_SHAPE_BAR, "#e377c2",
                    "sold short: the stock went down by more than was sold" } } },
    { BARS_MEASURE("lost", "Acknowledged sales lost", "answered 200, then forgotten", ""),
      .n_series = 1,
      .series = { { "lost", REPORT_SHAPE_BAR, "#8c564b",
                    "lost: acknowledged sales the store forgot" } } },
    { BARS_MEASURE("overlaps", "Overlaps", "two sales inside the lock at once (the probe)", ""),
      .n_series = 1,
      .series = { { "overlaps", REPORT_SHAPE_BAR, "#bcbd22", "overlaps: two holders at once" } } },
    { BARS_MEASURE("stuck", "Stuck sales", "sales that waited out the lock (lock_timeout)", ""),
      .n_series = 1,
      .series = { { "stuck", REPORT_SHAPE_BAR, "#17becf",
                    "stuck: sales that gave up waiting for the lock" } } },
    { BARS_MEASURE("gap", "Longest time with no sale", "in ms", " ms"),
      .n_series = 1,
      .series = { { "gap_ms", REPORT_SHAPE_BAR, "#7f7f7f",
                    "gap: the longest time with no sale" } } },
    { BARS_MEASURE("refused", "Refused answers", "409s other than sold out, and 503s", ""),
      .n_series = 2,
      .series = { { "refused_409", REPORT_SHAPE_BAR, "#393b79",
                    "409: refused, not sold out (lease_lost...)" },
                  { "refused_503", REPORT_SHAPE_BAR, "#e7ba52",
                    "503: unavailable, lock_timeout..." } } },
    { .measure = "fairness", .title = "Fairness",
      .note = "Jain's index of the clients' shares, against the most their sales allow "
              "(1: fair; under 0.9: the lock served processes, not waiters)",
      .unit = "", .log_scale = 0, .label_w = 58, .decimals = 2, .n_series = 1,
      .series = { { "jain", REPORT_SHAPE_BAR, "#2ca02c",
                    "fairness: Jain's index, as a share of the most the sales allow" } } },
};

/* bars_fold: row's value of series s of chart c into cell: the largest over the rows,
 * the row that declares c's measure first among equals. */
static void bars_fold(struct report_bar_cell *cell, const struct report_bar_chart *c, int s,
                      const json_t *row)
{
    const char *own = report_declared(row);
    int declared = own != NULL && strcmp(own, c->measure) == 0;
    double v;

    if (!report_measure(row, c->series[s].mark, &v))
        return;
    if (cell->measured && (v < cell->v || (v == cell->v && (cell->declared || !declared))))
        return;
    cell->v = v;
    cell->measured = 1;
    cell->declared = declared;
    cell->scenario = report_str(row, "scenario");
}

/* bars_measure_line: the line of version ver in chart c over its rows of the lock's own
 * flaws (store 0) or of the store failing underneath (store 1); 0 when it has none. */
static int bars_measure_line(struct report_bar_line *l, const struct report_bar_chart *c,
                             const json_t *rows, const char *ver, int store)
{
    size_t i;
    const json_t *row;
    int seen = 0;

    memset(l, 0, sizeof *l);
    l->label = ver;
    l->group = store ? "store" : "lock";
    json_array_foreach(rows, i, row) {
        const char *lock = report_str(row, "lock");

        if (lock == NULL || strcmp(lock, ver) != 0 || (report_underneath(row) != NULL) != store)
            continue;
        seen = 1;
        for (int s = 0; s < c->n_series; s++)
            bars_fold(&l->cell[s], c, s, row);
    }
    return seen;
}

/* bars_heading: a heading line of the words. */
static void bars_heading(struct report_bar_line *l, const char *words)
{
    memset(l, 0, sizeof *l);
    snprintf(l->text, sizeof l->text, "%s", words);
}

/* bars_measure_lines: chart c's lines: the lock's own flaws, a version a line, then
 * (under a heading each, when there are any) the store failing underneath. */
static size_t bars_measure_lines(struct report_bar_line *lines, const struct report_bar_chart *c,
                                 const json_t *rows, const char **vers, size_t nv)
{
    size_t n = 1, i, first_store;

    bars_heading(&lines[0], "the lock's own flaws");
    for (i = 0; i < nv; i++)
        n += (size_t)bars_measure_line(&lines[n], c, rows, vers[i], 0);
    first_store = n;
    bars_heading(&lines[n++], "the store failing underneath");
    for (i = 0; i < nv; i++)
        n += (size_t)bars_measure_line(&lines[n], c, rows, vers[i], 1);
    if (n > first_store + 1)
        return n;
    memmove(lines, lines + 1, (first_store - 1) * sizeof *lines);   /* no store rows: */
    return first_store - 1;                                         /* no headings */
}

/* report_measure_section: see report_bars.h. */
void report_measure_section(FILE *f, const json_t *rows)
{
    const char *vers[REPORT_MAX_VERSIONS];
    struct report_bar_line lines[BARS_MAX_LINES];
    size_t nv = report_versions(rows, vers, REPORT_MAX_VERSIONS);

    if (nv == 0) {
        report_no_data(f, "no row names its version");
        return;
    }
    fputs("<div class=\"charts\">\n", f);
    for (size_t c = 0; c < sizeof bars_measures / sizeof bars_measures[0]; c++)
        report_bar_figure(f, &bars_measures[c], lines,
                    bars_measure_lines(lines, &bars_measures[c], rows, vers, nv));
    fputs("</div>\n", f);
}

/* One version's load rows: the mean rate, the shortest time its sales took (ms, -1 when
 * unknown), units sold then, the largest p99. */
struct bars_load {
    int rows, rates;
    double rate, sell_ms, sold, p99;
};

/* bars_load_of: what ver's load rows measured. */
static struct bars_load bars_load_of(const json_t *rows, const char *ver)
{
    struct bars_load b = { 0, 0, 0, -1, 0, -1 };
    size_t i;
    const json_t *row;

    json_array_foreach(rows, i, row) {
        const char *lock = report_str(row, "lock"), *scn = report_str(row, "scenario");
        double rate, ms, sold = 0, p99;

        if (!lock || !scn || strcmp(lock, ver) != 0 || strcmp(scn, "load") != 0)
            continue;
        b.rows++;
        if (!report_num(row, "sales_per_s", &rate))
            continue;
        b.rates++;
        b.rate += rate;
        report_num(row, "sold", &sold);
        if (!report_num(row, "sell_ms", &ms))   /* an older row: its time from its rate */
            ms = rate > 0 && sold > 0 ? sold * 1000 / rate : -1;
        if (ms >= 0 && (b.sell_ms < 0 || ms < b.sell_ms)) {
            b.sell_ms = ms;
            b.sold = sold;
        }
        if (report_num(row, "p99_ms", &p99) && p99 > b.p99)
            b.p99 = p99;
    }
    if (b.rates)
        b.rate /= b.rates;
    return b;
}

/* bars_rate_line: ver's line of the sales/s chart: its rate, or a note saying why not. */
static void bars_rate_line(struct report_bar_line *l, const json_t *rows, const char *ver)
{
    struct bars_load b = bars_load_of(rows, ver);
    char sold[32], ms[32], p99[32];

    memset(l, 0, sizeof *l);
    l->label = ver;
    l->group = "load";
    l->note = "nm";
    if (b.rows == 0)
        snprintf(l->text, sizeof l->text, "no load row");
    else if (b.rates == 0)
        snprintf(l->text, sizeof l->text, "no rate measured");
    else if (b.sell_ms >= 0 && b.sell_ms < 1000) {
        l->note = "short";
        snprintf(l->text, sizeof l->text, "too short to be a rate: %s sold in %s ms",
                 report_fmt(sold, sizeof sold, b.sold), report_fmt(ms, sizeof ms, b.sell_ms));
    } else {
        l->note = NULL;
        l->cell[0] = (struct report_bar_cell){ b.rate, NULL, 1, 0 };
        if (b.p99 >= 0) {
            snprintf(l->text, sizeof l->text, "p99 %s ms", report_fmt(p99, sizeof p99, b.p99));
            l->cell[0].scenario = l->text;
        }
    }
}

/* bars_alike: appends to note (n bytes) how the load rows' field key ran, said as words
 * then unit ("stock 300" when alike, "stock 300 to 2000" when not), after a ", " when
 * *said. Returns 0 when no load row says it, 1 when alike, 2 when not. */
static int bars_alike(char *note, size_t n, const json_t *rows, const char *key,
                      const char *words, const char *unit, int *said)
{
    double lo = 0, hi = -1, v;
    size_t i, len = strlen(note);
    const json_t *row;
    char a[32], b[32];

    json_array_foreach(rows, i, row) {
        const char *scn = report_str(row, "scenario");
        if (scn == NULL || strcmp(scn, "load") != 0 || !report_num(row, key, &v))
            continue;
        if (hi < lo || v < lo)
            lo = v;
        if (v > hi)
            hi = v;
    }
    if (hi < lo || len >= n)
        return 0;
    snprintf(note + len, n - len, "%s%s %s%s%s%s", (*said)++ ? ", " : "", words,
             report_fmt(a, sizeof a, lo), lo == hi ? "" : " to ",
             lo == hi ? "" : report_fmt(b, sizeof b, hi), unit);
    return lo == hi ? 1 : 2;
}

static const struct report_bar_chart bars_rate = {
    .measure = "rate", .title = "Sales/s per version", .unit = "/s", .n_series = 1, .label_w = 58,
    .series = { { "rate", REPORT_SHAPE_BAR, "#1f77b4",
                  "sales/s: units sold per second of selling" } } };

/* report_rate_section: see report_bars.h. The caption says how the load rows ran. */
void report_rate_section(FILE *f, const json_t *rows)
{
    const char *vers[REPORT_MAX_VERSIONS];
    struct report_bar_line lines[REPORT_MAX_VERSIONS];
    size_t nv = report_versions(rows, vers, REPORT_MAX_VERSIONS), i;
    struct report_bar_chart c = bars_rate;
    char note[256] = "each version's load row only: ";
    int said = 0, how;

    if (nv == 0) {
        report_no_data(f, "no row names its version");
        return;
    }
    how = bars_alike(note, sizeof note, rows, "stock", "stock", "", &said);
    how |= bars_alike(note, sizeof note, rows, "connections", "connections", "", &said);
    how |= bars_alike(note, sizeof note, rows, "duration_s", "for", " s", &said);
    if (how == 0)
        snprintf(note, sizeof note, "each version's load row only (their stock, connections and "
                 "time not said)");
    else
        snprintf(note + strlen(note), sizeof note - strlen(note), "%s",
                 how & 2 ? ": not alike, compare with care" : ", the same for every version");
    c.note = note;
    for (i = 0; i < nv; i++)
        bars_rate_line(&lines[i], rows, vers[i]);
    fputs("<div class=\"charts\">\n", f);
    report_bar_figure(f, &c, lines, nv);
    fputs("</div>\n", f);
}

static const struct report_bar_chart bars_bench = {
    .measure = "bench", .title = "Sales/s per mode", .note = "200s only, median of rounds",
    .unit = "/s", .n_series = 1, .label_w = 150,
    .series = { { "bench", REPORT_SHAPE_BAR, BARS_COLOUR_BENCH, "sales/s of the mode" } } };

/* bars_bench_table: each mode's figures, one row each. */
static void bars_bench_table(FILE *f, const json_t *modes)
{
    static const char *const keys[] = { "sales_per_s", "ratio_to_atomic", "p99_ms", "max_ms",
                                        "rss_mb", "oversold" };
    const json_t *m;
    size_t i;
    char buf[32];

    fputs("<div class=\"scroll\"><table>\n<tr><th>mode</th><th>sales/s</th><th>ratio to atomic"
          "</th><th>p99 ms</th><th>max ms</th><th>RSS MB</th><th>oversold</th></tr>\n", f);
    json_array_foreach(modes, i, m) {
        fputs("<tr><td>", f);
        report_escape(f, report_str(m, "mode") ? report_str(m, "mode") : "?");
        fputs("</td>", f);
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            double v;
            fprintf(f, "<td>%s</td>",
                    report_num(m, keys[k], &v) ? report_fmt(buf, sizeof buf, v) : "-");
        }
        fputs("</tr>\n", f);
    }
    fputs("</table></div>\n", f);
}

/* report_bench_section: see report_bars.h. */
void report_bench_section(FILE *f, const json_t *bench)
{
    const json_t *modes = json_object_get(bench, "modes"), *m;
    struct report_bar_line lines[REPORT_MAX_VERSIONS];
    size_t n = 0, i;

    fputs("<h2>Speed under contention <small>(loadtest/bench)</small></h2>\n", f);
    if (json_array_size(modes) == 0) {
        report_no_data(f, "bench.json has no modes");
        return;
    }
    json_array_foreach(modes, i, m) {
        double v;
        const char *mode = report_str(m, "mode");

        if (mode == NULL || !report_num(m, "sales_per_s", &v) || n == REPORT_MAX_VERSIONS)
            continue;
        memset(&lines[n], 0, sizeof lines[n]);
        lines[n].label = mode;
        lines[n].group = "bench";
        lines[n++].cell[0] = (struct report_bar_cell){ v, NULL, 1, 0 };
    }
    fputs("<div class=\"charts\">\n", f);
    if (n)
        report_bar_figure(f, &bars_bench, lines, n);
    else
        report_no_data(f, "no mode has sales_per_s");
    fputs("</div>\n", f);
    bars_bench_table(f, modes);
}
