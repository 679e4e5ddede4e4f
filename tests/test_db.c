/* test_db.c - The database layer (db/) against a real mariadbd: statements one by one and
 * several in one round trip, an error in the middle, the pool (reuse, its limit, a
 * transaction rolled back when put back), every error typed where it is found (auth,
 * connect, missing table and database, duplicate, lock wait, deadlock, read-only, a killed
 * connection, a client timeout), a server killed and started again, db_quote.
 * Usage: test_db PORT PASSWORD_FILE DOWN_PORT SERVER_PID
 *   PORT: a mariadbd with root@127.0.0.1 without a password and inventory@127.0.0.1 with
 *   the password in PASSWORD_FILE's first line; DOWN_PORT: nothing listens there;
 *   SERVER_PID: the mariadbd, killed (kill -9) once, which the caller starts again on the
 *   same port and data (0: that part is left out). */
#include "db/db.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/clock.h"
#include "tests/test.h"

static int port, down_port;
static pid_t server_pid;
static char password[128];

/* A client for user (NULL: inventory, with its password; "root": no password). */
static struct db_client *client_as(const char *user, const char *pw, int p, int pool_max,
                                   long connect_timeout_ms, long timeout_ms)
{
    struct db_config cfg = { .host = "127.0.0.1", .port = p, .database = "inventory",
                             .user = user ? user : "inventory",
                             .password = user ? pw : password, .pool_max = pool_max,
                             .connect_timeout_ms = connect_timeout_ms,
                             .timeout_ms = timeout_ms };
    struct db_error err;
    struct db_client *dc = db_client_create(&cfg, &err);

    if (dc == NULL) {
        fprintf(stderr, "db_client_create: %s\n", err.msg);
        exit(2);
    }
    return dc;
}

/* Runs sql on a connection of dc taken and put back; DB_OK or DB_FAIL with err. */
static int run_once(struct db_client *dc, const char *sql, struct db_result *res, int nres,
                    struct db_error *err)
{
    struct db_conn *c = db_get(dc, err);
    int rc;

    if (c == NULL)
        return DB_FAIL;
    rc = db_run(c, sql, res, nres, NULL, err);
    db_put(c, 0);
    return rc;
}

/* The first value of sql's first row as a number (-999: no row, -1000: an error). */
static long long value_of(struct db_client *dc, const char *sql)
{
    struct db_result r;
    struct db_error err;

    if (run_once(dc, sql, &r, 1, &err) != DB_OK) {
        printf("  (%s: %s)\n", sql, err.msg);
        return -1000;
    }
    return r.found ? atoll(r.vals[0]) : -999;
}

static void test_connect_and_run(struct db_client *root)
{
    struct db_client *dc = client_as(NULL, NULL, port, 0, 0, 0);
    struct db_error err;
    struct db_result r;
    struct db_counts n;
    char label[64];

    run_once(root, "DROP DATABASE IF EXISTS inventory", NULL, 0, &err);
    test_cond("a missing database: db_get gives DB_E_NO_DB (1049)",
              db_get(dc, &err) == NULL && err.fault == DB_E_NO_DB && err.code == 1049);
    test_cond("db_ensure_database makes it", db_ensure_database(dc, &err) == DB_OK);
    test_cond("  and again: it is there, nothing to do", db_ensure_database(dc, &err) == DB_OK);
    test_cond("a query: one row, three columns, a NULL",
              run_once(dc, "SELECT 1, 'two', NULL", &r, 1, &err) == DB_OK && r.found &&
                  r.rows == 1 && r.cols == 3 && r.affected == -1 &&
                  strcmp(r.vals[0], "1") == 0 && strcmp(r.vals[1], "two") == 0 &&
                  !r.null[1] && r.null[2]);
    test_cond("utf8mb4 both ways",
              run_once(dc, "SELECT 'caf\xc3\xa9 \xf0\x9f\x93\xa6', @@character_set_client",
                       &r, 1, &err) == DB_OK &&
                  strcmp(r.vals[0], "caf\xc3\xa9 \xf0\x9f\x93\xa6") == 0 &&
                  strcmp(r.vals[1], "utf8mb4") == 0);
    test_cond("a value cut to DB_VALUE_MAX - 1, columns to DB_COLS_MAX",
              run_once(dc, "SELECT REPEAT('x', 300), 2, 3, 4, 5, 6, 7, 8, 9, 10", &r, 1,
                       &err) == DB_OK && strlen(r.vals[0]) == DB_VALUE_MAX - 1 &&
                  r.cols == DB_COLS_MAX && strcmp(r.vals[7], "8") == 0);
    db_counts(dc, &n);
    test_cond("counted: three connections opened (two without a database, the pool's), "
              "one idle",
              n.opened == 3 && n.idle == 1 && n.in_use == 0 && n.failed[DB_E_NO_DB] == 1);
    snprintf(label, sizeof(label), "127.0.0.1:%d/inventory", port);
    test_cond("the label names the server and the database", strcmp(db_label(dc), label) == 0);
    db_client_destroy(dc);
}

static void test_multi(struct db_client *dc)
{
    struct db_result r[7];
    struct db_error err;
    struct db_conn *c = db_get(dc, &err);
    int failed = -5;

    test_cond("several statements in one round trip, a result each",
              c && db_run(c, "CREATE TABLE IF NOT EXISTS t (k VARCHAR(64) PRIMARY KEY, "
                             "v BIGINT NOT NULL); DELETE FROM t; "
                             "INSERT INTO t VALUES ('a', 1), ('b', 2); "
                             "UPDATE t SET v = v WHERE k = 'a'; "
                             "SELECT COUNT(*), SUM(v) FROM t; SELECT v FROM t WHERE k = 'zz'",
                          r, 6, &failed, &err) == DB_OK && failed == -1);
    test_cond("  the INSERT: 2 rows; the UPDATE to the same value: 1 (CLIENT_FOUND_ROWS)",
              r[2].affected == 2 && r[3].affected == 1);
    test_cond("  the SELECT: 2 rows summing 3; the empty one: no row",
              r[4].found && strcmp(r[4].vals[0], "2") == 0 && strcmp(r[4].vals[1], "3") == 0 &&
                  !r[5].found && r[5].rows == 0 && r[5].affected == -1);
    test_cond("an AUTO_INCREMENT's id, more statements than results kept",
              db_run(c, "CREATE TABLE IF NOT EXISTS seq (id BIGINT AUTO_INCREMENT PRIMARY KEY, "
                        "x INT); INSERT INTO seq (x) VALUES (1); INSERT INTO seq (x) VALUES (2)",
                     r, 2, &failed, &err) == DB_OK && r[1].insert_id >= 1);
    db_put(c, 0);
}

static void test_multi_errors(struct db_client *dc)
{
    struct db_result r[3];
    struct db_error err;
    struct db_conn *c = db_get(dc, &err);
    int failed = -5;

    test_cond("an error in the middle: DB_FAIL, the failed index 1, DB_E_DUP (1062)",
              c && db_run(c, "INSERT INTO t VALUES ('c', 3); INSERT INTO t VALUES ('a', 9); "
                        "INSERT INTO t VALUES ('d', 4)", r, 3, &failed, &err) == DB_FAIL &&
                  failed == 1 && err.fault == DB_E_DUP && err.code == 1062);
    test_cond("  the statement before it ran, the one after did not",
              db_run(c, "SELECT SUM(k = 'c'), SUM(k = 'd') FROM t", r, 1, NULL, &err) ==
                      DB_OK && strcmp(r[0].vals[0], "1") == 0 && strcmp(r[0].vals[1], "0") == 0);
    test_cond("a syntax error in the second: failed 1, DB_E_OTHER (1064)",
              db_run(c, "SELECT 1; SELEC 2; SELECT 3", r, 3, &failed, &err) == DB_FAIL &&
                  failed == 1 && err.fault == DB_E_OTHER && err.code == 1064);
    test_cond("a missing table first: failed 0, DB_E_NO_TABLE (1146)",
              db_run(c, "SELECT * FROM nosuch; SELECT 1", r, 2, &failed, &err) == DB_FAIL &&
                  failed == 0 && err.fault == DB_E_NO_TABLE && err.code == 1146);
    test_cond("  and the connection is in step after each",
              db_run(c, "SELECT 41 + 1", r, 1, NULL, &err) == DB_OK &&
                  strcmp(r[0].vals[0], "42") == 0);
    test_cond("a statement ending in ';': one result",
              db_run(c, "SELECT 6;", r, 2, &failed, &err) == DB_OK &&
                  strcmp(r[0].vals[0], "6") == 0 && r[1].found == 0);
    test_cond("no statement: DB_E_USAGE", db_run(c, NULL, NULL, 0, NULL, &err) == DB_FAIL &&
                                              err.fault == DB_E_USAGE);
    db_put(c, 0);
}

static void test_transaction_put_back(struct db_client *dc)
{
    struct db_error err;
    struct db_conn *c = db_get(dc, &err);
    int failed;

    test_cond("a transaction whose second INSERT fails: still open",
              c && db_run(c, "START TRANSACTION; INSERT INTO t VALUES ('e', 5); "
                             "INSERT INTO t VALUES ('a', 1); COMMIT", NULL, 0, &failed,
                          &err) == DB_FAIL && failed == 2 && db_in_transaction(c));
    db_put(c, 0);
    test_cond("  put back: rolled back (its row is not there)",
              value_of(dc, "SELECT COUNT(*) FROM t WHERE k = 'e'") == 0);
    c = db_get(dc, &err);
    test_cond("  the connection came back outside any transaction",
              c && !db_in_transaction(c) &&
                  db_run(c, "START TRANSACTION; INSERT INTO t VALUES ('f', 6)", NULL, 0, NULL,
                         &err) == DB_OK && db_in_transaction(c));
    db_put(c, 0);
    test_cond("a transaction left open by its caller: rolled back on db_put",
              value_of(dc, "SELECT COUNT(*) FROM t WHERE k = 'f'") == 0);
}

static void test_pool_reuse(struct db_client *dc)
{
    struct db_counts before, after;
    struct db_error err;
    struct db_conn *a, *b;
    int i, ok = 1;

    db_counts(dc, &before);
    for (i = 0; i < 20; i++)
        ok = ok && value_of(dc, "SELECT 7") == 7;
    a = db_get(dc, &err);
    b = db_get(dc, &err);
    test_cond("two at once: two connections, two ids", a && b && db_conn_id(a) != db_conn_id(b));
    db_put(a, 0);
    db_put(b, 0);
    db_counts(dc, &after);
    test_cond("20 statements one after another: no new connection, the second one's only",
              ok && after.opened - before.opened <= 1 && after.idle >= 1 && after.in_use == 0);
    test_cond("  counted: statements run", after.statements - before.statements >= 20);
    a = db_get(dc, &err);
    db_put(a, 1);
    db_counts(dc, &before);
    test_cond("a connection put back broken is closed, not kept", before.idle == after.idle - 1);
}

/* A thread that puts a connection back after a while. */
struct later {
    struct db_conn *c;
    long ms;
};

static void *put_later(void *arg)
{
    struct later *l = arg;

    clock_sleep_ms(l->ms);
    db_put(l->c, 0);
    return NULL;
}

static void test_pool_limit(void)
{
    struct db_client *dc = client_as(NULL, NULL, port, 2, 1000, 0);
    struct db_error err;
    struct db_conn *a = db_get(dc, &err), *b = db_get(dc, &err), *c;
    long long t0 = clock_now_ms(), took;
    struct later l;
    pthread_t th;

    c = db_get(dc, &err);
    took = clock_now_ms() - t0;
    printf("  (a db_get past pool_max 2 gave up after %lld ms; connect timeout 1000 ms)\n",
           took);
    test_cond("pool_max reached: db_get waits the connect timeout, then DB_E_CONNECT",
              a && b && c == NULL && err.fault == DB_E_CONNECT && took >= 950 && took < 1500);
    l = (struct later){ .c = b, .ms = 300 };
    pthread_create(&th, NULL, put_later, &l);
    t0 = clock_now_ms();
    c = db_get(dc, &err);
    took = clock_now_ms() - t0;
    pthread_join(th, NULL);
    test_cond("  a db_get waiting gets the one put back meanwhile",
              c == b && took >= 250 && took < 900);
    db_put(a, 0);
    db_put(c, 0);
    db_client_destroy(dc);
}

/* Many threads on a small pool: each takes, runs, puts back. */
static void *hammer(void *arg)
{
    struct db_client *dc = arg;
    long bad = 0;
    int i;

    for (i = 0; i < 50; i++)
        bad += value_of(dc, "SELECT 5") != 5;
    return (void *)bad;
}

static void test_threads(void)
{
    struct db_client *dc = client_as(NULL, NULL, port, 3, 5000, 0);
    pthread_t th[8];
    struct db_counts n;
    void *bad;
    long bads = 0;
    int i;

    for (i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, hammer, dc);
    for (i = 0; i < 8; i++) {
        pthread_join(th[i], &bad);
        bads += (long)bad;
    }
    db_counts(dc, &n);
    test_cond("8 threads on a pool of 3, 400 statements: all ran, at most 3 connections",
              bads == 0 && n.opened <= 3 && n.in_use == 0 && n.statements == 400);
    db_client_destroy(dc);
}

/* A server that takes the connection and never says a word: DB_E_CONNECT in about the
 * connect timeout, not the statement timeout. */
static void test_silent(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct db_client *dc;
    struct db_error err;
    long long t0, took;

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        test_cond("a silent listener to connect to", 0);
        return;
    }
    dc = client_as(NULL, NULL, ntohs(a.sin_port), 0, 1000, 5000);
    t0 = clock_now_ms();
    test_cond("a server that never answers: DB_E_CONNECT",
              db_get(dc, &err) == NULL && err.fault == DB_E_CONNECT);
    took = clock_now_ms() - t0;
    printf("  (silent: gave up after %lld ms, connect timeout 1000 ms, statement timeout "
           "5000 ms: %s)\n", took, err.msg);
    test_cond("  within about the connect timeout", took >= 900 && took < 2500);
    db_client_destroy(dc);
    close(fd);
}

static void test_refused(struct db_client *root)
{
    struct db_client *dc = client_as("inventory", "not-the-password", port, 0, 0, 0);
    struct db_config cfg;
    struct db_error err;
    long long t0, took;
    char reader_pw[64], sql[300];

    test_cond("a wrong password: DB_E_AUTH (1045), nothing handed out",
              db_get(dc, &err) == NULL && err.fault == DB_E_AUTH && err.code == 1045);
    test_cond("  its message does not hold the password", strstr(err.msg, "not-the") == NULL);
    db_client_destroy(dc);
    dc = client_as(NULL, NULL, down_port, 0, 1000, 0);
    t0 = clock_now_ms();
    test_cond("nothing listening: DB_E_CONNECT",
              db_get(dc, &err) == NULL && err.fault == DB_E_CONNECT);
    took = clock_now_ms() - t0;
    printf("  (refused in %lld ms: %s)\n", took, err.msg);
    test_cond("  within the connect timeout", took < 1200);
    db_client_destroy(dc);
    test_silent();
    /* A user with SELECT only (its password made here, now): a write refused is
     * DB_E_AUTH (1142), and so is making a database. */
    snprintf(reader_pw, sizeof(reader_pw), "r%llx%x", clock_now_us(), (unsigned)getpid());
    snprintf(sql, sizeof(sql), "DROP USER IF EXISTS 'reader'@'127.0.0.1'; "
             "CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY '%s'; "
             "GRANT SELECT ON inventory.* TO 'reader'@'127.0.0.1'", reader_pw);
    run_once(root, sql, NULL, 0, &err);
    dc = client_as("reader", reader_pw, port, 0, 0, 0);
    test_cond("a right missing: DB_E_AUTH (1142)",
              run_once(dc, "INSERT INTO t VALUES ('r', 1)", NULL, 0, &err) == DB_FAIL &&
                  err.fault == DB_E_AUTH && err.code == 1142);
    db_client_destroy(dc);
    run_once(root, "DROP DATABASE IF EXISTS inventory_other", NULL, 0, &err);
    cfg = (struct db_config){ .host = "127.0.0.1", .port = port, .user = "reader",
                              .password = reader_pw, .database = "inventory_other" };
    dc = db_client_create(&cfg, &err);
    test_cond("db_ensure_database without the right to CREATE: DB_E_AUTH (1044)",
              dc && db_ensure_database(dc, &err) == DB_FAIL && err.fault == DB_E_AUTH &&
                  err.code == 1044);
    db_client_destroy(dc);
}

/* Runs sql on c, timed: its status; *took the milliseconds it took. */
static int timed_run(struct db_conn *c, const char *sql, long long *took, struct db_error *err)
{
    long long t0 = clock_now_ms();
    int rc = db_run(c, sql, NULL, 0, NULL, err);

    *took = clock_now_ms() - t0;
    return rc;
}

static void test_lock_wait(struct db_client *dc)
{
    struct db_error err;
    struct db_conn *a = db_get(dc, &err), *b = db_get(dc, &err);
    long long took;

    test_cond("two transactions, each holding a row (FOR UPDATE)",
              a && b &&
                  db_run(a, "START TRANSACTION; SELECT v FROM t WHERE k = 'a' FOR UPDATE",
                         NULL, 0, NULL, &err) == DB_OK &&
                  db_run(b, "SET innodb_lock_wait_timeout = 1; START TRANSACTION; "
                            "SELECT v FROM t WHERE k = 'b' FOR UPDATE",
                         NULL, 0, NULL, &err) == DB_OK);
    test_cond("the second asks for the first's row: DB_E_LOCK_WAIT (1205)",
              timed_run(b, "SELECT v FROM t WHERE k = 'a' FOR UPDATE", &took, &err) ==
                      DB_FAIL && err.fault == DB_E_LOCK_WAIT && err.code == 1205);
    printf("  (innodb_lock_wait_timeout 1 s: refused after %lld ms)\n", took);
    test_cond("  after about 1 s", took >= 900 && took < 2500);
    test_cond("  its transaction still open, its own row still held (NOWAIT refused)",
              db_in_transaction(b) &&
                  db_run(a, "SELECT v FROM t WHERE k = 'b' FOR UPDATE NOWAIT", NULL, 0, NULL,
                         &err) == DB_FAIL && err.fault == DB_E_LOCK_WAIT);
    test_cond("FOR UPDATE WAIT 1: DB_E_LOCK_WAIT after about 1 s",
              timed_run(b, "SELECT v FROM t WHERE k = 'a' FOR UPDATE WAIT 1", &took, &err) ==
                      DB_FAIL && err.fault == DB_E_LOCK_WAIT && took >= 900 && took < 2500);
    printf("  (FOR UPDATE WAIT 1: refused after %lld ms, error %d)\n", took, err.code);
    db_put(a, 0);
    db_put(b, 1);       /* its lock wait timeout is not the pool's */
}

/* A transaction's next statement, run by a thread. */
struct step {
    struct db_conn *c;
    const char *sql;
    int rc;
    struct db_error err;
};

static void *step_run(void *arg)
{
    struct step *s = arg;

    s->rc = db_run(s->c, s->sql, NULL, 0, NULL, &s->err);
    return NULL;
}

static void test_deadlock(struct db_client *dc)
{
    struct db_error err;
    struct step sa = { .sql = "SELECT v FROM t WHERE k = 'b' FOR UPDATE" };
    struct step sb = { .sql = "SELECT v FROM t WHERE k = 'a' FOR UPDATE" };
    struct step *lost, *won;
    pthread_t th;

    sa.c = db_get(dc, &err);
    sb.c = db_get(dc, &err);
    if (!sa.c || !sb.c ||
        db_run(sa.c, "START TRANSACTION; SELECT v FROM t WHERE k = 'a' FOR UPDATE", NULL, 0,
               NULL, &err) != DB_OK ||
        db_run(sb.c, "START TRANSACTION; SELECT v FROM t WHERE k = 'b' FOR UPDATE", NULL, 0,
               NULL, &err) != DB_OK) {
        test_cond("a deadlock: two transactions to set up", 0);
        return;
    }
    pthread_create(&th, NULL, step_run, &sa);
    clock_sleep_ms(300);        /* the first waits for 'b' */
    step_run(&sb);
    pthread_join(th, NULL);
    lost = sa.rc == DB_FAIL ? &sa : &sb;
    won = lost == &sa ? &sb : &sa;
    test_cond("a deadlock: one of the two gets DB_E_DEADLOCK (1213), the other its row",
              lost->rc == DB_FAIL && lost->err.fault == DB_E_DEADLOCK &&
                  lost->err.code == 1213 && won->rc == DB_OK);
    test_cond("  the one refused is no longer in a transaction, the other is",
              !db_in_transaction(lost->c) && db_in_transaction(won->c));
    db_put(sa.c, 0);
    db_put(sb.c, 0);
}

static void test_read_only(struct db_client *root, struct db_client *dc)
{
    struct db_counts before, after;
    struct db_error err;
    struct db_conn *c = db_get(dc, &err);

    run_once(root, "SET GLOBAL read_only = 1", NULL, 0, &err);
    db_counts(dc, &before);
    test_cond("a server in read-only: a write is DB_E_NOT_READY (1290)",
              c && db_run(c, "INSERT INTO t VALUES ('ro', 1)", NULL, 0, NULL, &err) == DB_FAIL &&
                  err.fault == DB_E_NOT_READY && err.code == 1290);
    db_put(c, 0);
    db_counts(dc, &after);
    test_cond("  that connection is closed when put back", after.idle == before.idle);
    run_once(root, "SET GLOBAL read_only = 0", NULL, 0, &err);
}

static void test_killed(struct db_client *root, struct db_client *dc)
{
    struct db_client *slow;
    struct db_counts before, after;
    struct db_error err;
    struct db_conn *c = db_get(dc, &err);
    char sql[64];
    long long took;

    snprintf(sql, sizeof(sql), "KILL %lu", c ? db_conn_id(c) : 0UL);
    test_cond("KILL of a connection from another",
              c && run_once(root, sql, NULL, 0, &err) == DB_OK);
    db_counts(dc, &before);
    test_cond("  its next statement: DB_E_LOST",
              db_run(c, "SELECT 1", NULL, 0, NULL, &err) == DB_FAIL && err.fault == DB_E_LOST);
    printf("  (%s)\n", err.msg);
    test_cond("  and the one after it too, without a word to the server",
              db_run(c, "SELECT 1", NULL, 0, NULL, &err) == DB_FAIL && err.fault == DB_E_LOST);
    db_put(c, 0);
    db_counts(dc, &after);
    test_cond("  put back: closed, not kept", after.idle == before.idle && after.in_use == 0);
    test_cond("  counted as lost", after.failed[DB_E_LOST] >= 2);
    slow = client_as(NULL, NULL, port, 0, 0, 1000);
    c = db_get(slow, &err);
    test_cond("a statement past the client's timeout (1 s): DB_E_LOST",
              c && timed_run(c, "SELECT SLEEP(3)", &took, &err) == DB_FAIL &&
                  err.fault == DB_E_LOST);
    printf("  (timeout 1000 ms: gave up after %lld ms, error %d)\n", took, err.code);
    test_cond("  after about 1 s", took >= 900 && took < 2500);
    db_put(c, 0);
    db_client_destroy(slow);
}

/* Waits until a new connection works (the server is back), 30 s at most; 1 when it does. */
static int server_back(void)
{
    struct db_client *probe = client_as("root", NULL, port, 0, 1000, 0);
    struct db_error err;
    long long until = clock_now_ms() + 30000;
    int up = 0;

    while (!(up = run_once(probe, "SELECT 1", NULL, 0, &err) == DB_OK) &&
           clock_now_ms() < until)
        clock_sleep_ms(100);
    db_client_destroy(probe);
    return up;
}

static void test_restart(struct db_client *dc)
{
    struct db_error err;
    struct db_conn *a = db_get(dc, &err), *b = db_get(dc, &err), *x = db_get(dc, &err);
    struct db_counts n;
    long long t0;

    db_put(a, 0);
    db_put(b, 0);           /* two idle, one in use, when the server dies */
    kill(server_pid, SIGKILL);
    clock_sleep_ms(300);
    test_cond("the server killed (kill -9): a statement out is DB_E_LOST",
              x && db_run(x, "SELECT 1", NULL, 0, NULL, &err) == DB_FAIL &&
                  err.fault == DB_E_LOST);
    db_put(x, 0);
    t0 = clock_now_ms();
    test_cond("the server started again (same port, same data)", server_back());
    printf("  (back after %lld ms)\n", clock_now_ms() - t0);
    clock_sleep_ms(1100);   /* the idle ones are pinged before they are handed out */
    db_counts(dc, &n);
    test_cond("  the pool still holds the connections the old server closed", n.idle >= 2);
    test_cond("  the first db_get after it: a working connection, the rows kept",
              value_of(dc, "SELECT COUNT(*) FROM t WHERE k IN ('a', 'b')") == 2);
    test_cond("  and the next ones too", value_of(dc, "SELECT 3") == 3 &&
                                             value_of(dc, "SELECT 4") == 4);
}

static void test_quote(struct db_client *dc)
{
    struct db_error err;
    struct db_conn *c = db_get(dc, &err);
    const char *s = "it's a \\ test";
    char buf[64], sql[100];
    struct db_result r;

    test_cond("db_quote: a quote and a backslash escaped, quoted",
              c && db_quote(c, s, buf, sizeof(buf)) == buf &&
                  strcmp(buf, "'it\\'s a \\\\ test'") == 0);
    snprintf(sql, sizeof(sql), "SELECT %s", buf);
    test_cond("  the server reads it back as it was",
              db_run(c, sql, &r, 1, NULL, &err) == DB_OK && strcmp(r.vals[0], s) == 0);
    test_cond("  what just fits: kept ('abc' in 6)", db_quote(c, "abc", buf, 6) == buf);
    test_cond("  what does not: NULL, the buffer empty (in 5)",
              db_quote(c, "abc", buf, 5) == NULL && buf[0] == '\0');
    test_cond("  the escape counted: a'b needs 7, not 6",
              db_quote(c, "a'b", buf, 6) == NULL && db_quote(c, "a'b", buf, 7) == buf);
    db_put(c, 0);
}

static void test_error_map(void)
{
    static const struct {
        enum db_fault from;
        enum fault up;
        const char *code;
    } cases[] = {
        { DB_E_CONNECT, FAULT_CONNECT, "" },   { DB_E_LOST, FAULT_CONNECTION, "" },
        { DB_E_AUTH, FAULT_AUTH, "" },         { DB_E_NOT_READY, FAULT_READONLY, "" },
        { DB_E_DUP, FAULT_REPLY, "duplicate" }, { DB_E_LOCK_WAIT, FAULT_REPLY, "lock_wait" },
        { DB_E_DEADLOCK, FAULT_REPLY, "deadlock" }, { DB_E_NO_TABLE, FAULT_REPLY, "no_table" },
        { DB_E_NO_DB, FAULT_REPLY, "no_database" },
    };
    struct db_error from;
    struct error up;
    size_t i;
    int ok = 1;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        db_fail(&from, cases[i].from, 1, "kind %s", db_fault_name(cases[i].from));
        db_error_map(&from, &up);
        ok = ok && up.fault == cases[i].up && strcmp(up.code, cases[i].code) == 0 &&
             strcmp(up.msg, from.msg) == 0;
    }
    test_cond("db_error_map: each kind as the layers above see it", ok);
}

/* The password file's first line. */
static void read_password(const char *path)
{
    FILE *f = fopen(path, "r");

    if (f == NULL || fgets(password, sizeof(password), f) == NULL) {
        fprintf(stderr, "cannot read the password file %s\n", path);
        exit(2);
    }
    fclose(f);
    password[strcspn(password, "\r\n")] = '\0';
}

int main(int argc, char **argv)
{
    struct db_client *root, *dc;

    if (argc != 5) {
        fprintf(stderr, "usage: test_db PORT PASSWORD_FILE DOWN_PORT SERVER_PID\n");
        return 2;
    }
    port = atoi(argv[1]), down_port = atoi(argv[3]), server_pid = (pid_t)atol(argv[4]);
    read_password(argv[2]);
    root = client_as("root", NULL, port, 0, 0, 0);
    test_error_map();
    test_connect_and_run(root);
    dc = client_as(NULL, NULL, port, 0, 0, 0);
    test_multi(dc);
    test_multi_errors(dc);
    test_transaction_put_back(dc);
    test_pool_reuse(dc);
    test_pool_limit();
    test_threads();
    test_refused(root);
    test_lock_wait(dc);
    test_deadlock(dc);
    test_read_only(root, dc);
    test_killed(root, dc);
    test_quote(dc);
    if (server_pid > 0)
        test_restart(dc);
    db_client_destroy(dc);
    db_client_destroy(root);
    return test_report();
}
