/* internal.h - What the library's parts share: the Redis helpers every store uses, the
 * steps two versions share (lock/steps.c), the wait policies and the keep-alive. Not
 * part of the public API. */
#ifndef LOCK_INTERNAL_H
#define LOCK_INTERNAL_H

#include <time.h>

#include "lock/lock.h"

/* A store's release or renew: the lock was not (or no longer) ours; nothing changed.
 * lock_release() turns it into LOCK_EXPIRED or LOCK_STOLEN; it never leaves the library. */
#define LOCK_NOT_OWNER (LOCK_UNAVAILABLE + 1)

/* Reply types a helper accepts, as a mask: anything else is LOCK_ERROR. */
#define LOCK_R_STRING  (1 << REDIS_REPLY_STRING)
#define LOCK_R_INTEGER (1 << REDIS_REPLY_INTEGER)
#define LOCK_R_NIL     (1 << REDIS_REPLY_NIL)
#define LOCK_R_STATUS  (1 << REDIS_REPLY_STATUS)
#define LOCK_R_ARRAY   (1 << REDIS_REPLY_ARRAY)

/* lock.c: the wall-clock time ms from now, for the pthread calls that take one. */
struct timespec lock_realtime_in(long ms);

/* --- lock/redis.c: every command a store sends goes through one of these two. --- */

/* Runs one command (redisCommand's format) on the calling thread's connection, with any
 * pending rider in the same round trip. Returns the reply when its type is in types
 * (caller frees), else NULL with err filled (an error reply's text, or the I/O error). */
redisReply *lock_command(struct lock_client *lc, int types, struct lock_error *err,
                         const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The same for a script: nkeys keys then nargs args. */
redisReply *lock_eval(struct lock_client *lc, struct lock_script *s, int types, int nkeys,
                      int nargs, const char **argv, struct lock_error *err);

/* Riders waiting for the calling thread's next lock command: before it (the sale's
 * writes) and after it (the sale's read; a notification). lock_command/lock_eval send
 * them and clear them; lock_riders_flush sends what a store left unsent, alone. */
void lock_riders_set(struct lock_client *lc, struct lock_rider *before, struct lock_rider *after);
int lock_riders_flush(struct lock_client *lc, struct lock_error *err);
/* Sends only the riders before the lock command (the sale's writes), alone; the ones
 * after it (a release's notification) stay for the next command or flush. */
int lock_riders_flush_before(struct lock_client *lc, struct lock_error *err);
/* The teaching gap inside a release (g->release_gap_ms): what rides with the release
 * (the sale's writes) is sent first, alone, so that the gap delays only the release. */
void lock_release_gap(struct lock_client *lc, const struct lock_grant *g);
int lock_redis_init(struct lock_client *lc, struct lock_error *err);
void lock_redis_destroy(struct lock_client *lc);
/* A connection to HOST:PORT within timeout_ms (also its command timeout), authenticated
 * with the configured credentials; NULL with err filled (err->io set when refused). */
redisContext *lock_redis_open(const struct lock_client *lc, const char *host, int port,
                              long timeout_ms, struct lock_error *err);
/* A new connection of the caller's own (the subscriber's) to the data Redis (with
 * standbys, the first that says it is a master): NULL with err filled. */
redisContext *lock_redis_connect(const struct lock_client *lc, long timeout_ms,
                                 struct lock_error *err);

/* --- lock/steps.c: steps two versions share, each in one place both name. --- */

/* v3, v4: DEL the key, whoever holds it. LOCK_OK, or LOCK_NOT_OWNER when there was none. */
int lock_del_release(struct lock_client *lc, struct lock_grant *g, struct lock_error *err);
/* v4, v5, v6: SET key owner NX PX ttl. */
int lock_set_nx_px_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                               struct lock_error *err);
/* v7, v8: the reentrant hash {owner: count}, taken and given back by Lua. */
int lock_hash_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                          struct lock_error *err);
int lock_hash_release(struct lock_client *lc, struct lock_grant *g, struct lock_error *err);
/* v8, v9: renews the hash's lease while it still holds g's owner. */
int lock_hash_renew(struct lock_client *lc, const struct lock_grant *g, struct lock_error *err);
/* v1, v2: a pthread mutex per item in this process. */
int lock_mutex_init(struct lock_client *lc, struct lock_error *err);
void lock_mutex_destroy(struct lock_client *lc);
int lock_mutex_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                           struct lock_error *err);
int lock_mutex_release(struct lock_client *lc, struct lock_grant *g, struct lock_error *err);

/* --- lock/wait.c: the wait policies. --- */
int lock_wait_init(struct lock_client *lc, struct lock_error *err);
void lock_wait_destroy(struct lock_client *lc);
/* Tries until granted, refused for good, or wait_ms has passed. */
int lock_wait_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                      struct lock_rider *rider, struct lock_error *err);
/* Before the store's release: arranges the notification (notify: PUBLISH rides along). */
void lock_wait_releasing(struct lock_client *lc, const struct lock_grant *g,
                         struct lock_rider *notice);
/* 1 when another process has asked for g's lock since g was granted (notify only). */
int lock_wait_is_wanted(struct lock_client *lc, const struct lock_grant *g);
/* After the store's release, whatever it returned: the next local waiter's turn. */
void lock_wait_released(struct lock_client *lc, struct lock_grant *g);

/* --- lock/keepalive.c: the watchdog, for any store with renew. --- */
int lock_keepalive_init(struct lock_client *lc, struct lock_error *err);
void lock_keepalive_destroy(struct lock_client *lc);
/* A grant is held: renew it until the matching lock_keepalive_drop. */
void lock_keepalive_hold(struct lock_client *lc, const struct lock_grant *g);
/* The grant is released: stops renewing it, sets g->valid_until_ms to the renewed end;
 * returns 1 when the watchdog had seen the lease lost. */
int lock_keepalive_drop(struct lock_client *lc, struct lock_grant *g);
/* 1 when the watchdog has seen the lease lost, or its renewed time ran out. */
int lock_keepalive_is_lost(struct lock_client *lc, const struct lock_grant *g);

#endif
