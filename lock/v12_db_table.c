/* v12_db_table.c - v12: a lock table, INSERT the row, DELETE it. A dead holder's row stays forever.
 *
 * The database's v3: the item's row in `locks` names its holder; a duplicate key means
 * held, and the waiter polls. Nothing ever removes a row whose holder died (its instance
 * killed, its connection cut before the DELETE): every later sale of the item waits for
 * ever. Not reentrant: the holder asking again is refused like anyone, and waits on
 * itself until its wait runs out. */
#include "lock/internal.h"

/* The lock table: the item's row names its holder, made by the grant, deleted by the
 * release. */
static int v12_init(struct lock_client *lc, struct error *err)
{
    return lock_db_init(lc, "locks",
                        "CREATE TABLE IF NOT EXISTS locks (name VARCHAR(64) PRIMARY KEY, "
                        "owner VARCHAR(96) NOT NULL, "
                        "locked_at DATETIME(6) NOT NULL DEFAULT NOW(6)) ENGINE=InnoDB", err);
}

/* One try: the row inserted is the grant; the primary key already taken means held (by
 * anyone: the same owner asking again is refused too, and waits on itself). Inserts that
 * race for a row just deleted may deadlock: the one rolled back took nothing, and tries
 * again as one refused. */
static int v12_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                           struct lock_trip *trip, struct error *err)
{
    struct db_result res[1];
    struct lock_db_names q;
    struct db_conn *c;
    enum db_fault fault;

    (void)wait_ms, (void)trip;   /* nothing of Redis rides */
    if ((c = lock_db_open(lc, g, &q, err)) == NULL)
        return LOCK_ERROR;
    /* A plain read first: a refused INSERT locks the row it finds (shared), in front of
     * the holder's DELETE; a look locks nothing. */
    fault = lock_db_run(lc, c, res, 1, err, "SELECT 1 FROM locks WHERE name=%s", q.item);
    if (fault == DB_E_NONE && !res[0].found)
        fault = lock_db_run(lc, c, NULL, 0, err, "INSERT INTO locks (name, owner) VALUES (%s, %s)",
                            q.item, q.owner);
    else if (fault == DB_E_NONE)
        fault = DB_E_DUP;   /* held */
    lock_db_put(c, fault);
    if (fault == DB_E_DUP || fault == DB_E_DEADLOCK || fault == DB_E_LOCK_WAIT)
        return LOCK_TIMEOUT;
    if (fault != DB_E_NONE)
        return LOCK_ERROR;
    g->valid_until_ms = 0; /* never expires */
    g->depth = 1;
    return LOCK_OK;
}

/* Deletes the row while it names g's owner: LOCK_OK, or LOCK_NOT_OWNER when there was
 * none of ours (someone deleted it by hand). */
static int v12_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                       struct error *err)
{
    struct db_result res[1];
    struct lock_db_names q;
    struct db_conn *c;
    enum db_fault fault;

    lock_pause_here(lc, trip, &(struct error){ 0 });
    if ((c = lock_db_open(lc, g, &q, err)) == NULL)
        return LOCK_ERROR;
    fault = lock_db_run(lc, c, res, 1, err, "DELETE FROM locks WHERE name=%s AND owner=%s",
                        q.item, q.owner);
    lock_db_put(c, fault);
    if (fault != DB_E_NONE)
        return LOCK_ERROR;
    return res[0].affected == 1 ? LOCK_OK : LOCK_NOT_OWNER;
}

/* The database's v3: the lock is a row, and nothing ever removes a row whose holder died. */
const struct lock_ops lock_v12 = {
    .name = "v12",
    .alias = "db-table",
    .title = "a lock table: INSERT the item's row (a duplicate key: held, poll); DELETE it",
    .flaw = "holder dies: its row never expires and every later sale waits forever; "
            "not reentrant",
    .remote = 0,
    .database = 1,
    .init = v12_init,
    .destroy = lock_db_destroy,
    .try_acquire = v12_try_acquire,
    .release = v12_release,
    .wait = LOCK_WAIT_POLL,
    .retry_ms = 100,   /* as Spring Integration's JdbcLockRegistry polls */
};
