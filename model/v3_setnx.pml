/* v3_setnx.pml - v3 (lock/v3_setnx.c): SETNX with sleep-and-retry, DEL to release. No
 * TTL: a dead holder's key stays forever.
 *
 * Bounds: two clients (A, B), stock 2, one Redis; a lease of 3 ticks is not used (SETNX
 * sets no TTL). Faults: crash (A dies holding the lock; B sells for ever), long-work.
 * "Deadlock" is checked as liveness: ltl progress, [] (crashed -> <> progressed), with
 * pan -a: an acceptance cycle is a run where B is refused for ever.
 */

#include "common.pml"

/* One try of SETNX lock id: granted when the key did not exist. The key never expires. */
inline try_acquire(me, ok) {
    redis_call(SETNX, 0, 0, 0);
    ok = (r == 1);
    grant_depth[me] = 1
}

/* lock_del_release (lock/steps.c): DEL, whoever holds it. */
inline release(me, ok) {
    del_release(me, ok)
}

#include "system.pml"
