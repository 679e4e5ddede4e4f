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

/* --- lock/db_steps.c: what the database's versions share (v12 to v15). --- */

/* The version's table on the store's pool (lock_config.db): made by CREATE TABLE IF NOT
 * EXISTS (create), now or, when the database does not answer yet, on the first connection
 * that does. LOCK_OK, or LOCK_ERROR (no pool lent; the table refused: its name and the
 * right missing). lock_db_destroy frees the state (and what the holds still keep). */
int lock_db_init(struct lock_client *lc, const char *table, const char *create,
                 struct error *err);
void lock_db_destroy(struct lock_client *lc);
/* A grant's item and owner as SQL string literals ('it''s'), quoted for one connection. */
struct lock_db_names {
    char item[2 * LOCK_ITEM_MAX + 3];
    char owner[2 * LOCK_OWNER_MAX + 3];
};
/* A connection of the pool for g's statements, the version's table made first when it is
 * not yet, and g's names quoted for it into q; NULL with err. Put it back with
 * lock_db_put. */
struct db_conn *lock_db_open(struct lock_client *lc, const struct lock_grant *g,
                             struct lock_db_names *q, struct error *err);
/* g's item and owner quoted for c (a connection of the caller's): LOCK_OK or LOCK_ERROR. */
int lock_db_names(struct db_conn *c, const struct lock_grant *g, struct lock_db_names *q,
                  struct error *err);
/* Runs the statements fmt formats on c (db_run: one round trip, res[i] statement i's):
 * DB_E_NONE, or the fault with err filled (the boundary's kinds, db_error_map); a table
 * found missing is made again by the next open. */
enum db_fault lock_db_run(struct lock_client *lc, struct db_conn *c, struct db_result *res,
                          int nres, struct error *err, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Puts c back after a run that ended with fault: closed when the connection failed. */
void lock_db_put(struct db_conn *c, enum db_fault fault);
/* Reentrancy in the process (v13 to v15): 1 when g's owner holds g's item here (and its
 * lease is not known over): counted up into g (depth, token, valid_until_ms, priv); else 0. */
int lock_db_nest(struct lock_client *lc, struct lock_grant *g);
/* A grant by the store: g's hold, depth 1 (or counted up on the hold of a lease lost and
 * taken again), its token (g->token), its lease's end until_ms (0: none) and conn (v15:
 * the connection whose transaction holds the row; NULL for the others). LOCK_OK or
 * LOCK_ERROR (out of memory). */
int lock_db_hold(struct lock_client *lc, struct lock_grant *g, long long until_ms,
                 struct db_conn *conn, struct error *err);
/* Gives one of g's holds back: how many are left (0: the last, forgotten here, its
 * connection into *conn when conn is not NULL). */
int lock_db_unhold(struct lock_client *lc, struct lock_grant *g, struct db_conn **conn);
/* The connection of g's hold (v15), or NULL. */
struct db_conn *lock_db_conn(const struct lock_grant *g);
/* v13, v14: the leases table, and one try, release and renewal on it. now: the clock the
 * lease is read and written by, as SQL (ms since 1970: v13 the client's as a number, v14
 * the database's own); fenced: the grant carries the row's token. */
int lock_leases_init(struct lock_client *lc, struct error *err);
int lock_lease_try(struct lock_client *lc, struct lock_grant *g, const char *now, int fenced,
                   struct error *err);
int lock_lease_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                       struct error *err);
int lock_lease_renew(struct lock_client *lc, const struct lock_grant *g, const char *now,
                     struct error *err);
/* lock_ops.forget: g given back by the caller's transaction (v14's fence), or given up on
 * (sure 0: lock_abandon): forgotten here; a row still ours runs out with its lease. */
void lock_lease_forget(struct lock_client *lc, struct lock_grant *g, int sure);

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
/* A lock of key was given back by owner.c, or kept there to be given back: its local
 * first waiter tries now (we do not hear our own messages; a try gives back first). */
void notify_given_back(struct lock_client *lc, const char *key);

/* --- lock/owner.c: owner ids, and the locks given up on without an answer. --- */
int lock_owner_init(struct lock_client *lc, struct error *err);
void lock_owner_destroy(struct lock_client *lc);
/* The client's give-back thread (for stores that keep abandoned locks), started once the
 * rest is up; stopped first (lock_owner_destroy stops it too). */
int lock_owner_start(struct lock_client *lc, struct error *err);
void lock_owner_stop(struct lock_client *lc);
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
/* 1 when the client keeps abandoned locks that a walk (lock_owner_give_back) would give
 * back now: a waiter then sleeps no longer than a poll, for it is the walk's only caller
 * while every thread waits (and the lock it waits for may be one of them). */
int lock_owner_due(struct lock_client *lc);

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
