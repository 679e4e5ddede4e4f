/* test_dblock.c - The database's lock versions (v12 to v15) against a real mariadbd: each
 * one's exclusion and, where a version is unsafe by design, its flaw happening; v14's
 * fence in a transaction; v15's wait in the database and its holder's connection killed.
 * Usage: test_dblock PORT PASSWORD_FILE [LIBFAKETIME]: the user inventory's password in
 * the file's first line, root@127.0.0.1 without one (the checks' own look at the tables);
 * with LIBFAKETIME, a second process whose clock runs a minute ahead tries v13 and v14. */
#include "common/clock.h"
#include "lock/lock.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/test.h"

static int port;
static char password[128];
static const char *password_file, *faketime_lib, *self_exe;
static struct db_client *pool, *admin;   /* the user inventory's; root's, for the checks */

/* A client of the database on port as user (password: NULL for none); exits when it
 * cannot be made. */
static struct db_client *db_new(int on_port, const char *user, const char *pw)
{
    struct db_config cfg = { .host = "127.0.0.1", .port = on_port, .user = user,
                             .password = pw, .database = "inventory", .pool_max = 16 };
    struct db_error err = { 0 };
    struct db_client *dc = db_client_create(&cfg, &err);

    if (dc == NULL) {
        fprintf(stderr, "test_dblock: db_client_create: %s\n", err.msg);
        exit(2);
    }
    return dc;
}

/* The first value of the first row of the query fmt formats (root's), as a number; -1
 * when there is no row, -2 when it failed. */
static long long sql_int(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static long long sql_int(const char *fmt, ...)
{
    char sql[512];
    struct db_result res[1];
    struct db_error err = { 0 };
    struct db_conn *c = db_get(admin, &err);
    long long v = -2;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof(sql), fmt, ap);
    va_end(ap);
    if (c && db_run(c, sql, res, 1, NULL, &err) == DB_OK)
        v = !res[0].found ? -1 : res[0].null[0] ? 0 : atoll(res[0].vals[0]);
    else
        fprintf(stderr, "test_dblock: %s: %s\n", sql, err.msg);
    db_put(c, 0);
    return v;
}

/* The first value of the first row of sql (root's) into buf ("" when none); returns buf. */
static const char *sql_text(char (*buf)[DB_VALUE_MAX], const char *sql)
{
    struct db_result res[1];
    struct db_error err = { 0 };
    struct db_conn *c = db_get(admin, &err);

    (*buf)[0] = '\0';
    if (c && db_run(c, sql, res, 1, NULL, &err) == DB_OK && res[0].found)
        snprintf(*buf, sizeof(*buf), "%s", res[0].vals[0]);
    db_put(c, 0);
    return *buf;
}

/* Runs sql as root; 1 when it ran. */
static int sql_do(const char *sql)
{
    struct db_error err = { 0 };
    struct db_conn *c = db_get(admin, &err);
    int ok = c && db_run(c, sql, NULL, 0, NULL, &err) == DB_OK;

    if (!ok)
        fprintf(stderr, "test_dblock: %s: %s\n", sql, err.msg);
    db_put(c, 0);
    return ok;
}

/* A lock client of version on dc (ttl_ms, polling every 5 ms); exits when it fails. */
static struct lock_client *client(const char *version, struct db_client *dc, long ttl_ms,
                                  const char *instance)
{
    struct lock_config cfg = { .db = dc, .ttl_ms = ttl_ms, .retry_ms = 5,
                               .instance_id = instance };
    struct error err = { 0 };
    struct lock_client *lc = lock_client_create(lock_find(version), &cfg, &err);

    if (lc == NULL) {
        fprintf(stderr, "test_dblock: lock_client_create %s: %s\n", version, err.msg);
        exit(2);
    }
    return lc;
}

/* Another owner, on its own thread, tries item for wait_ms, and gives it back after
 * hold_ms when granted. */
struct rival {
    struct lock_client *lc;
    const char *item;
    long wait_ms, hold_ms;
    int status;
    long long waited_ms;
    pthread_t thread;
};

static void *rival_main(void *arg)
{
    struct rival *rv = arg;
    struct lock_grant g;
    struct error err = { 0 };
    long long t0 = clock_now_ms();

    rv->status = lock_acquire(rv->lc, rv->item, rv->wait_ms, &g, NULL, &err);
    rv->waited_ms = clock_now_ms() - t0;
    if (rv->status == LOCK_ERROR)
        fprintf(stderr, "test_dblock: rival: %s\n", err.msg);
    if (rv->status == LOCK_OK) {
        clock_sleep_ms(rv->hold_ms);
        lock_release(rv->lc, &g, NULL, NULL, &err);
    }
    return NULL;
}

static void rival_start(struct rival *rv, struct lock_client *lc, const char *item,
                        long wait_ms)
{
    *rv = (struct rival){ .lc = lc, .item = item, .wait_ms = wait_ms, .status = -9 };
    pthread_create(&rv->thread, NULL, rival_main, rv);
}

static int rival_join(struct rival *rv)
{
    pthread_join(rv->thread, NULL);
    return rv->status;
}

/* The rival's try, waited for: its status (*waited_ms: how long it took, may be NULL). */
static int rival_try(struct lock_client *lc, const char *item, long wait_ms,
                     long long *waited_ms)
{
    struct rival rv;

    rival_start(&rv, lc, item, wait_ms);
    rival_join(&rv);
    if (waited_ms)
        *waited_ms = rv.waited_ms;
    return rv.status;
}

static int has(const char *s, const char *part)
{
    return strstr(s, part) != NULL;
}

/* test_cond with a formatted description. */
static void check(int cond, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check(int cond, const char *fmt, ...)
{
    char d[240];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(d, sizeof(d), fmt, ap);
    va_end(ap);
    test_cond(d, cond);
}

/* The owner named by item's row of version's table ("" when none). */
static const char *row_owner(char (*buf)[DB_VALUE_MAX], const char *version, const char *item)
{
    char sql[200];

    snprintf(sql, sizeof(sql), "SELECT owner FROM %s WHERE name='%s'",
             strcmp(version, "v12") == 0 ? "locks" : "leases", item);
    return sql_text(buf, sql);
}

/* The pool's connections in use now (held by a grant, or leaked). */
static int in_use(void)
{
    struct db_counts n;

    db_counts(pool, &n);
    return n.in_use;
}

/* --- the registry and init --- */

/* v12 to v15's entries: each in its place (after v11), in the database. */
static void test_registry_places(void)
{
    const char *names[] = { "v12", "v13", "v14", "v15" };
    const char *aliases[] = { "db-table", "db-expiry", "db-fenced", "db-row" };
    const struct lock_ops *const *all = lock_versions();
    int at = -1, n = 0;

    for (int i = 0; all[i]; i++, n++)
        if (strcmp(all[i]->name, "v11") == 0)
            at = i;
    check(at >= 0 && n == at + 6 && strcmp(all[n - 1]->name, "none") == 0,
          "registry: v12 to v15 come after v11, before none");
    for (int i = 0; at >= 0 && i < 4; i++) {
        const struct lock_ops *v = lock_find(names[i]);
        check(v && v == lock_find(aliases[i]) && all[at + 1 + i] == v && v->database &&
              !v->remote && v->init && v->destroy && v->title && v->flaw,
              "registry: %s (%s) in its place, kept in the database, not in Redis", names[i],
              aliases[i]);
    }
}

/* Their waits, leases and fences. */
static void test_registry(void)
{
    const struct lock_ops *v12 = lock_find("v12"), *v13 = lock_find("v13");
    const struct lock_ops *v14 = lock_find("v14"), *v15 = lock_find("v15");

    test_registry_places();
    check(v12->wait == LOCK_WAIT_POLL && !v12->renew && !v12->keepalive,
          "registry: v12 polls, no lease to renew");
    check(v13->keepalive && v13->renew && !v13->fence && v14->keepalive && v14->fence &&
          v14->forget && v13->wait == LOCK_WAIT_POLL && v14->wait == LOCK_WAIT_POLL,
          "registry: v13 and v14 poll and keep their lease alive; v14 fences, v13 does not");
    check(v15->wait == LOCK_WAIT_LOCAL && v15->conn && v15->forget && !v15->fence &&
          !v15->keepalive, "registry: v15 waits in the database and lends its transaction's "
          "connection");
}

/* A user without the CREATE right (a random password): its pool. */
static struct db_client *weak_pool(void)
{
    unsigned char b[12];
    char pw[32], sql[256];

    if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
        memset(b, 7, sizeof(b));
    for (size_t i = 0; i < sizeof(b); i++)
        snprintf(pw + 2 * i, 3, "%02x", b[i]);
    sql_do("DROP USER IF EXISTS 'weak'@'127.0.0.1'");
    snprintf(sql, sizeof(sql), "CREATE USER 'weak'@'127.0.0.1' IDENTIFIED BY '%s'", pw);
    sql_do(sql);
    sql_do("GRANT SELECT, INSERT, UPDATE, DELETE ON inventory.* TO 'weak'@'127.0.0.1'");
    return db_new(port, "weak", pw);
}

/* A port of 127.0.0.1 nothing listens on (bound, then let go). */
static int dead_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t n = sizeof(a);
    int s = socket(AF_INET, SOCK_STREAM, 0), p = 1;

    if (s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 &&
        getsockname(s, (struct sockaddr *)&a, &n) == 0)
        p = ntohs(a.sin_port);
    close(s);
    return p;
}

/* Without a pool, with a wrong password, with the database down. */
static void test_init_refused(void)
{
    struct lock_config cfg = { .instance_id = "a" };
    struct error err = { 0 };
    struct lock_client *lc;
    struct lock_grant g;
    struct db_client *dc;

    lc = lock_client_create(lock_find("v12"), &cfg, &err);
    check(lc == NULL && err.fault == FAULT_USAGE && has(err.msg, "--mysql"),
          "init: v12 without a database: refused, saying --mysql (%s)", err.msg);
    cfg.db = dc = db_new(port, "inventory", "not-the-password");
    err = (struct error){ 0 };
    lc = lock_client_create(lock_find("v13"), &cfg, &err);
    check(lc == NULL && err.fault == FAULT_AUTH && !has(err.msg, "CREATE"),
          "init: a wrong password: refused, typed auth, not said a missing right (%s)", err.msg);
    lock_client_destroy(lc);
    db_client_destroy(dc);

    cfg.db = dc = db_new(dead_port(), "inventory", password);
    lc = lock_client_create(lock_find("v13"), &cfg, &err);
    check(lc != NULL, "init: a database down at start is no error (the table waits for it)");
    err = (struct error){ 0 };
    check(lc && lock_acquire(lc, "init", 100, &g, NULL, &err) == LOCK_ERROR &&
          err.fault == FAULT_CONNECT, "init: ... an acquire then fails, typed connect (%s)",
          err.msg);
    lock_client_destroy(lc);
    db_client_destroy(dc);
}

/* Each version's table made (the first makes the database too); a user without the
 * CREATE right; a table dropped under a client. */
static void test_init(void)
{
    struct lock_config cfg = { .instance_id = "a" };
    struct error err = { 0 };
    struct lock_client *lc;
    struct lock_grant g;
    const char *v[] = { "v12", "v13", "v14", "v15" };
    const char *t[] = { "locks", "leases", "leases", "row_locks" };

    test_init_refused();
    for (int i = 0; i < 4; i++) {
        lc = client(v[i], pool, 5000, "a");
        check(sql_int("SELECT COUNT(*) FROM information_schema.tables WHERE "
                      "table_schema='inventory' AND table_name='%s'", t[i]) == 1,
              "init: %s made its table %s%s", v[i], t[i], i ? "" : " (and the database)");
        lock_client_destroy(lc);
    }
    cfg.db = weak_pool();
    lc = lock_client_create(lock_find("v12"), &cfg, &err);
    check(lc && lock_acquire(lc, "init", 100, &g, NULL, &err) == LOCK_OK &&
          lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK,
          "init: a user without CREATE uses a table already made");
    lock_client_destroy(lc);
    sql_do("DROP TABLE row_locks");
    err = (struct error){ 0 };
    lc = lock_client_create(lock_find("v15"), &cfg, &err);
    check(lc == NULL && err.fault == FAULT_AUTH && has(err.msg, "row_locks") &&
          has(err.msg, "CREATE"), "init: ... and is refused one it must make, naming the "
          "table and the right (%s)", err.msg);
    lock_client_destroy(lc);
    db_client_destroy(cfg.db);

    lc = client("v12", pool, 5000, "a");
    sql_do("DROP TABLE locks");
    err = (struct error){ 0 };
    check(lock_acquire(lc, "init", 100, &g, NULL, &err) == LOCK_ERROR &&
          strcmp(err.code, "no_table") == 0, "init: the table dropped under a client: an "
          "acquire fails, typed no_table (%s)", err.msg);
    check(lock_acquire(lc, "init", 100, &g, NULL, &err) == LOCK_OK &&
          lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK,
          "init: ... and the next one makes it again, and is granted");
    lock_client_destroy(lc);
}

/* --- every version: exclusion between two instances --- */

static void test_exclusion(const char *version)
{
    struct lock_client *a = client(version, pool, 5000, "inst-a");
    struct lock_client *b = client(version, pool, 5000, "inst-b");
    long wait = strcmp(version, "v15") == 0 ? 1000 : 200;
    char item[32], owner[DB_VALUE_MAX];
    struct lock_grant g;
    struct error err = { 0 };
    long long waited;
    int st;

    snprintf(item, sizeof(item), "ex-%s", version);
    check(lock_acquire(a, item, 1000, &g, NULL, &err) == LOCK_OK && g.depth == 1,
          "%s: A acquires", version);
    if (strcmp(version, "v15") != 0)
        check(strcmp(row_owner(&owner, version, item), g.owner) == 0,
              "%s: the item's row names A's owner (%s)", version, owner);
    else
        check(lock_grant_db(a, &g) != NULL && db_in_transaction(lock_grant_db(a, &g)),
              "%s: A's grant lends its connection, inside its transaction", version);
    st = rival_try(b, item, wait, &waited);
    check(st == LOCK_TIMEOUT && waited >= wait - 20,
          "%s: B is refused while A holds, once its wait is over (%lld ms of %ld)", version,
          waited, wait);
    check(lock_release(a, &g, NULL, NULL, &err) == LOCK_OK, "%s: A releases", version);
    if (strcmp(version, "v15") != 0)
        check(row_owner(&owner, version, item)[0] == '\0',
              "%s: the item's row is free after the release", version);
    st = rival_try(b, item, 1000, &waited);
    check(st == LOCK_OK && waited < 200, "%s: B is granted after A's release (in %lld ms)",
          version, waited);
    check(atomic_load(&a->acquisitions) == 1 && atomic_load(&b->acquisitions) == 1 &&
          atomic_load(&b->timeouts) == 1, "%s: the counters saw the grants and the timeout",
          version);
    lock_client_destroy(a);
    lock_client_destroy(b);
}

/* Threads of two instances taking one item in turn: how many found another inside. */
enum { CONTENDERS = 6, ROUNDS = 15 };
struct contention {
    struct lock_client *lc;
    const char *item;
    atomic_int *inside, *overlaps, *granted;
};

static void *contender_main(void *arg)
{
    struct contention *ct = arg;
    struct lock_grant g;
    struct error err = { 0 };

    for (int i = 0; i < ROUNDS; i++) {
        int st = lock_acquire(ct->lc, ct->item, 10000, &g, NULL, &err);
        if (st != LOCK_OK) {
            fprintf(stderr, "test_dblock: contender: %d %s\n", st, err.msg);
            continue;
        }
        atomic_fetch_add(ct->granted, 1);
        if (atomic_fetch_add(ct->inside, 1) != 0)
            atomic_fetch_add(ct->overlaps, 1);
        clock_sleep_ms(2);
        atomic_fetch_sub(ct->inside, 1);
        lock_release(ct->lc, &g, NULL, NULL, &err);
    }
    return NULL;
}

static void test_contention(const char *version)
{
    struct lock_client *lc[2] = { client(version, pool, 5000, "inst-a"),
                                  client(version, pool, 5000, "inst-b") };
    atomic_int inside = 0, overlaps = 0, granted = 0;
    struct contention ct[CONTENDERS];
    pthread_t t[CONTENDERS];
    char item[32];
    long long t0 = clock_now_ms();

    snprintf(item, sizeof(item), "busy-%s", version);
    for (int i = 0; i < CONTENDERS; i++) {
        ct[i] = (struct contention){ lc[i % 2], item, &inside, &overlaps, &granted };
        pthread_create(&t[i], NULL, contender_main, &ct[i]);
    }
    for (int i = 0; i < CONTENDERS; i++)
        pthread_join(t[i], NULL);
    check(atomic_load(&granted) == CONTENDERS * ROUNDS && atomic_load(&overlaps) == 0,
          "%s: %d threads of two instances, %d grants each: all granted, never two inside "
          "(%d of %d, %d overlaps, %lld ms)", version, CONTENDERS, ROUNDS,
          atomic_load(&granted), CONTENDERS * ROUNDS, atomic_load(&overlaps),
          clock_now_ms() - t0);
    check(in_use() == 0, "%s: every connection back in the pool", version);
    lock_client_destroy(lc[0]);
    lock_client_destroy(lc[1]);
}

/* --- a holder in another process, paused --- */

/* A holder in a child process: it acquires item, says so on a pipe, stops itself (SIGSTOP:
 * a whole-process pause, its watchdog too) and, continued, does its part ('r': release;
 * 'f': its fence with release in a transaction, rolled back, then its release), says that
 * status and exits. */
struct holder {
    pid_t pid;
    int from;
    long long token;
};

/* One try's outcome and its grant's token, on the pipe. */
struct said {
    long long status, token;
};

/* The child's fence in a transaction of its own, rolled back: its status. */
static int child_fence(struct lock_client *lc, struct db_client *dc, struct lock_grant *g)
{
    struct db_error why = { 0 };
    struct error err = { 0 };
    struct db_conn *c = db_get(dc, &why);
    int st = LOCK_ERROR;

    if (c && db_run(c, "START TRANSACTION", NULL, 0, NULL, &why) == DB_OK)
        st = lock_grant_fence(lc, g, c, 1, &err);
    db_put(c, 0);
    lock_release(lc, g, NULL, NULL, &err);
    return st;
}

static void holder_main(const char *version, const char *item, long ttl_ms, char part, int out)
{
    struct db_client *dc = db_new(port, "inventory", password);
    struct lock_client *lc = client(version, dc, ttl_ms, "inst-paused");
    struct lock_grant g;
    struct error err = { 0 };
    struct said s = { lock_acquire(lc, item, 1000, &g, NULL, &err), 0 };

    s.token = g.token;
    if (write(out, &s, sizeof(s)) != sizeof(s))
        _exit(3);
    if (s.status == LOCK_OK) {
        raise(SIGSTOP);
        s.status = part == 'r' ? lock_release(lc, &g, NULL, NULL, &err) : child_fence(lc, dc, &g);
    }
    if (write(out, &s, sizeof(s)) != sizeof(s))
        _exit(3);
    lock_client_destroy(lc);
    db_client_destroy(dc);
    _exit(0);
}

/* Starts the holder and waits until it holds and is stopped: its acquire's status. */
static int holder_start(struct holder *h, const char *version, const char *item, long ttl_ms,
                        char part)
{
    struct said s = { LOCK_ERROR, 0 };
    int p[2], status;

    if (pipe(p) != 0)
        return LOCK_ERROR;
    fflush(stdout);
    if ((h->pid = fork()) == 0) {
        close(p[0]);
        holder_main(version, item, ttl_ms, part, p[1]);
    }
    close(p[1]);
    h->from = p[0];
    if (h->pid < 0 || read(h->from, &s, sizeof(s)) != sizeof(s))
        return LOCK_ERROR;
    h->token = s.token;
    if (s.status == LOCK_OK &&
        (waitpid(h->pid, &status, WUNTRACED) != h->pid || !WIFSTOPPED(status)))
        return LOCK_ERROR;
    return (int)s.status;
}

/* Continues the holder: the status of its part; it is waited for. */
static int holder_finish(struct holder *h)
{
    struct said s = { -9, 0 };

    kill(h->pid, SIGCONT);
    if (read(h->from, &s, sizeof(s)) != sizeof(s))
        s.status = -9;
    waitpid(h->pid, NULL, 0);
    close(h->from);
    return (int)s.status;
}

/* --- v12 --- */

static void test_v12(void)
{
    struct lock_client *a = client("v12", pool, 5000, "inst-a");
    struct lock_client *b = client("v12", pool, 5000, "inst-b");
    char owner[DB_VALUE_MAX];
    struct lock_grant g, inner, other;
    struct error err = { 0 };
    long long t0, waited;
    int st;

    lock_acquire(a, "v12-nest", 1000, &g, NULL, &err);
    t0 = clock_now_ms();
    st = lock_acquire(a, "v12-nest", 300, &inner, NULL, &err);
    check(st == LOCK_TIMEOUT && clock_now_ms() - t0 >= 290, "v12 (flaw): the holder's nested "
          "acquire waits on itself and times out (%lld ms of 300)", clock_now_ms() - t0);
    other = g;
    snprintf(other.owner, sizeof(other.owner), "inst-b:1.1");
    check(lock_release(a, &other, NULL, NULL, &err) == LOCK_STOLEN &&
          strcmp(row_owner(&owner, "v12", "v12-nest"), g.owner) == 0,
          "v12: a release under another owner deletes nothing (LOCK_STOLEN), the row stays");
    check(lock_release(a, &g, NULL, NULL, &err) == LOCK_OK, "v12: the holder's release");

    check(lock_acquire(a, "v12-dead", 1000, &g, NULL, &err) == LOCK_OK, "v12: A acquires");
    lock_client_destroy(a);   /* its instance gone, never released */
    st = rival_try(b, "v12-dead", 1500, &waited);
    check(st == LOCK_TIMEOUT &&
          strcmp(row_owner(&owner, "v12", "v12-dead"), g.owner) == 0,
          "v12 (flaw): A gone without releasing: B waits out its whole wait (%lld ms), A's row "
          "still there", waited);
    sql_do("DELETE FROM locks WHERE name='v12-dead'");
    check(rival_try(b, "v12-dead", 1000, &waited) == LOCK_OK,
          "v12: ... only deleting the row by hand lets B in");
    lock_client_destroy(b);
}

/* --- v13 and v14: leases --- */

/* v13: the watchdog keeps a lease past its ttl; a holder paused past it loses it to B. */
static void test_v13(void)
{
    struct lock_client *a = client("v13", pool, 300, "inst-a");
    struct lock_client *b = client("v13", pool, 300, "inst-b");
    char owner[DB_VALUE_MAX];
    struct lock_grant g;
    struct error err = { 0 };
    struct holder h;
    long long waited, t0;
    int st;

    lock_acquire(a, "v13-renew", 1000, &g, NULL, &err);
    clock_sleep_ms(1000);
    check(rival_try(b, "v13-renew", 100, NULL) == LOCK_TIMEOUT && atomic_load(&a->renewals) >= 2,
          "v13: the watchdog keeps a 300 ms lease 1 s on (%lld renewals): B refused",
          (long long)atomic_load(&a->renewals));
    check(lock_release(a, &g, NULL, NULL, &err) == LOCK_OK && g.token == 0,
          "v13: released; no token (unfenced)");

    check(holder_start(&h, "v13", "v13-pause", 300, 'r') == LOCK_OK,
          "v13: A (another process) acquires a 300 ms lease, then is paused (SIGSTOP)");
    t0 = clock_now_ms();
    st = lock_acquire(b, "v13-pause", 3000, &g, NULL, &err);
    waited = clock_now_ms() - t0;
    check(st == LOCK_OK && waited < 1000, "v13 (flaw): B is granted once the paused A's lease "
          "ran out (in %lld ms), A never having released", waited);
    check(holder_finish(&h) == LOCK_EXPIRED, "v13: A, continued, releases: LOCK_EXPIRED, "
          "nothing changed");
    check(strcmp(row_owner(&owner, "v13", "v13-pause"), g.owner) == 0,
          "v13: ... the row still names B");
    lock_release(b, &g, NULL, NULL, &err);
    lock_client_destroy(a);
    lock_client_destroy(b);
}

/* v13, v14: a nested grant counts here, with no statement; the last release frees it. */
static void test_nested(const char *version)
{
    struct lock_client *a = client(version, pool, 5000, "inst-a");
    struct lock_client *b = client(version, pool, 5000, "inst-b");
    char item[32], owner[DB_VALUE_MAX];
    struct lock_grant outer, inner;
    struct error err = { 0 };
    long long tokens;

    snprintf(item, sizeof(item), "nest-%s", version);
    lock_acquire(a, item, 1000, &outer, NULL, &err);
    tokens = sql_int("SELECT token FROM leases WHERE name='%s'", item);
    check(lock_acquire(a, item, 1000, &inner, NULL, &err) == LOCK_OK && inner.depth == 2 &&
          inner.waited_ms < 50 && inner.token == outer.token &&
          sql_int("SELECT token FROM leases WHERE name='%s'", item) == tokens,
          "%s: the holder's nested acquire is granted at once, counted here (depth 2, the "
          "row's grants still %lld)", version, tokens);
    check(lock_grant_fence_releases(a, &inner) == 0, "%s: a nested grant cannot be given back "
          "by a fence", version);
    check(lock_release(a, &inner, NULL, NULL, &err) == LOCK_OK &&
          strcmp(row_owner(&owner, version, item), outer.owner) == 0 &&
          rival_try(b, item, 50, NULL) == LOCK_TIMEOUT,
          "%s: the nested release leaves the row A's: B refused", version);
    check(lock_release(a, &outer, NULL, NULL, &err) == LOCK_OK &&
          row_owner(&owner, version, item)[0] == '\0' && rival_try(b, item, 200, NULL) == LOCK_OK,
          "%s: the outer release frees it: B granted", version);
    lock_client_destroy(a);
    lock_client_destroy(b);
}

/* v14: the fence in a transaction, with and without the release riding; tokens. */
static void test_v14_fence(void)
{
    struct lock_client *a = client("v14", pool, 5000, "inst-a");
    struct lock_client *b = client("v14", pool, 5000, "inst-b");
    char owner[DB_VALUE_MAX];
    struct lock_grant g, g2, other;
    struct error err = { 0 };
    struct db_error why = { 0 };
    struct db_conn *c = db_get(pool, &why);
    long long waited;
    int st, freed;

    lock_acquire(a, "v14-fence", 1000, &g, NULL, &err);
    db_run(c, "START TRANSACTION", NULL, 0, NULL, &why);
    check(lock_grant_fence_releases(a, &g) && lock_grant_fence(a, &g, c, 0, &err) == LOCK_OK,
          "v14: the holder's fence in a transaction: LOCK_OK");
    other = g;
    snprintf(other.owner, sizeof(other.owner), "inst-b:1.1");
    check(lock_grant_fence(a, &other, c, 1, &err) == LOCK_NOT_OWNER,
          "v14: a fence under another owner: LOCK_NOT_OWNER");
    check(lock_grant_fence(a, &g, c, 1, &err) == LOCK_OK &&
          strcmp(row_owner(&owner, "v14", "v14-fence"), g.owner) == 0,
          "v14: the fence with release: LOCK_OK, the row still A's until the commit");
    db_run(c, "COMMIT", NULL, 0, NULL, &why);
    lock_release_done(a, &g, 1);
    freed = row_owner(&owner, "v14", "v14-fence")[0] == '\0';
    st = rival_try(b, "v14-fence", 200, &waited);
    check(freed && st == LOCK_OK && waited < 100,
          "v14: ... freed by the commit: B granted (in %lld ms)", waited);

    lock_acquire(a, "v14-fence", 1000, &g2, NULL, &err);
    check(g.token > 0 && g2.token >= g.token + 2, "v14: tokens grow with each grant (A %lld, "
          "B's between, A again %lld)", g.token, g2.token);
    db_run(c, "START TRANSACTION", NULL, 0, NULL, &why);
    lock_grant_fence(a, &g2, c, 1, &err);
    db_run(c, "ROLLBACK", NULL, 0, NULL, &why);
    check(strcmp(row_owner(&owner, "v14", "v14-fence"), g2.owner) == 0 &&
          rival_try(b, "v14-fence", 50, NULL) == LOCK_TIMEOUT,
          "v14: the fence's release rolled back: the row still A's, B refused");
    check(lock_release(a, &g2, NULL, NULL, &err) == LOCK_OK &&
          row_owner(&owner, "v14", "v14-fence")[0] == '\0', "v14: ... A's release then frees it");
    db_put(c, 0);
    lock_client_destroy(a);
    lock_client_destroy(b);
}

/* v14: a holder paused past its lease, B holding now: its fence refuses its write. */
static void test_v14_paused(void)
{
    struct lock_client *b = client("v14", pool, 300, "inst-b");
    char owner[DB_VALUE_MAX];
    struct lock_grant g;
    struct error err = { 0 };
    struct holder h;
    long long t0;
    int st;

    st = holder_start(&h, "v14", "v14-pause", 300, 'f');
    check(st == LOCK_OK && h.token > 0,
          "v14: A (another process) acquires a 300 ms lease (token %lld), then is paused",
          h.token);
    t0 = clock_now_ms();
    st = lock_acquire(b, "v14-pause", 3000, &g, NULL, &err);
    t0 = clock_now_ms() - t0;
    check(st == LOCK_OK && g.token > h.token && t0 < 1000, "v14: B is granted once A's lease "
          "ran out (in %lld ms), a later token (%lld)", t0, g.token);
    check(holder_finish(&h) == LOCK_NOT_OWNER,
          "v14: A, continued, runs its fence in its sale's transaction: LOCK_NOT_OWNER (its "
          "write rolled back, nothing oversold)");
    check(strcmp(row_owner(&owner, "v14", "v14-pause"), g.owner) == 0,
          "v14: ... the row still names B");
    lock_release(b, &g, NULL, NULL, &err);
    lock_client_destroy(b);
}

/* --- v15: the row lock --- */

/* B's waits while A holds: timed by the database, in whole seconds. */
static void test_v15_waits(void)
{
    struct lock_client *a = client("v15", pool, 5000, "inst-a");
    struct lock_client *b = client("v15", pool, 5000, "inst-b");
    const long waits[] = { 0, 1000, 1500, 4000 };
    const long least[] = { 0, 990, 1990, 3990 }, most[] = { 300, 1600, 2600, 4600 };
    struct lock_grant g;
    struct error err = { 0 };
    struct rival rv;
    long long waited;

    lock_acquire(a, "v15-wait", 1000, &g, NULL, &err);
    for (int i = 0; i < 4; i++) {
        int st = rival_try(b, "v15-wait", waits[i], &waited);
        check(st == LOCK_TIMEOUT && waited >= least[i] && waited <= most[i], "v15: B's acquire "
              "(wait %ld ms, in whole seconds, slices of 3 s at most) waits and times out: %lld "
              "ms", waits[i], waited);
    }
    rival_start(&rv, b, "v15-wait", 3000);
    clock_sleep_ms(300);
    db_run(lock_grant_db(a, &g), "COMMIT", NULL, 0, NULL, &(struct db_error){ 0 });
    lock_release_done(a, &g, 1);
    rival_join(&rv);
    check(rv.status == LOCK_OK && rv.waited_ms < 700, "v15: B, waiting, is granted as "
          "soon as A's transaction commits (after %lld ms, 300 of them A's)", rv.waited_ms);
    check(in_use() == 0, "v15: every connection back in the pool");
    lock_client_destroy(a);
    lock_client_destroy(b);
}

/* A's connection killed, A's grant abandoned, a nested grant sharing the transaction. */
static void test_v15_holder(void)
{
    struct lock_client *a = client("v15", pool, 5000, "inst-a");
    struct lock_client *b = client("v15", pool, 5000, "inst-b");
    struct lock_grant g, inner;
    struct error err = { 0 };
    struct rival rv;
    char sql[64];
    long long waited = -1;
    int st;

    lock_acquire(a, "v15-kill", 1000, &g, NULL, &err);
    rival_start(&rv, b, "v15-kill", 5000);
    clock_sleep_ms(300);
    snprintf(sql, sizeof(sql), "KILL %lu", db_conn_id(lock_grant_db(a, &g)));
    sql_do(sql);
    rival_join(&rv);
    check(rv.status == LOCK_OK && rv.waited_ms < 800, "v15: A's connection killed (KILL "
          "from root): B, waiting, is granted at once (after %lld ms, 300 of them A's)",
          rv.waited_ms);
    err = (struct error){ 0 };
    check(lock_release(a, &g, NULL, NULL, &err) == LOCK_ERROR && in_use() == 0,
          "v15: ... A's release finds its connection gone (%s): closed, none kept", err.msg);

    lock_acquire(a, "v15-kill", 1000, &g, NULL, &err);
    lock_abandon(a, &g);
    st = rival_try(b, "v15-kill", 1000, &waited);
    check(st == LOCK_OK && waited < 200 && in_use() == 0,
          "v15: A's grant abandoned: its connection goes back, B granted (in %lld ms)", waited);

    lock_acquire(a, "v15-nest", 1000, &g, NULL, &err);
    check(lock_acquire(a, "v15-nest", 1000, &inner, NULL, &err) == LOCK_OK && inner.depth == 2 &&
          inner.waited_ms < 50 && lock_grant_db(a, &inner) == lock_grant_db(a, &g) &&
          in_use() == 1, "v15: the holder's nested acquire shares its transaction (depth 2, one "
          "connection)");
    check(lock_release(a, &inner, NULL, NULL, &err) == LOCK_OK &&
          db_in_transaction(lock_grant_db(a, &g)) &&
          rival_try(b, "v15-nest", 0, NULL) == LOCK_TIMEOUT,
          "v15: the nested release leaves the transaction open: B refused");
    st = lock_release(a, &g, NULL, NULL, &err) == LOCK_OK ? rival_try(b, "v15-nest", 1000, &waited)
                                                          : LOCK_ERROR;
    check(st == LOCK_OK && waited < 200 && in_use() == 0,
          "v15: the outer release rolls it back: B granted (in %lld ms)", waited);
    lock_client_destroy(a);
    lock_client_destroy(b);
}

/* --- a client whose clock runs ahead (libfaketime) --- */

/* --take VERSION ITEM PORT PASSWORD_FILE WALL_MS: one acquire (300 ms) in this process,
 * whose wall clock must run 50 s or more past WALL_MS (the parent's). Exit status: 0
 * granted, 1 refused, 2 failed, 3 the clock not ahead. */
static int take_main(char **argv)
{
    struct lock_client *lc;
    struct lock_grant g;
    struct error err = { 0 };
    int st;

    port = atoi(argv[4]);
    if (clock_wall_us() / 1000 - atoll(argv[6]) < 50000)
        return 3;
    pool = db_new(port, "inventory", password);
    lc = client(argv[2], pool, 5000, "inst-ahead");
    st = lock_acquire(lc, argv[3], 300, &g, NULL, &err);
    if (st == LOCK_OK)
        lock_release(lc, &g, NULL, NULL, &err);
    lock_client_destroy(lc);
    db_client_destroy(pool);
    return st == LOCK_OK ? 0 : st == LOCK_TIMEOUT ? 1 : 2;
}

/* Runs --take in a process whose clock runs a minute ahead: its exit status (-1: none). */
static int take_ahead(const char *version, const char *item)
{
    char port_s[16], wall_s[32];
    int status;
    pid_t pid;

    snprintf(port_s, sizeof(port_s), "%d", port);
    snprintf(wall_s, sizeof(wall_s), "%lld", clock_wall_us() / 1000);
    fflush(stdout);
    if ((pid = fork()) == 0) {
        setenv("FAKETIME", "+60s", 1);
        setenv("LD_PRELOAD", faketime_lib, 1);
        execl(self_exe, self_exe, "--take", version, item, port_s, password_file, wall_s,
              (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
        return -1;
    return WEXITSTATUS(status);
}

static void test_clock_ahead(void)
{
    const char *v[] = { "v13", "v14" };

    for (int i = 0; i < 2; i++) {
        struct lock_client *a = client(v[i], pool, 5000, "inst-a");
        struct lock_grant g;
        struct error err = { 0 };
        char item[32];
        int st, rel;

        snprintf(item, sizeof(item), "clock-%s", v[i]);
        lock_acquire(a, item, 1000, &g, NULL, &err);
        st = take_ahead(v[i], item);
        rel = lock_release(a, &g, NULL, NULL, &err);
        if (i == 0)
            check(st == 0 && rel != LOCK_OK, "v13 (flaw): a client whose clock runs a minute "
                  "ahead takes A's live lease (exit %d); A's release then is not its own (%d)",
                  st, rel);
        else
            check(st == 1 && rel == LOCK_OK, "v14: the same client takes nothing: the lease is "
                  "on the database's clock (exit %d); A's release is its own", st);
    }
}

/* The first line of path into password; exits when it cannot be read. */
static void password_read(const char *path)
{
    FILE *f = fopen(path, "r");

    if (f == NULL || fgets(password, sizeof(password), f) == NULL) {
        fprintf(stderr, "test_dblock: cannot read the password file %s\n", path);
        exit(2);
    }
    fclose(f);
    password[strcspn(password, "\r\n")] = '\0';
}

int main(int argc, char **argv)
{
    const char *all[] = { "v12", "v13", "v14", "v15" };

    if (argc == 7 && strcmp(argv[1], "--take") == 0) {
        password_read(argv[5]);
        return take_main(argv);
    }
    if (argc < 3 || argc > 4 || (port = atoi(argv[1])) <= 0) {
        fprintf(stderr, "usage: test_dblock PORT PASSWORD_FILE [LIBFAKETIME]\n");
        return 2;
    }
    password_file = argv[2];
    faketime_lib = argc == 4 ? argv[3] : NULL;
    self_exe = "/proc/self/exe";
    password_read(password_file);
    pool = db_new(port, "inventory", password);
    admin = db_new(port, "root", NULL);   /* used once a version made the database */
    test_registry();
    test_init();
    for (int i = 0; i < 4; i++)
        test_exclusion(all[i]);
    for (int i = 0; i < 4; i++)
        test_contention(all[i]);
    test_v12();
    test_v13();
    test_nested("v13");
    test_nested("v14");
    test_v14_fence();
    test_v14_paused();
    test_v15_waits();
    test_v15_holder();
    if (faketime_lib)
        test_clock_ahead();
    else
        printf("note   no libfaketime: the client clock ahead is left to the scenarios\n");
    db_client_destroy(admin);
    db_client_destroy(pool);
    return test_report();
}
