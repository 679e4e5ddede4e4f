/* v3_setnx.c - v3: SETNX with sleep-and-retry, DEL to release. No TTL: a dead holder's key stays forever. */
#include "lock/internal.h"

static int v3_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                          struct lock_trip *trip, struct error *err)
{
    struct rd_reply *r = lock_command(lc, trip, RD_T(RD_INTEGER), err, "SETNX %s %s", g->key,
                                      g->owner);
    int st;

    (void)wait_ms;
    if (r == NULL)
        return LOCK_ERROR;
    st = r->integer == 1 ? LOCK_OK : LOCK_TIMEOUT;
    rd_reply_free(r);
    if (st == LOCK_OK) {
        g->valid_until_ms = 0; /* never expires */
        g->depth = 1;
    }
    return st;
}

const struct lock_ops lock_v3 = {
    .name = "v3",
    .alias = "setnx",
    .title = "SETNX lock id, spin with sleep; DEL",
    .flaw = "holder dies: the key never expires and every later sale waits forever",
    .remote = 1,
    .try_acquire = v3_try_acquire,
    .release = lock_del_release,
    .wait = LOCK_WAIT_POLL,
};
