/* db_sell.c - A locked sale in the database, under a version whose lock lives there
 * (v12..v15): the grant reads the item's row (in v15's own transaction, which is the
 * lock), and the sale's write is one transaction: the version's fence first where it has
 * one (v14: the lease's row locked and its owner checked; another owner: rolled back,
 * lease_lost), then the ledger's rows, the stock the sale computed (a genuine
 * read-modify-write: a broken lock oversells), sold, the probe's leave and COMMIT in one
 * round trip. A COMMIT whose answer was lost is settled by its first row (db_ledger.c). */
#include "service/store/db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "service/log.h"

/* The guarded UPDATE's error when the stock is not the one read: NULL into stock (MariaDB's
 * ER_BAD_NULL_ERROR, strict mode, the server's default). */
enum { STALE_READ = 1048 };

/* The grant's read on c, inside v15's transaction (the lock), the row read FOR UPDATE too:
 * on Galera a row lock is one node's only, and a write of the stock certified on another
 * node then aborts this transaction, where a plain read would let it write a stock read
 * before that write (docs/faults.md). A transaction aborted so under a sale that works
 * fails its next statement (1213, a deadlock): the write's first, so nothing of it is
 * written. SALE_OK or why not. */
static enum sale_result read_in(struct db_store *ds, struct db_conn *c, const char *item,
                                long long *stock, char *msg, size_t size)
{
    char sql[512];
    struct sql q;
    struct db_result r;
    struct db_error err;

    sql_init(&q, sql, sizeof(sql));
    sql_add(&q, "SELECT stock FROM items WHERE item = ");
    sql_str(&q, c, item);
    sql_add(&q, " FOR UPDATE");
    if (ds_run(ds, c, &q, &r, 1, NULL, &err) != DB_OK) {
        snprintf(msg, size, "%s", err.msg);
        return ds_is_down(&err) || err.fault == DB_E_LOST ? SALE_STORE_DOWN : SALE_ERROR;
    }
    if (!r.found) {
        snprintf(msg, size, "no row for item %.64s in items; set it with deploy/stock", item);
        return SALE_UNKNOWN_ITEM;
    }
    if (ds_number(&r, 0, stock) != 0) {
        snprintf(msg, size, "items' row of %.64s holds no integer", item);
        return SALE_BAD_STOCK;
    }
    return SALE_OK;
}

/* The store's grant: the lock on item, then the item's row read (on the lock's
 * connection where the lock is a transaction, else on a pooled one); a read that fails
 * leaves the grant held, its result in read. */
int ds_grant(struct store *s, struct lock_client *lc, const char *item, long wait_ms,
             struct lock_grant *g, struct store_read *read, struct error *err)
{
    struct db_conn *c;
    long long sold;
    int st;

    read->asked = 1;
    if ((st = lock_acquire(lc, item, wait_ms, g, NULL, err)) != LOCK_OK)
        return st;
    c = lock_grant_db(lc, g);
    read->result = c ? read_in(db_of(s), c, item, &read->stock, read->msg, sizeof(read->msg))
                     : s->ops->read(s, item, &read->stock, &sold, read->msg, sizeof(read->msg));
    return LOCK_OK;
}

/* Where a batch's write stands in its text. */
struct write_text {
    char first[ID_MAX];          /* the first ledger row's id: what settles a lost answer */
    int rows_at, stock_at;       /* the statements' indexes (-1: none) */
    int guarded;                 /* its UPDATE checks the stock is the one read */
    int n;                       /* statements */
};

/* b's write after the fence, for c (begin: START TRANSACTION first; held_read: in the
 * lock's transaction, which read the stock: the stock checked in its UPDATE): the ledger's
 * rows first (a keyed sale's row that exists fails before anything
 * is written), then the stock the sale computed and sold, the probe's leave, COMMIT. */
static void write_build(struct sql *q, struct db_conn *c, struct db_store *ds,
                        const struct store_batch *b, int begin, int held_read,
                        struct write_text *w)
{
    int keyed = b->rqs[0]->idem_key != NULL;
    char id[ID_MAX];

    w->n = 0;
    w->stock_at = -1;
    w->guarded = b->k > 0 && held_read;
    if (begin)
        sql_add(q, "START TRANSACTION; "), w->n++;
    sql_add(q, "INSERT INTO orders (id, item, request_id, status, remaining, token, "
            "instance) VALUES ");
    for (int i = 0; i < b->n && (i < b->k || (keyed && i == 0)); i++) {
        ds_row_id(ds, b->rqs[i], &id);
        if (i == 0)
            snprintf(w->first, sizeof(w->first), "%s", id);
        sql_add(q, "%s", i ? ", " : "");
        ds_row_add(q, c, ds, id, b->rqs[i], i < b->k ? 200 : 409,
                   i < b->k ? b->stock - 1 - i : 0, b->g->token);
    }
    w->rows_at = w->n++;
    if (w->guarded) {
        /* The stock it read, still the stock, or the statement fails (NULL into a NOT NULL
         * column): on Galera a transaction rolled back and replayed from its write set frees
         * its row locks meanwhile, and a sale on the same node could read the stock from
         * before it (docs/faults.md). */
        sql_add(q, "; UPDATE items SET stock = IF(stock = %lld, %lld, NULL), sold = sold + %lld "
                "WHERE item = ", b->stock, b->stock - b->k, b->k);
        sql_str(q, c, b->g->item);
        w->stock_at = w->n++;
    } else if (b->k > 0) {
        sql_add(q, "; UPDATE items SET stock = %lld, sold = sold + %lld WHERE item = ",
                b->stock - b->k, b->k);
        sql_str(q, c, b->g->item);
        w->stock_at = w->n++;
    }
    if (b->probe_id) {
        sql_add(q, "; ");
        ds_probe_leave_add(q, c, b->g->item, b->probe_id), w->n++;
    }
    sql_add(q, "; COMMIT"), w->n++;
}

/* What a sale's transaction came to. */
enum wrote {
    WROTE_COMMITTED,   /* committed: the sales stand as the engine marked them */
    WROTE_REPLAY,      /* a keyed sale's row was there: nothing written, its answer stands */
    WROTE_FENCED,      /* the fence found another holder: rolled back, the lease lost */
    WROTE_NOT_SOLD,    /* nothing written: rolled back, or a lost answer settled so */
    WROTE_UNKNOWN      /* the answer lost, and nobody can say now */
};

/* 1 when the lock's err says the database could not serve (nothing was written: the
 * transaction was not committed): connect, a broken connection, a right, not ready, a
 * lock wait or a deadlock. */
static int lock_fault_is_down(const struct error *err)
{
    if (err->fault == FAULT_REPLY)
        return strcmp(err->code, "lock_wait") == 0 || strcmp(err->code, "deadlock") == 0 ||
               strcmp(err->code, "no_table") == 0 || strcmp(err->code, "no_database") == 0;
    return fault_is_io(err->fault) || err->fault == FAULT_CONNECT || err->fault == FAULT_AUTH;
}

/* The fence (v14) in a transaction opened on c first: LOCK_OK, or the sales' outcomes set
 * and the wrote it came to. */
static int fence_run(struct db_store *ds, struct lock_client *lc, struct store_batch *b,
                     struct db_conn *c, int release, enum wrote *wrote)
{
    char sql[32];
    struct sql q;
    struct db_error derr = { 0 };
    struct error err = { 0 };
    int st;

    sql_init(&q, sql, sizeof(sql));
    sql_add(&q, "START TRANSACTION");
    if (ds_run(ds, c, &q, NULL, 0, NULL, &derr) != DB_OK) {
        if (derr.fault == DB_E_LOST)   /* nothing of the sale was sent yet */
            sale_set_all(b->rqs, b->n, SALE_STORE_DOWN, derr.msg);
        else
            ds_fail_all(&derr, "START TRANSACTION", b->rqs, b->n);
        return *wrote = WROTE_NOT_SOLD, LOCK_ERROR;
    }
    if ((st = lock_grant_fence(lc, b->g, c, release, &err)) == LOCK_OK)
        return LOCK_OK;
    if (st == LOCK_NOT_OWNER) {
        sale_set_all(b->rqs, b->n, SALE_LEASE_LOST, "the lock's row names another holder: "
                     "the database refused the write; nothing was written");
        *wrote = WROTE_FENCED;
    } else {
        sale_set_all(b->rqs, b->n, lock_fault_is_down(&err) ? SALE_STORE_DOWN : SALE_ERROR,
                     err.msg);
        *wrote = WROTE_NOT_SOLD;
    }
    return st;
}

/* A write that failed (err, at statement failed of w) on c, sent at sent_ms: what it came
 * to, the outcomes set where nothing stands as the engine marked it. */
static enum wrote write_failed(struct db_store *ds, struct db_conn *c, struct store_batch *b,
                               const struct write_text *w, int failed, long long sent_ms,
                               const struct db_error *err)
{
    int keyed = b->rqs[0]->idem_key != NULL, st;

    if (err->fault == DB_E_DUP && keyed && failed == w->rows_at) {
        ds_replay(ds, w->first, b->rqs[0]);   /* its first answer stands */
        return WROTE_REPLAY;
    }
    if (failed >= 0 && failed == w->stock_at && w->guarded && err->code == STALE_READ) {
        log_event("WARN", "mysql: %s's stock changed after its read in the lock's transaction: "
                  "rolled back, nothing written", b->g->item);
        sale_set_all(b->rqs, b->n, SALE_STORE_DOWN, "the stock changed after this transaction "
                     "read it (Galera: a row lock is one node's only); rolled back, nothing "
                     "was sold");
        return WROTE_NOT_SOLD;
    }
    if (err->fault != DB_E_LOST) {
        ds_fail_all(err, "the sale's transaction", b->rqs, b->n);
        return WROTE_NOT_SOLD;
    }
    st = ds_settle(ds, db_conn_id(c), sent_ms, w->first);
    if (st == 1 && keyed) {   /* its row: this sale's (committed), or a first answer's */
        ds_replay(ds, w->first, b->rqs[0]);
        return b->rqs[0]->out.replayed ? WROTE_REPLAY : WROTE_COMMITTED;
    }
    if (st == 1)
        return WROTE_COMMITTED;
    if (st == 0) {
        sale_set_all(b->rqs, b->n, SALE_STORE_DOWN, "the write's answer was lost; settled: it "
                     "was not written, nothing was sold");
        return WROTE_NOT_SOLD;
    }
    sale_set_all(b->rqs, b->n, SALE_OUTCOME_UNKNOWN, NULL);
    return WROTE_UNKNOWN;
}

/* b's transaction on c (held: the lock's, already open): the fence first where the
 * version has one (with release: it gives the grant back in the transaction too), then
 * the write. What it came to; *broken when c failed on its way. */
static enum wrote write_batch(struct db_store *ds, struct lock_client *lc, struct store_batch *b,
                              struct db_conn *c, int held, int release, int *broken)
{
    int fenced = lc && lc->ops->fence, failed = -1, st;
    struct write_text w;
    struct db_error err = { 0 };
    struct db_result r[4];
    enum wrote wrote = WROTE_COMMITTED;
    char *sql = malloc(SQL_MAX);
    struct sql q;

    *broken = 0;
    if (sql == NULL) {
        sale_set_all(b->rqs, b->n, SALE_ERROR, "out of memory");
        return WROTE_NOT_SOLD;
    }
    if (fenced && !held && fence_run(ds, lc, b, c, release, &wrote) != LOCK_OK) {
        free(sql);
        return wrote;
    }
    sql_init(&q, sql, SQL_MAX);
    write_build(&q, c, ds, b, !held && !fenced, held, &w);
    long long sent_ms = clock_now_ms();
    if ((st = ds_run(ds, c, &q, r, 4, &failed, &err)) != DB_OK) {
        *broken = err.fault == DB_E_LOST;
        wrote = write_failed(ds, c, b, &w, failed, sent_ms, &err);
    } else if (w.stock_at >= 0 && w.stock_at < 4 && r[w.stock_at].affected != 1) {
        log_event("ERROR", "mysql: the items row of %s went during a sale (its ledger rows "
                  "were written, its stock was not)", b->g->item);
    }
    free(sql);
    if (wrote == WROTE_COMMITTED)
        b->stock -= b->k;
    return wrote;
}

/* No write, and the probe in: it leaves on a pooled connection, at once (not in v15's
 * transaction, which a release without a write rolls back). */
static void probe_leave(struct db_store *ds, const struct store_batch *b)
{
    struct db_error err;
    struct db_conn *c = ds_get(ds, &err);
    char sql[SMALL_SQL];
    struct sql q;

    if (c == NULL)
        return;
    sql_init(&q, sql, sizeof(sql));
    ds_probe_leave_add(&q, c, b->g->item, b->probe_id);
    ds_run(ds, c, &q, NULL, 0, NULL, &err);
    db_put(c, 0);
}

/* The lock's own transaction (v15) after the batch: a write's COMMIT gave the lock back
 * (its ROLLBACK after a failure, or its connection gone, too); without a write the
 * release ends it, or the grant stays held. */
static enum store_sold held_end(struct lock_client *lc, struct store_batch *b,
                                enum wrote wrote, int release, int *released)
{
    struct error err = { 0 };

    if (b->write) {   /* (a transaction left open is rolled back as v15 puts c back) */
        *released = lock_release_done(lc, b->g, wrote != WROTE_UNKNOWN);
        return STORE_RELEASED;
    }
    if (!release)
        return STORE_KEPT;
    *released = lock_release(lc, b->g, NULL, b->pause, &err);
    return STORE_RELEASED;
}

/* The grant after the batch (a lock outside the write's transaction, or v14's riding in
 * it: gives): kept, given back with the write, given up (the write may still land), or
 * released now. */
static enum store_sold grant_end(struct lock_client *lc, struct store_batch *b, enum wrote wrote,
                                 int release, int gives, int *released)
{
    struct error err = { 0 };

    if (!release)
        return wrote == WROTE_COMMITTED || wrote == WROTE_REPLAY ? STORE_KEPT
               : wrote == WROTE_UNKNOWN ? STORE_UNSURE : STORE_FAILED;
    if (gives && (wrote == WROTE_COMMITTED || wrote == WROTE_UNKNOWN)) {
        *released = lock_release_done(lc, b->g, wrote == WROTE_COMMITTED);
        return STORE_RELEASED;
    }
    if (wrote == WROTE_UNKNOWN) {
        lock_abandon(lc, b->g);   /* its write may still land: the lease runs out instead */
        *released = LOCK_ERROR;
        return STORE_RELEASED;
    }
    *released = lock_release(lc, b->g, NULL, b->pause, &err);
    if (*released == LOCK_EXPIRED || *released == LOCK_STOLEN)
        for (int i = 0; i < b->n; i++)
            b->rqs[i]->out.lease_lost = 1;
    return STORE_RELEASED;
}

/* Sells batch b under its grant (the store's sell): its transaction, on the lock's
 * connection (v15) or a pooled one, and with release the grant given back: in the
 * transaction where the fence can (v14), by its COMMIT (v15), else after it. */
enum store_sold ds_sell(struct store *s, struct lock_client *lc, struct store_batch *b,
                        int release, int *released)
{
    struct db_store *ds = db_of(s);
    struct db_conn *held = lock_grant_db(lc, b->g), *c = held;
    int gives = b->write && release && b->pause == NULL && lock_grant_fence_releases(lc, b->g);
    enum wrote wrote = WROTE_COMMITTED;
    struct db_error err = { 0 };
    int broken = 0;

    if (b->write && c == NULL && (c = ds_get(ds, &err)) == NULL) {
        ds_fail_all(&err, "a connection for the sale", b->rqs, b->n);
        wrote = WROTE_NOT_SOLD;
    } else if (b->write) {
        wrote = write_batch(ds, lc, b, c, held != NULL, gives, &broken);
    } else if (b->probe_id) {
        probe_leave(ds, b);
    }
    if (held)
        return held_end(lc, b, wrote, release, released);
    if (c)
        db_put(c, broken);
    return grant_end(lc, b, wrote, release, gives, released);
}
