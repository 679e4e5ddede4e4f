/* run.c - Statements on a connection of the pool: db_run (one or several in one round
 * trip, a result for each) and db_quote (a string literal for the connection). */
#include "db/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fills r from a query's result set: its row count, its columns (at most DB_COLS_MAX)
 * and its first row's values, each cut to DB_VALUE_MAX - 1 bytes. */
static void result_fill(struct db_result *r, MYSQL_RES *set)
{
    MYSQL_ROW row = mysql_fetch_row(set);
    unsigned long *len = row ? mysql_fetch_lengths(set) : NULL;
    unsigned n = mysql_num_fields(set);
    unsigned i;
    size_t k;

    r->affected = -1;
    r->rows = (long long)mysql_num_rows(set);
    r->cols = n < DB_COLS_MAX ? (int)n : DB_COLS_MAX;
    r->found = row != NULL;
    for (i = 0; row != NULL && i < (unsigned)r->cols; i++) {
        r->null[i] = row[i] == NULL;
        k = row[i] == NULL ? 0 : len[i] < DB_VALUE_MAX - 1 ? len[i] : DB_VALUE_MAX - 1;
        if (k > 0)
            memcpy(r->vals[i], row[i], k);
        r->vals[i][k] = '\0';
    }
}

/* Takes the current statement's result off the connection into r (may be NULL). 0, or -1
 * when the result could not be read (mysql's error says why). */
static int result_take(MYSQL *my, struct db_result *r)
{
    MYSQL_RES *set = mysql_store_result(my);

    if (set != NULL) {
        if (r != NULL)
            result_fill(r, set);
        mysql_free_result(set);
        return 0;
    }
    if (mysql_field_count(my) != 0)
        return -1;                  /* a query whose rows did not come */
    if (r != NULL) {
        r->affected = (long long)mysql_affected_rows(my);
        r->insert_id = (long long)mysql_insert_id(my);
    }
    return 0;
}

/* Statement i failed: err from the connection's error, counted; the connection marked
 * failed when it broke (or the client library refused it), the transaction marked gone
 * when the server rolled it back. Leaves no result pending. Returns DB_FAIL. */
static int run_failed(struct db_conn *c, int i, int *failed, struct db_error *err)
{
    char what[40] = "";
    unsigned code = mysql_errno(c->my);
    int rc;

    if (failed != NULL)
        *failed = i;
    if (i > 0)
        snprintf(what, sizeof(what), "statement %d: ", i + 1);
    rc = db_fail_mysql(c->dc, c->my, 0, what, err);
    switch (db_fault_of(code, 0)) {
    case DB_E_LOST:
    case DB_E_NOT_READY:
        c->failed = 1;
        break;
    case DB_E_DEADLOCK:
        c->trx_gone = 1;
        break;
    default:
        c->failed = db_code_is_client(code);
        break;
    }
    /* The server stops at the statement that failed; should anything still be pending,
     * it is read and dropped, so the next statement finds the connection in step. */
    while (!c->failed && mysql_more_results(c->my) && mysql_next_result(c->my) == 0)
        mysql_free_result(mysql_store_result(c->my));
    return rc;
}

int db_run(struct db_conn *c, const char *sql, struct db_result *res, int nres, int *failed,
           struct db_error *err)
{
    int i = 0, next;

    if (failed != NULL)
        *failed = -1;
    if (c == NULL || sql == NULL || nres < 0 || (nres > 0 && res == NULL)) {
        db_count_failure(c ? c->dc : NULL, DB_E_USAGE);
        return db_fail(err, DB_E_USAGE, 0, "db_run needs a connection, a statement and "
                       "room for its results");
    }
    if (c->failed) {
        if (failed != NULL)
            *failed = 0;
        db_count_failure(c->dc, DB_E_LOST);
        return db_fail(err, DB_E_LOST, 0, "%s: the connection broke before", c->dc->label);
    }
    if (nres > 0)
        memset(res, 0, sizeof(*res) * (size_t)nres);
    atomic_fetch_add(&c->dc->statements, 1);
    if (mysql_real_query(c->my, sql, strlen(sql)) != 0)
        return run_failed(c, 0, failed, err);
    c->trx_gone = 0;                /* the server's status is fresh again */
    for (;;) {
        if (result_take(c->my, i < nres ? &res[i] : NULL) != 0)
            return run_failed(c, i, failed, err);
        if ((next = mysql_next_result(c->my)) < 0)
            return DB_OK;           /* no more results: every statement ran */
        i++;
        atomic_fetch_add(&c->dc->statements, 1);
        if (next > 0)
            return run_failed(c, i, failed, err);
    }
}

const char *db_quote(struct db_conn *c, const char *s, char *buf, size_t size)
{
    char local[1024], *tmp = local;
    size_t n = strlen(s);
    unsigned long k;

    if (size > 0)
        buf[0] = '\0';
    /* The escape may double every byte: made apart, kept when it fits. */
    if (size < 3 || n > size - 3)
        return NULL;
    if (2 * n + 1 > sizeof(local) && (tmp = malloc(2 * n + 1)) == NULL)
        return NULL;
    k = mysql_real_escape_string(c->my, tmp, s, (unsigned long)n);
    if (k != (unsigned long)-1 && k + 3 <= size) {
        buf[0] = '\'';
        memcpy(buf + 1, tmp, k);
        buf[k + 1] = '\'';
        buf[k + 2] = '\0';
    }
    if (tmp != local)
        free(tmp);
    return buf[0] != '\0' ? buf : NULL;
}
