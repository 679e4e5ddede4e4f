/* v6_lua_release.c - v6: as v4, release by one Lua compare-and-delete. Not reentrant. */
#include "lock/internal.h"

#include "lua_scripts.h"

static struct lock_script release_script = { "v6_release", lua_v6_release, "", 0 };

/* Compare and delete in one script: nothing can run between the two steps. (A
 * release_gap_ms sleeps before the script, where v5 slept between its commands.) */
static int v6_release(struct lock_client *lc, struct lock_grant *g, struct lock_error *err)
{
    const char *argv[] = { g->key, g->owner };
    redisReply *r;
    int mine;

    lock_release_gap(lc, g);
    r = lock_eval(lc, &release_script, LOCK_R_INTEGER, 1, 1, argv, err);
    if (r == NULL)
        return LOCK_ERROR;
    mine = r->integer == 1;
    freeReplyObject(r);
    return mine ? LOCK_OK : LOCK_NOT_OWNER;
}

const struct lock_ops lock_v6 = {
    .name = "v6",
    .alias = "lua-release",
    .title = "SET NX PX; Lua compare-and-delete",
    .flaw = "not reentrant: a nested acquire by the same thread waits on itself",
    .remote = 1,
    .try_acquire = lock_set_nx_px_try_acquire,
    .release = v6_release,
    .wait = LOCK_WAIT_POLL,
};
