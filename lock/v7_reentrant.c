/* v7_reentrant.c - v7: a hash {owner: count} taken and given back by Lua. Reentrant; the lease can expire mid-work. */
#include "lock/internal.h"

/* The fix is the store: lock_hash_try_acquire and lock_hash_release (lock/steps.c, shared
 * with v8) run lock/scripts/v7_acquire.lua and v7_release.lua. A nested acquire by the
 * same owner counts up instead of waiting on itself. */
const struct lock_ops lock_v7 = {
    .name = "v7",
    .alias = "reentrant",
    .title = "Lua hash {owner: count}, HINCRBY + PEXPIRE; Lua release",
    .flaw = "the lease expires while work runs: two holders",
    .remote = 1,
    .checks_owner = 1,
    .try_acquire = lock_hash_try_acquire,
    .release = lock_hash_release,
    .wait = LOCK_WAIT_POLL,
};
