/* db_ceiling.c - db-ceiling: what the database commits on this machine, without the
 * service: N connections, each committing one-row UPDATEs as fast as it can for S
 * seconds, every one a transaction of its own (autocommit: with
 * innodb_flush_log_at_trx_commit=1 each waits for the log's flush, as a sale's COMMIT
 * does). ROWS "own": each connection its own row (the commit ceiling); "one": all of them
 * the same row (a hot item: the row's lock is the queue). Prints one JSON line:
 * {"connections":N,"rows":"own","seconds":S,"commits":M,"commits_per_s":R,"failed":F}.
 * Usage: db-ceiling H:P [CONNECTIONS [SECONDS [own|one]]]; the user and password from
 * MYSQL_USER (default inventory) and MYSQL_PASSWORD_FILE or MYSQL_PASSWORD, the database
 * from MYSQL_DB (default inventory). Its table (db_ceiling) is dropped at the end. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "db/db.h"

enum { CONNS_MAX = 256 };

struct ceiling {
    struct db_client *db;
    int one_row;                 /* 1: every connection updates row 0 */
    long long until_ms;          /* monotonic end of the run */
    atomic_llong commits, failed;
};

struct worker {
    struct ceiling *c;
    int id;
};

/* One connection's loop: UPDATE its row (or the shared one) until the end. */
static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct db_error err;
    struct db_conn *cn = db_get(w->c->db, &err);
    char sql[96];

    snprintf(sql, sizeof(sql), "UPDATE db_ceiling SET n = n + 1 WHERE id = %d",
             w->c->one_row ? 0 : w->id);
    while (cn && clock_now_ms() < w->c->until_ms) {
        if (db_run(cn, sql, NULL, 0, NULL, &err) == DB_OK) {
            atomic_fetch_add(&w->c->commits, 1);
        } else {
            atomic_fetch_add(&w->c->failed, 1);
            db_put(cn, 1);
            cn = db_get(w->c->db, &err);
        }
    }
    if (cn == NULL)
        atomic_fetch_add(&w->c->failed, 1);
    db_put(cn, 0);
    return NULL;
}

/* The password from MYSQL_PASSWORD_FILE (its first line) or MYSQL_PASSWORD, into buf. */
static const char *password(char *buf, size_t size)
{
    const char *file = getenv("MYSQL_PASSWORD_FILE");
    FILE *f = file ? fopen(file, "r") : NULL;

    if (f == NULL)
        return getenv("MYSQL_PASSWORD");
    if (fgets(buf, (int)size, f) == NULL)
        buf[0] = '\0';
    fclose(f);
    buf[strcspn(buf, "\r\n")] = '\0';
    return buf;
}

/* Makes the table, one row per connection (row 0 the shared one). DB_OK or DB_FAIL. */
static int table_make(struct db_client *db, int conns, struct db_error *err)
{
    struct db_conn *cn = db_get(db, err);
    int st = cn ? db_run(cn, "CREATE TABLE IF NOT EXISTS db_ceiling (id INT PRIMARY KEY, "
                             "n BIGINT NOT NULL) ENGINE=InnoDB; DELETE FROM db_ceiling",
                         NULL, 0, NULL, err) : DB_FAIL;

    for (int i = 0; st == DB_OK && i <= conns; i++) {
        char sql[80];

        snprintf(sql, sizeof(sql), "INSERT INTO db_ceiling VALUES (%d, 0)", i);
        st = db_run(cn, sql, NULL, 0, NULL, err);
    }
    db_put(cn, st != DB_OK);
    return st;
}

/* Reads argv into *conns, *secs and c->one_row; 0, or -1 (usage printed). */
static int args_read(int argc, char **argv, char (*host)[256], int *port, int *conns,
                     double *secs, struct ceiling *c)
{
    *conns = argc > 2 ? atoi(argv[2]) : 16;
    *secs = argc > 3 ? atof(argv[3]) : 5;
    c->one_row = argc > 4 && strcmp(argv[4], "one") == 0;
    if (argc >= 2 && sscanf(argv[1], "%255[^:]:%d", *host, port) == 2 && *conns >= 1 &&
        *conns <= CONNS_MAX && *secs > 0 && (argc <= 4 || c->one_row || !strcmp(argv[4], "own")))
        return 0;
    fprintf(stderr, "usage: db-ceiling H:P [CONNECTIONS (1..%d) [SECONDS [own|one]]]\n", CONNS_MAX);
    return -1;
}

/* Runs conns workers until c->until_ms, then drops the table. */
static void run(struct ceiling *c, int conns)
{
    struct worker w[CONNS_MAX];
    pthread_t t[CONNS_MAX];
    struct db_error err;
    struct db_conn *cn;

    for (int i = 0; i < conns; i++) {
        w[i] = (struct worker){ .c = c, .id = i + 1 };
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < conns; i++)
        pthread_join(t[i], NULL);
    if ((cn = db_get(c->db, &err)) != NULL)
        db_put(cn, db_run(cn, "DROP TABLE db_ceiling", NULL, 0, NULL, &err) != DB_OK);
}

int main(int argc, char **argv)
{
    char host[256] = "", pw[513];
    const char *user = getenv("MYSQL_USER");
    int port = 0, conns;
    double secs;
    struct ceiling c = { 0 };
    struct db_error err;

    if (args_read(argc, argv, &host, &port, &conns, &secs, &c) != 0)
        return 2;
    struct db_config cfg = { .host = host, .port = port, .user = user ? user : "inventory",
                             .password = password(pw, sizeof(pw)), .database = getenv("MYSQL_DB"),
                             .pool_max = conns + 1 };
    if ((c.db = db_client_create(&cfg, &err)) == NULL || db_ensure_database(c.db, &err) != DB_OK ||
        table_make(c.db, conns, &err) != DB_OK) {
        fprintf(stderr, "db-ceiling: %s\n", err.msg);
        db_client_destroy(c.db);
        return 1;
    }
    c.until_ms = clock_now_ms() + (long long)(secs * 1000);
    run(&c, conns);
    db_client_destroy(c.db);
    printf("{\"connections\":%d,\"rows\":\"%s\",\"seconds\":%g,\"commits\":%lld,"
           "\"commits_per_s\":%.0f,\"failed\":%lld}\n", conns, c.one_row ? "one" : "own", secs,
           (long long)c.commits, (double)c.commits / secs, (long long)c.failed);
    return c.failed > 0 && c.commits == 0;
}
