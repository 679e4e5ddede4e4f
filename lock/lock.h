/* lock.h - The lock library: fifteen versions of a distributed lock, v1 to v15, and the
 * baseline none (no lock), behind one table (`inventory-service --list-versions` lists
 * them with the service's own atomic sale, which takes no lock).
 *
 * A version is a store (try-acquire, release and renew: its Redis commands or scripts,
 * or v11's ZooKeeper nodes), a wait policy (poll, a local mutex or watch, or notification
 * by pub/sub) and an optional keep-alive (the watchdog, generic over any store that
 * renews). Each lock/vN_*.c holds only what that version adds and ends with its table;
 * steps that two versions share live in lock/steps.c, which both name. v1 to v8 are the
 * eight-version evolution; v9 (fencing tokens), v10 (Redlock) and v11 (ZooKeeper's
 * recipe) extend it; v12 to v15 are the database's chapter (MariaDB: a lock table, the
 * same with an expiry and the watchdog, the same fenced by the sale's transaction, and
 * the row lock).
 *
 * A process creates one lock_client for the version it runs and shares it between its
 * threads. It talks to Redis only through the Redis layer (redis/redis.h), and to
 * ZooKeeper only through the ZooKeeper layer (zk/zk.h), and to the database only
 * through the database layer (db/db.h): the data Redis (the item's stock, its lock and
 * its fencing counter) is a struct rd_client the caller creates and lends, as v11's
 * session is a struct zk_client and the pool of v12 to v15 a struct db_client; redlock's
 * masters are clients of its own. The caller names an item; the library derives the keys
 * `lock:{I}` and `fence:{I}` (and the lock rows' name, the item's) and the owner id
 * `<instance id>:<thread number>`.
 *
 * Library code never prints and never aborts on bad input: every call returns an enum
 * lock_status and, on LOCK_ERROR or LOCK_UNAVAILABLE, fills a caller-supplied struct
 * error (common/error.h: what the Redis layer found, mapped to the kinds every layer
 * above it shares).
 *
 * This is the library's one public header: a caller includes nothing else of lock/.
 */
#ifndef LOCK_H
#define LOCK_H

#include <stdatomic.h>
#include <stddef.h>

#include "common/error.h"
#include "common/item.h"
#include "db/db.h"
#include "redis/redis.h"
#include "zk/zk.h"

#define LOCK_ITEM_MAX ITEM_MAX
#define LOCK_OWNER_MAX 96
#define LOCK_KEY_MAX 96
/* The lease a client gets when its config asks for none, in ms. */
#define LOCK_TTL_DEFAULT_MS 30000

/* What a call did. LOCK_OK and LOCK_ERROR are the generic result's two values. */
enum lock_status {
    LOCK_OK = RESULT_OK, /* done: the lock is held (acquire) or given back (release) */
    LOCK_TIMEOUT = 1,    /* acquire: not had within the wait limit */
    LOCK_EXPIRED,        /* release: not ours any more, and our lease had run out (or the
                            keep-alive had seen it go): nothing was deleted */
    LOCK_STOLEN,         /* release: not ours any more although our lease still ran:
                            someone deleted or took it before its time; nothing deleted */
    LOCK_NOT_OWNER,      /* a store's release or renew: the lock was not (or no longer)
                            ours; nothing changed. lock_release() tells EXPIRED from STOLEN */
    LOCK_UNAVAILABLE,    /* acquire: fewer lock masters answered than a quorum (redlock),
                            or fewer replicas acknowledged the grant than asked: fail fast */
    LOCK_ERROR = RESULT_ERROR /* the store failed or answered something unexpected: see
                            the struct error */
};

/* How a waiter learns that the lock is free. */
enum lock_wait {
    LOCK_WAIT_DEFAULT = 0, /* the version's own choice (in lock_config: keep it) */
    LOCK_WAIT_POLL,        /* try, sleep retry_ms, try again (the classic loop) */
    LOCK_WAIT_LOCAL,       /* the store blocks by itself (a process-local mutex) */
    LOCK_WAIT_NOTIFY       /* release publishes on the lock's channel; one subscriber per
                              process wakes the waiters, who queue locally first come first
                              served: at most one thread per process and item asks Redis */
};

struct lock_grant;

/* Process-wide settings of a lock_client, copied by lock_client_create(). */
struct lock_config {
    struct rd_client *redis;  /* the data Redis: lock:{I}, fence:{I}, what rides along.
                                 Lent: the caller frees it after the lock client */
    struct zk_client *zk;     /* v11: the ZooKeeper session its nodes live in (the store's,
                                 lent likewise) */
    struct db_client *db;     /* v12 to v15: the database its lock rows live in (the
                                 store's pool, lent likewise) */
    long ttl_ms;              /* lease length; 0 means LOCK_TTL_DEFAULT_MS */
    long retry_ms;            /* poll: sleep between tries; 0: the version's (lock_ops) */
    const char *instance_id;  /* unique per process (a uuid); prefix of every owner id */
    enum lock_wait wait;      /* LOCK_WAIT_DEFAULT: the version's */
    const char *lock_masters; /* redlock: its N independent masters, "HOST:PORT,..." */
    int replicas;             /* a first grant counts only once this many replicas of the
                                 data Redis acknowledged it (WAIT); 0: at once */
    const char *redis_user;   /* ACL user for the lock masters; NULL: the default user */
    const char *redis_password; /* their password; NULL: none. Never logged */
    /* Optional: told what the watchdog does, on its thread (quick, no Redis): "renewed"
     * with the lease it set, "lost" once a renewal was refused or the lease ran out. The
     * service's live page shows them (service/events/events.c). */
    void (*observe)(const struct lock_grant *g, const char *what, long long lease_ms);
};

/* What acquire hands back, and release takes. Lives on the caller's stack. */
struct lock_grant {
    char item[LOCK_ITEM_MAX + 1];
    char key[LOCK_KEY_MAX];       /* "lock:{I}" */
    char owner[LOCK_OWNER_MAX];   /* "<instance id>:<thread number>.<its grant>" */
    long long token;              /* fencing token; 0 for versions without one */
    long long acquired_ms;        /* monotonic time the granting try was sent */
    long long valid_until_ms;     /* monotonic end of the lease; 0 when it never expires */
    long long waited_ms;          /* how long acquire waited */
    long long retry_in_ms;        /* a refused try: the holder's lease left, when known */
    /* A lock in the process (ops->in_process: v1, v2): wall-clock µs of its grant (before
     * the read) and of its last write (just before it is given back), the critical
     * section whole; 0 for the others, whose hold is known here only from the replies. */
    long long held_from_us, held_to_us;
    int depth;                    /* hold count after this acquire (reentrant versions) */
    void *priv;                   /* the version's own per-grant state (v1: its mutex) */
};

/* A teaching fault of the caller's, called by a release between its steps (after the
 * writes that travel with it went out, before the command that gives the lock back; for
 * v5 between its GET and its DEL): it may sleep to widen the gap. */
struct lock_pause {
    void (*fn)(void *arg);
    void *arg;
};

struct lock_client;

/* What travels with a store's command in the same round trip: the caller's batches,
 * seen in the arguments of whoever sends them. before: sent just before the command (a
 * sale's writes, applied before the lock is given back); after: right after it (a sale's
 * read under the new grant; the release's notification). Either may be NULL. pause: a
 * teaching fault, called where the store's release has a gap (see lock_pause). */
struct lock_trip {
    struct rd_batch *before, *after;
    const struct lock_pause *pause;
};

/* One version: its names, its store, its wait policy and its keep-alive. Each
 * lock/vN_*.c ends with one of these. Its store talks to Redis through lock_command()
 * and lock_eval() (lock/internal.h), which carry a trip. */
struct lock_ops {
    const char *name;     /* "v6" */
    const char *alias;    /* "lua-release" */
    const char *title;    /* the technique, one line */
    const char *flaw;     /* its known flaw, one line */
    /* The store. */
    int remote;           /* 1: the lock lives in Redis; 0: elsewhere (no command of the
                             data Redis to ride with) */
    int in_process;       /* 1: the lock lives in this process (a mutex; none): its grant
                             and its release are known here to the microsecond */
    int (*init)(struct lock_client *lc, struct error *err);     /* optional */
    void (*destroy)(struct lock_client *lc);                          /* optional */
    /* One try, with trip->after riding after it: LOCK_OK (g->depth, g->valid_until_ms
     * set) or LOCK_TIMEOUT (held by another; g->retry_in_ms set when the store knows the
     * holder's lease). A store whose wait is LOCK_WAIT_LOCAL may block up to wait_ms;
     * the others ignore it. */
    int (*try_acquire)(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                       struct lock_trip *trip, struct error *err);
    /* Gives the lock back, trip->before ahead of it and trip->after behind it: LOCK_OK,
     * LOCK_NOT_OWNER (it was not ours; nothing deleted) or LOCK_ERROR. */
    int (*release)(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                   struct error *err);
    /* Optional: resets the lease to a full TTL while g->owner still holds it. LOCK_OK,
     * LOCK_NOT_OWNER or LOCK_ERROR. Needed by a keep-alive. */
    int (*renew)(struct lock_client *lc, const struct lock_grant *g, struct error *err);
    /* The wait policy it uses unless lock_config.wait says otherwise. */
    enum lock_wait wait;
    /* Poll: the sleep between tries when lock_config.retry_ms asks none (0: 10 ms). */
    long retry_ms;
    /* 1: a watchdog renews every held lease each ttl/3 while it is held. */
    int keepalive;
    /* 1: release deletes only under our owner id, atomically (v6 on; v5's GET then DEL
     * could delete the next holder's), so that a lock given up on without an answer can
     * be given back later, safely (lock/owner.c). */
    int checks_owner;
    /* Optional: 1 when the store knows g is over whatever the time (v11: its session is
     * lost, and its node with it). */
    int (*lost)(struct lock_client *lc, const struct lock_grant *g);
    /* Optional: what a write must find still there to be fenced by g, where the lock and
     * the data share a store (v11: the holder's node, checked in the write's multi);
     * NULL for the others. */
    const char *(*guard)(const struct lock_grant *g);
    /* Optional, with guard: the store's write deleted g's guard, its last hold given back
     * with the write (v11: the holder's node deleted in the sale's multi), or may have
     * (sure 0: the write's answer was lost): g forgotten; a guard that may still be there
     * is deleted in the background. */
    void (*forget)(struct lock_client *lc, struct lock_grant *g, int sure);
    /* 1: the lock lives in the store's database (--mysql: v12 to v15). */
    int database;
    /* Optional, a lock kept in the store's database (v14): inside the caller's open
     * transaction on c, checks that g still holds the lock (its row names g's owner, and
     * stays locked until the transaction ends, so no one can take it meanwhile) and, with
     * release set, gives g back in the same transaction (g's last hold: the caller then
     * calls lock_release_done once it committed). LOCK_OK, LOCK_NOT_OWNER (the write is
     * to be rolled back: the lease was lost), or LOCK_ERROR with err. */
    int (*fence)(struct lock_client *lc, const struct lock_grant *g, struct db_conn *c,
                 int release, struct error *err);
    /* Optional (v15): the connection whose open transaction is g's lock. The store reads
     * and writes in it; its COMMIT (or ROLLBACK) gives the lock back, and the store then
     * calls lock_release_done. */
    struct db_conn *(*conn)(const struct lock_grant *g);
};

/* A running version. Created once per process; shared by all threads. */
struct lock_client {
    const struct lock_ops *ops;
    struct lock_config cfg;       /* strings owned by the client; wait resolved */
    struct rd_client *redis;      /* the data Redis, lent by the caller */
    void *store_state;            /* the store's process-wide state (v1: its mutexes) */
    void *wait_state;             /* the wait policy's (notify: subscriber and queues) */
    void *keepalive_state;        /* the watchdog's */
    void *owner_state;            /* the locks given up on without an answer (owner.c) */
    /* Counters, read by the service's /metrics. Updated atomically by any thread. */
    atomic_llong acquisitions;    /* grants */
    atomic_llong timeouts;        /* acquires that gave up */
    atomic_llong renewals;        /* keep-alive: successful renewals */
    atomic_llong lost_leases;     /* leases found lost, each once: a renewal refused (or
                                     unanswered past the lease's end), or release not owner */
    atomic_llong stolen;          /* release found the lock gone or foreign while our lease
                                     still ran: someone else deleted it */
    atomic_llong notifications;   /* notify: release messages received */
    atomic_llong abandoned;       /* locks handed over to be given back, each once: a try
                                     or release sent and never answered (Redis gone), or an
                                     answered release a lost write may bring back */
    atomic_llong abandoned_unanswered;  /* of those, the tries and releases never answered */
    /* What became of each abandoned lock, once: given back (Redis still had it in our
     * name), found gone, its lease over before any master took a give-back, dropped over
     * the bound (it runs out with its lease); or waiting for a master still (a gauge).
     * abandoned = given_back + abandoned_gone + abandoned_expired + abandoned_dropped
     * + abandoned_waiting, but for the moment between a count and the next (and for a
     * thread that turns from one client to another with some of the first's still in
     * hand: those are dropped uncounted, and stay waiting). */
    atomic_llong given_back;
    atomic_llong abandoned_gone;
    atomic_llong abandoned_expired;
    atomic_llong abandoned_dropped;
    atomic_llong abandoned_waiting;
    atomic_llong given_back_again; /* given back again after a change (a failover, a
                                     restart): Redis had one once more */
};

/* Finds a version by name or alias; NULL when there is none. */
const struct lock_ops *lock_find(const char *name);
/* All versions in order, NULL-terminated. */
const struct lock_ops *const *lock_versions(void);
/* "poll", "local", "notify"; and back (LOCK_WAIT_DEFAULT when unknown). */
const char *lock_wait_name(enum lock_wait w);
enum lock_wait lock_wait_parse(const char *name);

/* Creates a client for ops; NULL with err filled on failure (also when cfg->wait does
 * not suit the store). Free with lock_client_destroy. */
struct lock_client *lock_client_create(const struct lock_ops *ops, const struct lock_config *cfg,
                                       struct error *err);
void lock_client_destroy(struct lock_client *lc);

/* Takes the lock on item for the calling thread, trying until wait_ms has passed (never
 * forever). Returns LOCK_OK (g filled), LOCK_TIMEOUT, LOCK_UNAVAILABLE or LOCK_ERROR.
 * When read is not NULL its commands run right after the granting try, in the same
 * round trip (or alone right after the grant, for a lock kept in the process); its
 * replies are there on LOCK_OK. */
int lock_acquire(struct lock_client *lc, const char *item, long wait_ms, struct lock_grant *g,
                 struct rd_batch *read, struct error *err);
/* Gives the lock back. LOCK_OK, LOCK_EXPIRED, LOCK_STOLEN or LOCK_ERROR. When writes is
 * not NULL its commands run just before the release, in the same round trip; their
 * replies are in it after. pause (NULL: none) is called between the release's steps. */
int lock_release(struct lock_client *lc, struct lock_grant *g, struct rd_batch *writes,
                 const struct lock_pause *pause, struct error *err);
/* Gives g up without a release: a write sent on the thread's connection timed out and
 * may still run, and a release on a new connection could overtake it (the next holder's
 * write landing before it). The lease runs out instead: the watchdog stops renewing it,
 * the next local waiter gets its turn to try, and the thread's next grant is under a new
 * owner id; so for a lease kept in the database (v13, v14). A lock with no lease (in the
 * process, v12's row, v15's transaction) is released. */
void lock_abandon(struct lock_client *lc, struct lock_grant *g);
/* 1 when the lease is known to be lost: the keep-alive's renewal was refused, or the
 * lease's time ran out. */
int lock_grant_is_lost(struct lock_client *lc, const struct lock_grant *g);

/* How long a WAIT for replicas may take under a lease of ttl_ms: a tenth of it, at least
 * 1 ms, at most 4 s (below the connection's 5 s command timeout, so that a WAIT that falls
 * short answers rather than times out). The grant's WAIT uses it; so does a caller that
 * waits for its own writes (the service's sale). */
long lock_replicas_wait_ms(long ttl_ms);

/* The key of item's fencing counter ("fence:{I}", the lock's like "lock:{I}"), into buf:
 * for a writer that checks a grant's token where it writes. Returns buf. */
const char *lock_fence_key(char (*buf)[LOCK_KEY_MAX], const char *item);

/* What a write must find still there to be fenced by g (the version's guard; NULL when
 * it has none): the holder's node of v11, that the sale's multi checks. */
const char *lock_grant_guard(const struct lock_client *lc, const struct lock_grant *g);
/* The guard a write may delete instead, to give g back in the same step: g's guard when
 * the version can forget a grant so given back and g is the last hold (its depth 1: a
 * nested grant is given back before the one it is nested in); else NULL, and g's release
 * goes alone. */
const char *lock_grant_guard_release(const struct lock_client *lc, const struct lock_grant *g);
/* g was given back by a write that deleted its guard (lock_grant_guard_release's), or
 * may have been (sure 0: the write's answer was lost and could not be settled; the
 * version deletes the guard in the background if it is still there): what lock_release
 * does in this process. LOCK_OK. */
int lock_release_done(struct lock_client *lc, struct lock_grant *g, int sure);

/* A lock kept in the store's database: inside the caller's open transaction on c, the
 * version's fence (lock_ops.fence): LOCK_OK (also for a version without one),
 * LOCK_NOT_OWNER, or LOCK_ERROR (err). With release set it gives g back too when
 * lock_grant_fence_releases says it can. */
int lock_grant_fence(struct lock_client *lc, const struct lock_grant *g, struct db_conn *c,
                     int release, struct error *err);
/* 1 when the version's fence can give g back inside the caller's transaction (it has a
 * fence, and g is the last hold, depth 1). */
int lock_grant_fence_releases(const struct lock_client *lc, const struct lock_grant *g);
/* The connection whose open transaction is g's lock (v15), or NULL. */
struct db_conn *lock_grant_db(const struct lock_client *lc, const struct lock_grant *g);

/* 1 when a waiter in another process has asked for the lock since g was granted (it
 * was refused and said so on the lock's channel; notify only, else always 0). A holder
 * that serves more work under one grant gives it up early when asked. */
int lock_grant_is_wanted(struct lock_client *lc, const struct lock_grant *g);

#endif
