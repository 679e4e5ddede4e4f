/* log.c - One line per event on stderr: time, level, instance, message. */
#include "service/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>

static char instance[64] = "inventory";

void log_set_name(const char *name)
{
    snprintf(instance, sizeof(instance), "%s", name && *name ? name : "inventory");
}

void log_event(const char *level, const char *fmt, ...)
{
    char when[32], msg[512];
    time_t now = time(NULL);
    struct tm tm;
    va_list ap;

    gmtime_r(&now, &tm);
    strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s %s %s %s\n", when, level, instance, msg);
}
