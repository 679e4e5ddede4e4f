/* db_ledger.c - The database store's ledger rows (orders): their ids and values, a sale
 * transaction whose answer was lost settled by its first row, and a keyed sale's first
 * answer replayed from its row.
 *
 * A lost answer is settled, not guessed: on a new connection, once the old connection's
 * transaction is over (the server restarted since it was sent, or the old connection is
 * gone from the process list, killed when it is still there: a killed transaction rolls
 * back), the first row is there or not. Nobody can say only when the database does not
 * answer within SETTLE_MS. */
#include "service/store/db.h"

#include <stdio.h>
#include <string.h>

#include "common/clock.h"

enum { SETTLE_MS = 3000 };

/* A sale's ledger row id: "k" and its idempotency key, or "r", its request id, "-", this
 * instance's id, "-" and a number of this instance's. */
void ds_row_id(struct db_store *ds, const struct sale_request *rq, char (*id)[ID_MAX])
{
    if (rq->idem_key)
        snprintf(*id, sizeof(*id), "k%.64s", rq->idem_key);
    else
        snprintf(*id, sizeof(*id), "r%.64s-%s-%lld", rq->request_id ? rq->request_id : "",
                 ds->instance_id, (long long)atomic_fetch_add(&ds->entries, 1));
}

/* One ledger row's values: "(id, item, request_id, status, remaining, token, instance)". */
void ds_row_add(struct sql *q, struct db_conn *c, struct db_store *ds, const char *id,
                const struct sale_request *rq, int status, long long remaining, long long token)
{
    sql_add(q, "(");
    sql_str(q, c, id);
    sql_add(q, ", ");
    sql_str(q, c, rq->item);
    sql_add(q, ", ");
    sql_str(q, c, rq->request_id);
    sql_add(q, ", %d, %lld, %lld, ", status, remaining, token);
    sql_str(q, c, ds->instance);
    sql_add(q, ")");
}

/* The probe's leave: item's probe emptied when id is still in it. */
void ds_probe_leave_add(struct sql *q, struct db_conn *c, const char *item, const char *id)
{
    sql_add(q, "UPDATE probes SET id = '' WHERE item = ");
    sql_str(q, c, item);
    sql_add(q, " AND id = ");
    sql_str(q, c, id);
}

/* How long ago the server started, in ms (its uptime, whole seconds); -1 unknown. */
static long long uptime_ms(const struct db_result *r)
{
    long long s;

    return ds_number(r, 0, &s) == 0 ? s * 1000 : -1;
}

/* One look at a lost transaction (on the server's connection old, sent at sent_ms) from
 * c: 1 committed (first's row is there), 0 not, 2 still running (killed now: look again),
 * -1 no answer. */
static int settle_look(struct db_store *ds, struct db_conn *c, unsigned long old,
                       long long sent_ms, const char *first)
{
    char sql[1024];
    struct sql q;
    struct db_result r[3];
    struct db_error err;
    long long up, alive = 0, rows = 0;

    sql_init(&q, sql, sizeof(sql));
    sql_add(&q, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE "
            "VARIABLE_NAME = 'UPTIME'; SELECT COUNT(*) FROM information_schema.PROCESSLIST "
            "WHERE ID = %lu AND ID <> CONNECTION_ID(); SELECT COUNT(*) FROM orders WHERE id = ",
            old);
    sql_str(&q, c, first);
    if (ds_run(ds, c, &q, r, 3, NULL, &err) != DB_OK || ds_number(&r[1], 0, &alive) != 0 ||
        ds_number(&r[2], 0, &rows) != 0)
        return -1;
    up = uptime_ms(&r[0]);
    if (alive > 0 && up < 0)
        return 2;   /* the old connection may be this server's: look again */
    if (alive > 0 && up > clock_now_ms() - sent_ms + 1000) {
        /* The same server, the old connection still there: its transaction may still
         * commit. Killed, it rolls back (or has committed by then). */
        sql_init(&q, sql, sizeof(sql));
        sql_add(&q, "KILL CONNECTION %lu", old);
        ds_run(ds, c, &q, NULL, 0, NULL, &err);
        return 2;
    }
    return rows > 0;
}

/* A transaction whose answer was lost, settled: 1 committed, 0 never, -1 nobody can say
 * within SETTLE_MS (the database down that long). */
int ds_settle(struct db_store *ds, unsigned long old, long long sent_ms, const char *first)
{
    long long until = clock_now_ms() + SETTLE_MS;
    struct db_error err;
    int st = -1;

    while (st < 0 || st == 2) {
        if (clock_now_ms() >= until) {
            st = -1;
            break;
        }
        struct db_conn *c = ds_get(ds, &err);
        st = c ? settle_look(ds, c, old, sent_ms, first) : -1;
        db_put(c, st < 0);
        if (st < 0 || st == 2)
            clock_sleep_ms(st < 0 ? 100 : 20);
    }
    atomic_fetch_add(st == 1 ? &ds->settled_sold : st == 0 ? &ds->settled_unsold
                                                             : &ds->unsettled, 1);
    return st;
}

/* A keyed sale's row: its first answer. */
static void build_answer(struct sql *q, struct db_conn *c, const void *id)
{
    sql_add(q, "SELECT status, remaining, token, instance, request_id FROM orders WHERE id = ");
    sql_str(q, c, id);
}

/* The first answer kept in a keyed sale's row as rq's outcome (replayed; not when the
 * row is this very sale's, found by a settle). */
void ds_replay(struct db_store *ds, const char *id, struct sale_request *rq)
{
    struct db_result r;
    struct db_error err;
    long long status = 0;

    if (ds_read(ds, build_answer, id, &r, 1, &err) != DB_OK || !r.found ||
        ds_number(&r, 0, &status) != 0 || ds_number(&r, 1, &rq->out.remaining) != 0 ||
        ds_number(&r, 2, &rq->out.token) != 0) {
        sale_set_all(&rq, 1, SALE_STORE_DOWN, "the Idempotency-Key's first answer could not "
                     "be read now");
        return;
    }
    rq->out.result = status == 200 ? SALE_OK : SALE_SOLD_OUT;
    rq->out.message[0] = '\0';
    snprintf(rq->out.instance, sizeof(rq->out.instance), "%.63s", r.vals[3]);
    rq->out.replayed = strcmp(r.vals[3], ds->instance) != 0 ||
                       strcmp(r.vals[4], rq->request_id ? rq->request_id : "") != 0;
}
