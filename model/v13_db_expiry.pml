/* v13_db_expiry.pml - v13 (lock/v13_db_expiry.c): the lock a row of the database with an
 * expiry, lock_until, on the client's clock; taken where free or passed, renewed by a
 * watchdog every ttl/3. The sale's write does not look at the row: a holder paused past
 * its lease writes beside the next one, and a client whose clock jumps forward takes a
 * live lease.
 *
 * Bounds: two clients (A, B) and their watchdogs, one database (model/database.pml):
 * the lease row and the items row (stock 2), a lease of 3 ticks renewed every tick, work
 * 1 tick. Faults: pause (A and its watchdog stop 4 ticks in its work), short-pause (2
 * ticks: shorter than the lease), clock-jump-forward (A's clock jumps 3 ticks ahead),
 * crash (A dies holding the row). Grants carry no token (0): the sale makes no lease
 * check.
 */

#define KEEPALIVE 1
#define DATABASE 1
#define DB_CLOCK 0          /* lock_until and now from the client's clock */

#include "database.pml"

/* UPDATE leases SET owner=?, lock_until=<client now + ttl>, token=token+1 WHERE name=? AND
 * (owner='' OR lock_until <= <client now>). The sale's write is DB_WRITE. */
inline try_acquire(me, ok) {
    lease_try_acquire(me, ok)
}

inline release(me, ok) {
    lease_release(me, ok)
}

inline renew(me, st) {
    lease_renew(me, st)
}

#include "system.pml"
