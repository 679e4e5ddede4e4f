/* v4_setnx_ex.pml - v4 (lock/v4_setnx_ex.c): SET NX PX (lock and TTL in one command),
 * DEL to release. Deletes others' locks.
 *
 * Bounds: two clients (A, B), stock 2, one Redis, a lease of 3 ticks. Faults: crash (A
 * dies holding the lock: its key expires, B goes on), long-work (A works 4 ticks).
 */

#include "common.pml"

/* The fix is the acquire: set_nx_px_try_acquire (common.pml, as lock/steps.c) sets the
 * lock and its lease in one command. Release is still v3's DEL. */
inline try_acquire(me, ok) {
    set_nx_px_try_acquire(me, ok)
}

inline release(me, ok) {
    del_release(me, ok)
}

#include "system.pml"
