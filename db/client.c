/* client.c - A database client: its settings and its pool of connections (db_get, db_put),
 * shared by every thread of the instance. */
#include "db/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

/* mysql_library_init is not thread-safe: once, before any connection. (Connector/C 3.x
 * needs nothing per thread: mysql_thread_init and mysql_thread_end do nothing there.) */
static pthread_once_t library_once = PTHREAD_ONCE_INIT;
static int library_failed;

static void library_init(void)
{
    library_failed = mysql_library_init(0, NULL, NULL) != 0;
}

/* Whole seconds, rounded up, at least 1: what Connector/C's timeouts take. */
static unsigned int seconds_of(long ms)
{
    return ms <= 0 ? 1 : (unsigned int)((ms + 999) / 1000);
}

static void client_free(struct db_client *dc)
{
    if (dc->password)
        explicit_bzero(dc->password, strlen(dc->password));
    free(dc->host);
    free(dc->user);
    free(dc->password);
    free(dc->database);
    pthread_mutex_destroy(&dc->pool_mu);
    pthread_cond_destroy(&dc->back);
    free(dc);
}

/* dc's settings from cfg, the defaults where cfg has none; -1 when memory is short. */
static int settings_copy(struct db_client *dc, const struct db_config *cfg)
{
    dc->host = strdup(cfg->host ? cfg->host : "127.0.0.1");
    dc->user = strdup(cfg->user ? cfg->user : "root");
    dc->password = cfg->password ? strdup(cfg->password) : NULL;
    dc->database = strdup(cfg->database ? cfg->database : "inventory");
    dc->port = cfg->port ? cfg->port : 3306;
    dc->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 1000;
    dc->timeout_ms = cfg->timeout_ms > 0 ? cfg->timeout_ms : 5000;
    dc->pool_max = cfg->pool_max > 0 ? cfg->pool_max : 64;
    snprintf(dc->label, sizeof(dc->label), "%s:%d/%s", dc->host ? dc->host : "?", dc->port,
             dc->database ? dc->database : "?");
    return dc->host && dc->user && dc->database && (!cfg->password || dc->password) ? 0 : -1;
}

struct db_client *db_client_create(const struct db_config *cfg, struct db_error *err)
{
    struct db_client *dc;

    if (cfg == NULL || cfg->port < 0 || cfg->port > 65535 || cfg->pool_max < 0) {
        db_fail(err, DB_E_USAGE, 0, "a database client needs a host, a port and a pool size");
        return NULL;
    }
    pthread_once(&library_once, library_init);
    if (library_failed) {
        db_fail(err, DB_E_NOMEM, 0, "the MariaDB client library did not initialize");
        return NULL;
    }
    if ((dc = calloc(1, sizeof(*dc))) == NULL) {
        db_fail(err, DB_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&dc->pool_mu, NULL);
    clock_cond_init_monotonic(&dc->back);
    if (settings_copy(dc, cfg) != 0) {
        db_fail(err, DB_E_NOMEM, 0, "out of memory");
        client_free(dc);
        return NULL;
    }
    return dc;
}

/* Closes a connection and frees it (c->my may be NULL). */
static void conn_close(struct db_conn *c)
{
    if (c->my)
        mysql_close(c->my);
    free(c);
}

void db_client_destroy(struct db_client *dc)
{
    struct db_conn *c, *next;
    long long until;
    int left;

    if (dc == NULL)
        return;
    pthread_mutex_lock(&dc->pool_mu);
    dc->closing = 1;
    pthread_cond_broadcast(&dc->back);      /* a db_get waiting gives up */
    c = dc->idle;
    dc->idle = NULL;
    dc->n_idle = 0;
    /* A caller that still holds a connection puts it back (closed) soon; one that never
     * does would leave a freed client behind it: then the client is kept. */
    until = clock_now_ms() + dc->timeout_ms + dc->connect_timeout_ms;
    while (dc->in_use > 0 && clock_now_ms() < until)
        clock_cond_wait_until(&dc->back, &dc->pool_mu, until);
    left = dc->in_use;
    pthread_mutex_unlock(&dc->pool_mu);
    for (; c != NULL; c = next) {
        next = c->next;
        conn_close(c);
    }
    if (left == 0)
        client_free(dc);
}

const char *db_label(const struct db_client *dc)
{
    return dc->label;
}

void db_counts(const struct db_client *dc, struct db_counts *out)
{
    /* pool_mu is taken on a const client: the gauges are read as one moment. */
    struct db_client *pool = (struct db_client *)dc;
    int i;

    memset(out, 0, sizeof(*out));
    out->opened = atomic_load(&dc->opened);
    out->statements = atomic_load(&dc->statements);
    for (i = 0; i <= DB_E_OTHER; i++)
        out->failed[i] = atomic_load(&dc->failed[i]);
    pthread_mutex_lock(&pool->pool_mu);
    out->idle = dc->n_idle;
    out->in_use = dc->in_use;
    pthread_mutex_unlock(&pool->pool_mu);
}

/* A new connection to the server, to database (NULL: none) with the client's settings:
 * TCP, utf8mb4, the timeouts, no reconnect, CLIENT_FOUND_ROWS and CLIENT_MULTI_STATEMENTS.
 * NULL with err (counted). The caller owns it (mysql_close). */
static MYSQL *connect_new(struct db_client *dc, const char *database, struct db_error *err)
{
    unsigned int connect_s = seconds_of(dc->connect_timeout_ms);
    unsigned int io_s = seconds_of(dc->timeout_ms);
    unsigned int tcp = MYSQL_PROTOCOL_TCP;
    my_bool off = 0;
    MYSQL *my = mysql_init(NULL);
    char what[200];

    if (my == NULL) {
        db_count_failure(dc, DB_E_NOMEM);
        db_fail(err, DB_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    mysql_options(my, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_options(my, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_options(my, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    /* A reconnect would drop an open transaction without a word: never. */
    mysql_options(my, MYSQL_OPT_RECONNECT, &off);
    mysql_options(my, MYSQL_OPT_PROTOCOL, &tcp);
    mysql_options(my, MYSQL_OPT_LOCAL_INFILE, &off);
    mysql_options(my, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    /* Strict, whatever the server's default: a bad value fails its statement (the store's
     * guarded writes rely on it), never stored as a near one with a warning. */
    mysql_options(my, MYSQL_INIT_COMMAND, "SET SESSION sql_mode = IF(@@sql_mode = '', "
                  "'STRICT_TRANS_TABLES', CONCAT(@@sql_mode, ',STRICT_TRANS_TABLES'))");
    if (mysql_real_connect(my, dc->host, dc->user, dc->password, database,
                           (unsigned int)dc->port, NULL,
                           CLIENT_FOUND_ROWS | CLIENT_MULTI_STATEMENTS) == NULL) {
        snprintf(what, sizeof(what), "connect to %s as %s: ", dc->label, dc->user);
        db_fail_mysql(dc, my, 1, what, err);
        mysql_close(my);
        return NULL;
    }
    atomic_fetch_add(&dc->opened, 1);
    return my;
}

/* Gives back a slot taken for a connection that is not handed out after all. */
static void slot_free(struct db_client *dc)
{
    pthread_mutex_lock(&dc->pool_mu);
    dc->in_use--;
    pthread_cond_signal(&dc->back);
    pthread_mutex_unlock(&dc->pool_mu);
}

/* Takes a slot of the pool for the caller: *idle gets an idle connection when there is
 * one (else NULL: the caller connects a new one in the slot). Waits up to the connect
 * timeout when every slot is taken. DB_OK, or DB_FAIL with err (DB_E_CONNECT). */
static int slot_take(struct db_client *dc, struct db_conn **idle, struct db_error *err)
{
    long long until = clock_now_ms() + dc->connect_timeout_ms;
    int rc = 0;

    *idle = NULL;
    pthread_mutex_lock(&dc->pool_mu);
    while (!dc->closing && dc->idle == NULL && dc->in_use >= dc->pool_max && rc != ETIMEDOUT)
        rc = clock_cond_wait_until(&dc->back, &dc->pool_mu, until);
    if (dc->closing || (dc->idle == NULL && dc->in_use >= dc->pool_max)) {
        pthread_mutex_unlock(&dc->pool_mu);
        db_count_failure(dc, DB_E_CONNECT);
        if (dc->closing)
            return db_fail(err, DB_E_CONNECT, 0, "%s: the client is closing", dc->label);
        return db_fail(err, DB_E_CONNECT, 0, "%s: no free connection of %d in %ld ms",
                       dc->label, dc->pool_max, dc->connect_timeout_ms);
    }
    if ((*idle = dc->idle) != NULL) {
        dc->idle = (*idle)->next;
        dc->n_idle--;
        (*idle)->next = NULL;
    }
    dc->in_use++;
    pthread_mutex_unlock(&dc->pool_mu);
    return DB_OK;
}

/* 1 when an idle connection c may be handed out: used within the last DB_PING_IDLE_MS,
 * or it answers a ping now. */
static int idle_alive(struct db_conn *c)
{
    if (clock_now_ms() - c->idle_since_ms <= DB_PING_IDLE_MS)
        return 1;
    return mysql_ping(c->my) == 0;
}

struct db_conn *db_get(struct db_client *dc, struct db_error *err)
{
    struct db_conn *c;

    if (slot_take(dc, &c, err) != DB_OK)
        return NULL;
    if (c != NULL) {
        if (idle_alive(c))
            return c;
        mysql_close(c->my);     /* closed by the server meanwhile: a new one instead */
        c->my = NULL;
    } else if ((c = calloc(1, sizeof(*c))) == NULL) {
        slot_free(dc);
        db_count_failure(dc, DB_E_NOMEM);
        db_fail(err, DB_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    c->dc = dc;
    c->failed = c->trx_gone = 0;
    if ((c->my = connect_new(dc, dc->database, err)) == NULL) {
        free(c);
        slot_free(dc);
        return NULL;
    }
    return c;
}

void db_put(struct db_conn *c, int broken)
{
    struct db_client *dc;
    int close_it;

    if (c == NULL)
        return;
    dc = c->dc;
    close_it = broken || c->failed;
    /* A transaction never outlives its caller: rolled back, or the connection closed. */
    if (!close_it && (c->my->server_status & SERVER_STATUS_IN_TRANS))
        close_it = mysql_real_query(c->my, "ROLLBACK", 8) != 0;
    pthread_mutex_lock(&dc->pool_mu);
    dc->in_use--;
    close_it = close_it || dc->closing;
    if (!close_it) {
        c->idle_since_ms = clock_now_ms();
        c->trx_gone = 0;
        c->next = dc->idle;
        dc->idle = c;
        dc->n_idle++;
    }
    if (dc->closing)
        pthread_cond_broadcast(&dc->back);  /* db_client_destroy waits for the last */
    else
        pthread_cond_signal(&dc->back);
    pthread_mutex_unlock(&dc->pool_mu);
    if (close_it)
        conn_close(c);
}

unsigned long db_conn_id(const struct db_conn *c)
{
    return mysql_thread_id(c->my);
}

int db_in_transaction(const struct db_conn *c)
{
    return !c->trx_gone && !c->failed && (c->my->server_status & SERVER_STATUS_IN_TRANS);
}

/* name as a quoted identifier (`name`, a ` doubled) into buf; 0, or -1 when it does not
 * fit or is empty. */
static int quote_name(const char *name, char *buf, size_t size)
{
    size_t n = 0;

    if (*name == '\0' || size < 3)
        return -1;
    buf[n++] = '`';
    for (; *name; name++) {
        if (n + 4 > size)
            return -1;
        if (*name == '`')
            buf[n++] = '`';
        buf[n++] = *name;
    }
    buf[n++] = '`';
    buf[n] = '\0';
    return 0;
}

int db_ensure_database(struct db_client *dc, struct db_error *err)
{
    char sql[300], name[140];
    MYSQL *my;
    int rc = DB_OK;

    if (quote_name(dc->database, name, sizeof(name)) != 0) {
        db_count_failure(dc, DB_E_USAGE);
        return db_fail(err, DB_E_USAGE, 0, "the database name \"%.64s\" is not valid",
                       dc->database);
    }
    snprintf(sql, sizeof(sql), "CREATE DATABASE IF NOT EXISTS %s", name);
    if ((my = connect_new(dc, NULL, err)) == NULL)
        return DB_FAIL;
    atomic_fetch_add(&dc->statements, 1);
    if (mysql_real_query(my, sql, strlen(sql)) != 0)
        rc = db_fail_mysql(dc, my, 0, "CREATE DATABASE: ", err);
    mysql_close(my);
    return rc;
}
