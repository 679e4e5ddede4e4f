/* probe.c - The mutual-exclusion probe (--faults only): each sale notes itself in
 * probe:{I} while inside the critical section; entering while someone else is inside
 * counts one overlap (overlaps:{I}, and /metrics). What a scenario reads to show two
 * holders at once, from Redis itself. */
#include "service/service.h"

#include <stdio.h>

#include "lua_scripts.h"

void probe_enter(const char *item, const char *id)
{
    char probe[128], overlaps[128];
    const char *argv[] = { probe, overlaps, id };
    struct lock_error err;
    struct rd_reply *r;

    snprintf(probe, sizeof(probe), "probe:{%s}", item);
    snprintf(overlaps, sizeof(overlaps), "overlaps:{%s}", item);
    r = rd_eval(svc_redis, &lua_probe_enter, RD_T(RD_INTEGER), 2, 1, argv, &err);
    if (r && r->integer > 1)
        metrics_overlap();
    rd_reply_free(r);
}

int probe_leave_add(struct rd_batch *b, const char *item, const char *id, struct lock_error *err)
{
    return rd_batch_add(b, err, "SREM probe:{%s} %s", item, id);
}
