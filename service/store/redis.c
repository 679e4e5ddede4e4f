/* redis.c - The stock on Redis: the store's table of operations (at the bottom), opening
 * it on one address, Sentinel or a Cluster, and the plain operations: health, an item's
 * stock and units sold, setting the stock, the ledger, an idempotency key's binding, the
 * probe, the store's metrics. A locked sale is redis_sell.c's, the atomic one
 * redis_atomic.c's, the live page's channels redis_events.c's. */
#include "service/store/redis.h"

#include <stdlib.h>
#include <string.h>

#include "service/config/config.h"
#include "service/log.h"
#include "service/parse.h"

#include "lua_scripts.h"

/* An Idempotency-Key's binding to its item outlives the key's first answer by this much:
 * while an answer is kept, the key stays bound to its item. */
enum { BIND_MARGIN_MS = 60 * 1000 };

/* rd_config.on_state: one log line when Redis goes, one when it is back. */
static void log_state(void *arg, int up, const char *why)
{
    const struct redis_store *rs = arg;

    if (up)
        log_event("INFO", "redis %s reachable again", rs->label);
    else
        log_event("WARN", "redis %s unreachable: %s", rs->label, why && *why ? why : "connection dropped");
}

static int rs_ping(struct store *s)
{
    struct rd_error err;
    struct rd_reply *r = rd_call(s->redis, RD_T(RD_STATUS), &err, "PING");

    rd_reply_free(r);
    return r != NULL;
}

/* 1 when err says Redis cannot be reached or cannot serve now (the store is down). */
static int is_down(const struct rd_error *err)
{
    return rd_fault_is_io(err->fault) || rd_fault_is_cluster(err->fault) || err->fault == RD_E_AUTH;
}

static enum sale_result rs_read(struct store *s, const char *item, long long *stock,
                                long long *sold, char *msg, size_t size)
{
    struct rd_error err;
    struct store_read read = { 0 };
    char stock_key[RS_KEY_MAX], sold_key[RS_KEY_MAX];
    struct rd_reply *r = rd_call(s->redis, RD_T(RD_ARRAY), &err, "MGET %s %s",
                                 rs_key(&stock_key, RS_STOCK, item), rs_key(&sold_key, RS_SOLD, item));

    if (r == NULL && is_down(&err))
        return SALE_STORE_DOWN;
    if (r == NULL || r->elements != 2) {
        rd_reply_free(r);
        snprintf(msg, size, "MGET: unexpected reply");
        return SALE_ERROR;
    }
    rs_stock_of(r->element[0], item, &read);
    *stock = read.stock;
    snprintf(msg, size, "%s", read.msg);
    *sold = 0;
    if (r->element[1]->type == RD_STRING && parse_integer(r->element[1]->str, sold) != 0)
        *sold = 0;
    rd_reply_free(r);
    return read.result;
}

static int rs_set_stock(struct store *s, const char *item, long long n, struct error *err)
{
    struct rd_batch b = { 0 };
    struct rd_error why = { 0 };
    char stock[RS_KEY_MAX], sold[RS_KEY_MAX], orders[RS_KEY_MAX], probe[RS_KEY_MAX];
    char overlaps[RS_KEY_MAX];
    int st = RD_OK;

    rs_key(&stock, RS_STOCK, item);
    if (rd_batch_add(&b, &why, "MULTI") != RD_OK ||
        rd_batch_add(&b, &why, "SET %s %lld", stock, n) != RD_OK ||
        rd_batch_add(&b, &why, "SET %s 0", rs_key(&sold, RS_SOLD, item)) != RD_OK ||
        rd_batch_add(&b, &why, "DEL %s %s %s", rs_key(&orders, RS_ORDERS, item),
                     rs_key(&probe, RS_PROBE, item), rs_key(&overlaps, RS_OVERLAPS, item)) != RD_OK ||
        rd_batch_add(&b, &why, "EXEC") != RD_OK || rd_round_trip(s->redis, NULL, &b, NULL, &why) != RD_OK)
        st = RD_FAIL;
    else if (b.reply[b.n - 1] == NULL || b.reply[b.n - 1]->type != RD_ARRAY)
        st = rd_fail(&why, RD_E_PROTOCOL, "setting the stock: EXEC did not run it");
    rd_batch_reset(&b);
    if (st != RD_OK)
        rd_error_map(&why, err);
    return st;
}

/* The ledger is a stream, an entry per sale with its request id in the field "request". */
static int rs_ledger(struct store *s, const char *item, const char *id, long long *entries,
                     int *found, struct error *err)
{
    struct rd_error why = { 0 };
    char orders[RS_KEY_MAX];
    struct rd_reply *r = rd_call(s->redis, RD_T(RD_INTEGER), &why, "XLEN %s",
                                 rs_key(&orders, RS_ORDERS, item));

    if (r == NULL) {
        rd_error_map(&why, err);
        return RD_FAIL;
    }
    *entries = r->integer;
    rd_reply_free(r);
    if (found == NULL || id == NULL)
        return RD_OK;
    *found = 0;
    if ((r = rd_call(s->redis, RD_T(RD_ARRAY), &why, "XRANGE %s - +", orders)) == NULL) {
        rd_error_map(&why, err);
        return RD_FAIL;
    }
    for (size_t i = 0; i < r->elements && !*found; i++) {
        const struct rd_reply *e = r->element[i];
        const struct rd_reply *fields = e->type == RD_ARRAY && e->elements == 2 ? e->element[1] : NULL;
        for (size_t f = 0; fields && f + 1 < fields->elements; f += 2)
            if (fields->element[f]->type == RD_STRING && fields->element[f + 1]->type == RD_STRING &&
                strcmp(fields->element[f]->str, "request") == 0 &&
                strcmp(fields->element[f + 1]->str, id) == 0)
                *found = 1;
    }
    rd_reply_free(r);
    return RD_OK;
}

/* The item a key K was first used for (idem-item:K, a key of K's own: on a cluster in
 * another slot, so no script touches both it and the item's keys) is claimed before the
 * sale in one command: SET NX GET sets it when K is new and answers the item it already
 * names otherwise. */
static int rs_bind_key(struct store *s, struct sale_request *rq)
{
    struct redis_store *rs = redis_of(s);
    struct rd_error err = { 0 };
    char key[RS_KEY_MAX];
    struct rd_reply *r = rd_call(s->redis, RD_T(RD_STRING) | RD_T(RD_NIL), &err,
                                 "SET %s %s NX PX %ld GET", rs_idem_item_key(&key, rq->idem_key),
                                 rq->item, rs->idem_ttl_ms + BIND_MARGIN_MS);
    int reused;

    if (r == NULL) {
        sale_set_all(&rq, 1, is_down(&err) && err.fault != RD_E_AUTH ? SALE_STORE_DOWN : SALE_ERROR,
                     err.msg);
        return -1;
    }
    reused = r->type == RD_STRING && strcmp(r->str, rq->item) != 0;
    if (reused)
        snprintf(rq->out.message, sizeof(rq->out.message),
                 "this Idempotency-Key was first used for item %.64s", r->str);
    rd_reply_free(r);
    if (reused)
        rq->out.result = SALE_KEY_REUSED;
    return reused ? -1 : 0;
}

/* probe:{I} holds who is inside the critical section; entering while someone else is
 * inside counts one overlap in overlaps:{I} (what a scenario reads). The leave rides with
 * the sale's write (redis_sell.c). */
static int rs_probe_enter(struct store *s, const char *item, const char *id)
{
    char probe[RS_KEY_MAX], overlaps[RS_KEY_MAX];
    const char *argv[] = { rs_key(&probe, RS_PROBE, item), rs_key(&overlaps, RS_OVERLAPS, item), id };
    struct rd_error err;
    struct rd_reply *r = rd_eval(s->redis, &lua_probe_enter, RD_T(RD_INTEGER), 2, 1, argv, &err);
    int overlap = r && r->integer > 1;

    rd_reply_free(r);
    return overlap;
}

/* One counter, HELP and TYPE before it, on out. */
static void counter(FILE *out, const char *name, const char *help, long long value)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s counter\n%s %lld\n", name, help, name, name, value);
}

/* On a cluster: item's node is not answering (rd_key_silent). */
static int rs_item_silent(struct store *s, const char *item)
{
    char key[RS_KEY_MAX];

    return rd_key_silent(s->redis, rs_key(&key, RS_STOCK, item));
}

/* On a cluster: item's node as the client's map says (rd_key_node). */
static int rs_item_server(struct store *s, const char *item)
{
    char key[RS_KEY_MAX];

    return rd_key_node(s->redis, rs_key(&key, RS_STOCK, item));
}

/* On a cluster: a node calls wait on and that stopped answering is given up. */
static void rs_watch(struct store *s)
{
    rd_client_watch(s->redis);
}

/* The calling thread is a sale worker: at most most of them inside a call to one node
 * (0: no cap), its connections cut loose from a node that goes silent, and its calls
 * counted in *trips as they end. */
static void rs_worker(struct store *s, int most, atomic_long *trips)
{
    if (most > 0)
        rd_client_gate(s->redis, most);
    rd_thread_gate(1);
    rd_thread_trips(trips);
}

/* A cluster's nodes as the client has seen them: marked down, the most sale workers
 * inside a call to one at once, the calls failed at once, the waits for a place. */
static void node_metrics(struct store *s, FILE *out)
{
    static const char *const help[] = {
        "inventory_redis_node_down 1 while the cluster node is marked down (no answer "
        "within the command timeout, or a connect refused): its calls fail at once, not "
        "sent, until a probe is answered.\n# TYPE inventory_redis_node_down gauge",
        "inventory_redis_node_marked_down_total Times the node was marked down.\n"
        "# TYPE inventory_redis_node_marked_down_total counter",
        "inventory_redis_node_workers_peak The most sale workers inside a call to the node "
        "at once (at most half of them: --workers).\n"
        "# TYPE inventory_redis_node_workers_peak gauge",
        "inventory_redis_node_refused_total Calls failed at once, not sent: the node marked "
        "down, or half the workers inside a call to it and it silent.\n"
        "# TYPE inventory_redis_node_refused_total counter",
        "inventory_redis_node_gate_waits_total Times a sale worker found half the workers "
        "inside a call to the node and waited for a place.\n"
        "# TYPE inventory_redis_node_gate_waits_total counter",
    };
    struct rd_node_health h;

    for (int m = 0; m < 5; m++) {
        fprintf(out, "# HELP %s\n", help[m]);
        for (int i = 0; rd_client_health(s->redis, i, &h) == RD_OK; i++)
            if (m == 0)
                fprintf(out, "inventory_redis_node_down{node=\"%s\"} %d\n", h.node, h.down);
            else if (m == 1)
                fprintf(out, "inventory_redis_node_marked_down_total{node=\"%s\"} %lld\n",
                        h.node, h.marked);
            else if (m == 2)
                fprintf(out, "inventory_redis_node_workers_peak{node=\"%s\"} %d\n", h.node,
                        h.peak);
            else if (m == 4)
                fprintf(out, "inventory_redis_node_gate_waits_total{node=\"%s\"} %lld\n",
                        h.node, h.waited);
            else
                fprintf(out, "inventory_redis_node_refused_total{node=\"%s\",reason=\"down\"} "
                        "%lld\ninventory_redis_node_refused_total{node=\"%s\",reason=\"silent\"} "
                        "%lld\n", h.node, h.refused_down, h.node, h.refused_full);
    }
}

/* Its connections, a cluster's redirects and slot map reads (all 0 on one Redis), the
 * sales its replicas did not confirm; a cluster's nodes' health. */
static void rs_metrics(struct store *s, FILE *out)
{
    struct redis_store *rs = redis_of(s);
    struct rd_redirects r;

    counter(out, "inventory_sale_unreplicated_total",
            "Sales written but answered outcome_unknown: fewer than --replicas replicas "
            "acknowledged the write in time (WAIT).", atomic_load(&rs->unreplicated));
    counter(out, "inventory_redis_reconnects_total",
            "Redis connections dropped (an error, closed by the server, or a master that moved; "
            "the next use reconnects).", rd_client_drops(s->redis));
    rd_client_redirects(s->redis, &r);
    fprintf(out, "# HELP inventory_redis_redirects_total Cluster replies that sent a command "
                 "elsewhere (moved, ask) or asked it to wait (tryagain).\n"
                 "# TYPE inventory_redis_redirects_total counter\n"
                 "inventory_redis_redirects_total{kind=\"moved\"} %lld\n"
                 "inventory_redis_redirects_total{kind=\"ask\"} %lld\n"
                 "inventory_redis_redirects_total{kind=\"tryagain\"} %lld\n",
            r.moved, r.ask, r.tryagain);
    fprintf(out, "# HELP inventory_redis_tryagain_wait_seconds_total Time spent waiting out "
                 "TRYAGAIN (a slot migrating).\n"
                 "# TYPE inventory_redis_tryagain_wait_seconds_total counter\n"
                 "inventory_redis_tryagain_wait_seconds_total %.3f\n",
            r.tryagain_wait_ms / 1000.0);
    counter(out, "inventory_redis_cluster_map_reads_total",
            "Times the cluster's slot map was read (at start, after MOVED, once per burst).",
            r.map_reads);
    if (strcmp(rd_client_locator(s->redis), "cluster") == 0)
        node_metrics(s, out);
}

static void rs_close(struct store *s)
{
    rd_client_destroy(s->redis);
    free(redis_of(s));
}

static const struct store_ops redis_ops;

struct store *redis_store_open(const struct service_config *cfg, struct error *err)
{
    struct redis_store *rs = calloc(1, sizeof(*rs));
    struct rd_error why = { 0 };

    if (rs == NULL) {
        error_set(err, FAULT_NOMEM, "out of memory");
        return NULL;
    }
    snprintf(rs->instance, sizeof(rs->instance), "%s", cfg->name);
    snprintf(rs->label, sizeof(rs->label), "%s", cfg->redis_label);
    rs->idem_ttl_ms = cfg->idem_ttl_ms;
    rs->replicas = cfg->replicas;
    rs->replicas_wait_ms = lock_replicas_wait_ms(cfg->ttl_ms);
    rs->cluster = cfg->cluster != NULL;
    struct rd_config rc = {
        .host = cfg->redis_host, .port = cfg->redis_port,
        .sentinels = cfg->sentinels, .sentinel_master = cfg->sentinel_master,
        .cluster = cfg->cluster, .sentinel_user = cfg->sentinel_user,
        .sentinel_password = cfg->sentinel_password[0] ? cfg->sentinel_password : NULL,
        .user = cfg->redis_user, .password = cfg->redis_password[0] ? cfg->redis_password : NULL,
        .on_state = log_state, .state_arg = rs,
    };
    rs->base = (struct store){ .ops = &redis_ops, .state = rs, .spread = cfg->cluster != NULL };
    if ((rs->base.redis = rd_client_create(&rc, &why)) == NULL) {
        rd_error_map(&why, err);
        free(rs);
        return NULL;
    }
    return &rs->base;
}

static const struct store_ops redis_ops = {
    .name = "redis",
    .unavailable = "redis_unavailable",
    .close = rs_close,
    .ping = rs_ping,
    .read = rs_read,
    .set_stock = rs_set_stock,
    .ledger = rs_ledger,
    .bind_key = rs_bind_key,
    .grant = rs_grant,
    .sell = rs_sell,
    .sell_atomic = rs_sell_atomic,
    .item_silent = rs_item_silent,
    .watch = rs_watch,
    .worker = rs_worker,
    .item_server = rs_item_server,
    .probe_enter = rs_probe_enter,
    .metrics = rs_metrics,
    .publish = rs_publish,
    .subscribe = rs_subscribe,
    .sub_read = rs_sub_read,
    .sub_shutdown = rs_sub_shutdown,
    .sub_close = rs_sub_close,
};
