/* db.c - The stock in a database (MariaDB, --mysql): the store's table of operations (at
 * the bottom), opening its pool and making its tables, and the plain operations: health,
 * an item's stock and units sold, setting the stock, the ledger, an idempotency key's
 * binding, the probe, the store's metrics. Its connections and tables are db_conn.c's, a
 * locked sale db_sell.c's, the atomic one db_atomic.c's, the ledger's rows db_ledger.c's.
 * The database has no channel for the live page's events: those operations are absent
 * (the events are off). */
#include "service/store/db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/config/config.h"
#include "service/log.h"
#include "service/parse.h"

/* "SELECT 1": 1 when the database answers (the tables made). */
static void build_ping(struct sql *q, struct db_conn *c, const void *arg)
{
    (void)c, (void)arg;
    sql_add(q, "SELECT 1");
}

static int ds_ping(struct store *s)
{
    struct db_result r;
    struct db_error err;

    return ds_read(db_of(s), build_ping, NULL, &r, 1, &err) == DB_OK;
}

/* An item's row. */
static void build_item(struct sql *q, struct db_conn *c, const void *item)
{
    sql_add(q, "SELECT stock, sold FROM items WHERE item = ");
    sql_str(q, c, item);
}

static enum sale_result ds_read_item(struct store *s, const char *item, long long *stock,
                                     long long *sold, char *msg, size_t size)
{
    struct db_result r;
    struct db_error err;

    if (ds_read(db_of(s), build_item, item, &r, 1, &err) != DB_OK) {
        snprintf(msg, size, "%s", err.msg);
        return ds_is_down(&err) || err.fault == DB_E_LOST ? SALE_STORE_DOWN : SALE_ERROR;
    }
    if (!r.found) {
        snprintf(msg, size, "no row for item %.64s in items; set it with deploy/stock", item);
        return SALE_UNKNOWN_ITEM;
    }
    if (ds_number(&r, 0, stock) != 0 || ds_number(&r, 1, sold) != 0) {
        snprintf(msg, size, "items' row of %.64s holds no integer", item);
        return SALE_BAD_STOCK;
    }
    return SALE_OK;
}

/* The stock set, sold 0, the ledger and the probe emptied: one transaction. */
static int ds_set_stock(struct store *s, const char *item, long long n, struct error *err)
{
    struct db_store *ds = db_of(s);
    struct db_error why = { 0 };
    struct db_conn *c = ds_get(ds, &why);
    char sql[SMALL_SQL];
    struct sql q;
    int st = DB_FAIL;

    if (c) {
        sql_init(&q, sql, sizeof(sql));
        sql_add(&q, "START TRANSACTION; INSERT INTO items (item, stock, sold) VALUES (");
        sql_str(&q, c, item);
        sql_add(&q, ", %lld, 0) ON DUPLICATE KEY UPDATE stock = VALUES(stock), sold = 0; "
                "DELETE FROM orders WHERE item = ", n);
        sql_str(&q, c, item);
        sql_add(&q, "; DELETE FROM probes WHERE item = ");
        sql_str(&q, c, item);
        sql_add(&q, "; COMMIT");
        st = ds_run(ds, c, &q, NULL, 0, NULL, &why);
        db_put(c, st != DB_OK);
    }
    if (st != DB_OK)
        db_error_map(&why, err);
    return st;
}

/* The ledger's question: its sales (status 200), and request id's among them. */
struct ledger_ask {
    const char *item, *id;
};

static void build_ledger(struct sql *q, struct db_conn *c, const void *arg)
{
    const struct ledger_ask *a = arg;

    sql_add(q, "SELECT COUNT(*), COALESCE(SUM(request_id = ");
    sql_str(q, c, a->id ? a->id : "");
    sql_add(q, "), 0) FROM orders WHERE status = 200 AND item = ");
    sql_str(q, c, a->item);
}

static int ds_ledger(struct store *s, const char *item, const char *id, long long *entries,
                     int *found, struct error *err)
{
    struct ledger_ask a = { item, id };
    struct db_result r;
    struct db_error why = { 0 };
    long long mine = 0;

    *entries = 0;
    if (found)
        *found = 0;
    if (ds_read(db_of(s), build_ledger, &a, &r, 1, &why) != DB_OK) {
        db_error_map(&why, err);
        return DB_FAIL;
    }
    if (ds_number(&r, 0, entries) != 0 || ds_number(&r, 1, &mine) != 0)
        return error_set(err, FAULT_PROTOCOL, "the ledger's count is not a number");
    if (found && id)
        *found = mine > 0;
    return DB_OK;
}

/* A key's binding, made when new (a repeat made by a retry changes nothing), then read. */
static void build_bind(struct sql *q, struct db_conn *c, const void *arg)
{
    const struct sale_request *rq = arg;

    sql_add(q, "INSERT IGNORE INTO idem_keys (k, item) VALUES (");
    sql_str(q, c, rq->idem_key);
    sql_add(q, ", ");
    sql_str(q, c, rq->item);
    sql_add(q, "); SELECT item FROM idem_keys WHERE k = ");
    sql_str(q, c, rq->idem_key);
}

static int ds_bind_key(struct store *s, struct sale_request *rq)
{
    struct db_result r[2];
    struct db_error err = { 0 };

    if (ds_read(db_of(s), build_bind, rq, r, 2, &err) != DB_OK) {
        if (err.fault == DB_E_LOST)
            err.fault = DB_E_CONNECT;   /* twice broken before an answer: down for now */
        ds_fail_all(&err, "binding the Idempotency-Key", &rq, 1);
        return -1;
    }
    if (!r[1].found) {
        sale_set_all(&rq, 1, SALE_ERROR, "the Idempotency-Key's binding was not found after "
                     "it was made");
        return -1;
    }
    if (strcmp(r[1].vals[0], rq->item) == 0)
        return 0;
    rq->out.result = SALE_KEY_REUSED;
    snprintf(rq->out.message, sizeof(rq->out.message),
             "this Idempotency-Key was first used for item %.64s", r[1].vals[0]);
    return -1;
}

/* probes' row of item names who is inside (id, '' for nobody); entering while someone is
 * counts one overlap, known from @o in the same round trip. The leave rides with the
 * sale's write (db_sell.c). Tried once: a retry could count twice. */
static int ds_probe_enter(struct store *s, const char *item, const char *id)
{
    struct db_store *ds = db_of(s);
    struct db_error err;
    struct db_result r[3];
    struct db_conn *c = ds_get(ds, &err);
    char sql[SMALL_SQL];
    struct sql q;
    long long o = 0;

    if (c == NULL)
        return 0;
    sql_init(&q, sql, sizeof(sql));
    sql_add(&q, "SET @o := 0; INSERT INTO probes (item, id) VALUES (");
    sql_str(&q, c, item);
    sql_add(&q, ", ");
    sql_str(&q, c, id);
    sql_add(&q, ") ON DUPLICATE KEY UPDATE overlaps = overlaps + (@o := (id <> '')), "
            "id = VALUES(id); SELECT @o");
    if (ds_run(ds, c, &q, r, 3, NULL, &err) != DB_OK || ds_number(&r[2], 0, &o) != 0)
        o = 0;
    db_put(c, 0);
    return o > 0;
}

/* One counter, HELP and TYPE before it, on out. */
static void counter(FILE *out, const char *name, const char *help, long long value)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s counter\n%s %lld\n", name, help, name, name, value);
}

static void ds_metrics(struct store *s, FILE *out)
{
    struct db_store *ds = db_of(s);
    struct db_counts n;

    db_counts(s->db, &n);
    counter(out, "inventory_db_connections_opened_total",
            "Database connections opened (a new one after each that broke).", n.opened);
    counter(out, "inventory_db_statements_total", "Statements run on the database.",
            n.statements);
    fprintf(out, "# HELP inventory_db_statement_failures_total Statements that failed, by "
                 "fault.\n# TYPE inventory_db_statement_failures_total counter\n");
    for (int f = DB_E_CONNECT; f <= DB_E_OTHER; f++)
        fprintf(out, "inventory_db_statement_failures_total{fault=\"%s\"} %lld\n",
                db_fault_name((enum db_fault)f), n.failed[f]);
    fprintf(out, "# HELP inventory_db_pool_connections Connections of the pool, idle or in "
                 "use now.\n# TYPE inventory_db_pool_connections gauge\n"
                 "inventory_db_pool_connections{state=\"idle\"} %d\n"
                 "inventory_db_pool_connections{state=\"in_use\"} %d\n", n.idle, n.in_use);
    fprintf(out, "# HELP inventory_db_settled_total Sale transactions whose COMMIT's answer "
                 "was lost, settled by looking for their ledger row.\n"
                 "# TYPE inventory_db_settled_total counter\n"
                 "inventory_db_settled_total{outcome=\"sold\"} %lld\n"
                 "inventory_db_settled_total{outcome=\"not_sold\"} %lld\n"
                 "inventory_db_settled_total{outcome=\"unknown\"} %lld\n",
            (long long)atomic_load(&ds->settled_sold),
            (long long)atomic_load(&ds->settled_unsold), (long long)atomic_load(&ds->unsettled));
}

static void ds_close(struct store *s)
{
    struct db_store *ds = db_of(s);

    db_client_destroy(s->db);
    pthread_mutex_destroy(&ds->schema_mu);
    free(ds);
}

/* The first contact: the tables made now when the database answers. A database that does
 * not answer is no error (sales answer 503 until it does; logged); one that refuses the
 * user, a right or a table is (err). */
static int first_contact(struct db_store *ds, struct error *err)
{
    struct db_error why = { 0 };
    struct db_conn *c = ds_get(ds, &why);

    if (c) {
        db_put(c, 0);
        log_event("INFO", "mysql %s: the store's tables are ready", ds->label);
        return 0;
    }
    if (why.fault == DB_E_CONNECT || why.fault == DB_E_LOST || why.fault == DB_E_NOT_READY)
        return 0;
    db_error_map(&why, err);
    return -1;
}

static const struct store_ops db_ops;

struct store *db_store_open(const struct service_config *cfg, struct error *err)
{
    struct db_store *ds = calloc(1, sizeof(*ds));
    struct db_error why = { 0 };
    struct db_config dc = {
        .host = cfg->mysql_host, .port = cfg->mysql_port, .user = cfg->mysql_user,
        .password = cfg->mysql_password[0] ? cfg->mysql_password : NULL,
        .database = cfg->mysql_db, .pool_max = cfg->mysql_pool,
    };

    if (ds == NULL) {
        error_set(err, FAULT_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(ds->instance, sizeof(ds->instance), "%s", cfg->name);
    snprintf(ds->instance_id, sizeof(ds->instance_id), "%.12s", cfg->instance_id);
    snprintf(ds->label, sizeof(ds->label), "%.200s:%d/%.64s as %.40s", cfg->mysql_host,
             cfg->mysql_port, cfg->mysql_db, cfg->mysql_user);
    pthread_mutex_init(&ds->schema_mu, NULL);
    ds->base = (struct store){ .ops = &db_ops, .state = ds };
    if ((ds->base.db = db_client_create(&dc, &why)) == NULL) {
        db_error_map(&why, err);
    } else if (first_contact(ds, err) == 0) {
        return &ds->base;
    }
    ds_close(&ds->base);
    return NULL;
}

static const struct store_ops db_ops = {
    .name = "mysql",
    .unavailable = "store_unavailable",
    .close = ds_close,
    .ping = ds_ping,
    .read = ds_read_item,
    .set_stock = ds_set_stock,
    .ledger = ds_ledger,
    .bind_key = ds_bind_key,
    .grant = ds_grant,
    .sell = ds_sell,
    .sell_atomic = ds_sell_atomic,
    .probe_enter = ds_probe_enter,
    .metrics = ds_metrics,
};
