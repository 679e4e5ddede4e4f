/* report.c - evolution-report: turns results/evolution.json into one self-contained HTML page. */
/*
 * Usage: evolution-report IN.json OUT.html [BENCH.json] [MODEL.json]
 *
 * The input, written by the evolution runner (loadtest/evolution):
 *
 *   {"generated": "2026-11-23T10:00:00Z", "runs": 1, "rows": [
 *     {"lock": "v4", "technique": "SET lock id NX PX ttl; DEL", "scenario": "long-work",
 *      "expect": "flaw", "fault": "lock", "shown": true,
 *      "observed": "one sale worked 1500 ms with a 500 ms lease; overlaps 3",
 *      "measure": "oversold",
 *      "measures": {"oversold": 2, "sold_short": 0, "lost": null, "overlaps": 3, "stuck": 0,
 *                   "gap_ms": null, "refused_409": 0, "refused_503": 0, "jain": null},
 *      "stock": 40, "connections": 100, "duration_s": 10, "sold": 60, "remaining": 0,
 *      "oversold": 2, "overlaps": 3, "timeouts": 0, "lock_timeouts": 0, "unavailable": 0,
 *      "sales_per_s": 640, "sell_ms": 2633, "elapsed_ms": 3437, "p99_ms": 40.2,
 *      "timeline": [[0, 2000, 0], [100, 1990, 12], ...],   (optional: [t_ms, stock, sold])
 *      "moment": {...}                                      (optional: loadtest/moment.jq's)
 *     }, ...]}
 *
 * A version may have several rows, one per scenario. "rows" must be an array of objects;
 * every field of a row is optional: a missing or mistyped one shows as "-" in the table and
 * keeps the row out of the chart that needs it. A chart with nothing to draw says "no data".
 *
 * "measures" holds what the run measured, null for what it did not: null is drawn as "not
 * measured", never as 0. A row without it (an older run) falls back to its oversold,
 * overlaps, lock_timeouts (stuck) and unavailable (503s) fields. "measure" names the one
 * measure the row's flaw is about ("oversold", "lost", "overlaps", "stuck", "gap",
 * "refused", "fairness": Jain's index, "jain"): the page marks it.
 *
 * A row's "fault" says whose a flaw of its scenario is: "lock" (the lock's own design:
 * long work, a pause, a crash of the holder...), or the store failing underneath: "redis"
 * (Redis or its deployment: a failover, a crash, a partition), "zookeeper" (the
 * ensemble: its leader killed, a partition) or "database" (the MariaDB server: killed).
 * A row without it counts as the lock's.
 *
 * The page, titled by the versions its rows name: the table of rows; one chart per measure
 * (report_measures.c), a line per version on a log scale, the lock's own flaws apart from the
 * store's failures; sales/s per version from its "load" rows only; stock and sold over
 * time for each row that sampled them (report_timeline.c); the moment each flaw showed
 * and the model checker's counterexamples (report_moment.c); the bench's modes.
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
#include "loadtest/report_measures.h"
#include "loadtest/report_moment.h"
#include "loadtest/report_timeline.h"

#define REPORT_COLOUR_MISS "#ffd7d7"   /* background of a "NOT shown" verdict */

/* report_cell_measure: one table cell holding the row's measure key, "-" when the run did
 * not measure it (unit after the figure). */
static void report_cell_measure(FILE *f, const json_t *row, const char *key, const char *unit)
{
    char buf[32];
    double v;

    if (report_measure(row, key, &v))
        fprintf(f, "<td class=\"num\">%s%s</td>", report_fmt(buf, sizeof buf, v), unit);
    else
        fputs("<td class=\"num nm\" title=\"not measured\">-</td>", f);
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

/* report_cell_store: the scenario's cell, saying so when the store failed underneath. */
static void report_cell_scenario(FILE *f, const json_t *row)
{
    const char *s = report_str(row, "scenario");

    if (report_underneath(row) == NULL) {
        report_cell_str(f, row, "scenario");
        return;
    }
    fputs("<td>", f);
    report_escape(f, s ? s : "-");
    fprintf(f, " <small class=\"fault\">(%s failed underneath)</small></td>",
            report_underneath(row));
}

/* report_cell_own: the measure the row's flaw is about, and its figure ("refused": the
 * 409s and the 503s; "fairness": Jain's index, two decimals, 0.9 its bar); "-" when it
 * declares none. */
static void report_cell_own(FILE *f, const json_t *row)
{
    static const struct { const char *measure, *key, *key2, *unit; } keys[] = {
        { "oversold", "oversold", NULL, "" }, { "lost", "lost", NULL, "" },
        { "overlaps", "overlaps", NULL, "" }, { "stuck", "stuck", NULL, "" },
        { "gap", "gap_ms", NULL, " ms" },     { "refused", "refused_409", "refused_503", "" },
        { "fairness", "jain", NULL, "" },
    };
    const char *own = report_declared(row);
    char a[32], b[32];
    double v;

    fputs("<td class=\"own\">", f);
    report_escape(f, own ? own : "-");
    for (size_t i = 0; own && i < sizeof keys / sizeof keys[0]; i++) {
        int measured;

        if (strcmp(own, keys[i].measure) != 0)
            continue;
        measured = report_measure(row, keys[i].key, &v);
        if (measured && strcmp(keys[i].key, "jain") == 0)
            snprintf(a, sizeof a, "%.2f", v);   /* 0.87 is under the bar; "0.9" would hide it */
        else if (measured)
            report_fmt(a, sizeof a, v);
        fprintf(f, " <b>%s%s</b>", measured ? a : "not measured", keys[i].unit);
        if (keys[i].key2)
            fprintf(f, " (409), <b>%s</b> (503)", report_measure(row, keys[i].key2, &v) ?
                    report_fmt(b, sizeof b, v) : "not measured");
    }
    fputs("</td>", f);
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
          "<th>expected</th><th>observed</th><th>its measure</th><th class=\"num\">sold</th>"
          "<th class=\"num\">oversold</th><th class=\"num\">overlaps</th>"
          "<th class=\"num\">stuck</th><th>verdict</th></tr></thead>\n<tbody>\n", f);
    json_array_foreach(rows, i, row) {
        int shown = json_is_true(json_object_get(row, "shown"));
        int skipped = json_is_true(json_object_get(row, "skipped"));

        fputs("<tr>", f);
        report_cell_str(f, row, "lock");
        report_cell_str(f, row, "technique");
        report_cell_scenario(f, row);
        report_cell_str(f, row, "expect");
        report_cell_str(f, row, "observed");
        report_cell_own(f, row);
        report_cell_num(f, row, "sold");
        report_cell_measure(f, row, "oversold", "");
        report_cell_measure(f, row, "overlaps", "");
        report_cell_measure(f, row, "stuck", "");
        fputs(shown     ? "<td class=\"verdict\">shown</td>"
              : skipped ? "<td class=\"verdict\">skipped</td>"
                        : "<td class=\"verdict miss\">NOT shown</td>", f);
        fputs("</tr>\n", f);
    }
    fputs("</tbody>\n</table>\n", f);
}

/* report_is_run: 1 when vers[0..n) are v<a>, v<a+1>, ... each a numbered version. */
static int report_is_run(const char **vers, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char want[32];
        snprintf(want, sizeof want, "v%d", atoi(vers[0] + 1) + (int)i);
        if (vers[i][0] != 'v' || strcmp(vers[i], want) != 0)
            return 0;
    }
    return 1;
}

/* report_names: vers[from..to) into f, between each two ", ". */
static void report_names(FILE *f, const char **vers, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        fputs(i > from ? ", " : "", f);
        report_escape(f, vers[i]);
    }
}

/* report_title: the versions the rows name: "v1 to v11" when they run on without a gap,
 * else each ("v1, v4, v8"); then the others ("(and none, atomic)"). */
static void report_title(FILE *f, const json_t *rows)
{
    const char *vers[REPORT_MAX_VERSIONS];
    size_t n = report_versions(rows, vers, REPORT_MAX_VERSIONS), nv = 0;

    while (nv < n && vers[nv][0] == 'v' && vers[nv][1] &&   /* report_versions: vN first */
           strspn(vers[nv] + 1, "0123456789") == strlen(vers[nv] + 1))
        nv++;
    if (n == 0)
        fputs("no version", f);
    if (nv > 2 && report_is_run(vers, nv)) {
        report_escape(f, vers[0]);
        fputs(" to ", f);
        report_escape(f, vers[nv - 1]);
    } else {
        report_names(f, vers, 0, nv);
    }
    if (nv < n) {
        fputs(nv ? " (and " : "", f);
        report_names(f, vers, nv, n);
        fputs(nv ? ")" : "", f);
    }
}

/* report_versions_line: every version on the page, each named. */
static void report_versions_line(FILE *f, const json_t *rows)
{
    const char *vers[REPORT_MAX_VERSIONS];
    size_t n = report_versions(rows, vers, REPORT_MAX_VERSIONS);

    fputs("<p class=\"meta\" id=\"versions\">versions on this page:", f);
    for (size_t i = 0; i < n; i++) {
        fputs(i ? ", <b>" : " <b>", f);
        report_escape(f, vers[i]);
        fputs("</b>", f);
    }
    fputs(n ? "</p>\n" : " none</p>\n", f);
}

/* The page's style. Text is never below 10 px on a 420 px screen: the charts are at most
 * 460 wide and their text at least 12, and HTML text at least 12 px. */
static const char report_css[] =
    "body{font-family:sans-serif;margin:24px;color:#222;background:#fff;max-width:1140px}\n"
    "h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:24px 0 8px}small{font-size:.9em}\n"
    ".meta{color:#555;font-size:13px;margin:0 0 12px;max-width:900px}\n"
    "table{border-collapse:collapse;font-size:12px;width:100%}\n"
    "th,td{border:1px solid #ccc;padding:3px 6px;text-align:left;vertical-align:top}\n"
    "th{background:#f0f0f0}.num{text-align:right}td.nm{color:#888}\n"
    "td.verdict{font-weight:bold;white-space:nowrap}td.own{white-space:nowrap}\n"
    "td.miss{background:" REPORT_COLOUR_MISS ";color:#900}\n"
    ".charts{display:flex;flex-wrap:wrap;gap:12px}\n"
    "figure{margin:0;border:1px solid #ddd;padding:6px;max-width:100%;box-sizing:border-box}\n"
    "figcaption{font-size:14px;font-weight:bold;margin-bottom:4px;max-width:460px}\n"
    "figcaption small{font-weight:normal;color:#555}\n"
    ".nodata{color:#777;font-style:italic;font-size:13px}\n"
    "svg{display:block;max-width:100%;height:auto}svg text{font-family:sans-serif}\n"
    ".scroll{overflow-x:auto}small.fault{color:#8c564b;white-space:nowrap}\n"
    ".trace-box svg{max-width:none}\n"
    ".legend{list-style:none;margin:6px 0 0;padding:0;display:flex;flex-wrap:wrap;"
    "gap:2px 12px;font-size:12px;max-width:460px}\n"
    ".legend li{display:flex;align-items:center;gap:4px}svg.sw{display:inline-block;flex:none}\n"
    "p.what{font-size:13px;margin:6px 0 0;max-width:460px}\n"
    ".grid{stroke:#e4e4e4;stroke-width:1}.axis{stroke:#444;stroke-width:1}\n"
    ".tick{font-size:12px;fill:#444}.label,.lane{font-size:13px;fill:#222}\n"
    ".value{font-size:12px;fill:#222}.value.own{font-weight:bold}.where{fill:#666}\n"
    ".note{font-size:12px;fill:#666;font-style:italic}.group{font-size:12px;fill:#555;"
    "font-style:italic}\n"
    "@media (max-width:600px){body{margin:6px}h1{font-size:18px}figure{padding:2px}}\n";

/* report_head: the page's head and title, and the line under the title. */
static void report_head(FILE *f, const json_t *doc, const json_t *rows)
{
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
          "<title>Lock evolution report: ", f);
    report_title(f, rows);
    fputs("</title>\n<style>\n", f);
    fputs(report_css, f);
    fputs("</style>\n</head>\n<body>\n<h1>Lock evolution: ", f);
    report_title(f, rows);
    fputs("</h1>\n<p class=\"meta\">generated ", f);
    report_escape(f, generated ? generated : "(unknown)");
    if (report_num(doc, "runs", &runs))
        fprintf(f, " &middot; runs %s", report_fmt(buf, sizeof buf, runs));
    fprintf(f, " &middot; %zu rows &middot; %zu shown as expected, %zu NOT shown</p>\n",
            json_array_size(rows), shown, json_array_size(rows) - shown);
    report_versions_line(f, rows);
}

/* The words before each section. */
static const char report_say_measures[] =
    "<h2 id=\"measures\">What each flaw did, measure by measure</h2>\n<p class=\"meta\">One chart "
    "per measure, a line per version: the most any of its rows measured, and the scenario that "
    "measured it. The scale is logarithmic, so that a single unit shows beside thousands. "
    "&ldquo;not measured&rdquo; where a run did not count it, never 0. Outlined: the measure a "
    "row's flaw is about. A flaw of the lock's own design is drawn apart from the store failing "
    "underneath (Redis, ZooKeeper or MariaDB: a failover, a crash, a partition): what a failing "
    "store lost is not drawn as a flaw of the version that ran on it.</p>\n";
static const char report_say_rates[] =
    "<h2 id=\"throughput\">Throughput</h2>\n<p class=\"meta\">Sales per second of selling, "
    "from each version's load row alone, all run alike (the caption says how). A version whose "
    "sales were over in under a second is not drawn as a rate: so short a time measures the "
    "start, not the speed.</p>\n";
static const char report_say_timelines[] =
    "<h2 id=\"timelines\">Stock and sold over time</h2>\n<p class=\"meta\">For each row that "
    "sampled them: the stock left and the units sold as the run went, then its final figures, "
    "the table's. Where the stock went back up, a write undid others' sales.</p>\n";
static const char report_say_moments[] =
    "<h2 id=\"moments\">The moment each flaw showed</h2>\n<p class=\"meta\">The live page's "
    "drawing, frozen: a lane per instance and thread (named by its process id and thread "
    "number, in numeric order; the name they share, &ldquo;inventory-&rdquo;, left out), "
    "a bar per critical section; the legend says what each mark is.</p>\n";
static const char report_say_traces[] =
    "<h2 id=\"traces\">The model checker's counterexamples</h2>\n<p class=\"meta\">What SPIN "
    "found for each version (make model), as a sequence: a lane per client, Redis and the "
    "stock; the last arrow, in red, is where the property breaks. Beside it, where a run "
    "showed the same flaw, its moment, drawn as above.</p>\n";

/* report_write: the whole page for doc into f. Returns 0, or -1 when memory ran out. */
static int report_write(FILE *f, const json_t *doc, const json_t *bench, const json_t *model)
{
    const json_t *rows = json_object_get(doc, "rows");

    report_head(f, doc, rows);
    fputs("<h2>Scenarios</h2>\n<p class=\"meta\">-: not measured by the run.</p>\n"
          "<div class=\"scroll\">\n", f);
    report_table(f, rows);
    fputs("</div>\n", f);
    fputs(report_say_measures, f);
    report_measure_section(f, rows);
    fputs(report_say_rates, f);
    report_rate_section(f, rows);
    fputs(report_say_timelines, f);
    if (report_timeline_section(f, rows) < 0)
        return -1;
    fputs(report_say_moments, f);
    report_moment_section(f, rows);
    fputs(report_say_traces, f);
    report_traces_section(f, rows, model);
    if (bench)
        report_bench_section(f, bench);
    fputs("</body>\n</html>\n", f);
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
          "  self-contained HTML page, titled by the versions its rows name: the table of\n"
          "  rows, a chart per measure (oversold, lost, overlaps, stuck, the longest gap,\n"
          "  refused; a log scale; the lock's own flaws apart from the store failing\n"
          "  underneath: each row's \"fault\"), sales/s per version from its load rows,\n"
          "  stock and sold over time for each row that sampled them, the moment\n"
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
        rc = 1;
        goto out_free_extras;
    }
    why = report_check(doc);
    if (why != NULL) {
        fprintf(stderr, "evolution-report: %s: invalid input: %s\n", argv[1], why);
        rc = 1;
        goto out_free_doc;
    }
    f = fopen(argv[2], "w");
    if (f == NULL) {
        fprintf(stderr, "evolution-report: %s: %s\n", argv[2], strerror(errno));
        rc = 1;
        goto out_free_doc;
    }
    rc = report_write(f, doc, bench, model);
    if (ferror(f))
        rc = -1;
    if (fclose(f) != 0)
        rc = -1;
    if (rc < 0) {
        fprintf(stderr, "evolution-report: %s: not written (out of memory or disk)\n", argv[2]);
        unlink(argv[2]);
        rc = 1;
    }
out_free_doc:
    json_decref(doc);
out_free_extras:
    json_decref(bench);
    json_decref(model);
    return rc;
}
