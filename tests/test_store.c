/* test_store.c - The store seam (service/store/store.h) against a real store, through its
 * table only, as an engine uses it: the stock set and read, a locked sale's grant and its
 * write with the release or alone, the ledger found by request id, the idempotency
 * record, the fence (a stale grant's write refused: v9's token on Redis, v11's node gone
 * on ZooKeeper), the atomic sale, the probe and the live page's channel (where the store
 * has them), and a store that cannot be reached. What the engine decides (how many a
 * batch sells) is done here by hand, as sale.c does it. The same checks for every store.
 * Usage: test_store redis PORT DOWN_PORT          (DOWN_PORT: nothing listens on it)
 *        test_store zookeeper H:P,... DOWN_H:P    (DOWN_H:P: nothing listens on it) */
#include "service/store/store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

#include "service/config/config.h"
#include "service/store/zk.h"
#include "tests/test.h"

/* The outcomes of sale.c's mark_sold: k of n sold from stock under g. */
static void decide(struct store_batch *b, struct sale_request **rqs, int n, long long k)
{
    for (int i = 0; i < n; i++) {
        memset(&rqs[i]->out, 0, sizeof(rqs[i]->out));
        rqs[i]->out.result = i < k ? SALE_OK : SALE_SOLD_OUT;
        rqs[i]->out.remaining = i < k ? b->stock - 1 - i : 0;
        rqs[i]->out.token = b->g->token;
    }
    b->rqs = rqs, b->n = n, b->k = k, b->write = k > 0 || rqs[0]->idem_key;
}

/* item's stock and sold, as GET /inventory reads them; -1 each when not read. */
static void stock_of(struct store *s, const char *item, long long *stock, long long *sold)
{
    char msg[160];

    *stock = *sold = -1;
    if (s->ops->read(s, item, stock, sold, msg, sizeof(msg)) != SALE_OK)
        *stock = *sold = -1;
}

/* The store's words, and the versions its locked sale and its fence are tested with. */
static const char *store_name, *unavailable, *sale_lock, *fence_lock;

static struct lock_client *lock_on(struct store *s, const char *version)
{
    struct lock_config cfg = { .redis = s->redis, .zk = s->zk, .ttl_ms = 5000,
                               .instance_id = "test-store" };
    struct error err;
    struct lock_client *lc = lock_client_create(lock_find(version), &cfg, &err);

    if (lc == NULL) {
        fprintf(stderr, "test_store: lock %s: %s\n", version, err.msg);
        exit(2);
    }
    return lc;
}

static void test_stock_and_ledger(struct store *s)
{
    struct error err;
    long long stock, sold, entries = -1;

    test_cond("the store names itself and what it answers when unreachable",
              strcmp(s->ops->name, store_name) == 0 && strcmp(s->ops->unavailable, unavailable) == 0);
    test_cond("it answers", s->ops->ping(s));
    test_cond("set_stock sets an item", s->ops->set_stock(s, "st1", 5, &err) == 0);
    stock_of(s, "st1", &stock, &sold);
    test_cond("read: the stock set, nothing sold", stock == 5 && sold == 0);
    test_cond("the ledger starts empty",
              s->ops->ledger(s, "st1", NULL, &entries, NULL, &err) == 0 && entries == 0);
    test_cond("an item never set reads as unknown",
              s->ops->read(s, "never-set", &stock, &sold, (char[160]){ 0 }, 160) == SALE_UNKNOWN_ITEM);
}

/* A grant, two sales written with the release; then one sold alone (the grant kept) and
 * the release with nothing to write. */
static void test_locked_sale(struct store *s, struct lock_client *lc)
{
    struct sale_request r[3] = { { .item = "st1", .request_id = "r1" },
                                 { .item = "st1", .request_id = "r2" },
                                 { .item = "st1", .request_id = "r3" } };
    struct sale_request *rqs[3] = { &r[0], &r[1], &r[2] };
    struct lock_grant g;
    struct store_read read = { 0 };
    struct error err;
    long long stock, sold, entries = -1;
    int released = -1, found = -1, st;

    st = s->ops->grant(s, lc, "st1", 1000, &g, &read, &err);
    test_cond("grant: the lock, and the stock read with it",
              st == LOCK_OK && read.asked && read.result == SALE_OK && read.stock == 5);
    struct store_batch b = { .g = &g, .stock = read.stock, .batch = 1 };
    decide(&b, rqs, 2, 2);
    test_cond("sell with the release: written, and the grant given back",
              s->ops->sell(s, lc, &b, 1, &released) == STORE_RELEASED && released == LOCK_OK &&
              r[0].out.result == SALE_OK && r[1].out.result == SALE_OK && r[1].out.remaining == 3);
    stock_of(s, "st1", &stock, &sold);
    test_cond("stock and sold moved together", stock == 3 && sold == 2);
    test_cond("the ledger holds both, found by request id",
              s->ops->ledger(s, "st1", "r2", &entries, &found, &err) == 0 && entries == 2 && found == 1);
    test_cond("and not a request it never sold",
              s->ops->ledger(s, "st1", "r9", &entries, &found, &err) == 0 && found == 0);

    st = s->ops->grant(s, lc, "st1", 1000, &g, &read, &err);
    b = (struct store_batch){ .g = &g, .stock = read.stock, .batch = 1 };
    decide(&b, rqs + 2, 1, 1);
    test_cond("sell alone: written, the grant kept, the stock it left known",
              st == LOCK_OK && s->ops->sell(s, lc, &b, 0, &released) == STORE_KEPT &&
              r[2].out.result == SALE_OK && b.stock == 2);
    b.batch = 2;
    decide(&b, rqs, 1, 0);
    b.write = 0;
    test_cond("the last batch, nothing to write: released",
              s->ops->sell(s, lc, &b, 1, &released) == STORE_RELEASED && released == LOCK_OK);
    stock_of(s, "st1", &stock, &sold);
    test_cond("three sold in all", stock == 2 && sold == 3);
}

/* The stale grant made stale: on Redis (v9) another grant after it (a newer token); on
 * ZooKeeper (v11) its node deleted, as its session's expiry deletes it. */
static void make_stale(struct store *s, struct lock_client *lc, struct lock_grant *old,
                       struct lock_grant *now)
{
    struct store_read read;
    struct error err;

    if (s->zk) {
        struct zk_session z;
        struct zk_error why;
        if (zk_enter(s->zk, &z, &why) == ZK_OK) {
            zk_delete(&z, lock_grant_guard(lc, old), -1, &why);
            zk_leave(&z);
        }
        return;
    }
    lock_release(lc, old, NULL, NULL, &err);   /* as if its lease had run out */
    s->ops->grant(s, lc, "st2", 1000, now, &read, &err);
}

/* A stale grant's write is refused by the store's fence: nothing written, lease_lost. */
static void test_fence(struct store *s, struct lock_client *lc)
{
    struct sale_request r = { .item = "st2", .request_id = "f1" };
    struct sale_request *rq = &r;
    struct lock_grant old, now;
    struct store_read read;
    struct error err;
    long long stock, sold;
    int released;

    s->ops->set_stock(s, "st2", 10, &err);
    s->ops->grant(s, lc, "st2", 1000, &old, &read, &err);
    make_stale(s, lc, &old, &now);
    if (!s->zk) {
        struct store_batch b = { .g = &now, .stock = read.stock, .batch = 1 };
        decide(&b, &rq, 1, 1);
        test_cond("the newer grant (token 2) writes",
                  now.token > old.token && s->ops->sell(s, lc, &b, 1, &released) == STORE_RELEASED &&
                  r.out.result == SALE_OK);
    }
    struct store_batch b = { .g = &old, .stock = 10, .batch = 1 };
    decide(&b, &rq, 1, 1);
    test_cond("the stale grant's write is refused: lease_lost, nothing written",
              s->ops->sell(s, lc, &b, 0, &released) == STORE_FAILED && r.out.result == SALE_LEASE_LOST);
    if (s->zk)
        lock_release(lc, &old, NULL, NULL, &err);
    stock_of(s, "st2", &stock, &sold);
    test_cond("only the live grant sold", s->zk ? stock == 10 && sold == 0 : stock == 9 && sold == 1);
}

/* ZooKeeper: a session's end ends its lease. A grant's write after its session ended is
 * refused; the next grant is made in a new session. */
static void test_expiry(struct store *s, struct lock_client *lc)
{
    struct sale_request r = { .item = "st4", .request_id = "e1" };
    struct sale_request *rq = &r;
    struct lock_grant old, now;
    struct store_read read;
    struct zk_error why;
    struct error err;
    long long sessions = zk_sessions(s->zk);
    int released;

    s->ops->set_stock(s, "st4", 3, &err);
    s->ops->grant(s, lc, "st4", 1000, &old, &read, &err);
    test_cond("the ensemble ends the session (another handle takes it over and closes it)",
              zk_expire(s->zk, &why) == ZK_OK && lock_grant_is_lost(lc, &old));
    struct store_batch b = { .g = &old, .stock = read.stock, .batch = 1 };
    decide(&b, &rq, 1, 1);
    test_cond("the grant of the ended session cannot write: lease_lost",
              s->ops->sell(s, lc, &b, 0, &released) == STORE_FAILED && r.out.result == SALE_LEASE_LOST);
    test_cond("its release says the lease expired",
              lock_release(lc, &old, NULL, NULL, &err) == LOCK_EXPIRED);
    test_cond("the next grant is made in a new session",
              s->ops->grant(s, lc, "st4", 2000, &now, &read, &err) == LOCK_OK &&
              zk_sessions(s->zk) == sessions + 1 && read.stock == 3);
    b = (struct store_batch){ .g = &now, .stock = read.stock, .batch = 1 };
    decide(&b, &rq, 1, 1);
    test_cond("and writes", s->ops->sell(s, lc, &b, 1, &released) == STORE_RELEASED &&
                            r.out.result == SALE_OK && released == LOCK_OK);
}

/* A waiter on a node, on its own thread: zk_wait_gone's answer and how long it took. */
struct waiter {
    struct zk_session *z;
    const char *path;
    int rc;
    long long took_ms;
};

static void *wait_main(void *arg)
{
    struct waiter *w = arg;
    struct zk_error why = { 0 };
    long long t0 = clock_now_ms();

    w->rc = zk_wait_gone(w->z, w->path, t0 + 5000, &why);
    w->took_ms = clock_now_ms() - t0;
    return NULL;
}

/* ZooKeeper: the wait for a node to go (v11's waiter watches its predecessor). A node
 * already gone answers at once and leaves no watch; two waiters on one node are both woken
 * by its delete, at once; a waiter that gave up leaves a watch whose later firing finds no
 * one (run under the address sanitizer, a watch that outlived its waiter shows here). */
static void test_watch(struct store *s)
{
    const char *path = "/inventory/st1/watched";
    struct zk_session z;
    struct zk_error why = { 0 };
    struct waiter w[2] = { { &z, path, -1, 0 }, { &z, path, -1, 0 } };
    pthread_t t[2];
    long long t0;

    if (zk_enter(s->zk, &z, &why) != ZK_OK) {
        test_cond("a session for the watch checks", 0);
        return;
    }
    zk_delete(&z, path, -1, &why);
    t0 = clock_now_ms();
    test_cond("a node already gone: the wait answers at once",
              zk_wait_gone(&z, path, t0 + 5000, &why) == ZK_OK && clock_now_ms() - t0 < 1000);
    test_cond("the node made and deleted after it (no watch of that wait is left to fire)",
              zk_create(&z, path, "x", 1, ZK_PERSISTENT, NULL, &why) == ZK_OK &&
              zk_delete(&z, path, -1, &why) == ZK_OK);
    zk_create(&z, path, "x", 1, ZK_PERSISTENT, NULL, &why);
    why.fault = ZK_E_OTHER;
    test_cond("a wait on a node that stays runs out of time (and says so)",
              zk_wait_gone(&z, path, clock_now_ms() + 300, &why) == ZK_FAIL && why.fault == ZK_E_NONE);
    for (int i = 0; i < 2; i++)
        pthread_create(&t[i], NULL, wait_main, &w[i]);
    clock_sleep_ms(300);
    t0 = clock_now_ms();
    zk_delete(&z, path, -1, &why);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    test_cond("two waiters on one node: its delete wakes both, at once",
              w[0].rc == ZK_OK && w[1].rc == ZK_OK && w[0].took_ms < 4000 && w[1].took_ms < 4000 &&
              clock_now_ms() - t0 < 2000);
    test_cond("and a wait after them answers (the node is gone)",
              zk_wait_gone(&z, path, clock_now_ms() + 5000, &why) == ZK_OK);
    zk_leave(&z);
}

/* ZooKeeper: a keyed sale whose answer was lost and settled as never written left a
 * tombstone at its entry; the same key sent again sells (the tombstone replaced in the
 * multi), and once more replays that sale. */
static void test_tombstone_retry(struct store *s)
{
    struct sale_request k = { .item = "st2", .idem_key = "k-tomb", .request_id = "t1" };
    struct store_group one = { .rqs = { &k }, .n = 1 };
    struct store_group *groups[] = { &one };
    char path[ZK_PATH_MAX], bucket[ZK_PATH_MAX], text[64];
    struct zk_session z;
    struct zk_error why;
    struct error err;
    int len;

    s->ops->set_stock(s, "st2", 4, &err);
    zs_entry(&path, &bucket, "st2", "k-tomb", "t1", "x", 0);
    if (zk_enter(s->zk, &z, &why) != ZK_OK) {
        test_cond("a session for the tombstone checks", 0);
        return;
    }
    zs_make_path(&z, bucket, &why);
    test_cond("a tombstone at a keyed sale's entry (settled as never written)",
              zk_create(&z, path, "tombstone", 9, ZK_PERSISTENT, NULL, &why) == ZK_OK);
    s->ops->bind_key(s, &k);
    s->ops->sell_atomic(s, groups, 1);
    test_cond("the key sent again sells: 3 left, not an unreadable replay",
              k.out.result == SALE_OK && !k.out.replayed && k.out.remaining == 3);
    test_cond("  its entry now holds the sale's record, not the tombstone",
              zk_get(&z, path, text, sizeof(text), &len, NULL, &why) == ZK_OK &&
              strncmp(text, "200 3 ", 6) == 0);
    memset(&k.out, 0, sizeof(k.out));
    s->ops->sell_atomic(s, groups, 1);
    test_cond("  and once more: replayed, nothing sold", k.out.result == SALE_OK &&
              k.out.replayed && k.out.remaining == 3);
    zk_leave(&z);
}

static void test_keys_and_atomic(struct store *s)
{
    struct sale_request k1 = { .item = "st1", .idem_key = "k-1", .request_id = "a0" };
    struct sale_request k2 = { .item = "st3", .idem_key = "k-1", .request_id = "a9" };
    struct sale_request r[3] = { { .item = "st1", .request_id = "a1" },
                                 { .item = "st1", .request_id = "a2" },
                                 { .item = "st1", .request_id = "a3" } };
    struct store_group one = { .rqs = { &k1 }, .n = 1 }, three = { .rqs = { &r[0], &r[1], &r[2] }, .n = 3 };
    struct store_group *groups[] = { &one, &three };
    long long stock, sold;

    test_cond("a new idempotency key binds to its item", s->ops->bind_key(s, &k1) == 0);
    test_cond("the same key for another item is refused: key_reused",
              s->ops->bind_key(s, &k2) != 0 && k2.out.result == SALE_KEY_REUSED);
    s->ops->sell_atomic(s, groups, 2);
    test_cond("atomic: the keyed sale sold (2 left, 1 for it)",
              k1.out.result == SALE_OK && k1.out.remaining == 1);
    test_cond("atomic: of three more, the last unit sold and two sold out",
              r[0].out.result == SALE_OK && r[1].out.result == SALE_SOLD_OUT &&
              r[2].out.result == SALE_SOLD_OUT);
    memset(&k1.out, 0, sizeof(k1.out));
    s->ops->sell_atomic(s, groups, 1);
    test_cond("the keyed sale again: its first answer replayed, nothing sold",
              k1.out.result == SALE_OK && k1.out.replayed && k1.out.remaining == 1);
    stock_of(s, "st1", &stock, &sold);
    test_cond("sold out: stock 0, sold 5 of 5", stock == 0 && sold == 5);
}

static void test_probe_and_channel(struct store *s)
{
    if (s->ops->probe_enter == NULL || s->ops->subscribe == NULL) {
        test_cond("a store without the probe has no channel either (ZooKeeper)",
                  s->ops->probe_enter == NULL && s->ops->subscribe == NULL && s->ops->publish == NULL);
        return;
    }
    struct error err;
    struct store_message m = { .item = "st1", .text = "{\"hello\":1}" };
    long long heard = -1;
    char *text = NULL;
    struct store_sub *sub;

    test_cond("probe: the first inside is no overlap", s->ops->probe_enter(s, "st1", "p1") == 0);
    test_cond("probe: a second inside at once is", s->ops->probe_enter(s, "st1", "p2") == 1);
    sub = s->ops->subscribe(s, "st1", &err);
    test_cond("subscribe: confirmed",
              sub && s->ops->sub_read(sub, 1000, &text) == STORE_HEARD_SUBSCRIBED);
    s->ops->publish(s, &m, 1, &heard);
    test_cond("publish: heard by the one subscriber", heard == 1);
    test_cond("the subscriber reads the message as sent",
              sub && s->ops->sub_read(sub, 1000, &text) == STORE_HEARD_MESSAGE && text &&
              strcmp(text, m.text) == 0);
    free(text);
    test_cond("quiet, the store answers the heartbeat",
              sub && s->ops->sub_read(sub, 100, &text) == STORE_HEARD_QUIET);
    if (sub)
        s->ops->sub_close(sub);
}

static void test_down(const char *down)
{
    struct error err = { 0 };
    long long stock, sold;
    char msg[160];
    struct store *s;

    if (svc.zookeeper) {   /* a ZooKeeper store opens its session at once, or fails */
        svc.zookeeper = down;
        svc.zk_session_ms = 2000;
        s = store_open(&svc, &err);
        test_cond("an ensemble that does not answer: an error naming its connect string",
                  s == NULL && strstr(err.msg, down) != NULL);
        store_close(s);
        return;
    }
    svc.redis_port = atoi(down);
    snprintf(svc.redis_label, sizeof(svc.redis_label), "127.0.0.1:%s", down);
    s = store_open(&svc, &err);
    test_cond("a store that is down opens (it connects lazily)", s != NULL);
    if (s == NULL)
        return;
    test_cond("and does not answer", !s->ops->ping(s));
    test_cond("a read says the store is down",
              s->ops->read(s, "st1", &stock, &sold, msg, sizeof(msg)) == SALE_STORE_DOWN);
    store_close(s);
}

/* The store asked for: svc set for it, and its words. */
static int store_of(const char *kind, const char *where)
{
    snprintf(svc.name, sizeof(svc.name), "test-store");
    snprintf(svc.instance_id, sizeof(svc.instance_id), "0123456789abcdef");
    if (strcmp(kind, "zookeeper") == 0) {
        svc.zookeeper = where;
        svc.zk_session_ms = 4000;
        store_name = "zookeeper", unavailable = "store_unavailable", sale_lock = fence_lock = "v11";
        return 0;
    }
    if (strcmp(kind, "redis") != 0)
        return -1;
    svc.redis_port = atoi(where);
    snprintf(svc.redis_label, sizeof(svc.redis_label), "127.0.0.1:%s", where);
    store_name = "redis", unavailable = "redis_unavailable", sale_lock = "v8", fence_lock = "v9";
    return 0;
}

int main(int argc, char **argv)
{
    struct error err = { 0 };
    struct lock_client *sale, *fence;

    if (argc != 4 || store_of(argv[1], argv[2]) != 0) {
        fprintf(stderr, "usage: test_store redis PORT DOWN_PORT | zookeeper H:P,... DOWN_H:P\n");
        return 2;
    }
    if ((svc_store = store_open(&svc, &err)) == NULL) {
        fprintf(stderr, "test_store: %s\n", err.msg);
        return 2;
    }
    sale = lock_on(svc_store, sale_lock);
    fence = strcmp(fence_lock, sale_lock) == 0 ? sale : lock_on(svc_store, fence_lock);
    test_stock_and_ledger(svc_store);
    test_locked_sale(svc_store, sale);
    test_fence(svc_store, fence);
    if (svc_store->zk) {
        test_watch(svc_store);
        test_tombstone_retry(svc_store);
        test_expiry(svc_store, sale);
    }
    test_keys_and_atomic(svc_store);
    test_probe_and_channel(svc_store);
    if (fence != sale)
        lock_client_destroy(fence);
    lock_client_destroy(sale);
    store_close(svc_store);
    test_down(argv[3]);
    return test_report();
}
