/* v9_fenced.c - v9: v8 plus a fencing token per grant, checked where the stock is written. A paused holder cannot write. */
#include "lock/internal.h"

#include <stdio.h>

#include "lua_scripts.h"

/* One try of lock/scripts/v9_acquire.lua: v7's hash, and a first grant also takes the
 * next token from fence:{I} (INCR, in the same script: no grant without a token, no
 * token twice). The grant carries it; the sale's write (service/store/scripts/
 * sale_write_fenced.lua) refuses a (token, batch) not strictly after the last writer's,
 * and a token older than the last one issued. */
static int v9_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                          struct lock_trip *trip, struct error *err)
{
    char fence[LOCK_KEY_MAX], ttl[32];
    const char *argv[] = { g->key, fence, g->owner, ttl };
    struct rd_reply *r;
    int st;

    (void)wait_ms;
    lock_fence_key(&fence, g->item);
    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    r = lock_eval(lc, trip, &lua_v9_acquire, RD_T(RD_ARRAY), 2, 2, argv, err);
    if (r == NULL)
        return LOCK_ERROR;
    if (r->elements != 2 || r->element[0]->type != RD_INTEGER ||
        r->element[1]->type != RD_INTEGER) {
        rd_reply_free(r);
        return error_set(err, FAULT_PROTOCOL, "v9_acquire: unexpected reply");
    }
    if (r->element[0]->integer > 0) {
        st = LOCK_OK;
        g->depth = (int)r->element[0]->integer;
        g->token = r->element[1]->integer;
        g->valid_until_ms = g->acquired_ms + lc->cfg.ttl_ms;
    } else {
        st = LOCK_TIMEOUT;
        g->retry_in_ms = -r->element[0]->integer;
    }
    rd_reply_free(r);
    return st;
}

/* v8's store, renewal and waiting, with a token per grant. A holder whose lease is known
 * lost stops before writing; one that does not know it yet is refused by the write. */
const struct lock_ops lock_v9 = {
    .name = "v9",
    .alias = "fenced",
    .title = "v8 + a fencing token per grant (INCR fence:{I}), checked by the stock's write",
    .flaw = "a pause still lets two hold at once (the stale write is refused); a failover can reissue a token",
    .remote = 1,
    .checks_owner = 1,
    .try_acquire = v9_try_acquire,
    .release = lock_hash_release,
    .renew = lock_hash_renew,
    .wait = LOCK_WAIT_NOTIFY,
    .keepalive = 1,
};
