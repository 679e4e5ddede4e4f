/* redis_keys.c - Every key of the stock on Redis, formatted here and nowhere else (the
 * lock's own keys, lock:{I} and fence:{I}, are the lock library's: lock.h). */
#include "service/store/redis.h"

#include <stdio.h>

static const char *const prefixes[] = {
    [RS_STOCK] = "stock",       [RS_SOLD] = "sold",         [RS_ORDERS] = "orders",
    [RS_WRITTEN] = "written",   [RS_PROBE] = "probe",       [RS_OVERLAPS] = "overlaps",
    [RS_EVENTS] = "events",
};

const char *rs_key(char (*buf)[RS_KEY_MAX], enum rs_key kind, const char *item)
{
    snprintf(*buf, sizeof(*buf), "%s:{%.*s}", prefixes[kind], ITEM_MAX, item);
    return *buf;
}

const char *rs_idem_key(char (*buf)[RS_KEY_MAX], const char *item, const char *key)
{
    snprintf(*buf, sizeof(*buf), "idem:{%.*s}:%.*s", ITEM_MAX, item, IDEM_KEY_MAX, key);
    return *buf;
}

const char *rs_idem_item_key(char (*buf)[RS_KEY_MAX], const char *key)
{
    snprintf(*buf, sizeof(*buf), "idem-item:%.*s", IDEM_KEY_MAX, key);
    return *buf;
}
