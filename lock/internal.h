/* internal.h - What the library's parts share: the command helpers every store uses
 * (lock/command.c), the steps two versions share (lock/steps.c), the wait policies
 * (lock/wait.c) and the keep-alive (lock/keepalive.c). Not part of the public API. */
#ifndef LOCK_INTERNAL_H
#define LOCK_INTERNAL_H

#include "common/clock.h"
#include "lock/lock.h"

/* --- lock/command.c: every command a store sends to the data Redis. --- */

/* Runs one command (redisCommand's format) on the calling thread's connection to the
 * data Redis, with trip->before ahead of it and trip->after behind it in the same round
 * trip (trip may be NULL). Returns the reply when its type is in types (caller frees
 * with rd_reply_free), else NULL with err typed. */
struct rd_reply *lock_command(struct lock_client *lc, const struct lock_trip *trip, int types,
                              struct error *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The same for a script: nkeys keys then nargs args. */
struct rd_reply *lock_eval(struct lock_client *lc, const struct lock_trip *trip,
                           const struct rd_script *s, int types, int nkeys, int nargs,
                           const char **argv, struct error *err);
/* The gap inside a release, where a store has one: sends trip->before alone (the writes
 * go before the gap; trip->before is then NULL) and calls trip->pause. LOCK_OK, or
 * LOCK_ERROR when the writes' round trip failed: the store must not release then (on a
 * new connection the release could overtake a write still on its way); the lease runs
 * out instead. Without a pause: LOCK_OK, nothing sent. */
int lock_pause_here(struct lock_client *lc, struct lock_trip *trip, struct error *err);
/* Sends what trip carries, alone (a store that keeps its lock in the process, or one
 * whose command went elsewhere). LOCK_OK or LOCK_ERROR. */
int lock_trip_send(struct lock_client *lc, const struct lock_trip *trip, struct error *err);
/* trip with only its part before (or after) the command: for a store with two commands. */
struct lock_trip lock_trip_before(const struct lock_trip *trip);
struct lock_trip lock_trip_after(const struct lock_trip *trip);

/* --- lock/steps.c: steps two versions share, each in one place both name. --- */

/* v3, v4: DEL the key, whoever holds it. LOCK_OK, or LOCK_NOT_OWNER when there was none. */
int lock_del_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                     struct error *err);
/* v4, v5, v6: SET key owner NX PX ttl. */
int lock_set_nx_px_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                               struct lock_trip *trip, struct error *err);
/* v7, v8: the reentrant hash {owner: count}, taken and given back by Lua. */
int lock_hash_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                          struct lock_trip *trip, struct error *err);
int lock_hash_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                      struct error *err);
/* v8, v9: renews the hash's lease while it still holds g's owner. */
int lock_hash_renew(struct lock_client *lc, const struct lock_grant *g, struct error *err);
/* v1, v2: a pthread mutex per item in this process. */
int lock_mutex_init(struct lock_client *lc, struct error *err);
void lock_mutex_destroy(struct lock_client *lc);
int lock_mutex_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                           struct lock_trip *trip, struct error *err);
int lock_mutex_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                       struct error *err);

/* --- lock/wait.c: the wait policies. --- */
int lock_wait_init(struct lock_client *lc, struct error *err);
void lock_wait_destroy(struct lock_client *lc);
/* Tries until granted, refused for good, or wait_ms has passed; read rides with each try. */
int lock_wait_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                      struct rd_batch *read, struct error *err);
/* 1 when another process has asked for g's lock since g was granted (notify only). */
int lock_wait_is_wanted(struct lock_client *lc, const struct lock_grant *g);
/* After the store's release, whatever it returned: the next local waiter's turn. */
void lock_wait_released(struct lock_client *lc, struct lock_grant *g);

/* --- lock/queue.c: what a release tells the waiters (notify; nothing otherwise). --- */
/* Before the store's release: the notification that rides after it (PUBLISH). */
void notify_releasing(struct lock_client *lc, const struct lock_grant *g, struct rd_batch *notice);
/* A lock of key was given back by owner (owner.c): its local first waiter tries now (we
 * do not hear our own messages). */
void notify_given_back(struct lock_client *lc, const char *key);

/* --- lock/owner.c: owner ids, and the locks given up on without an answer. --- */
int lock_owner_init(struct lock_client *lc, struct error *err);
void lock_owner_destroy(struct lock_client *lc);
/* "<instance id>:<thread number>" into owner: the calling thread's id. */
void lock_owner_id(struct lock_client *lc, char *owner, size_t size);
/* The calling thread got a grant; gave g back (whatever the release returned; answered:
 * Redis said it let go, and the thread keeps it among its recent releases). */
void lock_owner_held(const struct lock_client *lc);
void lock_owner_released(struct lock_client *lc, const struct lock_grant *g, int answered);
/* A try (releasing 0) or a release (1) of g failed with fault: when Redis may still hold
 * g's lock, the thread's id is retired once it holds nothing, and the lock is kept to be
 * given back (when that is safe after this fault). */
void lock_owner_failed(struct lock_client *lc, const struct lock_grant *g, enum fault fault,
                       int releasing);
/* Before a try: the client's abandoned locks go back (the store's release under their
 * owner, never another's lock) while a master answers. How many Redis still held. */
int lock_owner_give_back(struct lock_client *lc);

/* --- lock/keepalive.c: the watchdog, for any store with renew. --- */
int lock_keepalive_init(struct lock_client *lc, struct error *err);
void lock_keepalive_destroy(struct lock_client *lc);
/* A grant is held: renew it until the matching lock_keepalive_drop. */
void lock_keepalive_hold(struct lock_client *lc, const struct lock_grant *g);
/* The grant is released: stops renewing it, sets g->valid_until_ms to the renewed end;
 * returns 1 when the watchdog had seen the lease lost. */
int lock_keepalive_drop(struct lock_client *lc, struct lock_grant *g);
/* 1 when the watchdog has seen the lease lost, or its renewed time ran out. */
int lock_keepalive_is_lost(struct lock_client *lc, const struct lock_grant *g);

#endif
