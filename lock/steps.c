/* steps.c - Steps two versions share, in one place both name, so that `diff` between
 * consecutive version files shows the fix and nothing that reads as a removal. */
#include "lock/internal.h"

#include <stdio.h>

#include "lua_scripts.h"

/* v3, v4: deletes the key, whoever holds it now: LOCK_OK when a key was deleted,
 * LOCK_NOT_OWNER when there was none. */
int lock_del_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                     struct error *err)
{
    struct rd_reply *r;
    int st;

    if (lock_pause_here(lc, trip, err) != LOCK_OK)
        return LOCK_ERROR;
    r = lock_command(lc, trip, RD_T(RD_INTEGER), err, "DEL %s", g->key);
    if (r == NULL)
        return LOCK_ERROR;
    st = r->integer == 1 ? LOCK_OK : LOCK_NOT_OWNER;
    rd_reply_free(r);
    return st;
}

/* v4, v5, v6: one try of SET key owner NX PX ttl: the lock and its lease in one command. */
int lock_set_nx_px_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                               struct lock_trip *trip, struct error *err)
{
    struct rd_reply *r = lock_command(lc, trip, RD_T(RD_STATUS) | RD_T(RD_NIL), err,
                                      "SET %s %s NX PX %ld", g->key, g->owner, lc->cfg.ttl_ms);
    int st;

    (void)wait_ms;
    if (r == NULL)
        return LOCK_ERROR;
    st = r->type == RD_STATUS ? LOCK_OK : LOCK_TIMEOUT;
    rd_reply_free(r);
    if (st == LOCK_OK) {
        /* Counted from before the command was sent: never later than Redis's own clock. */
        g->valid_until_ms = g->acquired_ms + lc->cfg.ttl_ms;
        g->depth = 1;
    }
    return st;
}

/* v7, v8: one try: granted when the key is free or already ours (then the count goes
 * up). Every grant, nested ones too, resets the lease to a full TTL. A refusal says how
 * long the holder's lease has left. */
int lock_hash_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                          struct lock_trip *trip, struct error *err)
{
    char ttl[32];
    const char *argv[] = { g->key, g->owner, ttl };
    struct rd_reply *r;
    int st;

    (void)wait_ms;
    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    r = lock_eval(lc, trip, &lua_v7_acquire, RD_T(RD_INTEGER), 1, 2, argv, err);
    if (r == NULL)
        return LOCK_ERROR;
    if (r->integer > 0) {
        st = LOCK_OK;
        g->depth = (int)r->integer;
        g->valid_until_ms = g->acquired_ms + lc->cfg.ttl_ms;
    } else {
        st = LOCK_TIMEOUT;
        g->retry_in_ms = -r->integer;
    }
    rd_reply_free(r);
    return st;
}

/* v7, v8: gives back one hold; never deletes a lock that is not ours. */
int lock_hash_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                      struct error *err)
{
    const char *argv[] = { g->key, g->owner };
    struct rd_reply *r;
    int st;

    if (lock_pause_here(lc, trip, err) != LOCK_OK)
        return LOCK_ERROR;
    r = lock_eval(lc, trip, &lua_v7_release, RD_T(RD_INTEGER), 1, 1, argv, err);
    if (r == NULL)
        return LOCK_ERROR;
    st = r->integer < 0 ? LOCK_NOT_OWNER : LOCK_OK;
    rd_reply_free(r);
    return st;
}

/* v8, v9: resets the lease to a full TTL, but only while the hash still holds our owner
 * id. The keep-alive (lock/keepalive.c) calls it every ttl/3 for each held lock. */
int lock_hash_renew(struct lock_client *lc, const struct lock_grant *g, struct error *err)
{
    char ttl[32];
    const char *argv[] = { g->key, g->owner, ttl };
    struct rd_reply *r;
    int mine;

    snprintf(ttl, sizeof(ttl), "%ld", lc->cfg.ttl_ms);
    r = lock_eval(lc, NULL, &lua_v8_renew, RD_T(RD_INTEGER), 1, 2, argv, err);
    if (r == NULL)
        return LOCK_ERROR;
    mine = r->integer == 1;
    rd_reply_free(r);
    return mine ? LOCK_OK : LOCK_NOT_OWNER;
}
