/* v3_setnx.c - v3: SETNX with sleep-and-retry, DEL to release. No TTL: a dead holder's key stays forever. */
#include "lock/internal.h"

static int v3_try_acquire(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                          struct lock_error *err)
{
    redisReply *r = redisCommand(c, "SETNX %s %s", g->key, g->owner);
    int st;

    (void)lc;
    if (r == NULL)
        return lock_fail(err, c, "SETNX");
    if (r->type != REDIS_REPLY_INTEGER)
        st = lock_fail(err, NULL, r->type == REDIS_REPLY_ERROR ? r->str : "SETNX: bad reply");
    else
        st = r->integer == 1 ? LOCK_OK : LOCK_TIMEOUT;
    freeReplyObject(r);
    if (st == LOCK_OK) {
        g->valid_until_ms = 0; /* never expires */
        g->depth = 1;
    }
    return st;
}

/* Deletes the key, whoever holds it now: LOCK_OK when a key was deleted, LOCK_NOT_OWNER
 * when there was none. Shared by v4, which changes only acquire. */
int lock_del_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                     struct lock_error *err)
{
    redisReply *r;
    int st;

    (void)lc;
    if (g->release_gap_ms > 0)
        lock_sleep_ms(g->release_gap_ms);
    r = redisCommand(c, "DEL %s", g->key);
    if (r == NULL)
        return lock_fail(err, c, "DEL");
    if (r->type != REDIS_REPLY_INTEGER)
        st = lock_fail(err, NULL, r->type == REDIS_REPLY_ERROR ? r->str : "DEL: bad reply");
    else
        st = r->integer == 1 ? LOCK_OK : LOCK_NOT_OWNER;
    freeReplyObject(r);
    return st;
}

const struct lock_ops lock_v3 = {
    .name = "v3",
    .alias = "setnx",
    .title = "SETNX lock id, spin with sleep; DEL",
    .flaw = "holder dies: the key never expires and every later sale waits forever",
    .uses_redis = 1,
    .try_acquire = v3_try_acquire,
    .release = lock_del_release,
};
