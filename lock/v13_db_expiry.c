/* v13_db_expiry.c - v13: a lease row on the client's clock. A pause or a fast clock: two hold.
 *
 * v12 with a lease: the item's row in `leases` is taken where it is free or its lease is
 * over, and v8's watchdog renews it every ttl/3. The lease's times are the client's wall
 * clock (as ShedLock's and Spring's JdbcLockRegistry's by default), and the sale's write
 * is not checked against the row: a holder paused past its lease writes beside the next
 * holder (oversold), and a client whose clock runs ahead finds a live lease over and takes
 * it. Reentrant in the process: a nested grant of the same owner is counted here. */
#include "lock/internal.h"

#include <stdio.h>

/* The lease's clock: this client's wall clock, in ms since 1970, as an SQL number. Every
 * client must agree on the time: one whose clock runs ahead finds a live lease over. */
static const char *lease_now(char (*buf)[32])
{
    snprintf(*buf, sizeof(*buf), "%lld", clock_wall_us() / 1000);
    return *buf;
}

/* One try at the leases row (lock_lease_try, lock/db_steps.c): taken where it is free or
 * its lease over by lease_now. No token: nothing checks one. */
static int v13_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                           struct lock_trip *trip, struct error *err)
{
    char now[32];

    (void)wait_ms, (void)trip;   /* nothing of Redis rides */
    return lock_lease_try(lc, g, lease_now(&now), 0, err);
}

/* The watchdog's renewal: the lease's end moved to lease_now + ttl while it is ours. */
static int v13_renew(struct lock_client *lc, const struct lock_grant *g, struct error *err)
{
    char now[32];

    return lock_lease_renew(lc, g, lease_now(&now), err);
}

/* v12 with a lease and v8's watchdog, reentrant in the process. */
const struct lock_ops lock_v13 = {
    .name = "v13",
    .alias = "db-expiry",
    .title = "a leases row taken where free or expired, on the client's clock; watchdog "
             "renewal",
    .flaw = "a holder paused past its lease writes beside the next one; a client clock "
            "ahead takes a live lease",
    .remote = 0,
    .database = 1,
    .init = lock_leases_init,
    .destroy = lock_db_destroy,
    .try_acquire = v13_try_acquire,
    .release = lock_lease_release,
    .renew = v13_renew,
    .wait = LOCK_WAIT_POLL,
    .forget = lock_lease_forget,   /* a grant given up on: its lease runs out */
    .retry_ms = 100,   /* as Spring Integration's JdbcLockRegistry polls */
    .keepalive = 1,
};
