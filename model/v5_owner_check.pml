/* v5_owner_check.pml - v5 (lock/v5_owner_check.c): as v4, release by GET, compare, then
 * DEL: two commands, not atomic.
 *
 * Bounds: three clients (A, B, C) under release-gap, else two; stock 2, one Redis, a
 * lease of 3 ticks. Fault: release-gap (A's release waits 3 ticks between GET and DEL).
 */

#include "common.pml"

inline try_acquire(me, ok) {
    set_nx_px_try_acquire(me, ok)
}

/* Deletes the key only if GET says it is ours. The lease can run out between the GET
 * and the DEL: then the DEL removes another's lock. */
inline release(me, ok) {
    redis_call(GET, 0, 0, 0);
    if
    :: r != me + 1 -> ok = false
    :: else ->
        printf("EV %c: GET says the lock is mine\n", NAME(me));
        release_gap(me);
        redis_call(DEL, 0, 0, 0);
        ok = (r == 1)       /* 0: the key expired in the gap, and nobody else had taken it */
    fi
}

#include "system.pml"
