/* internal.h - What the configuration's files share: config.c (the flags), rules.c (which
 * go together), usage.c (--help). Only service/config/ includes it. */
#ifndef SERVICE_CONFIG_INTERNAL_H
#define SERVICE_CONFIG_INTERNAL_H

#include <stdio.h>

#include "service/config/config.h"

/* --help's text, then the versions (versions(out, 0)). */
void config_usage(FILE *out, void (*versions)(FILE *out, int tsv));
/* Exactly one place for the stock, and the flags that go with it and with --set-stock and
 * --get-stock: exits 2 with the reason when one given does nothing there. */
void config_check_store(void);

#endif
