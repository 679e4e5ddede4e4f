/* test_lock.c - The lock library against a real redis-server: each version's guarantee
 * and, where a version is unsafe by design, its flaw; v10 over three more (its lock masters).
 * Usage: test_lock REDIS_PORT [MASTER_PORT MASTER_PORT MASTER_PORT] */
#include "common/clock.h"
#include "lock/lock.h"

#include <hiredis/hiredis.h>   /* the test looks at Redis on its own, beside the layer */

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/test.h"

static int redis_port;
static int master_ports[3];   /* v10's lock masters, when given */
static const char *KEY = "lock:{test}";
static const char *ITEM = "test";

static redisContext *connect_redis(void)
{
    redisContext *c = redisConnect("127.0.0.1", redis_port);
    if (c == NULL || c->err) {
        fprintf(stderr, "cannot connect to redis on port %d\n", redis_port);
        exit(2);
    }
    return c;
}

/* Each lock client and the Redis client it borrows (freed together by client_free). */
enum { CLIENTS_MAX = 64 };
static struct { struct lock_client *lc; struct rd_client *rc; } clients[CLIENTS_MAX];

/* A lock client for version on a new Redis client for port; NULL with err filled. */
static struct lock_client *client_try(const char *version, int port, struct lock_config cfg,
                                      struct error *err)
{
    struct rd_config rcfg = { .host = "127.0.0.1", .port = port };
    struct rd_error why = { 0 };
    struct rd_client *rc = rd_client_create(&rcfg, &why);
    struct lock_client *lc;

    cfg.redis = rc;
    if (rc == NULL)
        rd_error_map(&why, err);
    if (rc == NULL || (lc = lock_client_create(lock_find(version), &cfg, err)) == NULL) {
        rd_client_destroy(rc);
        return NULL;
    }
    for (int i = 0; i < CLIENTS_MAX; i++)
        if (clients[i].lc == NULL) {
            clients[i].lc = lc, clients[i].rc = rc;
            return lc;
        }
    fprintf(stderr, "test_lock: more than %d clients at once\n", CLIENTS_MAX);
    exit(2);
}

static void client_free(struct lock_client *lc)
{
    for (int i = 0; lc && i < CLIENTS_MAX; i++)
        if (clients[i].lc == lc) {
            lock_client_destroy(lc);
            rd_client_destroy(clients[i].rc);
            clients[i].lc = NULL, clients[i].rc = NULL;
            return;
        }
}

static struct lock_client *client_wait(const char *version, long ttl_ms, long retry_ms,
                                       enum lock_wait wait, const char *instance)
{
    struct lock_config cfg = { .ttl_ms = ttl_ms, .retry_ms = retry_ms, .instance_id = instance,
                               .wait = wait };
    struct error err;
    struct lock_client *lc = client_try(version, redis_port, cfg, &err);
    if (lc == NULL) {
        fprintf(stderr, "lock_client_create %s: %s\n", version, err.msg);
        exit(2);
    }
    return lc;
}

static struct lock_client *client(const char *version, long ttl_ms, const char *instance)
{
    return client_wait(version, ttl_ms, 5, LOCK_WAIT_DEFAULT, instance);
}

static long long cmd_int(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(c, fmt, arg);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -999;
    freeReplyObject(r);
    return v;
}

static int key_exists(redisContext *c) { return cmd_int(c, "EXISTS %s", KEY) == 1; }
static long long key_pttl(redisContext *c) { return cmd_int(c, "PTTL %s", KEY); }
static void key_del(redisContext *c) { freeReplyObject(redisCommand(c, "DEL %s", KEY)); }

/* Another owner, on its own thread and connection, tries for wait_ms. */
struct rival { struct lock_client *lc; long wait_ms; int status; };

static void *rival_main(void *arg)
{
    struct rival *rv = arg;
    struct lock_grant g;
    struct error err;

    rv->status = lock_acquire(rv->lc, ITEM, rv->wait_ms, &g, NULL, &err);
    if (rv->status == LOCK_OK)
        lock_release(rv->lc, &g, NULL, NULL, &err);
    return NULL;
}

static int rival_try(struct lock_client *lc, long wait_ms)
{
    struct rival rv = { lc, wait_ms, -1 };
    pthread_t t;
    pthread_create(&t, NULL, rival_main, &rv);
    pthread_join(t, NULL);
    return rv.status;
}

static void test_registry(void)
{
    test_cond("registry finds v6 by name", lock_find("v6") && strcmp(lock_find("v6")->name, "v6") == 0);
    test_cond("registry finds v6 by its alias", lock_find("lua-release") == lock_find("v6"));
    test_cond("registry finds v8 by watchdog", lock_find("watchdog") == lock_find("v8"));
    test_cond("registry: mutex means v1", lock_find("mutex") == lock_find("v1"));
    test_cond("registry: unknown version is NULL", lock_find("v99") == NULL && lock_find("") == NULL);
    int n = 0;
    for (const struct lock_ops *const *v = lock_versions(); *v; v++)
        n += (*v)->title != NULL && (*v)->flaw != NULL && (*v)->try_acquire && (*v)->release;
    /* v1-v15 and none; the atomic baseline is the service's (it takes no lock). */
    test_cond("registry lists sixteen locks with title, flaw and a store", n == 16);
    test_cond("registry: v12-v15 keep their lock in the database; v14 fences in its transaction",
              lock_find("v12")->database && lock_find("v15")->database && lock_find("v14")->fence &&
              !lock_find("v13")->fence && lock_find("db-row") == lock_find("v15"));
    test_cond("registry: v11 (zookeeper) guards the write with its node, and can be given back by it",
              lock_find("zookeeper") == lock_find("v11") && lock_find("v11")->guard &&
              lock_find("v11")->forget && lock_find("v11")->lost && !lock_find("v11")->keepalive);
    test_cond("registry: v8 waits by notify and keeps its lease alive",
              lock_find("v8")->wait == LOCK_WAIT_NOTIFY && lock_find("v8")->keepalive);
    test_cond("registry: v3-v7 poll (try, sleep, try again)",
              lock_find("v3")->wait == LOCK_WAIT_POLL && lock_find("v7")->wait == LOCK_WAIT_POLL);
}

/* Acquire, release, mutual exclusion; the key is there while held and gone after. */
static void test_basic(const char *version)
{
    char d[128];
    redisContext *c = connect_redis();
    struct lock_client *lc = client(version, 5000, "test-a");
    struct lock_grant g;
    struct error err;
    int uses_redis = lc->ops->remote;

    key_del(c);
    snprintf(d, sizeof(d), "%s: acquire", version);
    test_cond(d, lock_acquire(lc, ITEM, 1000, &g, NULL, &err) == LOCK_OK);
    if (uses_redis) {
        snprintf(d, sizeof(d), "%s: the lock key exists while held", version);
        test_cond(d, key_exists(c));
    }
    snprintf(d, sizeof(d), "%s: another owner waits and times out", version);
    test_cond(d, rival_try(lc, 150) == LOCK_TIMEOUT);
    snprintf(d, sizeof(d), "%s: release", version);
    test_cond(d, lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK);
    if (uses_redis) {
        snprintf(d, sizeof(d), "%s: the lock key is gone after release", version);
        test_cond(d, !key_exists(c));
    }
    snprintf(d, sizeof(d), "%s: another owner gets it after release", version);
    test_cond(d, rival_try(lc, 1000) == LOCK_OK);
    snprintf(d, sizeof(d), "%s: counters saw the grants and the timeout", version);
    test_cond(d, atomic_load(&lc->acquisitions) == 2 && atomic_load(&lc->timeouts) == 1);
    client_free(lc);
    redisFree(c);
}

static void test_ttls(void)
{
    redisContext *c = connect_redis();
    struct lock_grant g;
    struct error err;
    const char *expiring[] = { "v4", "v5", "v6", "v7", NULL };

    struct lock_client *lc = client("v3", 300, "test-a");
    key_del(c);
    lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    test_cond("v3: the lock key has no TTL", key_pttl(c) == -1);
    clock_sleep_ms(500);
    test_cond("v3: the key is still there after the would-be TTL", key_exists(c));
    lock_release(lc, &g, NULL, NULL, &err);
    client_free(lc);

    for (int i = 0; expiring[i]; i++) {
        char d[128];
        lc = client(expiring[i], 300, "test-a");
        key_del(c);
        lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
        long long pttl = key_pttl(c);
        snprintf(d, sizeof(d), "%s: the lock key has a TTL of at most ttl-ms", expiring[i]);
        test_cond(d, pttl > 0 && pttl <= 300);
        clock_sleep_ms(600);
        snprintf(d, sizeof(d), "%s: the lock key expires by itself", expiring[i]);
        test_cond(d, !key_exists(c));
        snprintf(d, sizeof(d), "%s: the grant reports its lease lost", expiring[i]);
        test_cond(d, lock_grant_is_lost(lc, &g));
        client_free(lc);
    }
    redisFree(c);
}

/* A release by someone who does not hold the lock. */
static void test_foreign_release(void)
{
    redisContext *c = connect_redis();
    struct lock_grant g, other;
    struct error err;
    const char *safe[] = { "v5", "v6", "v7", "v8", NULL };

    for (int i = 0; safe[i]; i++) {
        char d[128];
        struct lock_client *lc = client(safe[i], 5000, "test-a");
        key_del(c);
        lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
        other = g;
        strcpy(other.owner, "test-b:1");
        snprintf(d, sizeof(d), "%s: a release by a non-owner is refused", safe[i]);
        test_cond(d, lock_release(lc, &other, NULL, NULL, &err) == LOCK_STOLEN);
        snprintf(d, sizeof(d), "%s: ... and the owner's key stays", safe[i]);
        test_cond(d, key_exists(c));
        lock_release(lc, &g, NULL, NULL, &err);
        client_free(lc);
    }

    struct lock_client *lc = client("v4", 5000, "test-a");
    key_del(c);
    lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    other = g;
    strcpy(other.owner, "test-b:1");
    lock_release(lc, &other, NULL, NULL, &err);
    test_cond("v4 (flaw): a release by a non-owner deletes the owner's key", !key_exists(c));
    client_free(lc);
    redisFree(c);
}

static void test_reentrancy(void)
{
    redisContext *c = connect_redis();
    struct lock_grant outer, inner;
    struct error err;

    struct lock_client *lc = client("v7", 5000, "test-a");
    key_del(c);
    test_cond("v7: outer acquire", lock_acquire(lc, ITEM, 1000, &outer, NULL, &err) == LOCK_OK && outer.depth == 1);
    test_cond("v7: nested acquire by the same owner is granted at once",
              lock_acquire(lc, ITEM, 1000, &inner, NULL, &err) == LOCK_OK && inner.depth == 2 && inner.waited_ms < 500);
    redisReply *r = redisCommand(c, "HGET %s %s", KEY, outer.owner);
    test_cond("v7: the hash counts two holds", r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "2") == 0);
    freeReplyObject(r);
    test_cond("v7: first release", lock_release(lc, &inner, NULL, NULL, &err) == LOCK_OK);
    test_cond("v7: the key stays after the first release", key_exists(c));
    test_cond("v7: second release", lock_release(lc, &outer, NULL, NULL, &err) == LOCK_OK);
    test_cond("v7: the key is gone after the second release", !key_exists(c));
    client_free(lc);

    const char *flat[] = { "v1", "v3", "v6", NULL };
    for (int i = 0; flat[i]; i++) {
        char d[128];
        lc = client(flat[i], 5000, "test-a");
        key_del(c);
        lock_acquire(lc, ITEM, 1000, &outer, NULL, &err);
        long long t0 = clock_now_ms();
        int st = lock_acquire(lc, ITEM, 300, &inner, NULL, &err);
        snprintf(d, sizeof(d), "%s (flaw): a nested acquire waits on itself and times out", flat[i]);
        test_cond(d, st == LOCK_TIMEOUT && clock_now_ms() - t0 >= 250);
        lock_release(lc, &outer, NULL, NULL, &err);
        client_free(lc);
    }
    redisFree(c);
}

static void test_watchdog(void)
{
    redisContext *c = connect_redis();
    struct lock_grant g;
    struct error err;

    struct lock_client *lc = client("v8", 900, "test-a");
    key_del(c);
    lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    clock_sleep_ms(2500);
    test_cond("v8: the key outlives its TTL while held", key_exists(c));
    test_cond("v8: the watchdog renewed it", atomic_load(&lc->renewals) >= 2);
    test_cond("v8: the lease is not lost", !lock_grant_is_lost(lc, &g));
    test_cond("v8: release", lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK && !key_exists(c));

    /* After release nothing renews: a look-alike key with our owner expires. */
    freeReplyObject(redisCommand(c, "HSET %s %s 1", KEY, g.owner));
    freeReplyObject(redisCommand(c, "PEXPIRE %s 500", KEY));
    long long renewals = atomic_load(&lc->renewals);
    clock_sleep_ms(1500);
    test_cond("v8: after release the watchdog renews nothing", !key_exists(c) && atomic_load(&lc->renewals) == renewals);

    /* Someone else takes the key: the renewal is refused and the holder is told. */
    lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    key_del(c);
    freeReplyObject(redisCommand(c, "HSET %s test-b:1 1", KEY));
    clock_sleep_ms(1000);
    test_cond("v8: a refused renewal marks the lease lost", lock_grant_is_lost(lc, &g) && atomic_load(&lc->lost_leases) >= 1);
    test_cond("v8: the taken lock is not released by the loser", lock_release(lc, &g, NULL, NULL, &err) == LOCK_EXPIRED && key_exists(c));
    test_cond("  the lost lease counted once (by the watchdog, not again at the release)",
              atomic_load(&lc->lost_leases) == 1);
    client_free(lc);

    /* A dead holder: its process is killed, nothing renews, the key expires. */
    key_del(c);
    int fds[2];
    if (pipe(fds) != 0)
        exit(2);
    pid_t pid = fork();
    if (pid == 0) {
        struct lock_client *child = client("v8", 900, "test-dead");
        char ok = lock_acquire(child, ITEM, 1000, &g, NULL, &err) == LOCK_OK ? 'y' : 'n';
        if (write(fds[1], &ok, 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char ok = 'n';
    if (read(fds[0], &ok, 1) != 1)
        ok = 'n';
    clock_sleep_ms(1200);
    test_cond("v8: a live holder in another process keeps the key past its TTL", ok == 'y' && key_exists(c));
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    clock_sleep_ms(1500);
    test_cond("v8: the key of a killed holder expires", !key_exists(c));
    close(fds[0]);
    close(fds[1]);
    redisFree(c);
}

/* v5 vs v6: the lease runs out inside release while another holder enters. */
struct releaser { struct lock_client *lc; struct lock_grant g; int status; };

/* The teaching fault release_gap_ms, as the service's pause between a release's steps. */
static void gap_1600(void *arg)
{
    (void)arg;
    clock_sleep_ms(1600);
}

static void *releaser_main(void *arg)
{
    struct releaser *rl = arg;
    struct error err;
    struct lock_pause gap = { .fn = gap_1600 };
    rl->status = lock_release(rl->lc, &rl->g, NULL, &gap, &err);
    return NULL;
}

/* A renewal held at two gates, so that a test can put a release (and a new grant) between
 * its sending and its answer: the watchdog's renewal, as the network may delay it. A
 * release may be held too, after Redis took it and before the library goes on. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int on;             /* 0: renewals pass straight through */
    int hold_release;   /* 1: a release waits for stage 5 once Redis took it (stage 2) */
    int stage;          /* renewal: 1 entered, 2 may run, 3 ran (status in st), 4 may answer */
    int st;
} gate = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, 0 };

static void gate_wait(int stage)
{
    pthread_mutex_lock(&gate.mu);
    while (gate.stage < stage)
        pthread_cond_wait(&gate.cv, &gate.mu);
    pthread_mutex_unlock(&gate.mu);
}

/* A field of gate, read or written under its mutex (the watchdog's thread and the test's
 * both use them). */
static int gate_get(const int *field)
{
    int v;

    pthread_mutex_lock(&gate.mu);
    v = *field;
    pthread_mutex_unlock(&gate.mu);
    return v;
}

static void gate_put(int *field, int v)
{
    pthread_mutex_lock(&gate.mu);
    *field = v;
    pthread_mutex_unlock(&gate.mu);
}

static void gate_set(int stage)
{
    pthread_mutex_lock(&gate.mu);
    gate.stage = stage;
    pthread_cond_broadcast(&gate.cv);
    pthread_mutex_unlock(&gate.mu);
}

static int gated_renew(struct lock_client *lc, const struct lock_grant *g, struct error *err)
{
    int st;

    if (!gate_get(&gate.on) || gate_get(&gate.stage) != 0)
        return lock_find("v8")->renew(lc, g, err);
    gate_set(1);
    gate_wait(2);
    st = lock_find("v8")->renew(lc, g, err);
    gate_put(&gate.st, st);
    gate_set(3);
    gate_wait(4);
    return st;
}

static int gated_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                         struct error *err)
{
    int st = lock_find("v8")->release(lc, g, trip, err);

    if (gate_get(&gate.hold_release)) {
        gate_set(2);
        gate_wait(5);
    }
    return st;
}

/* Round 3's holder: takes the lock, waits for the renewal to be on its way, releases. */
static void *gated_holder(void *arg)
{
    struct lock_client *lc = arg;
    struct lock_grant g;
    struct error err;

    lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    gate_wait(1);
    lock_release(lc, &g, NULL, NULL, &err);
    return NULL;
}

/* The watchdog's renewal answered "not ours" because the grant was released while it was
 * out: after the release (round 1), after a new grant to the same thread (round 2), or
 * while the release was still on its way back (round 3): not a lost lease. */
static void test_watchdog_late_answer(void)
{
    static struct lock_ops gated;
    struct rd_config rcfg = { .host = "127.0.0.1", .port = redis_port };
    struct lock_config cfg = { .ttl_ms = 600, .retry_ms = 5, .instance_id = "test-gate" };
    redisContext *c = connect_redis();
    struct error err;
    struct rd_error why;
    struct lock_grant g;
    struct rd_client *rc = rd_client_create(&rcfg, &why);
    struct lock_client *lc;
    pthread_t holder;

    gated = *lock_find("v8");
    gated.renew = gated_renew;
    gated.release = gated_release;
    cfg.redis = rc;
    if (rc == NULL || (lc = lock_client_create(&gated, &cfg, &err)) == NULL) {
        fprintf(stderr, "test_watchdog_late_answer: %s\n", rc == NULL ? why.msg : err.msg);
        exit(2);
    }
    key_del(c);
    for (int again = 0; again < 2; again++) {
        gate_put(&gate.stage, 0);
        gate_put(&gate.on, 1);
        lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
        gate_wait(1);                                   /* the renewal is on its way */
        lock_release(lc, &g, NULL, NULL, &err);
        gate_set(2);
        gate_wait(3);                                   /* Redis answered it: not ours */
        if (again)
            lock_acquire(lc, ITEM, 1000, &g, NULL, &err);   /* the same thread, anew */
        gate_put(&gate.on, 0);
        gate_set(4);
        clock_sleep_ms(50);                              /* the watchdog reads the answer */
        if (again) {
            test_cond("v8: a renewal sent before a release and answered after a new grant: "
                      "the new grant is not lost", gate_get(&gate.st) == LOCK_NOT_OWNER &&
                      !lock_grant_is_lost(lc, &g));
            clock_sleep_ms(900);
            test_cond("  and the watchdog still renews it", key_exists(c) &&
                      lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK);
        }
        test_cond(again ? "  no lease counted lost"
                        : "v8: a renewal answered 'not ours' after its release: no lease counted lost",
                  gate_get(&gate.st) == LOCK_NOT_OWNER && atomic_load(&lc->lost_leases) == 0);
    }
    gate_put(&gate.stage, 0);
    gate_put(&gate.on, 1);
    gate_put(&gate.hold_release, 1);
    pthread_create(&holder, NULL, gated_holder, lc);
    gate_wait(3);                       /* Redis took the release, then answered the renewal */
    gate_put(&gate.on, 0);
    gate_set(4);
    clock_sleep_ms(50);                  /* the watchdog reads the answer... */
    gate_set(5);                        /* ...before the release is back */
    pthread_join(holder, NULL);
    gate_put(&gate.hold_release, 0);
    test_cond("v8: a renewal answered 'not ours' while the release was on its way back: "
              "no lease counted lost", gate_get(&gate.st) == LOCK_NOT_OWNER &&
              atomic_load(&lc->lost_leases) == 0);
    lock_client_destroy(lc);
    rd_client_destroy(rc);
    redisFree(c);
}

static void test_release_gap(const char *version, int expect_foreign_delete)
{
    char d[160];
    redisContext *c = connect_redis();
    struct lock_client *lc = client(version, 1000, "test-a");
    struct lock_client *lc_b = client(version, 1000, "test-b"); /* another process */
    struct releaser rl = { .lc = lc, .status = -1 };
    struct lock_grant b;
    struct error err;
    pthread_t t;

    key_del(c);
    lock_acquire(lc, ITEM, 1000, &rl.g, NULL, &err);
    pthread_create(&t, NULL, releaser_main, &rl); /* v5 checks ownership now, acts at 1.6 s */
    clock_sleep_ms(1200);                           /* A's 1 s lease has run out; B's runs to 2.2 s */
    int got = lock_acquire(lc_b, ITEM, 1000, &b, NULL, &err);
    pthread_join(t, NULL);
    int b_key = key_exists(c);
    int b_release = lock_release(lc_b, &b, NULL, NULL, &err);
    if (expect_foreign_delete) {
        snprintf(d, sizeof(d), "%s (flaw): the late release deletes the next holder's lock", version);
        test_cond(d, got == LOCK_OK && !b_key);
        snprintf(d, sizeof(d), "%s (flaw): the next holder finds its lock stolen", version);
        test_cond(d, b_release == LOCK_STOLEN && atomic_load(&lc_b->stolen) == 1);
    } else {
        snprintf(d, sizeof(d), "%s: the late release leaves the next holder's lock alone", version);
        test_cond(d, got == LOCK_OK && b_key && rl.status == LOCK_EXPIRED);
        snprintf(d, sizeof(d), "%s: nothing is stolen", version);
        test_cond(d, b_release == LOCK_OK && atomic_load(&lc_b->stolen) == 0);
    }
    client_free(lc_b);
    client_free(lc);
    redisFree(c);
}

static void test_scripts_and_errors(void)
{
    redisContext *c = connect_redis();
    struct lock_client *lc = client("v7", 5000, "test-a");
    struct lock_grant g;
    struct error err;

    key_del(c);
    lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    freeReplyObject(redisCommand(c, "SCRIPT FLUSH"));
    test_cond("scripts are loaded again after SCRIPT FLUSH (NOSCRIPT)", lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK && !key_exists(c));

    client_free(lc);
    struct lock_config cfg = { .ttl_ms = 5000, .retry_ms = 5, .instance_id = "test-a" };
    lc = client_try("v7", 1, cfg, &err);
    memset(&err, 0, sizeof(err));
    test_cond("an unreachable Redis gives LOCK_ERROR, typed as a failure to connect",
              lc && lock_acquire(lc, ITEM, 100, &g, NULL, &err) == LOCK_ERROR &&
                  err.fault == FAULT_CONNECT && fault_is_io(err.fault) && err.msg[0]);
    test_cond("  nothing was sent: nothing is kept to be given back",
              lc && atomic_load(&lc->abandoned) == 0);
    client_free(lc);

    /* A release Redis refuses (NOREPLICAS: min-replicas-to-write with no replica) leaves
     * the lock in our name: the thread's next grant is under a new id (not a re-entry
     * that would keep the old hold alive), and the old one is given back first. */
    lc = client("v8", 5000, "test-a");
    key_del(c);
    char before[LOCK_OWNER_MAX];
    int st = lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    snprintf(before, sizeof(before), "%s", g.owner);
    freeReplyObject(redisCommand(c, "CONFIG SET min-replicas-to-write 1"));
    memset(&err, 0, sizeof(err));
    test_cond("a release refused by Redis (NOREPLICAS): LOCK_ERROR, the lock still there",
              st == LOCK_OK && lock_release(lc, &g, NULL, NULL, &err) == LOCK_ERROR &&
                  err.fault == FAULT_NOREPLICAS && key_exists(c));
    freeReplyObject(redisCommand(c, "CONFIG SET min-replicas-to-write 0"));
    st = lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    test_cond("  the same thread's next grant: a new owner id, depth 1, the old lock given back",
              st == LOCK_OK && strcmp(g.owner, before) != 0 && g.depth == 1 &&
                  cmd_int(c, "HEXISTS lock:{test} %s", before) == 0 &&
                  atomic_load(&lc->abandoned) == 1 && atomic_load(&lc->given_back) == 1);
    test_cond("  released: no lock left", lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK && !key_exists(c));
    client_free(lc);

    /* Abandoned (a write timed out and may still run): no release is sent; the lease runs
     * out, not renewed, and the thread's next grant is under a new id. */
    lc = client("v8", 600, "test-a");
    st = lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    snprintf(before, sizeof(before), "%s", g.owner);
    lock_abandon(lc, &g);
    test_cond("lock_abandon: the lock stays in Redis, under its owner",
              st == LOCK_OK && cmd_int(c, "HEXISTS lock:{test} %s", before) == 1);
    clock_sleep_ms(800);
    test_cond("  not renewed: gone once its 600 ms lease ran out", !key_exists(c));
    st = lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    test_cond("  the thread's next grant: a new owner id, depth 1",
              st == LOCK_OK && strcmp(g.owner, before) != 0 && g.depth == 1);
    lock_release(lc, &g, NULL, NULL, &err);
    client_free(lc);
    redisFree(c);
}


/* A rival on its own thread that records when it got the lock, in grant order. */
static atomic_int grant_seq;
struct timed_rival { struct lock_client *lc; long wait_ms; int status; long long waited_ms; int order; };

static void *timed_rival_main(void *arg)
{
    struct timed_rival *rv = arg;
    struct lock_grant g;
    struct error err;

    rv->status = lock_acquire(rv->lc, ITEM, rv->wait_ms, &g, NULL, &err);
    rv->waited_ms = g.waited_ms;
    if (rv->status == LOCK_OK) {
        rv->order = atomic_fetch_add(&grant_seq, 1);
        clock_sleep_ms(20);
        lock_release(rv->lc, &g, NULL, NULL, &err);
    }
    return NULL;
}

/* A lock a client abandoned (its release refused by Redis: NOREPLICAS) while a waiter is
 * refused by it: a waiter of the same client (after a failover every thread may be one),
 * or of another client (the other instance, while no sale reaches this one: behind nginx
 * every sale may go to the other). The lock is given back as soon as Redis takes it (the
 * client's give-back thread; a refused waiter of its own also tries again after retry_ms
 * while a give-back is due), and the waiter takes it: without both, it waited out its
 * 5 s deadline. */
static void abandoned_case(int other_client)
{
    redisContext *c = connect_redis();
    struct lock_client *owner = client_wait("v8", 20000, 10, LOCK_WAIT_NOTIFY, "test-a");
    struct lock_client *waiter =
        other_client ? client_wait("v8", 20000, 10, LOCK_WAIT_NOTIFY, "test-b") : owner;
    struct lock_grant g;
    struct error err;
    struct timed_rival rv = { waiter, 5000, -1, 0, 0 };
    pthread_t t;
    int st;

    key_del(c);
    st = lock_acquire(owner, ITEM, 1000, &g, NULL, &err);
    freeReplyObject(redisCommand(c, "CONFIG SET min-replicas-to-write 1"));
    if (st == LOCK_OK)
        st = lock_release(owner, &g, NULL, NULL, &err);
    test_cond(other_client ? "abandoned, the waiter another client's: the release refused, kept"
                           : "a release refused (NOREPLICAS): the lock kept to be given back",
              st == LOCK_ERROR && key_exists(c) && atomic_load(&owner->abandoned) == 1);
    pthread_create(&t, NULL, timed_rival_main, &rv);
    clock_sleep_ms(300);       /* the waiter's try refused (and the give-backs): it waits */
    freeReplyObject(redisCommand(c, "CONFIG SET min-replicas-to-write 0"));
    pthread_join(t, NULL);
    test_cond(other_client ? "  given back by its client's own thread once Redis takes it; the other"
                             " client's waiter takes it, not at its 5 s deadline"
                           : "  a waiter of the same client takes it soon after Redis takes the"
                             " give-back, not at its 5 s deadline",
              rv.status == LOCK_OK && rv.waited_ms >= 250 && rv.waited_ms < 1500 &&
                  atomic_load(&owner->given_back) == 1);
    printf("       (waited %lld ms)\n", rv.waited_ms);
    if (waiter != owner)
        client_free(waiter);
    client_free(owner);
    redisFree(c);
}

/* Waiting by notification: a release wakes the waiter at once, where polling sleeps out
 * its retry interval; a release that sends no message (a lease that simply expires)
 * costs at most the holder's remaining lease; threads of a process take turns in order. */
static void test_notify(void)
{
    redisContext *c = connect_redis();
    struct lock_grant g;
    struct error err;
    struct timed_rival rv;
    pthread_t t;

    for (int i = 0; i < 2; i++) {
        enum lock_wait w = i == 0 ? LOCK_WAIT_NOTIFY : LOCK_WAIT_POLL;
        struct lock_client *holder = client_wait("v8", 5000, 3000, w, "test-h");
        struct lock_client *waiter = client_wait("v8", 5000, 3000, w, "test-w");
        key_del(c);
        lock_acquire(holder, ITEM, 1000, &g, NULL, &err);
        rv = (struct timed_rival){ waiter, 8000, -1, 0, 0 };
        pthread_create(&t, NULL, timed_rival_main, &rv);
        clock_sleep_ms(300);       /* the waiter has tried once and sleeps */
        lock_release(holder, &g, NULL, NULL, &err);
        pthread_join(t, NULL);
        if (w == LOCK_WAIT_NOTIFY) {
            test_cond("notify: the release wakes the waiter long before a 3 s poll would",
                      rv.status == LOCK_OK && rv.waited_ms < 1500);
            test_cond("notify: the waiter's process received the release message",
                      atomic_load(&waiter->notifications) >= 1);
        } else {
            test_cond("poll: the waiter sleeps out its 3 s retry interval",
                      rv.status == LOCK_OK && rv.waited_ms >= 2500);
        }
        client_free(waiter);
        client_free(holder);
    }

    /* A holder that never releases: its key expires, no message comes. */
    struct lock_client *lc = client_wait("v8", 5000, 60000, LOCK_WAIT_NOTIFY, "test-w");
    key_del(c);
    freeReplyObject(redisCommand(c, "HSET %s someone-else:1 1", KEY));
    freeReplyObject(redisCommand(c, "PEXPIRE %s 600", KEY));
    rv = (struct timed_rival){ lc, 8000, -1, 0, 0 };
    pthread_create(&t, NULL, timed_rival_main, &rv);
    pthread_join(t, NULL);
    test_cond("notify: a lease that expires unannounced costs at most its remaining TTL",
              rv.status == LOCK_OK && rv.waited_ms >= 400 && rv.waited_ms < 3000);

    /* Three threads of one process queue first come first served. */
    struct timed_rival q[3];
    pthread_t qt[3];
    key_del(c);
    atomic_store(&grant_seq, 0);
    lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
    for (int i = 0; i < 3; i++) {
        q[i] = (struct timed_rival){ lc, 8000, -1, 0, -1 };
        pthread_create(&qt[i], NULL, timed_rival_main, &q[i]);
        clock_sleep_ms(100);
    }
    lock_release(lc, &g, NULL, NULL, &err);
    for (int i = 0; i < 3; i++)
        pthread_join(qt[i], NULL);
    test_cond("notify: local waiters are granted in the order they came",
              q[0].order == 0 && q[1].order == 1 && q[2].order == 2);
    client_free(lc);

    struct lock_config cfg = { .ttl_ms = 5000, .retry_ms = 5, .instance_id = "test-a",
                               .wait = LOCK_WAIT_NOTIFY };
    memset(&err, 0, sizeof(err));
    test_cond("v1 cannot wait by notify: the client says so",
              client_try("v1", redis_port, cfg, &err) == NULL && err.fault == FAULT_USAGE &&
                  strstr(err.msg, "v1"));
    redisFree(c);
}

/* Between processes: a waiter refused by another process's holder asks for the lock; the
 * holder sees it, and once it releases, its own next try lets the one that asked go
 * first. Threads of the holder's own process queue locally and never ask. */
static void test_wanted(void)
{
    redisContext *c = connect_redis();
    struct lock_client *holder = client_wait("v8", 5000, 400, LOCK_WAIT_NOTIFY, "test-h");
    struct lock_client *waiter = client_wait("v8", 5000, 3000, LOCK_WAIT_NOTIFY, "test-w");
    struct lock_client *poller = client_wait("v8", 5000, 5, LOCK_WAIT_POLL, "test-p");
    struct lock_grant g, again;
    struct error err;
    struct timed_rival rv, local;
    pthread_t t, lt;
    int asked = 0, st, holder_order;
    long long t0;

    key_del(c);
    atomic_store(&grant_seq, 0);
    lock_acquire(holder, ITEM, 1000, &g, NULL, &err);
    local = (struct timed_rival){ holder, 300, -1, 0, -1 };
    pthread_create(&lt, NULL, timed_rival_main, &local);
    pthread_join(lt, NULL);
    test_cond("wanted: a waiter of the holder's own process does not ask",
              local.status == LOCK_TIMEOUT && !lock_grant_is_wanted(holder, &g));
    rv = (struct timed_rival){ waiter, 8000, -1, 0, -1 };
    pthread_create(&t, NULL, timed_rival_main, &rv);
    for (int i = 0; i < 200 && !(asked = lock_grant_is_wanted(holder, &g)); i++)
        clock_sleep_ms(10);
    test_cond("wanted: a refused waiter of another process asks for the lock", asked);
    lock_release(holder, &g, NULL, NULL, &err);
    t0 = clock_now_ms();
    st = lock_acquire(holder, ITEM, 8000, &again, NULL, &err);
    holder_order = atomic_fetch_add(&grant_seq, 1);
    pthread_join(t, NULL);
    test_cond("wanted: the holder gives way: the one that asked is granted first",
              st == LOCK_OK && rv.status == LOCK_OK && rv.order == 0 && holder_order == 1);
    test_cond("  and the holder's next grant follows that release",
              clock_now_ms() - t0 < 1500);
    test_cond("wanted: a fresh grant has not been asked for", !lock_grant_is_wanted(holder, &again));

    /* One that asked and then gave up: the holder's next try waits retry_ms for it. */
    rv = (struct timed_rival){ waiter, 200, -1, 0, -1 };
    pthread_create(&t, NULL, timed_rival_main, &rv);
    pthread_join(t, NULL);
    lock_release(holder, &again, NULL, NULL, &err);
    st = lock_acquire(holder, ITEM, 8000, &again, NULL, &err);
    test_cond("wanted: after giving way, the holder's next try waits (at most retry_ms) for the one that asked",
              rv.status == LOCK_TIMEOUT && st == LOCK_OK && again.waited_ms >= 300 &&
                  again.waited_ms < 1500);
    lock_release(holder, &again, NULL, NULL, &err);

    lock_acquire(poller, ITEM, 1000, &g, NULL, &err);
    test_cond("wanted: a version that polls never says so", !lock_grant_is_wanted(poller, &g));
    lock_release(poller, &g, NULL, NULL, &err);
    client_free(poller);
    client_free(waiter);
    client_free(holder);
    redisFree(c);
}

static long long fence_now(redisContext *c)
{
    redisReply *r = redisCommand(c, "GET fence:{%s}", ITEM);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

    freeReplyObject(r);
    return v;
}

/* v9: each grant takes the next token from fence:{I}; a nested grant keeps its grant's;
 * another process's grant after it gets a greater one; the watchdog renews as v8's. */
static void test_fenced(void)
{
    redisContext *c = connect_redis();
    struct lock_client *a = client("v9", 900, "test-a");
    struct lock_client *b = client("v9", 900, "test-b");
    struct lock_grant g, inner, later;
    struct error err;
    long long t1, fence;

    key_del(c);
    freeReplyObject(redisCommand(c, "SET fence:{%s} 41", ITEM));
    test_cond("v9: acquire", lock_acquire(a, ITEM, 1000, &g, NULL, &err) == LOCK_OK);
    t1 = g.token;
    test_cond("v9: the grant carries the next token from fence:{I}", t1 == 42);
    test_cond("v9: a nested grant keeps its grant's token",
              lock_acquire(a, ITEM, 1000, &inner, NULL, &err) == LOCK_OK && inner.token == t1 &&
                  inner.depth == 2);
    test_cond("v9: a nested grant takes no token", fence_now(c) == 42);
    lock_release(a, &inner, NULL, NULL, &err);
    test_cond("v9: another process is refused while it is held",
              lock_acquire(b, ITEM, 100, &later, NULL, &err) == LOCK_TIMEOUT);
    clock_sleep_ms(1200);
    test_cond("v9: the watchdog keeps the lease past its TTL", key_exists(c) && !lock_grant_is_lost(a, &g));
    test_cond("v9: release", lock_release(a, &g, NULL, NULL, &err) == LOCK_OK && !key_exists(c));
    test_cond("v9: the next grant, in another process, has a greater token",
              lock_acquire(b, ITEM, 1000, &later, NULL, &err) == LOCK_OK && later.token == t1 + 1);
    lock_release(b, &later, NULL, NULL, &err);
    fence = fence_now(c);
    test_cond("v9: fence:{I} counts the grants", fence == t1 + 1);
    client_free(b);
    client_free(a);
    redisFree(c);
}

/* Batches the caller owns: a read after the granting try and writes before the release,
 * one round trip each. */
static void test_riders(void)
{
    const char *versions[] = { "v1", "v6", "v8", NULL };
    redisContext *c = connect_redis();

    for (int i = 0; versions[i]; i++) {
        char d[160];
        struct lock_client *lc = client(versions[i], 5000, "test-a");
        struct rd_batch read = { 0 }, write = { 0 };
        struct lock_grant g;
        struct error err;

        key_del(c);
        freeReplyObject(redisCommand(c, "SET rider:{test} 41"));
        rd_batch_add(&read, &(struct rd_error){ 0 }, "GET rider:{test}");
        int st = lock_acquire(lc, ITEM, 1000, &g, &read, &err);
        snprintf(d, sizeof(d), "%s: the read riding with acquire comes back with the grant", versions[i]);
        test_cond(d, st == LOCK_OK && read.reply[0] && read.reply[0]->type == RD_STRING &&
                     strcmp(read.reply[0]->str, "41") == 0);
        rd_batch_add(&write, &(struct rd_error){ 0 }, "INCR rider:{test}");
        st = lock_release(lc, &g, &write, NULL, &err);
        snprintf(d, sizeof(d), "%s: the write riding with release is applied, the lock given back", versions[i]);
        test_cond(d, st == LOCK_OK && write.reply[0] && write.reply[0]->type == RD_INTEGER &&
                     write.reply[0]->integer == 42 && (!lc->ops->remote || !key_exists(c)));
        rd_batch_reset(&read);
        rd_batch_reset(&write);
        client_free(lc);
    }
    redisFree(c);
}


/* --- v10: redlock over real masters ------------------------------------------------------ */

static redisContext *connect_port(int port)
{
    redisContext *c = redisConnect("127.0.0.1", port);
    if (c == NULL || c->err) {
        fprintf(stderr, "cannot connect to redis on port %d\n", port);
        exit(2);
    }
    return c;
}

/* A loopback port nothing listens on: a master that is down (connection refused). */
static int dead_port(void)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        perror("dead_port");
        exit(2);
    }
    port = ntohs(a.sin_port);
    close(fd);
    return port;
}

/* A v10 client over `up` of the live masters followed by `down` dead ones. */
static struct lock_client *redlock_client(int up, int down, long ttl_ms, char *masters, size_t size)
{
    size_t at = 0;

    masters[0] = '\0';
    for (int i = 0; i < up + down; i++)
        at += (size_t)snprintf(masters + at, size - at, "%s127.0.0.1:%d", i ? "," : "",
                               i < up ? master_ports[i] : dead_port());
    struct lock_config cfg = { .ttl_ms = ttl_ms, .retry_ms = 5, .instance_id = "test-a",
                               .lock_masters = masters };
    struct error err;
    struct lock_client *lc = client_try("v10", redis_port, cfg, &err);
    if (lc == NULL) {
        fprintf(stderr, "lock_client_create v10: %s\n", err.msg);
        exit(2);
    }
    return lc;
}

/* How many of the first n live masters hold the key. */
static int held_on(redisContext **m, int n)
{
    int held = 0;

    for (int i = 0; i < n; i++)
        held += cmd_int(m[i], "EXISTS %s", KEY) == 1;
    return held;
}

/* Quorum arithmetic (N / 2 + 1 of N, dead masters counting as no), validity, renewal by
 * quorum and a release that reaches only some masters. */
static void test_redlock(void)
{
    static const struct { int up, down, granted; } votes[] = {
        { 1, 0, 1 }, { 1, 1, 0 }, { 2, 1, 1 }, { 1, 2, 0 }, { 3, 2, 1 }, { 2, 3, 0 },
    };
    redisContext *m[3];
    char masters[256], d[200];

    for (int i = 0; i < 3; i++) {
        m[i] = connect_port(master_ports[i]);
        freeReplyObject(redisCommand(m[i], "DEL %s", KEY));
    }
    for (size_t v = 0; v < sizeof(votes) / sizeof(votes[0]); v++) {
        int up = votes[v].up, n = up + votes[v].down;
        struct lock_client *lc = redlock_client(up, votes[v].down, 2000, masters, sizeof(masters));
        struct lock_grant g;
        struct error err;
        long long t0 = clock_now_ms();
        int st = lock_acquire(lc, ITEM, 1000, &g, NULL, &err);
        long long took = clock_now_ms() - t0;

        if (votes[v].granted) {
            snprintf(d, sizeof(d), "v10: %d of %d masters up, quorum %d: granted, held on the %d up",
                     up, n, n / 2 + 1, up);
            test_cond(d, st == LOCK_OK && held_on(m, up) == up);
            snprintf(d, sizeof(d), "v10: %d of %d up: validity at most TTL - drift (%lld ms)", up, n,
                     g.valid_until_ms - g.acquired_ms);
            test_cond(d, st == LOCK_OK && g.valid_until_ms - g.acquired_ms <= 2000 - 2000 / 100 - 2 &&
                         g.valid_until_ms > clock_now_ms());
            snprintf(d, sizeof(d), "v10: %d of %d up: released on every master up", up, n);
            test_cond(d, lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK && held_on(m, up) == 0);
        } else {
            snprintf(d, sizeof(d), "v10: %d of %d masters up, quorum %d: unavailable at once (%lld ms)",
                     up, n, n / 2 + 1, took);
            test_cond(d, st == LOCK_UNAVAILABLE && took < 500);
            snprintf(d, sizeof(d), "v10: %d of %d up: the minority's keys given back at once", up, n);
            test_cond(d, held_on(m, up) == 0);
        }
        client_free(lc);
    }

    /* Renewal by quorum: two of three masters keep a 300 ms lease for a second. */
    struct lock_client *lc = redlock_client(2, 1, 300, masters, sizeof(masters));
    struct lock_grant g;
    struct error err;
    test_cond("v10: 2 of 3 up: acquire with a 300 ms lease", lock_acquire(lc, ITEM, 1000, &g, NULL, &err) == LOCK_OK);
    clock_sleep_ms(1000);
    test_cond("v10: renewed by a quorum (2 of 3) past three leases: not lost, held on both",
              !lock_grant_is_lost(lc, &g) && held_on(m, 2) == 2);
    test_cond("v10: release", lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK && held_on(m, 2) == 0);
    client_free(lc);

    /* Renewal that finds a quorum no longer held: two masters forgot the key. */
    lc = redlock_client(3, 0, 300, masters, sizeof(masters));
    test_cond("v10: 3 of 3: acquire with a 300 ms lease", lock_acquire(lc, ITEM, 1000, &g, NULL, &err) == LOCK_OK);
    freeReplyObject(redisCommand(m[1], "DEL %s", KEY));
    freeReplyObject(redisCommand(m[2], "DEL %s", KEY));
    clock_sleep_ms(250);
    test_cond("v10: two masters forgot the key: the next renewal reports the lease lost",
              lock_grant_is_lost(lc, &g));
    test_cond("v10: its release (one of three held it) reports the lease expired, deletes it there",
              lock_release(lc, &g, NULL, NULL, &err) == LOCK_EXPIRED && held_on(m, 3) == 0);

    /* A release that reaches only some masters: one forgot the key (a quorum still gives
     * it back), then two stall past the per-master timeout (fewer than a quorum answer). */
    test_cond("v10: acquire again", lock_acquire(lc, ITEM, 1000, &g, NULL, &err) == LOCK_OK);
    freeReplyObject(redisCommand(m[2], "DEL %s", KEY));
    test_cond("v10: a release that two of three held: given back (a quorum)",
              lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK && held_on(m, 3) == 0);
    client_free(lc);
    lc = redlock_client(3, 0, 1000, masters, sizeof(masters));
    test_cond("v10: acquire with a 1 s lease", lock_acquire(lc, ITEM, 1000, &g, NULL, &err) == LOCK_OK);
    freeReplyObject(redisCommand(m[1], "CLIENT PAUSE 1500 ALL"));
    freeReplyObject(redisCommand(m[2], "CLIENT PAUSE 1500 ALL"));
    long long t0 = clock_now_ms();
    int st = lock_release(lc, &g, NULL, NULL, &err);
    long long took = clock_now_ms() - t0;
    snprintf(d, sizeof(d), "v10: two masters stalled 1.5 s: the release reaches one, reports an error in %lld ms", took);
    test_cond(d, st == LOCK_ERROR && took < 1000 && cmd_int(m[0], "EXISTS %s", KEY) == 0);
    clock_sleep_ms(1600);   /* the stall ends; whatever the stalled masters kept has expired */
    test_cond("v10: after the stall and the lease, the lock is free again",
              lock_acquire(lc, ITEM, 1000, &g, NULL, &err) == LOCK_OK &&
                  lock_release(lc, &g, NULL, NULL, &err) == LOCK_OK && held_on(m, 3) == 0);
    client_free(lc);
    for (int i = 0; i < 3; i++)
        redisFree(m[i]);
}

int main(int argc, char **argv)
{
    if ((argc != 2 && argc != 5) || (redis_port = atoi(argv[1])) <= 0) {
        fprintf(stderr, "usage: test_lock REDIS_PORT [MASTER_PORT MASTER_PORT MASTER_PORT]\n");
        return 2;
    }
    for (int i = 0; argc == 5 && i < 3; i++)
        master_ports[i] = atoi(argv[2 + i]);
    test_registry();
    const char *all[] = { "v1", "v3", "v4", "v5", "v6", "v7", "v8", "v9", NULL };
    for (int i = 0; all[i]; i++)
        test_basic(all[i]);
    test_ttls();
    test_foreign_release();
    test_reentrancy();
    test_release_gap("v5", 1);
    test_release_gap("v6", 0);
    test_watchdog();
    test_watchdog_late_answer();
    test_fenced();
    test_scripts_and_errors();
    test_notify();
    abandoned_case(0);
    abandoned_case(1);
    test_wanted();
    test_riders();
    if (master_ports[0])
        test_redlock();
    return test_report();
}
