/* internal.h - What the configuration's files share: config.c (the flags), rules.c (which
 * go together, and the parse as a whole), usage.c (--help). Only service/config/ includes
 * it. */
#ifndef SERVICE_CONFIG_INTERNAL_H
#define SERVICE_CONFIG_INTERNAL_H

#include <stdio.h>

#include "service/config/config.h"

/* --help's text, then the versions (versions(out, 0)). */
void config_usage(FILE *out, void (*versions)(FILE *out, int tsv));
/* config.c: reads every flag into svc, each value checked, or exits 2 (or 0 after --help
 * or --list-versions). */
void config_read(int argc, char **argv, void (*versions)(FILE *out, int tsv));
/* config.c: what follows from the flags: the passwords read, the store's label, the
 * default name. */
void config_complete(void);

#endif
