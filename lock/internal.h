/* internal.h - What one version file borrows from another; not part of the public API.
 * A version that changes only release borrows its predecessor's acquire, and one that
 * changes only acquire borrows its release, so that `diff lock/v5_*.c lock/v6_*.c`
 * shows exactly the fix. */
#ifndef LOCK_INTERNAL_H
#define LOCK_INTERNAL_H

#include "lock/lock.h"

/* v1 (and v2): the process-local mutex. */
int lock_mutex_init(struct lock_client *lc, struct lock_error *err);
void lock_mutex_destroy(struct lock_client *lc);
int lock_mutex_try_acquire(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                           struct lock_error *err);
int lock_mutex_acquire_wait(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                            long wait_ms, struct lock_error *err);
int lock_mutex_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                       struct lock_error *err);

/* v3 (and v4): DEL the key, whoever holds it. */
int lock_del_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                     struct lock_error *err);

/* v4 (and v5, v6): SET key owner NX PX ttl. */
int lock_setnx_px_try_acquire(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                              struct lock_error *err);

/* v7 (and v8): the reentrant hash, acquired and released by Lua. */
int lock_hash_try_acquire(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                          struct lock_error *err);
int lock_hash_release(struct lock_client *lc, redisContext *c, struct lock_grant *g,
                      struct lock_error *err);

/* v8: 1 when the watchdog found the lease lost. */
int lock_lease_is_lost(const struct lock_lease *lease);

#endif
