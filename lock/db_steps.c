/* db_steps.c - What the database's versions share (v12 to v15), in one place they name:
 * their table made on the store's pool, an item and owner quoted, the local hold count
 * that makes v13 to v15 reentrant, and the leases table's statements (v13, v14) with the
 * clock they read as an argument, so that `diff v13 v14` shows the clock that changed.
 *
 * The state lives in lock_client.store_state: the version's table (made once), and the
 * holds of this process, one per owner and item, under mu (the owner's thread counts it
 * up and down; the watchdog's renewal writes its lease's end). */
#include "lock/internal.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A grant of this process and the grants nested in it: one per owner and item. */
struct db_hold {
    char item[LOCK_ITEM_MAX + 1];
    char owner[LOCK_OWNER_MAX];
    int holds;                    /* grants not yet given back */
    long long until_ms;           /* the lease's end, as granted or renewed (monotonic);
                                     0: no lease (v15) */
    int lost;                     /* a renewal found the row not ours */
    long long token;              /* the first grant's (v14), given to the nested ones */
    struct db_conn *conn;         /* v15: the connection whose transaction holds the row */
    struct db_hold *next;
};

struct db_lock {
    struct db_client *db;         /* the store's pool, lent */
    const char *table, *create;   /* the version's table and its CREATE (static strings) */
    atomic_int made;              /* 1 once the table is known to be there */
    pthread_mutex_t mu;           /* guards held and each hold's fields */
    struct db_hold *held;
};

enum { SQL_MAX = 2048 };

/* --- the table, the connection, the names --- */

/* err for a CREATE refused with why: the table's name and, for a right refused, which. */
static void table_refused(const struct lock_client *lc, const struct db_lock *v,
                          const struct db_error *why, struct error *err)
{
    db_error_map(why, err);
    if (err == NULL)
        return;
    if (why->fault == DB_E_AUTH)
        snprintf(err->msg, sizeof(err->msg), "%s cannot create its table %s: the user lacks "
                 "the CREATE right on its database (%d)", lc->ops->name, v->table, why->code);
    else
        snprintf(err->msg, sizeof(err->msg), "%s cannot create its table %s: %.60s",
                 lc->ops->name, v->table, why->msg);
}

/* The table made on c, once: LOCK_OK, or LOCK_ERROR with err (why: the layer's fault). A
 * user without the CREATE right is refused even IF NOT EXISTS: a table someone else made
 * will do, found by a query. */
static int table_make(struct lock_client *lc, struct db_lock *v, struct db_conn *c,
                      struct db_error *why, struct error *err)
{
    struct db_error ignored = { 0 };
    char sql[96];

    if (atomic_load(&v->made))
        return LOCK_OK;
    snprintf(sql, sizeof(sql), "SELECT 1 FROM %s LIMIT 0", v->table);
    if (db_run(c, v->create, NULL, 0, NULL, why) != DB_OK &&
        (why->fault != DB_E_AUTH || db_run(c, sql, NULL, 0, NULL, &ignored) != DB_OK)) {
        table_refused(lc, v, why, err);
        return LOCK_ERROR;
    }
    atomic_store(&v->made, 1);
    return LOCK_OK;
}

/* 1 when fault says the server did not answer (or not now): the table waits for it. */
static int not_answered(enum db_fault fault)
{
    return fault == DB_E_CONNECT || fault == DB_E_LOST || fault == DB_E_NOT_READY;
}

/* A connection of the pool; the database made first when it is missing (the store makes
 * it too: whichever comes first). NULL with why. */
static struct db_conn *pool_get(struct db_lock *v, struct db_error *why)
{
    struct db_conn *c = db_get(v->db, why);

    if (c == NULL && why->fault == DB_E_NO_DB && db_ensure_database(v->db, why) == DB_OK)
        c = db_get(v->db, why);
    return c;
}

int lock_db_init(struct lock_client *lc, const char *table, const char *create,
                 struct error *err)
{
    struct db_error why = { 0 };
    struct db_conn *c;
    struct db_lock *v;
    int st = LOCK_OK;

    if (lc->cfg.db == NULL)
        return error_set(err, FAULT_USAGE, "%s keeps its lock in the database: --mysql HOST:PORT",
                         lc->ops->name);
    if ((v = calloc(1, sizeof(*v))) == NULL)
        return error_set(err, FAULT_NOMEM, "out of memory");
    v->db = lc->cfg.db;
    v->table = table;
    v->create = create;
    pthread_mutex_init(&v->mu, NULL);
    /* A database down now is no error: the table is made on its first connection. */
    if ((c = pool_get(v, &why)) == NULL && !not_answered(why.fault)) {
        db_error_map(&why, err);   /* a password refused, a right to the database missing */
        st = LOCK_ERROR;
    } else if (c != NULL) {
        st = table_make(lc, v, c, &why, err);
        if (st != LOCK_OK && not_answered(why.fault))
            st = LOCK_OK;
        lock_db_put(c, why.fault);
    }
    if (st != LOCK_OK) {
        pthread_mutex_destroy(&v->mu);
        free(v);
        return st;
    }
    lc->store_state = v;
    return LOCK_OK;
}

/* Frees the state; a hold left (none should be: a client is destroyed once no thread
 * holds a grant) has its connection closed, its transaction rolled back by the server. */
void lock_db_destroy(struct lock_client *lc)
{
    struct db_lock *v = lc->store_state;

    if (v == NULL)
        return;
    for (struct db_hold *h = v->held, *next; h; h = next) {
        next = h->next;
        db_put(h->conn, 1);
        free(h);
    }
    pthread_mutex_destroy(&v->mu);
    free(v);
    lc->store_state = NULL;
}

/* A connection of the pool, the version's table made first when it is not yet; NULL with
 * err. */
static struct db_conn *conn_get(struct lock_client *lc, struct error *err)
{
    struct db_lock *v = lc->store_state;
    struct db_error why = { 0 };
    struct db_conn *c = pool_get(v, &why);

    if (c == NULL) {
        db_error_map(&why, err);
        return NULL;
    }
    if (table_make(lc, v, c, &why, err) != LOCK_OK) {
        lock_db_put(c, why.fault);
        return NULL;
    }
    return c;
}

struct db_conn *lock_db_open(struct lock_client *lc, const struct lock_grant *g,
                             struct lock_db_names *q, struct error *err)
{
    struct db_conn *c = conn_get(lc, err);

    if (c != NULL && lock_db_names(c, g, q, err) != LOCK_OK) {
        lock_db_put(c, DB_E_NONE);
        return NULL;
    }
    return c;
}

int lock_db_names(struct db_conn *c, const struct lock_grant *g, struct lock_db_names *q,
                  struct error *err)
{
    if (db_quote(c, g->item, q->item, sizeof(q->item)) == NULL ||
        db_quote(c, g->owner, q->owner, sizeof(q->owner)) == NULL)
        return error_set(err, FAULT_USAGE, "an item or owner too long to quote");
    return LOCK_OK;
}

enum db_fault lock_db_run(struct lock_client *lc, struct db_conn *c, struct db_result *res,
                          int nres, struct error *err, const char *fmt, ...)
{
    struct db_lock *v = lc->store_state;
    struct db_error why = { 0 };
    char sql[SQL_MAX];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    if (n < 0 || n >= (int)sizeof(sql)) {
        error_set(err, FAULT_USAGE, "a statement longer than %d bytes", SQL_MAX - 1);
        return DB_E_USAGE;
    }
    if (db_run(c, sql, res, nres, NULL, &why) == DB_OK)
        return DB_E_NONE;
    if (why.fault == DB_E_NO_TABLE)
        atomic_store(&v->made, 0);   /* dropped under us: made again by the next open */
    db_error_map(&why, err);
    return why.fault;
}

void lock_db_put(struct db_conn *c, enum db_fault fault)
{
    db_put(c, not_answered(fault));
}

/* --- the holds: reentrancy in the process --- */

/* The hold of owner on item; NULL when none. With v->mu held. */
static struct db_hold *hold_find(struct db_lock *v, const char *item, const char *owner)
{
    for (struct db_hold *h = v->held; h; h = h->next)
        if (strcmp(h->item, item) == 0 && strcmp(h->owner, owner) == 0)
            return h;
    return NULL;
}

/* g as a grant on h, its holds counted up. With v->mu held. */
static void hold_grant(struct db_hold *h, struct lock_grant *g)
{
    h->holds++;
    g->depth = h->holds;
    g->token = h->token;
    g->valid_until_ms = h->until_ms;
    g->priv = h;
}

int lock_db_nest(struct lock_client *lc, struct lock_grant *g)
{
    struct db_lock *v = lc->store_state;
    struct db_hold *h;
    int nested = 0;

    pthread_mutex_lock(&v->mu);
    h = hold_find(v, g->item, g->owner);
    /* A lease known over is not nested in: the store is asked again. */
    if (h && !h->lost && (h->until_ms == 0 || clock_now_ms() < h->until_ms)) {
        hold_grant(h, g);
        nested = 1;
    }
    pthread_mutex_unlock(&v->mu);
    return nested;
}

int lock_db_hold(struct lock_client *lc, struct lock_grant *g, long long until_ms,
                 struct db_conn *conn, struct error *err)
{
    struct db_lock *v = lc->store_state;
    struct db_hold *h, *fresh = calloc(1, sizeof(*fresh));

    pthread_mutex_lock(&v->mu);
    if ((h = hold_find(v, g->item, g->owner)) == NULL && (h = fresh) != NULL) {
        fresh = NULL;
        snprintf(h->item, sizeof(h->item), "%s", g->item);
        snprintf(h->owner, sizeof(h->owner), "%s", g->owner);
        h->conn = conn;
        h->next = v->held;
        v->held = h;
    }
    if (h) {
        h->until_ms = until_ms;   /* a lease lost and taken again: the new one */
        h->token = g->token;
        h->lost = 0;
        hold_grant(h, g);
    }
    pthread_mutex_unlock(&v->mu);
    free(fresh);
    return h ? LOCK_OK : error_set(err, FAULT_NOMEM, "out of memory");
}

int lock_db_unhold(struct lock_client *lc, struct lock_grant *g, struct db_conn **conn)
{
    struct db_lock *v = lc->store_state;
    struct db_hold *h = g->priv, **p;
    int left;

    if (conn)
        *conn = NULL;
    if (h == NULL)
        return 0;
    pthread_mutex_lock(&v->mu);
    left = --h->holds;
    if (left == 0) {
        for (p = &v->held; *p && *p != h; p = &(*p)->next)
            ;
        if (*p)
            *p = h->next;
    }
    pthread_mutex_unlock(&v->mu);
    g->priv = NULL;
    if (left > 0)
        return left;
    if (conn)
        *conn = h->conn;
    free(h);
    return 0;
}

struct db_conn *lock_db_conn(const struct lock_grant *g)
{
    const struct db_hold *h = g->priv;

    return h ? h->conn : NULL;
}

/* A renewal of g's lease answered: its new end (until_ms), or lost (until_ms 0). */
static void hold_renewed(struct lock_client *lc, const struct lock_grant *g, long long until_ms)
{
    struct db_lock *v = lc->store_state;
    struct db_hold *h;

    pthread_mutex_lock(&v->mu);
    if ((h = hold_find(v, g->item, g->owner)) != NULL) {
        if (until_ms > 0)
            h->until_ms = until_ms;
        else
            h->lost = 1;
    }
    pthread_mutex_unlock(&v->mu);
}

/* --- v13, v14: the leases table --- */

int lock_leases_init(struct lock_client *lc, struct error *err)
{
    return lock_db_init(lc, "leases",
                        "CREATE TABLE IF NOT EXISTS leases (name VARCHAR(64) PRIMARY KEY, "
                        "owner VARCHAR(96) NOT NULL DEFAULT '', "
                        "lock_until BIGINT NOT NULL DEFAULT 0, "
                        "token BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB", err);
}


/* A plain read of g's row (no lock taken: a waiter that only looks never queues in front
 * of the holder's own statements on the row, as a refused UPDATE or a duplicate INSERT
 * would, each locking it). *held: 1 when another holds it and its lease runs on by now
 * (*left_ms: how long), 0 when it may be taken (missing, free, run out, ours). The
 * statement's fault (DB_E_NONE: read). */
static enum db_fault lease_look(struct lock_client *lc, struct db_conn *c,
                                const struct lock_db_names *q, const char *now, int *held,
                                long long *left_ms, struct error *err)
{
    struct db_result res[1];
    enum db_fault fault;

    fault = lock_db_run(lc, c, res, 1, err,
                        "SELECT owner <> '' AND owner <> %s AND lock_until > %s, "
                        "GREATEST(lock_until - %s, 0) FROM leases WHERE name=%s",
                        q->owner, now, now, q->item);
    *held = fault == DB_E_NONE && res[0].found && strcmp(res[0].vals[0], "1") == 0;
    *left_ms = *held && !res[0].null[1] ? atoll(res[0].vals[1]) : 0;
    return fault;
}

/* One try at g's row: looked at first (lease_held), then made when missing and taken where
 * it is free or its lease is over by now (or still ours: a nested grant whose lease this
 * process saw run out), the token counted up with the grant (LAST_INSERT_ID(expr): read
 * back with the UPDATE's own answer, whatever others do between). Refused: the holder's
 * lease left, by the same clock. A nested grant of the owner is counted here, with no
 * statement. */
int lock_lease_try(struct lock_client *lc, struct lock_grant *g, const char *now, int fenced,
                   struct error *err)
{
    struct db_result res[3];
    struct lock_db_names q;
    struct db_conn *c;
    enum db_fault fault;
    long long left_ms;
    int held;

    if (lock_db_nest(lc, g))
        return LOCK_OK;
    if ((c = lock_db_open(lc, g, &q, err)) == NULL)
        return LOCK_ERROR;
    if ((fault = lease_look(lc, c, &q, now, &held, &left_ms, err)) != DB_E_NONE || held) {
        lock_db_put(c, fault);
        g->retry_in_ms = left_ms;
        return fault != DB_E_NONE ? LOCK_ERROR : LOCK_TIMEOUT;
    }
    fault = lock_db_run(lc, c, res, 3, err,
                        "INSERT IGNORE INTO leases (name) VALUES (%s); "
                        "UPDATE leases SET owner=%s, lock_until=%s + %ld, "
                        "token=LAST_INSERT_ID(token + 1) "
                        "WHERE name=%s AND (owner='' OR owner=%s OR lock_until <= %s); "
                        "SELECT GREATEST(lock_until - %s, 0) FROM leases WHERE name=%s",
                        q.item, q.owner, now, lc->cfg.ttl_ms, q.item, q.owner, now, now, q.item);
    lock_db_put(c, fault);
    if (fault == DB_E_DEADLOCK || fault == DB_E_LOCK_WAIT)
        return LOCK_TIMEOUT;   /* nothing taken: tried again as refused */
    if (fault != DB_E_NONE)
        return LOCK_ERROR;
    if (res[1].affected != 1) {
        g->retry_in_ms = res[2].found && !res[2].null[0] ? atoll(res[2].vals[0]) : 0;
        return LOCK_TIMEOUT;
    }
    g->token = fenced ? res[1].insert_id : 0;
    /* Counted from before the statement was sent: never later than the row's own end. */
    return lock_db_hold(lc, g, g->acquired_ms + lc->cfg.ttl_ms, NULL, err);
}

void lock_lease_forget(struct lock_client *lc, struct lock_grant *g, int sure)
{
    (void)sure;
    lock_db_unhold(lc, g, NULL);
}

/* Gives one hold back; the last frees the row, only while it names g's owner: LOCK_OK, or
 * LOCK_NOT_OWNER when its lease had run out and another took it (nothing changed). */
int lock_lease_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                       struct error *err)
{
    struct db_result res[1];
    struct lock_db_names q;
    struct db_conn *c;
    enum db_fault fault;

    lock_pause_here(lc, trip, &(struct error){ 0 });   /* nothing of Redis rides */
    if (lock_db_unhold(lc, g, NULL) > 0)
        return LOCK_OK;
    if ((c = lock_db_open(lc, g, &q, err)) == NULL)
        return LOCK_ERROR;
    fault = lock_db_run(lc, c, res, 1, err,
                        "UPDATE leases SET owner='', lock_until=0 WHERE name=%s AND owner=%s",
                        q.item, q.owner);
    lock_db_put(c, fault);
    if (fault != DB_E_NONE)
        return LOCK_ERROR;
    return res[0].affected == 1 ? LOCK_OK : LOCK_NOT_OWNER;
}

/* Sets the lease's end to now + ttl while the row still names g's owner: LOCK_OK,
 * LOCK_NOT_OWNER or LOCK_ERROR. The watchdog (lock/keepalive.c) calls it every ttl/3. */
int lock_lease_renew(struct lock_client *lc, const struct lock_grant *g, const char *now,
                     struct error *err)
{
    long long sent = clock_now_ms();
    struct db_result res[1];
    struct lock_db_names q;
    struct db_conn *c;
    enum db_fault fault;
    int mine;

    if ((c = lock_db_open(lc, g, &q, err)) == NULL)
        return LOCK_ERROR;
    fault = lock_db_run(lc, c, res, 1, err,
                        "UPDATE leases SET lock_until=%s + %ld WHERE name=%s AND owner=%s",
                        now, lc->cfg.ttl_ms, q.item, q.owner);
    lock_db_put(c, fault);
    if (fault != DB_E_NONE)
        return LOCK_ERROR;
    mine = res[0].affected == 1;
    hold_renewed(lc, g, mine ? sent + lc->cfg.ttl_ms : 0);
    return mine ? LOCK_OK : LOCK_NOT_OWNER;
}
