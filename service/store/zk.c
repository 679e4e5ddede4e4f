/* zk.c - The stock on ZooKeeper: the store's table of operations (at the bottom), opening
 * its session on the ensemble, and the plain operations: health, an item's stock and units
 * sold, setting the stock, the ledger, an idempotency key's binding, the store's metrics. A
 * sale is zk_sell.c's; the paths are zk_paths.c's. ZooKeeper has no channel for the live
 * page's events, nor the mutual-exclusion probe: those operations are absent (the events
 * are off, /events answers that this store has none). */
#include "service/store/zk.h"

#include <stdlib.h>
#include <string.h>

#include "service/config/config.h"
#include "service/log.h"
#include "service/parse.h"

enum { NUMBER_MAX = 24, ANSWER_MAX = 160 };

/* zk_config.on_state: one log line when the ensemble goes, one when it is back. */
static void log_state(void *arg, int up, const char *why)
{
    const struct zk_store *zs = arg;

    (void)zs;
    if (up)
        log_event("INFO", "zookeeper reachable again");
    else
        log_event("WARN", "zookeeper unreachable: %s", why && *why ? why : "no session");
}

static int zs_ping(struct store *s)
{
    struct zk_session z;
    struct zk_error err;
    int len;
    char buf[8];

    if (zk_enter(s->zk, &z, &err) != ZK_OK)
        return 0;
    int ok = zk_get(&z, "/zookeeper", buf, sizeof(buf), &len, NULL, &err) == ZK_OK;
    zk_leave(&z);
    return ok;
}

/* A number kept as decimal text at path into *v (0 when the node is missing): 0 when
 * read, 1 when missing, -1 when it holds no integer, -2 when the ensemble did not answer. */
static int number_at(struct zk_session *z, const char *path, long long *v)
{
    char text[NUMBER_MAX + 1];
    struct zk_error err;
    int len;

    *v = 0;
    if (zk_get(z, path, text, sizeof(text), &len, NULL, &err) != ZK_OK)
        return err.fault == ZK_E_NONODE ? 1 : -2;
    return parse_integer(text, v) == 0 ? 0 : -1;
}

static enum sale_result zs_read(struct store *s, const char *item, long long *stock,
                                long long *sold, char *msg, size_t size)
{
    char path[ZK_PATH_MAX], sold_path[ZK_PATH_MAX];
    struct zk_session z;
    struct zk_error err;
    int st, st2;

    if (zk_enter(s->zk, &z, &err) != ZK_OK)
        return SALE_STORE_DOWN;
    st = number_at(&z, zs_path(&path, ZS_STOCK, item), stock);
    st2 = number_at(&z, zs_path(&sold_path, ZS_SOLD, item), sold);
    zk_leave(&z);
    if (st == -2 || st2 == -2)
        return SALE_STORE_DOWN;
    if (st == 1)
        snprintf(msg, size, "no stock node %.100s; set it with deploy/stock", path);
    else if (st == -1)
        snprintf(msg, size, "%.100s does not hold an integer", path);
    return st == 1 ? SALE_UNKNOWN_ITEM : st == -1 ? SALE_BAD_STOCK : SALE_OK;
}

static int delete_tree(struct zk_session *z, const char *path, struct zk_error *err);

/* Deletes parent's children, leaves of the tree (a ledger's entries), many to a multi.
 * Children of children are deleted one by one (delete_tree). */
static int delete_children(struct zk_session *z, const char *parent, struct zk_children *c,
                           struct zk_error *err)
{
    char (*paths)[ZK_PATH_MAX] = malloc(sizeof(*paths) * ZK_MULTI_MAX);
    struct zk_op ops[ZK_MULTI_MAX];
    int failed, st = ZK_OK;

    if (paths == NULL)
        return zk_fail(err, ZK_E_NOMEM, 0, "out of memory");
    for (int i = 0; i < c->n && st == ZK_OK; i += ZK_MULTI_MAX) {
        int n = c->n - i < ZK_MULTI_MAX ? c->n - i : ZK_MULTI_MAX;
        for (int k = 0; k < n; k++) {
            snprintf(paths[k], sizeof(paths[k]), "%.*s/%.*s", ZK_PATH_MAX / 2, parent,
                     ZK_PATH_MAX / 2 - 2, c->names[i + k]);
            ops[k] = (struct zk_op){ .kind = ZK_OP_DELETE, .path = paths[k], .version = -1 };
        }
        if (zk_multi(z, ops, n, &failed, err) == ZK_OK)
            continue;
        for (int k = 0; k < n && st == ZK_OK; k++)   /* one had children, or went: one by one */
            st = delete_tree(z, paths[k], err);
    }
    free(paths);
    return st;
}

/* Deletes path and everything under it; what is gone already is fine. */
static int delete_tree(struct zk_session *z, const char *path, struct zk_error *err)
{
    struct zk_children c;
    int st;

    if (zk_get_children(z, path, &c, err) != ZK_OK)
        return err->fault == ZK_E_NONODE ? ZK_OK : ZK_FAIL;
    st = delete_children(z, path, &c, err);
    zk_children_free(&c);
    if (st == ZK_OK && zk_delete(z, path, -1, err) != ZK_OK && err->fault != ZK_E_NONODE)
        st = ZK_FAIL;
    return st;
}

/* Sets path's number, making the node (and its parents) when it is missing. */
static int number_set(struct zk_session *z, const char *path, long long v, struct zk_error *err)
{
    char text[NUMBER_MAX];

    snprintf(text, sizeof(text), "%lld", v);
    if (zk_set(z, path, text, (int)strlen(text), -1, NULL, err) == ZK_OK)
        return ZK_OK;
    if (err->fault != ZK_E_NONODE || zs_make_path(z, path, err) != ZK_OK)
        return ZK_FAIL;
    return zk_set(z, path, text, (int)strlen(text), -1, NULL, err);
}

static int zs_set_stock(struct store *s, const char *item, long long n, struct error *err)
{
    char path[ZK_PATH_MAX];
    struct zk_session z;
    struct zk_error why = { 0 };
    int st = ZK_FAIL;

    if (zk_enter(s->zk, &z, &why) == ZK_OK) {
        st = delete_tree(&z, zs_path(&path, ZS_ORDERS, item), &why);
        if (st == ZK_OK)
            st = number_set(&z, zs_path(&path, ZS_SOLD, item), 0, &why);
        if (st == ZK_OK)
            st = number_set(&z, zs_path(&path, ZS_STOCK, item), n, &why);
        zk_leave(&z);
    }
    if (st != ZK_OK)
        zk_error_map(&why, err);
    return st;
}

/* One bucket of the ledger: its entries (not the tombstones) counted into *entries, and
 * *found set when one is named by prefix (NULL: not looked for). */
static int bucket_count(struct zk_session *z, const char *bucket, const char *prefix,
                        long long *entries, int *found, struct zk_error *err)
{
    struct zk_children c;
    char path[ZK_PATH_MAX], text[ANSWER_MAX];
    int len;

    if (zk_get_children(z, bucket, &c, err) != ZK_OK)
        return err->fault == ZK_E_NONODE ? ZK_OK : ZK_FAIL;
    for (int i = 0; i < c.n; i++) {
        snprintf(path, sizeof(path), "%.*s/%.*s", ZK_PATH_MAX / 2, bucket, ZK_PATH_MAX / 2 - 2, c.names[i]);
        if (zk_get(z, path, text, sizeof(text), &len, NULL, err) != ZK_OK) {
            if (err->fault == ZK_E_NONODE)
                continue;   /* emptied meanwhile (deploy/stock) */
            zk_children_free(&c);
            return ZK_FAIL;   /* unread: a count short of it would be a false answer */
        }
        if (strcmp(text, "tombstone") == 0)
            continue;
        (*entries)++;
        if (prefix && strncmp(c.names[i], prefix, strlen(prefix)) == 0)
            *found = 1;
    }
    zk_children_free(&c);
    return ZK_OK;
}

static int zs_ledger(struct store *s, const char *item, const char *id, long long *entries,
                     int *found, struct error *err)
{
    char bucket[ZK_PATH_MAX], prefix[ZK_PATH_MAX];
    struct zk_session z;
    struct zk_error why = { 0 };
    int st = ZK_OK, at = id ? zs_id_prefix(&prefix, id) : -1;

    *entries = 0;
    if (found)
        *found = 0;
    if (zk_enter(s->zk, &z, &why) != ZK_OK) {
        zk_error_map(&why, err);
        return ZK_FAIL;
    }
    for (int b = 0; b < ZS_BUCKETS && st == ZK_OK; b++)
        st = bucket_count(&z, zs_bucket(&bucket, item, b), b == at && found ? prefix : NULL,
                          entries, found, &why);
    zk_leave(&z);
    if (st != ZK_OK)
        zk_error_map(&why, err);
    return st;
}

/* The key's binding: /inventory-keys/K holds the item it was first used for. */
static int zs_bind_key(struct store *s, struct sale_request *rq)
{
    char path[ZK_PATH_MAX], first[ITEM_MAX + 1];
    struct zk_session z;
    struct zk_error err = { 0 };
    int len, st;

    if (zk_enter(s->zk, &z, &err) != ZK_OK) {
        sale_set_all(&rq, 1, SALE_STORE_DOWN, NULL);
        return -1;
    }
    zs_key(&path, rq->idem_key);
    st = zk_create(&z, path, rq->item, (int)strlen(rq->item), ZK_PERSISTENT, NULL, &err);
    if (st != ZK_OK && err.fault == ZK_E_NONODE && zs_make_path(&z, "/inventory-keys", &err) == ZK_OK)
        st = zk_create(&z, path, rq->item, (int)strlen(rq->item), ZK_PERSISTENT, NULL, &err);
    if (st != ZK_OK && err.fault == ZK_E_EXISTS &&
        zk_get(&z, path, first, sizeof(first), &len, NULL, &err) == ZK_OK)
        st = strcmp(first, rq->item) == 0 ? ZK_OK : (rq->out.result = SALE_KEY_REUSED, ZK_FAIL);
    zk_leave(&z);
    if (st == ZK_OK)
        return 0;
    if (rq->out.result == SALE_KEY_REUSED)
        snprintf(rq->out.message, sizeof(rq->out.message),
                 "this Idempotency-Key was first used for item %.64s", first);
    else
        sale_set_all(&rq, 1, err.fault == ZK_E_LOST || err.fault == ZK_E_CONNECT ? SALE_STORE_DOWN
                                                                                : SALE_ERROR, err.msg);
    return -1;
}

/* One counter, HELP and TYPE before it, on out. */
static void counter(FILE *out, const char *name, const char *help, long long value)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s counter\n%s %lld\n", name, help, name, name, value);
}

static void zs_metrics(struct store *s, FILE *out)
{
    struct zk_store *zs = zk_of(s);

    counter(out, "inventory_zk_sessions_total", "ZooKeeper sessions opened (a new one after each expiry).",
            zk_sessions(s->zk));
    counter(out, "inventory_zk_expirations_total", "ZooKeeper sessions the ensemble expired.",
            zk_expirations(s->zk));
    counter(out, "inventory_zk_disconnects_total", "Connections to the ensemble lost.",
            zk_disconnects(s->zk));
    counter(out, "inventory_zk_multi_retries_total",
            "Sale multis run again after a version moved (read again first).", atomic_load(&zs->retries));
    fprintf(out, "# HELP inventory_zk_settled_total Multis whose answer was lost, settled by a tombstone.\n"
                 "# TYPE inventory_zk_settled_total counter\n"
                 "inventory_zk_settled_total{outcome=\"sold\"} %lld\n"
                 "inventory_zk_settled_total{outcome=\"not_sold\"} %lld\n"
                 "inventory_zk_settled_total{outcome=\"unknown\"} %lld\n",
            (long long)atomic_load(&zs->settled_sold), (long long)atomic_load(&zs->settled_unsold),
            (long long)atomic_load(&zs->unsettled));
}

static void zs_close(struct store *s)
{
    zk_client_destroy(s->zk);
    free(zk_of(s));
}

/* zk_config.give_up: the first session's wait ends when the instance is asked to stop. */
static int stop_asked(void *arg)
{
    const struct service_config *cfg = arg;

    return cfg->stop_asked && cfg->stop_asked();
}

static const struct store_ops zk_ops;

struct store *zk_store_open(const struct service_config *cfg, struct error *err)
{
    struct zk_store *zs = calloc(1, sizeof(*zs));
    struct zk_error why = { 0 };
    struct zk_config zc = { .servers = cfg->zookeeper, .session_ms = cfg->zk_session_ms,
                            .on_state = log_state, .give_up = stop_asked,
                            .give_up_arg = (void *)cfg };

    if (zs == NULL) {
        error_set(err, FAULT_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(zs->instance, sizeof(zs->instance), "%s", cfg->name);
    snprintf(zs->instance_id, sizeof(zs->instance_id), "%.12s", cfg->instance_id);
    zc.state_arg = zs;
    zs->base = (struct store){ .ops = &zk_ops, .state = zs };
    log_event("INFO", "zookeeper %s: waiting up to %ld ms for a session", cfg->zookeeper,
              cfg->zk_session_ms);
    if ((zs->base.zk = zk_client_create(&zc, &why)) == NULL) {
        zk_error_map(&why, err);
        free(zs);
        return NULL;
    }
    log_event("INFO", "zookeeper %s: session timeout %ld ms (asked %ld)", cfg->zookeeper,
              zk_session_ms(zs->base.zk), cfg->zk_session_ms);
    return &zs->base;
}

static const struct store_ops zk_ops = {
    .name = "zookeeper",
    .unavailable = "store_unavailable",
    .close = zs_close,
    .ping = zs_ping,
    .read = zs_read,
    .set_stock = zs_set_stock,
    .ledger = zs_ledger,
    .bind_key = zs_bind_key,
    .grant = zs_grant,
    .sell = zs_sell,
    .sell_atomic = zs_sell_atomic,
    .metrics = zs_metrics,
};
