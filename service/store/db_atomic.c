/* db_atomic.c - The atomic sale in the database (--lock atomic --mysql), no lock: per
 * item, one transaction whose UPDATE decides how many the stock covers (LEAST of the stock
 * and the sales waiting) and writes it, its ledger rows for those, read back and committed
 * in one round trip. */
#include "service/store/db.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/clock.h"

/* One group's transaction for c: the UPDATE decides how many it sells (@k, what the stock
 * covers) and leaves the stock in @left; the ledger's rows for the first @k (and a keyed
 * sale's row even when sold out: its answer kept), only when the item's row was there
 * (@k not NULL); @k and @left read back; COMMIT. Statement 5 reads them back. */
static void atomic_build(struct sql *q, struct db_conn *c, struct db_store *ds,
                         const struct store_group *gr, char (*first)[ID_MAX])
{
    const char *item = gr->rqs[0]->item;
    int keyed = gr->rqs[0]->idem_key != NULL;
    char id[ID_MAX];

    sql_add(q, "START TRANSACTION; SET @k := NULL, @left := NULL; UPDATE items SET "
            "sold = sold + (@k := LEAST(GREATEST(stock, 0), %d)), stock = (@left := stock - @k) "
            "WHERE item = ", gr->n);
    sql_str(q, c, item);
    sql_add(q, "; INSERT INTO orders (id, item, request_id, status, remaining, token, "
            "instance) SELECT v.id, ");
    sql_str(q, c, item);
    sql_add(q, ", v.rid, IF(v.n <= @k, 200, 409), IF(v.n <= @k, @left + @k - v.n, 0), 0, ");
    sql_str(q, c, ds->instance);
    sql_add(q, " FROM (");
    for (int i = 0; i < gr->n; i++) {
        ds_row_id(ds, gr->rqs[i], &id);
        if (i == 0)
            snprintf(*first, sizeof(*first), "%s", id);
        sql_add(q, "%sSELECT %d AS n, ", i ? " UNION ALL " : "", i + 1);
        sql_str(q, c, id);
        sql_add(q, " AS id, ");
        sql_str(q, c, gr->rqs[i]->request_id);
        sql_add(q, " AS rid");
    }
    sql_add(q, ") v WHERE @k IS NOT NULL AND (v.n <= @k%s); SELECT @k, @left; COMMIT",
            keyed ? " OR v.n = 1" : "");
}

/* The group's outcomes: k of its sales sold, the stock left after them. */
static void atomic_sold(struct store_group *gr, long long k, long long left)
{
    for (int i = 0; i < gr->n; i++) {
        gr->rqs[i]->out.result = i < k ? SALE_OK : SALE_SOLD_OUT;
        gr->rqs[i]->out.remaining = i < k ? left + k - 1 - i : 0;
    }
}

/* A group's first row, after a lost answer settled as committed: there (1) or not, and
 * its remaining (the stock it found, less one). */
static void build_rows(struct sql *q, struct db_conn *c, const void *first)
{
    sql_add(q, "SELECT COUNT(*), COALESCE(MAX(remaining), 0) FROM orders WHERE id = ");
    sql_str(q, c, first);
}

/* A group's transaction whose answer was lost (on c, sent at sent_ms), settled by its
 * first row. */
static void atomic_settle(struct db_store *ds, struct db_conn *c, struct store_group *gr,
                          const char *first, long long sent_ms)
{
    struct db_result r;
    struct db_error err;
    long long rows = 0, rem = 0;
    int st = ds_settle(ds, db_conn_id(c), sent_ms, first);

    if (st == 1 && gr->rqs[0]->idem_key) {
        ds_replay(ds, first, gr->rqs[0]);
    } else if (st == 1 && ds_read(ds, build_rows, first, &r, 1, &err) == DB_OK &&
               ds_number(&r, 0, &rows) == 0 && ds_number(&r, 1, &rem) == 0 && rows == 1) {
        /* The first row's remaining is the stock it found less one: that stock covered
         * k = min(stock, n) of the group, and left stock - k. */
        long long k = rem + 1 < gr->n ? rem + 1 : gr->n;
        atomic_sold(gr, k, rem + 1 - k);
    } else if (st == 0) {
        sale_set_all(gr->rqs, gr->n, SALE_STORE_DOWN, "the write's answer was lost; settled: "
                     "it was not written, nothing was sold");
    } else {
        sale_set_all(gr->rqs, gr->n, SALE_OUTCOME_UNKNOWN, NULL);
    }
}

/* One group sold whole in one transaction; every outcome set. */
static void sell_group(struct db_store *ds, struct store_group *gr, char *sql)
{
    struct db_error err = { 0 };
    struct db_conn *c = ds_get(ds, &err);
    struct db_result r[6];
    char first[ID_MAX], msg[160];
    long long k, left;
    struct sql q;
    int failed = -1;

    if (c == NULL) {
        ds_fail_all(&err, "a connection for the sale", gr->rqs, gr->n);
        return;
    }
    sql_init(&q, sql, SQL_MAX);
    atomic_build(&q, c, ds, gr, &first);
    long long sent_ms = clock_now_ms();
    if (ds_run(ds, c, &q, r, 6, &failed, &err) != DB_OK) {
        if (err.fault == DB_E_DUP && gr->rqs[0]->idem_key && failed == 3)
            ds_replay(ds, first, gr->rqs[0]);
        else if (err.fault == DB_E_LOST)
            atomic_settle(ds, c, gr, first, sent_ms);
        else
            ds_fail_all(&err, "the sale's transaction", gr->rqs, gr->n);
    } else if (ds_number(&r[4], 0, &k) != 0 || ds_number(&r[4], 1, &left) != 0) {
        snprintf(msg, sizeof(msg), "no row for item %.64s in items; set it with deploy/stock",
                 gr->rqs[0]->item);
        sale_set_all(gr->rqs, gr->n, SALE_UNKNOWN_ITEM, msg);
    } else {
        atomic_sold(gr, k, left);
    }
    db_put(c, err.fault == DB_E_LOST);
}

void ds_sell_atomic(struct store *s, struct store_group **groups, int n)
{
    char *sql = malloc(SQL_MAX);

    for (int g = 0; g < n; g++) {
        if (sql)
            sell_group(db_of(s), groups[g], sql);
        else
            sale_set_all(groups[g]->rqs, groups[g]->n, SALE_ERROR, "out of memory");
    }
    free(sql);
}
