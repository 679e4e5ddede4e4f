/* v7_reentrant.pml - v7 (lock/v7_reentrant.c): a hash {owner: count} taken and given back
 * by Lua. Reentrant; the lease can expire mid-work.
 *
 * Bounds: two clients (A, B), stock 2, one Redis, a lease of 3 ticks. Faults: nested (A's
 * sale takes the lock again), long-work (A works 4 ticks).
 */

#include "common.pml"

/* The fix is the store: hash_try_acquire and hash_release (common.pml, as lock/steps.c)
 * run lock/scripts/v7_acquire.lua and v7_release.lua. A nested acquire by the same owner
 * counts up instead of waiting on itself. */
inline try_acquire(me, ok) {
    hash_try_acquire(me, ok)
}

inline release(me, ok) {
    hash_release(me, ok)
}

#include "system.pml"
