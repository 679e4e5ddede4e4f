/* v15_db_row.c - v15: a row lock held by an open transaction. No lease: a paused holder blocks all.
 *
 * The database's own lock: the item's row in `row_locks` locked by SELECT ... FOR UPDATE in
 * a transaction on a connection of the pool, which the grant keeps; the store reads and
 * writes in that transaction (lock_grant_db) and its COMMIT gives the lock back. A holder
 * killed: its connection dies and the server frees the row at once. No lease: a holder
 * paused (or hung) keeps the row, and every sale of the item waits until it goes on, or
 * until someone kills its connection. A waiter blocks in the database itself, up to its
 * wait in whole seconds (WAIT n). Reentrant in the process: a nested grant of the same
 * owner shares its holder's transaction. */
#include "lock/internal.h"

/* A lock wait's longest slice, in s: below the layer's statement timeout (5 s by default),
 * which would otherwise end a long wait as a lost connection. */
enum { SLICE_S = 3 };

/* The row lock's table: one row per item, there only to be locked. */
static int v15_init(struct lock_client *lc, struct error *err)
{
    return lock_db_init(lc, "row_locks",
                        "CREATE TABLE IF NOT EXISTS row_locks (name VARCHAR(64) PRIMARY KEY) "
                        "ENGINE=InnoDB", err);
}

/* The next slice of a lock wait, in s, taken from *left_s (the wait's whole seconds still
 * to go): at most SLICE_S; 0 (do not wait) when none are left. */
static long slice_s(long *left_s)
{
    long s = *left_s > SLICE_S ? SLICE_S : *left_s;

    *left_s -= s;
    return s;
}

/* One slice of the wait on c: a transaction begun, the item's row locked in it (or its lock
 * waited for, a slice of *left_s). DB_E_NONE with *found (0: there is no row yet), or the
 * fault (DB_E_LOCK_WAIT: still held when the slice ran out; the transaction still open). */
static enum db_fault row_lock(struct lock_client *lc, struct db_conn *c,
                              const struct lock_db_names *q, long *left_s, int *found,
                              struct error *err)
{
    struct db_result res[2];
    enum db_fault fault;

    fault = lock_db_run(lc, c, res, 2, err,
                        "START TRANSACTION; SELECT name FROM row_locks WHERE name=%s FOR UPDATE "
                        "WAIT %ld", q->item, slice_s(left_s));
    *found = fault == DB_E_NONE && res[1].found;
    return fault;
}

/* The item's first lock makes its row, alone (an INSERT IGNORE of a row another
 * transaction holds waits on that lock: before the row is known to be missing it would
 * wait as long as innodb_lock_wait_timeout says), its wait a slice of *left_s too. */
static enum db_fault row_make(struct lock_client *lc, struct db_conn *c,
                              const struct lock_db_names *q, long *left_s, struct error *err)
{
    return lock_db_run(lc, c, NULL, 0, err, "ROLLBACK; SET STATEMENT innodb_lock_wait_timeout=%ld "
                       "FOR INSERT IGNORE INTO row_locks (name) VALUES (%s)", slice_s(left_s),
                       q->item);
}

/* Waits up to wait_ms (rounded up to whole seconds: the database counts so) for the item's
 * row lock on c, in slices: DB_E_NONE with *found (0: the row went as it was made), or the
 * fault (DB_E_LOCK_WAIT: still held when the wait ran out). */
static enum db_fault row_wait(struct lock_client *lc, struct db_conn *c,
                              const struct lock_db_names *q, long wait_ms, int *found,
                              struct error *err)
{
    long left_s = wait_ms > 0 ? (wait_ms + 999) / 1000 : 0;
    enum db_fault fault;
    int made = 0;

    do {
        fault = row_lock(lc, c, q, &left_s, found, err);
        if (fault == DB_E_NONE && !*found && !made++)
            fault = row_make(lc, c, q, &left_s, err);
        else if (fault != DB_E_LOCK_WAIT || left_s == 0)
            break;
    } while (fault == DB_E_NONE || (fault == DB_E_LOCK_WAIT && left_s > 0));
    return fault;
}

/* One acquire, waiting in the database. Granted, the connection stays with the grant, its
 * transaction open; else it goes back, rolled back. */
static int v15_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                           struct lock_trip *trip, struct error *err)
{
    struct lock_db_names q;
    struct db_conn *c;
    enum db_fault fault;
    int found = 0;

    (void)trip;   /* nothing of Redis rides */
    if (lock_db_nest(lc, g))
        return LOCK_OK;
    if ((c = lock_db_open(lc, g, &q, err)) == NULL)
        return LOCK_ERROR;
    fault = row_wait(lc, c, &q, wait_ms, &found, err);
    if (fault == DB_E_NONE && found) {
        g->valid_until_ms = 0; /* no lease: held until the transaction ends */
        if (lock_db_hold(lc, g, 0, c, err) == LOCK_OK)
            return LOCK_OK;
    } else if (fault == DB_E_NONE) {
        error_set(err, FAULT_PROTOCOL, "v15: the row of %s went as it was made", g->item);
    }
    lock_db_put(c, fault);
    /* A lock wait run out, or (Galera) a holder aborted by a write applied from another
     * node: refused, nothing taken. */
    return fault == DB_E_LOCK_WAIT || fault == DB_E_DEADLOCK ? LOCK_TIMEOUT : LOCK_ERROR;
}

/* Gives one hold back; the last rolls its transaction back (nothing written in it: a store
 * that wrote commits and calls lock_release_done instead) and puts the connection back.
 * A connection that failed (a write timed out: lock_abandon) is closed: the server rolls
 * back and frees the row. */
static int v15_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                       struct error *err)
{
    struct db_conn *c;
    enum db_fault fault;

    lock_pause_here(lc, trip, &(struct error){ 0 });
    if (lock_db_unhold(lc, g, &c) > 0)
        return LOCK_OK;
    if (c == NULL)
        return LOCK_NOT_OWNER;
    fault = lock_db_run(lc, c, NULL, 0, err, "ROLLBACK");
    lock_db_put(c, fault);
    return fault == DB_E_NONE ? LOCK_OK : LOCK_ERROR;
}

/* The store's COMMIT (or ROLLBACK) on g's connection gave the lock back, or may have
 * (sure 0: its answer was lost): the connection goes back to the pool, closed when unsure.
 * A nested grant only counts down: the transaction is its holder's. */
static void v15_forget(struct lock_client *lc, struct lock_grant *g, int sure)
{
    struct db_conn *c;

    if (lock_db_unhold(lc, g, &c) == 0)
        db_put(c, !sure);
}

/* The database's lock, no lease: held for exactly as long as its transaction. */
const struct lock_ops lock_v15 = {
    .name = "v15",
    .alias = "db-row",
    .title = "a row lock: SELECT ... FOR UPDATE in a transaction the sale writes in; its COMMIT "
             "releases",
    .flaw = "no lease: a paused holder blocks every sale of the item until it goes on (or its "
            "connection is killed)",
    .remote = 0,
    .database = 1,
    .init = v15_init,
    .destroy = lock_db_destroy,
    .try_acquire = v15_try_acquire,
    .release = v15_release,
    .wait = LOCK_WAIT_LOCAL,
    .forget = v15_forget,
    .conn = lock_db_conn,
};
