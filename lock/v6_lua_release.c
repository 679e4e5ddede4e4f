/* v6_lua_release.c - v6: as v4, release by one Lua compare-and-delete. Not reentrant. */
#include "lock/internal.h"

#include "lua_scripts.h"

/* Compare and delete in one script: nothing can run between the two steps. (The
 * caller's pause, release_gap_ms, comes before the script, where v5's came between its
 * commands.) */
static int v6_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                      struct error *err)
{
    const char *argv[] = { g->key, g->owner };
    struct rd_reply *r;
    int mine;

    if (lock_pause_here(lc, trip, err) != LOCK_OK)
        return LOCK_ERROR;
    r = lock_eval(lc, trip, &lua_v6_release, RD_T(RD_INTEGER), 1, 1, argv, err);
    if (r == NULL)
        return LOCK_ERROR;
    mine = r->integer == 1;
    rd_reply_free(r);
    return mine ? LOCK_OK : LOCK_NOT_OWNER;
}

const struct lock_ops lock_v6 = {
    .name = "v6",
    .alias = "lua-release",
    .title = "SET NX PX; Lua compare-and-delete",
    .flaw = "not reentrant: a nested acquire by the same thread waits on itself",
    .remote = 1,
    .checks_owner = 1,
    .try_acquire = lock_set_nx_px_try_acquire,
    .release = v6_release,
    .wait = LOCK_WAIT_POLL,
};
