/* v7_reentrant.c - v7: a hash {owner: count} taken and given back by Lua. Reentrant; the lease can expire mid-work. */
#include "lock/internal.h"

#include <stdio.h>

#include "lua_scripts.h"

static struct lock_script acquire_script = { "v7_acquire", lua_v7_acquire, "", 0 };
static struct lock_script release_script = { "v7_release", lua_v7_release, "", 0 };

/* One try: granted when the key is free or already ours (then the count goes up). Every
 * grant, nested ones too, resets the lease to a full TTL. Shared by v8. */
int lock_hash_try_acquire(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                          struct lock_error *err)
{
    char ttl[32];
    const char *argv[] = { g->key, g->owner, ttl };
    redisReply *r;
    int st;

    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    r = lock_script_eval(c, &acquire_script, 1, 2, argv, err);
    if (r == NULL)
        return LOCK_ERROR;
    if (r->type != REDIS_REPLY_INTEGER) {
        st = lock_fail(err, NULL, r->type == REDIS_REPLY_ERROR ? r->str : "v7_acquire: bad reply");
    } else if (r->integer > 0) {
        st = LOCK_OK;
        g->depth = (int)r->integer;
        g->valid_until_ms = g->acquired_ms + lc->cfg.ttl_ms;
    } else {
        st = LOCK_TIMEOUT;
    }
    freeReplyObject(r);
    return st;
}

/* Gives back one hold; never deletes a lock that is not ours. Shared by v8. */
int lock_hash_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                      struct lock_error *err)
{
    const char *argv[] = { g->key, g->owner };
    redisReply *r;
    int st;

    (void)lc;
    if (g->release_gap_ms > 0)
        lock_sleep_ms(g->release_gap_ms);
    r = lock_script_eval(c, &release_script, 1, 1, argv, err);
    if (r == NULL)
        return LOCK_ERROR;
    if (r->type != REDIS_REPLY_INTEGER)
        st = lock_fail(err, NULL, r->type == REDIS_REPLY_ERROR ? r->str : "v7_release: bad reply");
    else
        st = r->integer < 0 ? LOCK_NOT_OWNER : LOCK_OK;
    freeReplyObject(r);
    return st;
}

const struct lock_ops lock_v7 = {
    .name = "v7",
    .alias = "reentrant",
    .title = "Lua hash {owner: count}, HINCRBY + PEXPIRE; Lua release",
    .flaw = "the lease expires while work runs: two holders",
    .uses_redis = 1,
    .try_acquire = lock_hash_try_acquire,
    .release = lock_hash_release,
};
