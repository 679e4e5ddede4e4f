/* v6_lua_release.c - v6: as v4, release by one Lua compare-and-delete. Not reentrant. */
#include "lock/internal.h"

#include "lua_scripts.h"

static struct lock_script release_script = { "v6_release", lua_v6_release, "", 0 };

/* Compare and delete in one script: nothing can run between the two steps. (A
 * release_gap_ms sleeps before the script, where v5 slept between its commands.) */
static int v6_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
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
        st = lock_fail(err, NULL, r->type == REDIS_REPLY_ERROR ? r->str : "v6_release: bad reply");
    else
        st = r->integer == 1 ? LOCK_OK : LOCK_NOT_OWNER;
    freeReplyObject(r);
    return st;
}

const struct lock_ops lock_v6 = {
    .name = "v6",
    .alias = "lua-release",
    .title = "SET NX PX; Lua compare-and-delete",
    .flaw = "not reentrant: a nested acquire by the same thread waits on itself",
    .uses_redis = 1,
    .try_acquire = lock_setnx_px_try_acquire,
    .release = v6_release,
};
