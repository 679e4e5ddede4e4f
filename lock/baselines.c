/* baselines.c - Two baselines, not versions: no lock at all (oversell), and the atomic sale (no lock needed). */
#include "lock/internal.h"

static int none_try_acquire(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                            struct lock_error *err)
{
    (void)lc, (void)c, (void)err;
    g->depth = 1;
    return LOCK_OK;
}

static int none_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                        struct lock_error *err)
{
    (void)lc, (void)c, (void)err;
    if (g->release_gap_ms > 0)
        lock_sleep_ms(g->release_gap_ms);
    return LOCK_OK;
}

const struct lock_ops lock_none = {
    .name = "none",
    .alias = "unlocked",
    .title = "no lock",
    .flaw = "every concurrent sale races: oversell",
    .uses_redis = 0,
    .try_acquire = none_try_acquire,
    .release = none_release,
};

/* The whole sale as one Lua script (the service runs it): one counter needs no lock. */
const struct lock_ops lock_atomic = {
    .name = "atomic",
    .alias = "script",
    .title = "the whole sale in one Lua script, no lock",
    .flaw = "none for one key; no room for work outside Redis",
    .uses_redis = 1,
    .is_atomic = 1,
    .try_acquire = none_try_acquire,
    .release = none_release,
};
