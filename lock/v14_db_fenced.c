/* v14_db_fenced.c - v14: v13 on the database's clock, fenced in the sale. A paused holder: 409.
 *
 * v13 with both of its holes closed: the lease's times are the database's own clock (one
 * clock for every client: a client's clock ahead takes nothing), and the sale's own
 * transaction first locks the item's row in `leases` (SELECT ... FOR UPDATE) and rolls
 * back when it names another owner: a holder paused past its lease is refused its write
 * (409 lease_lost) instead of writing beside the next one, and while the check's lock is
 * held no one can take the row. The release may ride in that transaction too. Reentrant in
 * the process: a nested grant of the same owner is counted here. */
#include "lock/internal.h"

#include <string.h>

/* The lease's clock: the database's, in ms since 1970, read by each statement itself. */
static const char *lease_now(void)
{
    return "ROUND(UNIX_TIMESTAMP(NOW(3)) * 1000)";
}

/* One try at the leases row (lock_lease_try, lock/db_steps.c): taken where it is free or
 * its lease over by lease_now. The grant's token: the row's count of grants. */
static int v14_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                           struct lock_trip *trip, struct error *err)
{
    (void)wait_ms, (void)trip;   /* nothing of Redis rides */
    return lock_lease_try(lc, g, lease_now(), 1, err);
}

/* The watchdog's renewal: the lease's end moved to lease_now + ttl while it is ours. */
static int v14_renew(struct lock_client *lc, const struct lock_grant *g, struct error *err)
{
    return lock_lease_renew(lc, g, lease_now(), err);
}

/* The fence, in the caller's open transaction on c: the row locked until it ends (FOR
 * UPDATE: no one takes it meanwhile) and checked to name g's owner; with release, the row
 * freed in the same round trip (an UPDATE that changes nothing when the check fails).
 * LOCK_OK, LOCK_NOT_OWNER (the lease was lost: the caller rolls back), or LOCK_ERROR. */
static int v14_fence(struct lock_client *lc, const struct lock_grant *g, struct db_conn *c,
                     int release, struct error *err)
{
    struct db_result res[2];
    struct lock_db_names q;
    enum db_fault fault;

    if (lock_db_names(c, g, &q, err) != LOCK_OK)
        return LOCK_ERROR;
    if (release)
        fault = lock_db_run(lc, c, res, 2, err,
                            "SELECT owner FROM leases WHERE name=%s FOR UPDATE; "
                            "UPDATE leases SET owner='', lock_until=0 WHERE name=%s AND owner=%s",
                            q.item, q.item, q.owner);
    else
        fault = lock_db_run(lc, c, res, 1, err, "SELECT owner FROM leases WHERE name=%s FOR UPDATE",
                            q.item);
    if (fault != DB_E_NONE)
        return LOCK_ERROR;
    return res[0].found && strcmp(res[0].vals[0], g->owner) == 0 ? LOCK_OK : LOCK_NOT_OWNER;
}

/* v13 on one clock, its sale's write fenced by the database itself. */
const struct lock_ops lock_v14 = {
    .name = "v14",
    .alias = "db-fenced",
    .title = "v13 on the database's clock; the sale's transaction locks and checks the row "
             "(FOR UPDATE)",
    .flaw = "none of v13's: a holder paused past its lease is refused its write (409 "
            "lease_lost), not oversold",
    .remote = 0,
    .database = 1,
    .init = lock_leases_init,
    .destroy = lock_db_destroy,
    .try_acquire = v14_try_acquire,
    .release = lock_lease_release,
    .renew = v14_renew,
    .wait = LOCK_WAIT_POLL,
    .retry_ms = 100,   /* as Spring Integration's JdbcLockRegistry polls */
    .keepalive = 1,
    .fence = v14_fence,
    .forget = lock_lease_forget,
};
