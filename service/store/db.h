/* db.h - The database store's parts (service/store/db*.c): its state, its tables and the
 * helpers its files share. Only those files include it.
 *
 * The tables are a contract (tests and tools read the first two), InnoDB, in the database
 * --mysql-db names:
 *   items     (item PRIMARY KEY, stock, sold)           an item's stock and units sold
 *   orders    (id PRIMARY KEY, item, request_id, status, remaining, token, instance, at)
 *             the ledger: a row per sale sold (status 200), and per keyed sale answered
 *             sold out (409: its answer kept); id "k" and the idempotency key, or "r", the
 *             request id, "-", this instance's id, "-" and a number of this instance's
 *   idem_keys (k PRIMARY KEY, item, at)                  a key bound to its first item
 *   probes    (item PRIMARY KEY, id, overlaps)          --faults: the mutual-exclusion probe
 * A lock version's own table (locks, leases, row_locks) is the lock library's.
 */
#ifndef STORE_DB_H
#define STORE_DB_H

#include <pthread.h>
#include <stdatomic.h>

#include "db/db.h"
#include "service/store/store.h"

struct db_store {
    struct store base;           /* base.state points back here; base.db the pool */
    char instance[64];           /* this instance's name: in the ledger's rows */
    char instance_id[16];        /* the first characters of its id: in the rows' ids */
    char label[320];             /* "HOST:PORT/DATABASE as USER", for logs */
    atomic_llong entries;        /* rows named by this instance (their number) */
    atomic_int schema_ok;        /* 1 once the tables were made or checked */
    pthread_mutex_t schema_mu;   /* one thread makes them at a time */
    atomic_int state;            /* what was last logged: 0 nothing, 1 up, else the fault */
    atomic_llong settled_sold, settled_unsold, unsettled;   /* lost answers, settled */
};

static inline struct db_store *db_of(struct store *s)
{
    return s->state;
}

/* --- db_conn.c: SQL text, connections, and what a failure means --- */

enum { SMALL_SQL = 1024 };       /* a statement's buffer, but a sale's (SQL_MAX) */

/* An SQL text being built into a caller's buffer; a part that does not fit marks it cut. */
struct sql {
    char *buf;
    size_t size, len;
    int cut;                     /* 1: something did not fit (the text is unusable) */
};
void sql_init(struct sql *q, char *buf, size_t size);
/* Appends fmt's text (printf). */
void sql_add(struct sql *q, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s as a string literal, quoted and escaped for c. */
void sql_str(struct sql *q, struct db_conn *c, const char *s);

/* A connection of the pool with the store's tables made (on the first connection that
 * succeeds); a change of the store's state logged once (down, back, a right or a table
 * missing). NULL with err. The caller puts it back (db_put). */
struct db_conn *ds_get(struct db_store *ds, struct db_error *err);
/* Runs q's text on c: db_run, or DB_E_USAGE when q was cut. A failure's change of state
 * is logged once (ds_note). */
int ds_run(struct db_store *ds, struct db_conn *c, const struct sql *q, struct db_result *res,
           int nres, int *failed, struct db_error *err);
/* Builds a read's text for c (arg: the caller's) into q. */
typedef void (*ds_build)(struct sql *q, struct db_conn *c, const void *arg);
/* A read on a pooled connection, once more on a new one when the first broke before it
 * answered (a connection the server dropped while it idled): nothing it runs writes.
 * DB_OK with res filled, or DB_FAIL with err. */
int ds_read(struct db_store *ds, ds_build build, const void *arg, struct db_result *res,
            int nres, struct db_error *err);
/* Logs err once when it changes the store's state (what was last logged). */
void ds_note(struct db_store *ds, const struct db_error *err);
/* 1 when err says the database could not serve now and nothing was written (connect, a
 * lock wait, a deadlock, not ready; a right or a table missing): a sale answers
 * store_unavailable (503, Retry-After). */
int ds_is_down(const struct db_error *err);
/* err as every outcome of rqs: store_unavailable when ds_is_down (err's line as the
 * message), else an error naming what failed. */
void ds_fail_all(const struct db_error *err, const char *what, struct sale_request **rqs,
                 int n);
/* Column col of a result's first row as a whole number into *v: 0, or -1 (NULL, not a
 * number). */
int ds_number(const struct db_result *r, int col, long long *v);

/* --- db_ledger.c: the ledger's rows --- */
enum { ID_MAX = 200, SQL_MAX = 256 * 1024 };
/* A sale's row id into *id: "k" and its idempotency key, or "r", its request id, "-",
 * this instance's id, "-" and a number of this instance's. */
void ds_row_id(struct db_store *ds, const struct sale_request *rq, char (*id)[ID_MAX]);
/* Appends one row's values: "(id, item, request_id, status, remaining, token, instance)". */
void ds_row_add(struct sql *q, struct db_conn *c, struct db_store *ds, const char *id,
                const struct sale_request *rq, int status, long long remaining,
                long long token);
/* Appends the probe's leave: item's probe emptied when id is still in it. */
void ds_probe_leave_add(struct sql *q, struct db_conn *c, const char *item, const char *id);
/* A transaction whose answer was lost (sent at sent_ms on the server's connection old),
 * settled by its first row first: 1 committed, 0 never will, -1 nobody can say now. */
int ds_settle(struct db_store *ds, unsigned long old, long long sent_ms, const char *first);
/* The first answer kept in a keyed sale's row id as rq's outcome (replayed, unless the
 * row is rq's own, found by a settle); store_unavailable when it cannot be read now. */
void ds_replay(struct db_store *ds, const char *id, struct sale_request *rq);

/* --- db_sell.c, db_atomic.c: a locked sale and the atomic one --- */
int ds_grant(struct store *s, struct lock_client *lc, const char *item, long wait_ms,
             struct lock_grant *g, struct store_read *read, struct error *err);
enum store_sold ds_sell(struct store *s, struct lock_client *lc, struct store_batch *b,
                        int release, int *released);
void ds_sell_atomic(struct store *s, struct store_group **groups, int n);

/* --- db.c: the store's operations --- */
struct store *db_store_open(const struct service_config *cfg, struct error *err);

#endif
