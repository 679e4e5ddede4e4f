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

/* One version's line: tab-separated, or as --help shows it. */
static void print_version(FILE *out, int tsv, const char *name, const char *alias,
                          const char *title, const char *flaw)
{
    if (tsv)
        fprintf(out, "%s\t%s\t%s\t%s\n", name, alias, title, flaw);
    else
        fprintf(out, "  %-7s %-12s %s\n          flaw: %s\n", name, alias, title, flaw);
}

void engine_print_versions(FILE *out, int tsv)
{
    for (const struct lock_ops *const *v = lock_versions(); *v; v++)
        print_version(out, tsv, (*v)->name, (*v)->alias, (*v)->title, (*v)->flaw);
    for (int i = 0; baselines[i]; i++)
        print_version(out, tsv, baselines[i]->name, baselines[i]->alias, baselines[i]->title,
                      baselines[i]->flaw);
}
