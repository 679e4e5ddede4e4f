/* v5_owner_check.c - v5: as v4, release by GET, compare, then DEL: two commands, not atomic. */
#include "lock/internal.h"

#include <string.h>

/* Deletes the key only if GET says it is ours. The lease can run out between the GET
 * and the DEL (release_gap_ms widens that gap): then the DEL removes another's lock. */
static int v5_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                      struct lock_error *err)
{
    redisReply *r = redisCommand(c, "GET %s", g->key);
    int mine;

    (void)lc;
    if (r == NULL)
        return lock_fail(err, c, "GET");
    if (r->type != REDIS_REPLY_STRING && r->type != REDIS_REPLY_NIL) {
        int st = lock_fail(err, NULL, r->type == REDIS_REPLY_ERROR ? r->str : "GET: bad reply");
        freeReplyObject(r);
        return st;
    }
    mine = r->type == REDIS_REPLY_STRING && strcmp(r->str, g->owner) == 0;
    freeReplyObject(r);
    if (!mine)
        return LOCK_NOT_OWNER;

    if (g->release_gap_ms > 0)
        lock_sleep_ms(g->release_gap_ms);
    r = redisCommand(c, "DEL %s", g->key);
    if (r == NULL)
        return lock_fail(err, c, "DEL");
    freeReplyObject(r);
    return LOCK_OK;
}

const struct lock_ops lock_v5 = {
    .name = "v5",
    .alias = "owner-check",
    .title = "SET NX PX; GET, compare, then DEL (two commands)",
    .flaw = "the lease expires between GET and DEL: deletes another's lock",
    .uses_redis = 1,
    .try_acquire = lock_setnx_px_try_acquire,
    .release = v5_release,
};
