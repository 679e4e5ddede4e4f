/* v8_watchdog.c - v8: v7 plus a watchdog renewing held leases every ttl/3. A whole-process pause stops it too. */
#include "lock/internal.h"

/* v7's store plus renew (lock_hash_renew in lock/steps.c, shared with v9: it runs
 * lock/scripts/v8_renew.lua), a watchdog to call it, and waiting by notification. */
const struct lock_ops lock_v8 = {
    .name = "v8",
    .alias = "watchdog",
    .title = "v7 + watchdog renewal every ttl/3 while held",
    .flaw = "a whole-process pause (SIGSTOP, GC) longer than the TTL stops the watchdog too",
    .remote = 1,
    .checks_owner = 1,
    .try_acquire = lock_hash_try_acquire,
    .release = lock_hash_release,
    .renew = lock_hash_renew,
    .wait = LOCK_WAIT_NOTIFY,
    .keepalive = 1,
};
