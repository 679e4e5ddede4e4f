/* db.h - The database layer: the only code that includes mysql.h (MariaDB Connector/C,
 * MySQL's protocol and SQL).
 *
 * A struct db_client stands for one database server (or one node of a Galera cluster)
 * and keeps a pool of connections for the whole instance: the store and the database's
 * lock versions share it. A caller takes a connection (db_get), runs statements on it
 * (db_run: one or several in one round trip), and puts it back (db_put). A connection
 * belongs to one thread between db_get and db_put. A connection put back inside an open
 * transaction is rolled back first (a transaction never outlives its caller), and one
 * that failed on its way (lost, timed out) is closed rather than kept: the next db_get
 * makes a new one.
 *
 * Every call returns DB_OK or DB_FAIL and, on failure, fills a caller-supplied struct
 * db_error with the layer's own kinds (the server's answer, or what became of the
 * connection); db_error_map gives the kinds the layers above share (common/error.h).
 * Nothing here prints; no password is ever written to an error.
 */
#ifndef DB_DB_H
#define DB_DB_H

#include <stddef.h>

#include "common/error.h"

enum db_status {
    DB_OK = RESULT_OK,
    DB_FAIL = RESULT_ERROR
};

enum db_fault {
    DB_E_NONE = 0,
    DB_E_CONNECT,      /* could not connect, or no free connection in time: nothing sent */
    DB_E_LOST,         /* the connection broke (or timed out) with a statement out: it may
                          have run (a COMMIT whose answer was lost may have committed) */
    DB_E_AUTH,         /* the user or password was refused, or the user lacks a right
                          (1044, 1045, 1142, 1227) */
    DB_E_NO_DB,        /* the database named does not exist (1049) */
    DB_E_NO_TABLE,     /* a table named does not exist (1146) */
    DB_E_LOCK_WAIT,    /* a row lock was not had within the lock wait timeout (1205; a
                          FOR UPDATE ... WAIT n that ran out, 3572 likewise; 1969, the
                          max_statement_time ran out): the statement did not run; the
                          transaction is still open */
    DB_E_DEADLOCK,     /* the transaction was rolled back: a deadlock, or Galera's
                          certification found a conflicting write on another node (1213) */
    DB_E_DUP,          /* a unique key already holds the value (1062): nothing inserted */
    DB_E_NOT_READY,    /* the server takes no statements now: a Galera node outside the
                          primary component (1047), a shutdown under way (1053), or no
                          writes (read_only: 1290, 1836) */
    DB_E_USAGE,        /* the caller's mistake: a bad argument, a statement too long */
    DB_E_NOMEM,
    DB_E_OTHER         /* any other answer (its code in code) */
};

struct db_error {
    enum db_fault fault;
    int code;           /* the server's or the client's error number (0: none) */
    char msg[160];      /* one line for a log */
};

/* Fills err (when not NULL); returns DB_FAIL. */
int db_fail(struct db_error *err, enum db_fault fault, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* The boundary: from as the layers above see it (DB_E_CONNECT FAULT_CONNECT; DB_E_LOST
 * FAULT_CONNECTION; DB_E_AUTH FAULT_AUTH; DB_E_NOT_READY FAULT_READONLY; the rest
 * FAULT_REPLY with its name in code: "lock_wait", "deadlock", "duplicate", "no_table",
 * "no_database"). */
void db_error_map(const struct db_error *from, struct error *to);
/* "connect", "lost", "lock_wait", ...: the fault's name, for logs and metrics. */
const char *db_fault_name(enum db_fault fault);

/* --- the client and its pool --- */

struct db_config {
    const char *host;           /* "127.0.0.1"; a name is looked up */
    int port;
    const char *user;           /* NULL: "root" */
    const char *password;       /* NULL: none. Copied, never logged */
    const char *database;       /* NULL: "inventory" */
    long connect_timeout_ms;    /* 0: 1000 (the client counts whole seconds: rounded up) */
    long timeout_ms;            /* a statement's read and write timeout; 0: 5000 */
    int pool_max;               /* connections at most; 0: 64. A db_get past it waits
                                   for one to come back, up to connect_timeout_ms */
};

struct db_client;

/* A client for cfg; connects nobody yet (a server down now is not an error). NULL with
 * err when cfg is bad or memory is short. */
struct db_client *db_client_create(const struct db_config *cfg, struct db_error *err);
/* Closes every connection, once no other thread uses the client. NULL: nothing. */
void db_client_destroy(struct db_client *dc);
/* "HOST:PORT/DATABASE", for logs. */
const char *db_label(const struct db_client *dc);

/* Counters, for /metrics: connections opened, statements run, statements failed (by
 * fault, indexed by enum db_fault), connections in the pool now and in use now. */
struct db_counts {
    long long opened, statements, failed[DB_E_OTHER + 1];
    int idle, in_use;
};
void db_counts(const struct db_client *dc, struct db_counts *out);

struct db_conn;

/* A connection of the pool for the calling thread: an idle one (pinged first when idle
 * over a second: one the server closed meanwhile is replaced), or a new one (connected to
 * the database); past pool_max, waits up to connect_timeout_ms for one to come back. NULL
 * with err (DB_E_CONNECT: nothing was sent; DB_E_AUTH; DB_E_NO_DB). */
struct db_conn *db_get(struct db_client *dc, struct db_error *err);
/* Puts c back (NULL: nothing): rolled back first when a transaction is open on it; closed
 * instead when it failed on its way or broken is set. A variable a caller set on it (SET
 * innodb_lock_wait_timeout = 1) stays with it: put it back broken to drop that. */
void db_put(struct db_conn *c, int broken);
/* The server's id of c's connection (CONNECTION_ID(), what KILL takes). */
unsigned long db_conn_id(const struct db_conn *c);
/* 1 when a transaction is open on c (the server says so). */
int db_in_transaction(const struct db_conn *c);

/* Makes the client's database when it is missing (CREATE DATABASE IF NOT EXISTS, on a
 * connection made without one). DB_OK, or DB_FAIL with err (DB_E_AUTH: the user may not). */
int db_ensure_database(struct db_client *dc, struct db_error *err);

/* What one statement of a db_run gave. */
enum { DB_COLS_MAX = 8, DB_VALUE_MAX = 208 };
struct db_result {
    long long affected;         /* rows changed (INSERT, UPDATE, DELETE); -1 for a query */
    long long insert_id;        /* LAST_INSERT_ID() after it (0: none) */
    int found;                  /* a query: 1 when it gave a row (its first in vals) */
    long long rows;             /* a query: how many rows it gave */
    int cols;                   /* a query: its columns (at most DB_COLS_MAX kept) */
    int null[DB_COLS_MAX];      /* 1 where the first row's value is NULL */
    char vals[DB_COLS_MAX][DB_VALUE_MAX];   /* the first row's values as text, cut to fit */
};

/* Runs sql: one statement, or several separated by ';' sent in one round trip (the
 * server runs them in order and stops at the first that fails). res[i] (when i < nres)
 * gets statement i's result. DB_OK when every statement ran (*failed then -1); DB_FAIL
 * with err, and *failed (may be NULL) the index of the statement that failed (those after
 * it did not run; a transaction opened before it is still open unless err says
 * DB_E_DEADLOCK or DB_E_LOST). res may be NULL when nres is 0. */
int db_run(struct db_conn *c, const char *sql, struct db_result *res, int nres, int *failed,
           struct db_error *err);

/* s as an SQL string literal, quoted and escaped for c's connection ('it\'s'; 'it''s'
 * under NO_BACKSLASH_ESCAPES), into buf; returns buf, or NULL when it does not fit (buf
 * then ""). */
const char *db_quote(struct db_conn *c, const char *s, char *buf, size_t size);

#endif
