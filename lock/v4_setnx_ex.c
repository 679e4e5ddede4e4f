/* v4_setnx_ex.c - v4: SET NX PX (lock and TTL in one command), DEL to release. Deletes others' locks. */
#include "lock/internal.h"

#include <stdio.h>

/* One try of SET key owner NX PX ttl. Shared by v5 and v6, which change only release. */
int lock_setnx_px_try_acquire(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                              struct lock_error *err)
{
    redisReply *r = redisCommand(c, "SET %s %s NX PX %ld", g->key, g->owner, lc->cfg.ttl_ms);
    int st;

    if (r == NULL)
        return lock_fail(err, c, "SET NX PX");
    if (r->type == REDIS_REPLY_STATUS)
        st = LOCK_OK;
    else if (r->type == REDIS_REPLY_NIL)
        st = LOCK_TIMEOUT;
    else
        st = lock_fail(err, NULL, r->type == REDIS_REPLY_ERROR ? r->str : "SET NX PX: bad reply");
    freeReplyObject(r);
    if (st == LOCK_OK) {
        /* Counted from before the command was sent: never later than Redis's own clock. */
        g->valid_until_ms = g->acquired_ms + lc->cfg.ttl_ms;
        g->depth = 1;
    }
    return st;
}

const struct lock_ops lock_v4 = {
    .name = "v4",
    .alias = "setnx-ex",
    .title = "SET lock id NX PX ttl; DEL",
    .flaw = "work outlasts the TTL: a second holder enters and the first deletes its lock",
    .uses_redis = 1,
    .try_acquire = lock_setnx_px_try_acquire,
    .release = lock_del_release, /* v3's: after our TTL ran out, the key may be another's */
};
