/* internal.h - What the database layer's files share: the connection, the client and its
 * pool, the error map. Only db/ includes it (and mysql.h, MariaDB Connector/C). */
#ifndef DB_INTERNAL_H
#define DB_INTERNAL_H

#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>

#include "db/db.h"

/* A connection idle longer than this is pinged before it is handed out again: a server
 * restarted meanwhile has closed it, and a new one would work. */
enum { DB_PING_IDLE_MS = 1000 };

/* One connection of the pool. Between db_get and db_put it belongs to the thread that
 * took it (nothing else reads it); in the idle stack, to the pool (under pool_mu). */
struct db_conn {
    MYSQL *my;
    struct db_client *dc;
    struct db_conn *next;         /* the next idle one (in the idle stack only) */
    long long idle_since_ms;      /* monotonic: when it was put back */
    int failed;                   /* lost, timed out or refused by the client library:
                                     closed when put back, never handed out again */
    int trx_gone;                 /* a deadlock (or a lost connection) ended the
                                     transaction the server's last status still shows */
};

struct db_client {
    char *host, *user, *password, *database;   /* copies; password wiped when freed */
    int port;
    long connect_timeout_ms, timeout_ms;
    int pool_max;
    char label[160];              /* "HOST:PORT/DATABASE" */

    /* The pool. pool_mu guards idle, n_idle, in_use and closing; back is signalled when
     * a connection comes back or a slot frees (a db_get past pool_max waits on it). */
    pthread_mutex_t pool_mu;
    pthread_cond_t back;
    struct db_conn *idle;         /* a stack: the last put back is handed out first */
    int n_idle;
    int in_use;                   /* handed out, or being connected (a slot taken) */
    int closing;                  /* db_client_destroy under way: puts close */

    /* Counters: atomics, written by any thread without pool_mu. */
    atomic_llong opened, statements, failed[DB_E_OTHER + 1];
};

/* error.c: the layer's fault for a server's or the client library's error number;
 * connecting: during mysql_real_connect (nothing was sent: a broken link is
 * DB_E_CONNECT, not DB_E_LOST). */
enum db_fault db_fault_of(unsigned code, int connecting);
/* error.c: fills err from mysql's last error (fault by db_fault_of), the server's message
 * and number in msg, prefixed by what (may be ""); counts the failure on dc; returns
 * DB_FAIL. */
int db_fail_mysql(struct db_client *dc, MYSQL *my, int connecting, const char *what,
                  struct db_error *err);
/* error.c: 1 when code is the client library's own (2000..2999, 5000..), not the
 * server's answer. */
int db_code_is_client(unsigned code);
/* error.c: counts a failure of fault on dc (dc may be NULL). */
void db_count_failure(struct db_client *dc, enum db_fault fault);

#endif
