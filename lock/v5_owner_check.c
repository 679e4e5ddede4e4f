/* v5_owner_check.c - v5: as v4, release by GET, compare, then DEL: two commands, not atomic. */
#include "lock/internal.h"

#include <string.h>

/* Deletes the key only if GET says it is ours. The lease can run out between the GET
 * and the DEL (release_gap_ms widens that gap): then the DEL removes another's lock. */
static int v5_release(struct lock_client *lc, struct lock_grant *g, struct lock_error *err)
{
    redisReply *r = lock_command(lc, LOCK_R_STRING | LOCK_R_NIL, err, "GET %s", g->key);
    int mine;

    if (r == NULL)
        return LOCK_ERROR;
    mine = r->type == REDIS_REPLY_STRING && strcmp(r->str, g->owner) == 0;
    freeReplyObject(r);
    if (!mine)
        return LOCK_NOT_OWNER;

    lock_release_gap(lc, g);
    r = lock_command(lc, LOCK_R_INTEGER, err, "DEL %s", g->key);
    if (r == NULL)
        return LOCK_ERROR;
    mine = r->integer == 1; /* 0: the key expired in the gap, and nobody else had taken it */
    freeReplyObject(r);
    return mine ? LOCK_OK : LOCK_NOT_OWNER;
}

const struct lock_ops lock_v5 = {
    .name = "v5",
    .alias = "owner-check",
    .title = "SET NX PX; GET, compare, then DEL (two commands)",
    .flaw = "the lease expires between GET and DEL: deletes another's lock",
    .remote = 1,
    .try_acquire = lock_set_nx_px_try_acquire,
    .release = v5_release,
    .wait = LOCK_WAIT_POLL,
};
