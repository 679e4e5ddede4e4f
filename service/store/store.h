/* store.h - Where the stock lives: one table of operations (the store seam), as redis's
 * ConnectionType reaches every transport through one table.
 *
 * An engine speaks of items, grants and requests; a store keeps an item's stock, its units
 * sold, its ledger (every acknowledged sale, findable by its request id) and the
 * idempotency records, and names them itself: no engine and no lock version formats a key
 * of the stock. Three stores stand behind it: Redis (service/store/redis*.c: one server,
 * under Sentinel, or a Cluster), ZooKeeper (service/store/zk*.c, --zookeeper, where v11's
 * lock lives too) and a database (service/store/db*.c, --mysql: MariaDB, where the locks
 * of v12 to v15 live too); store_open picks one from the flags.
 *
 * A store may share its connection with the lock: the Redis store lends its client to the
 * lock (struct store.redis), so that the stock's read rides with the granting try and the
 * sale's write with the release, one round trip each; the ZooKeeper store lends its
 * session to v11 (struct store.zk), whose node the sale's write checks; the database store
 * lends its pool (struct store.db) to v12 to v15, whose fence runs in the sale's
 * transaction (v14) or whose transaction is the lock the sale reads and writes in (v15).
 * That is why the store, not the engine, calls lock_acquire and lock_release around its
 * read and write (grant, sell).
 *
 * Results are the sale's (service/store/request.h: below the engines, which hand the
 * store their requests), the same whatever the store; the store
 * gives its own words: what its answer says when it cannot be reached (unavailable), and
 * the messages of the outcomes it sets.
 */
#ifndef STORE_STORE_H
#define STORE_STORE_H

#include <stdatomic.h>
#include <stdio.h>

#include "lock/lock.h"
#include "service/store/request.h"
#include "zk/zk.h"

struct service_config;
struct store;
struct store_sub;

/* One batch of sales under a grant, as the engine hands it to the store. */
struct store_batch {
    struct lock_grant *g;        /* the grant they are sold under: the store fences with
                                    its token where the version fences, and its per-version
                                    pointer (g->priv) is the version's */
    long long stock;             /* the stock as this grant read it (or last wrote it) */
    long long k;                 /* how many the engine sold: rqs[0..k) sold, the rest out */
    int batch;                   /* its number within the grant, from 1 */
    struct sale_request **rqs;   /* outcomes set by the engine; the store corrects them */
    int n;
    int write;                   /* 1: there is a write (k > 0, or a keyed sale's answer) */
    const char *probe_id;        /* --faults: the probe leaves with the write (NULL: none) */
    const struct lock_pause *pause; /* a teaching fault inside the release (NULL: none) */
};

/* What selling a batch did. */
enum store_sold {
    STORE_KEPT,       /* sold (or answered 409); the grant is still held */
    STORE_FAILED,     /* the write failed, or too few replicas have it (the outcomes say
                         why); the grant is still held */
    STORE_UNSURE,     /* the write timed out: it may still run, so the grant is to be
                         abandoned (its lease runs out), never released elsewhere */
    STORE_RELEASED,   /* the write rode with the release: the grant is given back (a
                         lock that is the write's own transaction, v15's, ends with its
                         COMMIT: after any batch with a write, asked to release or not) */
    STORE_AGAIN       /* given back, nothing written: the store was not ready for the write
                         (a restarted Redis): sell the batch again under a new grant */
};

/* What a grant read: the item's stock, or why there is none. */
struct store_read {
    int asked;                   /* 1 once the lock was asked (its wait is g->waited_ms) */
    enum sale_result result;     /* SALE_OK, SALE_UNKNOWN_ITEM, SALE_BAD_STOCK,
                                    SALE_STORE_DOWN */
    long long stock;
    char msg[160];
};

/* The sales of one item, sold whole by the atomic sale. */
struct store_group {
    struct sale_request *rqs[SALE_BATCH_MAX];
    int n;
};

/* An item's message of live events, for publish. */
struct store_message {
    const char *item;
    const char *text;            /* JSON */
};

/* What a subscription's next read brought. */
enum store_heard {
    STORE_HEARD_MESSAGE,         /* a message (*text: the caller frees it) */
    STORE_HEARD_QUIET,           /* nothing came; the store answered the heartbeat */
    STORE_HEARD_SUBSCRIBED,      /* the subscription is confirmed */
    STORE_HEARD_AGAIN,           /* subscribe anew (the item's server changed) */
    STORE_HEARD_END              /* the connection ended */
};

struct store_ops {
    const char *name;            /* "redis", "zookeeper", "mysql" */
    const char *unavailable;     /* an answer's error when it cannot be reached */
    void (*close)(struct store *s);
    /* 1 when it answers now. */
    int (*ping)(struct store *s);
    /* GET /inventory: the item's stock and units sold; SALE_OK, or why not (msg). */
    enum sale_result (*read)(struct store *s, const char *item, long long *stock,
                             long long *sold, char *msg, size_t size);
    /* Sets item's stock to n, its sold to 0, and empties its ledger. 0, or -1 (err). */
    int (*set_stock)(struct store *s, const char *item, long long n, struct error *err);
    /* The ledger of item: *entries, how many sales it holds, and *found (when id is not
     * NULL) 1 when one of them is request id's. 0, or -1 (err). */
    int (*ledger)(struct store *s, const char *item, const char *id, long long *entries,
                  int *found, struct error *err);
    /* The idempotency record: binds rq's key to rq's item, before the sale. 0 when it is
     * new or already bound to this item; -1 with rq's outcome set when it was first used
     * for another item (SALE_KEY_REUSED) or the store could not say. */
    int (*bind_key)(struct store *s, struct sale_request *rq);
    /* A locked sale's start: takes the lock on item through lc (waiting up to wait_ms) and
     * reads its stock with the granting try. The lock's status (err: why not); on LOCK_OK,
     * g is held and *read says what was read. */
    int (*grant)(struct store *s, struct lock_client *lc, const char *item, long wait_ms,
                 struct lock_grant *g, struct store_read *read, struct error *err);
    /* Writes b (stock, sold, the ledger; the keyed sale's answer) when b->write, and with
     * release set gives b->g back, the write riding with the release (*released: the
     * release's lock status). Every request's outcome is final after it. */
    enum store_sold (*sell)(struct store *s, struct lock_client *lc, struct store_batch *b,
                            int release, int *released);
    /* The atomic sale, no lock: each group's sales sold whole by the store itself, every
     * group in one round trip per server. Every outcome set. */
    void (*sell_atomic)(struct store *s, struct store_group **groups, int n);
    /* --faults, the mutual-exclusion probe: id enters item's critical section. 1 when
     * someone else was inside (an overlap), else 0. */
    int (*probe_enter)(struct store *s, const char *item, const char *id);
    /* Optional (spread items): 1 when item's server is not answering now (a call has
     * waited on it a while with no answer, or it is marked down): a sale of it would wait
     * too. Never blocks. */
    int (*item_silent)(struct store *s, const char *item);
    /* Optional (spread items): looks at the servers calls wait on, so that one that stopped
     * answering is found (item_silent then says so) while every caller waits. Never
     * blocks; for a thread that ticks. */
    void (*watch)(struct store *s);
    /* Optional: the calling thread is a sale worker. A store of several servers then lets
     * at most most of the workers (0: no cap, a thread that is its server's only caller)
     * wait on one server at once, so a server that stops answering holds no more (the
     * others' calls for it fail at once, "not sent"), and cuts their calls loose from a
     * server that went silent. Each of its calls that ends adds 1 to *trips (NULL: not
     * counted), so the workers can tell one still on its first call from one that waits
     * between calls. */
    void (*worker)(struct store *s, int most, atomic_long *trips);
    /* Optional (spread items): the number (0 up) of item's server as far as the store
     * knows now, asking no one; -1 when it does not know. Never blocks. */
    int (*item_server)(struct store *s, const char *item);
    /* Its own lines of /metrics (Prometheus text, HELP and TYPE each). */
    void (*metrics)(struct store *s, FILE *out);
    /* The live page: publishes msgs[0..n) on their items' channels, one round trip per
     * server; heard[i]: how many listened to msgs[i] (-1: not published). */
    void (*publish)(struct store *s, const struct store_message *msgs, int n, long long *heard);
    /* A subscription to item's channel; NULL with err when the store cannot be reached. */
    struct store_sub *(*subscribe)(struct store *s, const char *item, struct error *err);
    /* The next thing heard on sub, waiting up to idle_ms and then as long again after a
     * heartbeat to the store. */
    enum store_heard (*sub_read)(struct store_sub *sub, long idle_ms, char **text);
    /* Ends a sub_read blocked on another thread. */
    void (*sub_shutdown)(struct store_sub *sub);
    void (*sub_close)(struct store_sub *sub);
};

struct store {
    const struct store_ops *ops;
    struct rd_client *redis;     /* the Redis store's client: lent to a lock that keeps its
                                    lock in the same Redis; NULL for a store elsewhere */
    struct zk_client *zk;        /* the ZooKeeper store's session, lent likewise to v11 */
    struct db_client *db;        /* the database store's pool, lent likewise to v12..v15 */
    int spread;                  /* 1: items live on several servers (item_silent) */
    void *state;                 /* the store's own */
};

/* Opens the store that cfg names: Redis (alone, under Sentinel, or a Cluster), lazily
 * connected, so a Redis down now is not an error; ZooKeeper, which waits for its first
 * session (up to the session timeout, or until cfg->stop_asked says so); or a database,
 * whose tables are made now when it answers (a database down now is not an error; one
 * that refuses the user, a right or a table is). NULL with err. Its passwords are copied:
 * the caller may wipe cfg's. */
struct store *store_open(const struct service_config *cfg, struct error *err);
/* Closes it, once no other thread uses it. NULL: nothing. */
void store_close(struct store *s);

#endif
