/* none.c - A baseline, not a version: no lock at all. Every concurrent sale races: oversell. */
#include "lock/internal.h"

static int none_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                            struct lock_trip *trip, struct error *err)
{
    (void)lc, (void)wait_ms, (void)trip, (void)err;
    g->depth = 1;
    return LOCK_OK;
}

static int none_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                        struct error *err)
{
    (void)g, (void)err;
    /* A lock in the process is given back whatever happened to writes in Redis. */
    lock_pause_here(lc, trip, &(struct error){ 0 });
    return LOCK_OK;
}

const struct lock_ops lock_none = {
    .name = "none",
    .alias = "unlocked",
    .title = "no lock",
    .flaw = "every concurrent sale races: oversell",
    .remote = 0,
    .in_process = 1,
    .try_acquire = none_try_acquire,
    .release = none_release,
    .wait = LOCK_WAIT_LOCAL,
};
