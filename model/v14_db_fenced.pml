/* v14_db_fenced.pml - v14 (lock/v14_db_fenced.c): v13 with the lease's times on the
 * database's clock, and the sale's transaction first locking the lease row (SELECT owner
 * ... FOR UPDATE) and rolling back when it names another owner (409 lease_lost). Two may
 * still hold at once (a pause, the database's clock), but a stale write is refused.
 *
 * Bounds: as v13's (model/database.pml); the grant carries the row's token (from 1), so
 * the sale makes its lease check (the watchdog's view) before its transaction. Faults:
 * pause (A stops 4 ticks in its work, before its lease check), late-pause (the same
 * after its lease check, before its transaction), txn-pause (the same inside its
 * transaction, the row locked), clock-jump-forward (A's clock: v14 does not read it),
 * clock-jump-db (the database's clock jumps 3 ticks ahead: A's lease has passed), crash.
 * The counter-check late-pause+no-check takes the transaction's check of the row away.
 */

#define KEEPALIVE 1
#define FENCED 1
#define DATABASE 1
#define DB_CLOCK 1          /* lock_until and now from the database's clock */

#include "database.pml"

/* v13's take, with ROUND(UNIX_TIMESTAMP(NOW(3))*1000) for now; the grant's token is the
 * row's. The sale's write is DB_TRX_CHECK then DB_TRX_WRITE (database.pml). */
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
