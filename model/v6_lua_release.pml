/* v6_lua_release.pml - v6 (lock/v6_lua_release.c): as v4, release by one Lua
 * compare-and-delete. Not reentrant.
 *
 * Bounds: three clients (A, B, C) under release-gap, else two; stock 2, one Redis, a
 * lease of 3 ticks. Faults: release-gap (A's release waits 3 ticks before its script),
 * nested (A's sale takes the lock again, waiting at most 2 ticks: less than the lease).
 */

#include "common.pml"

inline try_acquire(me, ok) {
    set_nx_px_try_acquire(me, ok)
}

/* Compare and delete in one script (lock/scripts/v6_release.lua, run by Redis in
 * common.pml): nothing runs between the two steps. The gap sleeps before the script. */
inline release(me, ok) {
    release_gap(me);
    redis_call(V6_RELEASE, 0, 0, 0);
    ok = (r == 1)
}

#include "system.pml"
