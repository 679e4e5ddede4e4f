/* db_conn.c - The database store's connections: a pooled one with the store's tables
 * made (the schema, on the first connection that succeeds, or checked: each column the
 * store uses), SQL text built for it, a failure's meaning, and the store's state logged
 * once per change (down, back, a right or a table missing). */
#include "service/store/db.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "service/log.h"
#include "service/parse.h"

/* The store's tables, made when missing, then their shape checked: each column the store
 * reads or writes named once (a table of another shape answers "unknown column"). */
static const char *const schema[] = {
    "CREATE TABLE IF NOT EXISTS items (item VARCHAR(64) NOT NULL PRIMARY KEY, "
    "stock BIGINT NOT NULL, sold BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS orders (id VARCHAR(200) NOT NULL PRIMARY KEY, "
    "item VARCHAR(64) NOT NULL, request_id VARCHAR(64) NOT NULL, status SMALLINT NOT NULL, "
    "remaining BIGINT NOT NULL, token BIGINT NOT NULL DEFAULT 0, instance VARCHAR(64) NOT NULL, "
    "at DATETIME(6) NOT NULL DEFAULT NOW(6), KEY (item), KEY (request_id)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS idem_keys (k VARCHAR(64) NOT NULL PRIMARY KEY, "
    "item VARCHAR(64) NOT NULL, at DATETIME(6) NOT NULL DEFAULT NOW(6)) ENGINE=InnoDB",
    "CREATE TABLE IF NOT EXISTS probes (item VARCHAR(64) NOT NULL PRIMARY KEY, "
    "id VARCHAR(200) NOT NULL DEFAULT '', overlaps BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
    "SELECT item, stock, sold FROM items LIMIT 0",
    "SELECT id, item, request_id, status, remaining, token, instance, at FROM orders LIMIT 0",
    "SELECT k, item, at FROM idem_keys LIMIT 0",
    "SELECT item, id, overlaps FROM probes LIMIT 0",
};
static const char *const tables[] = { "items", "orders", "idem_keys", "probes" };
enum { TABLES = 4, SCHEMA = 2 * TABLES };

void sql_init(struct sql *q, char *buf, size_t size)
{
    *q = (struct sql){ .buf = buf, .size = size };
    buf[0] = '\0';
}

void sql_add(struct sql *q, const char *fmt, ...)
{
    va_list ap;
    int n;

    if (q->cut)
        return;
    va_start(ap, fmt);
    n = vsnprintf(q->buf + q->len, q->size - q->len, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= q->size - q->len)
        q->cut = 1;
    else
        q->len += (size_t)n;
}

void sql_str(struct sql *q, struct db_conn *c, const char *s)
{
    if (q->cut)
        return;
    if (db_quote(c, s ? s : "", q->buf + q->len, q->size - q->len) == NULL)
        q->cut = 1;
    else
        q->len += strlen(q->buf + q->len);
}

int ds_is_down(const struct db_error *err)
{
    switch (err->fault) {
    case DB_E_CONNECT: case DB_E_LOCK_WAIT: case DB_E_DEADLOCK: case DB_E_NOT_READY:
    case DB_E_AUTH: case DB_E_NO_DB: case DB_E_NO_TABLE:
        return 1;
    default:
        return 0;
    }
}

/* The store's state as err leaves it: 1 up, else the fault that keeps it from serving
 * (one that says nothing of the server, a lock wait or a broken connection: 0). */
static int state_of(const struct db_error *err)
{
    switch (err->fault) {
    case DB_E_CONNECT: case DB_E_AUTH: case DB_E_NO_DB: case DB_E_NO_TABLE:
    case DB_E_NOT_READY:
        return 100 + (int)err->fault;
    default:
        return 0;
    }
}

/* Sets the store's state to now: 1 when it changed (the caller logs it), else 0. */
static int state_set(struct db_store *ds, int now)
{
    int was = atomic_load(&ds->state);

    return now != was && atomic_compare_exchange_strong(&ds->state, &was, now);
}

void ds_note(struct db_store *ds, const struct db_error *err)
{
    int was = atomic_load(&ds->state), now = err ? state_of(err) : 1;

    if (err && err->fault == DB_E_NO_TABLE)
        atomic_store(&ds->schema_ok, 0);   /* a table dropped: made again on the next call */
    if (now == 0 || !state_set(ds, now))
        return;
    if (now == 1 && was != 0)
        log_event("INFO", "mysql %s answers again", ds->label);
    else if (err && err->fault == DB_E_CONNECT)
        log_event("WARN", "mysql %s unreachable: %s; sales answer 503 store_unavailable until "
                  "it answers%s", ds->label, err->msg,
                  was == 0 ? " (at start: is it up? deploy/up --mysql starts one here)" : "");
    else if (err)
        log_event("WARN", "mysql %s refuses the store (%s): %s; sales answer 503 "
                  "store_unavailable until it is fixed", ds->label, db_fault_name(err->fault),
                  err->msg);
}

int ds_run(struct db_store *ds, struct db_conn *c, const struct sql *q, struct db_result *res,
           int nres, int *failed, struct db_error *err)
{
    if (q->cut)
        return db_fail(err, DB_E_USAGE, 0, "a statement longer than its buffer (%zu bytes)",
                       q->size);
    if (db_run(c, q->buf, res, nres, failed, err) == DB_OK)
        return DB_OK;
    ds_note(ds, err);
    return DB_FAIL;
}

/* Makes the tables on c, or says which statement failed and why (err, and once a line
 * naming the right or the table). */
static int schema_make(struct db_store *ds, struct db_conn *c, struct db_error *err)
{
    char sql[4096], why[sizeof(err->msg)];
    struct sql q;
    int failed = -1;

    sql_init(&q, sql, sizeof(sql));
    for (int i = 0; i < SCHEMA; i++)
        sql_add(&q, "%s%s", i ? "; " : "", schema[i]);
    if (db_run(c, sql, NULL, 0, &failed, err) == DB_OK)
        return DB_OK;
    if (failed < 0 || failed >= SCHEMA || err->fault == DB_E_LOST || err->fault == DB_E_CONNECT) {
        ds_note(ds, err);
        return DB_FAIL;
    }
    snprintf(why, sizeof(why), "%s", err->msg);
    if (failed < TABLES)
        db_fail(err, err->fault, err->code, "CREATE TABLE %s: %.120s", tables[failed], why);
    else if (err->fault == DB_E_AUTH)
        db_fail(err, err->fault, err->code, "SELECT FROM %s: %.120s", tables[failed % TABLES], why);
    else
        db_fail(err, err->fault == DB_E_OTHER ? DB_E_NO_TABLE : err->fault, err->code,
                "table %s is not of the store's shape: %.110s", tables[failed % TABLES], why);
    if (state_set(ds, 200 + failed))
        log_event("ERROR", "mysql %s: %s (the user needs CREATE, once, to make the tables, "
                  "and SELECT, INSERT, UPDATE, DELETE on the database: GRANT ALL ON its tables; "
                  "a table of another shape is to be dropped or altered to the store's: "
                  "service/store/db.h); sales answer 503 store_unavailable until it is fixed",
                  ds->label, err->msg);
    return DB_FAIL;
}

/* A pooled connection; the database made first when it is missing. */
static struct db_conn *conn_get(struct db_store *ds, struct db_error *err)
{
    struct db_conn *c = db_get(ds->base.db, err);

    if (c == NULL && err->fault == DB_E_NO_DB) {
        if (db_ensure_database(ds->base.db, err) != DB_OK) {
            char why[sizeof(err->msg)];
            snprintf(why, sizeof(why), "%s", err->msg);
            db_fail(err, err->fault, err->code, "CREATE DATABASE: %.140s", why);
            return NULL;
        }
        c = db_get(ds->base.db, err);
    }
    return c;
}

struct db_conn *ds_get(struct db_store *ds, struct db_error *err)
{
    struct db_conn *c = conn_get(ds, err);
    int st = DB_OK;

    if (c && !atomic_load(&ds->schema_ok)) {
        pthread_mutex_lock(&ds->schema_mu);
        if (!atomic_load(&ds->schema_ok) && (st = schema_make(ds, c, err)) == DB_OK)
            atomic_store(&ds->schema_ok, 1);
        pthread_mutex_unlock(&ds->schema_mu);
    }
    if (c && st != DB_OK) {
        db_put(c, 0);
        return NULL;   /* noted by schema_make */
    }
    ds_note(ds, c ? NULL : err);
    return c;
}

int ds_read(struct db_store *ds, ds_build build, const void *arg, struct db_result *res,
            int nres, struct db_error *err)
{
    char sql[SMALL_SQL];
    struct sql q;
    int st = DB_FAIL;

    for (int tries = 0; tries < 2; tries++) {
        struct db_conn *c = ds_get(ds, err);
        if (c == NULL)
            return DB_FAIL;
        sql_init(&q, sql, sizeof(sql));
        build(&q, c, arg);
        st = ds_run(ds, c, &q, res, nres, NULL, err);
        db_put(c, 0);
        if (st == DB_OK || err->fault != DB_E_LOST)
            break;
    }
    return st;
}

/* What a fault of a transaction that ran means, in a few words for an answer; NULL for
 * one whose own message says it best (refused credentials, no server, no table). */
static const char *down_why(const struct db_error *err)
{
    switch (err->fault) {
    case DB_E_DEADLOCK:   /* on Galera, not always whole: see docs/faults.md */
        return "the transaction was rolled back: a deadlock, or (Galera) a conflicting write "
               "certified first on another node";
    case DB_E_LOCK_WAIT:
        return "a row lock was not had within the database's lock wait; nothing was written";
    case DB_E_NOT_READY:
        return "the database takes no statements now (a Galera node outside the primary "
               "component, or a server stopping); nothing was written";
    default:
        return NULL;
    }
}

void ds_fail_all(const struct db_error *err, const char *what, struct sale_request **rqs, int n)
{
    char msg[192];

    if (ds_is_down(err)) {
        if (down_why(err))
            snprintf(msg, sizeof(msg), "%.140s (%.40s)", down_why(err), err->msg);
        sale_set_all(rqs, n, SALE_STORE_DOWN, down_why(err) ? msg : err->msg);
        return;
    }
    snprintf(msg, sizeof(msg), "%s: %.150s", what, err->msg);
    sale_set_all(rqs, n, SALE_ERROR, msg);
}

int ds_number(const struct db_result *r, int col, long long *v)
{
    if (col >= r->cols || col >= DB_COLS_MAX || !r->found || r->null[col])
        return -1;
    return parse_integer(r->vals[col], v);
}
