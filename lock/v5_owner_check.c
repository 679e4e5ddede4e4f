/* v5_owner_check.c - v5: as v4, release by GET, compare, then DEL: two commands, not atomic. */
#include "lock/internal.h"

#include <string.h>

/* Deletes the key only if GET says it is ours. The lease can run out between the GET
 * and the DEL (the caller's pause, the teaching fault release_gap_ms, widens that gap): then the DEL removes another's lock. */
static int v5_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                      struct error *err)
{
    struct lock_trip writes = lock_trip_before(trip), notice = lock_trip_after(trip);
    struct rd_reply *r = lock_command(lc, &writes, RD_T(RD_STRING) | RD_T(RD_NIL), err,
                                      "GET %s", g->key);
    int mine;

    trip->before = NULL;   /* the writes went with the GET */
    if (r == NULL)
        return LOCK_ERROR;
    mine = r->type == RD_STRING && strcmp(r->str, g->owner) == 0;
    rd_reply_free(r);
    if (!mine) {
        lock_trip_send(lc, &notice, &(struct error){ 0 });  /* waiters wake at worst at the lease's end */
        return LOCK_NOT_OWNER;
    }
    if (lock_pause_here(lc, trip, err) != LOCK_OK)
        return LOCK_ERROR;
    r = lock_command(lc, trip, RD_T(RD_INTEGER), err, "DEL %s", g->key);
    if (r == NULL)
        return LOCK_ERROR;
    mine = r->integer == 1; /* 0: the key expired in the gap, and nobody else had taken it */
    rd_reply_free(r);
    return mine ? LOCK_OK : LOCK_NOT_OWNER;
}

const struct lock_ops lock_v5 = {
    .name = "v5",
    .alias = "owner-check",
    .title = "SET NX PX; GET, compare, then DEL (two commands)",
    .flaw = "the lease expires between GET and DEL: deletes another's lock",
    .remote = 1,
    .try_acquire = lock_set_nx_px_try_acquire,
    .release = v5_release,
    .wait = LOCK_WAIT_POLL,
};
