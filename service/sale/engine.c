/* engine.c - Which engine serves the sales, chosen once from the flags; and every version
 * the instance runs, for --help and --list-versions. */
#include "service/sale/engine.h"

#include <stdio.h>
#include <string.h>

/* The engines that stand for a sale of their own (no lock version): their names. */
static const struct engine *const baselines[] = { &engine_atomic, NULL };

const struct engine *engine_choose(const char *lock_name, int combine, enum lock_wait wait,
                                   const struct lock_ops **ops, char *why, size_t size)
{
    *ops = NULL;
    for (int i = 0; baselines[i]; i++)
        if (strcmp(lock_name, baselines[i]->name) == 0 || strcmp(lock_name, baselines[i]->alias) == 0) {
            if (wait != LOCK_WAIT_DEFAULT) {
                snprintf(why, size, "the %s sale takes no lock: no --wait", baselines[i]->name);
                return NULL;
            }
            return baselines[i];
        }
    if ((*ops = lock_find(lock_name)) == NULL) {
        snprintf(why, size, "unknown lock version '%s' (see --help)", lock_name);
        return NULL;
    }
    return combine > 1 ? &engine_workers : &engine_thread;
}

enum { HELP_COLUMNS = 100 };   /* --help's lines fit in this many */

/* text, its first line going on from column col, and the lines it wraps to starting at
 * column col too, after as many spaces: each line within HELP_COLUMNS. */
static void print_wrapped(FILE *out, int col, const char *text)
{
    int indent = col, line = col;

    for (const char *p = text; *p; p += strspn(p, " ")) {
        int n = (int)strcspn(p, " ");
        if (line > indent && line + 1 + n > HELP_COLUMNS) {
            fprintf(out, "\n%*s", indent, "");
            line = indent;
        } else if (line > indent) {
            fputc(' ', out);
            line++;
        }
        fprintf(out, "%.*s", n, p);
        line += n;
        p += n;
    }
    fputc('\n', out);
}

/* One version's line: tab-separated, or as --help shows it (wrapped). */
static void print_version(FILE *out, int tsv, const char *name, const char *alias,
                          const char *title, const char *flaw)
{
    if (tsv) {
        fprintf(out, "%s\t%s\t%s\t%s\n", name, alias, title, flaw);
        return;
    }
    print_wrapped(out, fprintf(out, "  %-7s %-12s ", name, alias), title);
    print_wrapped(out, fprintf(out, "          flaw: "), flaw);
}

void engine_print_versions(FILE *out, int tsv)
{
    for (const struct lock_ops *const *v = lock_versions(); *v; v++)
        print_version(out, tsv, (*v)->name, (*v)->alias, (*v)->title, (*v)->flaw);
    for (int i = 0; baselines[i]; i++)
        print_version(out, tsv, baselines[i]->name, baselines[i]->alias, baselines[i]->title,
                      baselines[i]->flaw);
}
