/* cluster.c - Where a key's server is, on Redis Cluster: the master of the key's slot,
 * by a slot map read from any node that answers (CLUSTER SLOTS; the seed nodes first
 * time). A MOVED reply notes its slot's new node at once and has the map read again,
 * once per burst: at most every MAP_GAP_MS, by one thread while the others go on with
 * what they know. A connection error or CLUSTERDOWN (a master died, a failover under
 * way) has it read again too, so that the service follows the cluster's new map within
 * MAP_GAP_MS of it. The round trip (call.c) follows MOVED, ASK and TRYAGAIN; this file
 * only knows where slots are. Nodes are numbered as first seen, for the whole life of
 * the client (a thread keeps a connection per number). */
#include "redis/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

enum { MAP_GAP_MS = 100 };

struct cluster {
    struct rd_server seed[RD_SERVERS_MAX];
    int seeds;
    pthread_mutex_t nodes_mu;            /* guards appending to node[] */
    struct rd_server node[RD_SERVERS_KNOWN];
    atomic_int nodes;                    /* node[0..nodes) are set, never changed */
    _Atomic short slot[RD_SLOTS];        /* the node serving each slot; -1: none known */
    pthread_mutex_t read_mu;             /* one thread reads the map at a time */
    atomic_int mapped;                   /* 1 once a map was read */
    atomic_int stale;                    /* 1: read the map again (not before the gap) */
    atomic_llong read_ms;                /* monotonic: when the map was last read */
};

/* The number of the node at host:port, appended when new; -1 when the table is full. */
static int node_number(struct cluster *c, const char *host, int port)
{
    int n, found = -1;

    pthread_mutex_lock(&c->nodes_mu);
    n = atomic_load(&c->nodes);
    for (int i = 0; i < n && found < 0; i++)
        if (c->node[i].port == port && strcmp(c->node[i].host, host) == 0)
            found = i;
    if (found < 0 && n < RD_SERVERS_KNOWN) {
        snprintf(c->node[n].host, sizeof(c->node[n].host), "%s", host);
        c->node[n].port = port;
        atomic_store(&c->nodes, n + 1);
        found = n;
    }
    pthread_mutex_unlock(&c->nodes_mu);
    return found;
}

/* CLUSTER SLOTS's answer, [[start, end, [host, port, id], replica...], ...], into map;
 * a master named without a host ("") is at the host asked. How many ranges, or -1. */
static int parse_slots(struct cluster *c, const struct rd_reply *r, const char *asked,
                       short *map)
{
    for (size_t i = 0; i < r->elements; i++) {
        const struct rd_reply *e = r->element[i], *m;
        if (e->type != RD_ARRAY || e->elements < 3 || e->element[0]->type != RD_INTEGER ||
            e->element[1]->type != RD_INTEGER || (m = e->element[2])->type != RD_ARRAY ||
            m->elements < 2 || m->element[0]->type != RD_STRING ||
            m->element[1]->type != RD_INTEGER)
            return -1;
        int node = node_number(c, *m->element[0]->str ? m->element[0]->str : asked,
                               (int)m->element[1]->integer);
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            if (s >= 0 && s < RD_SLOTS)
                map[s] = (short)node;
    }
    return (int)r->elements;
}

/* Asks one server for the map: RD_OK with map filled, or RD_FAIL with err saying
 * why (it did not answer, or is not in cluster mode). */
static int ask_map(struct rd_client *rc, struct cluster *c, const struct rd_server *at,
                   short *map, struct rd_error *err)
{
    struct rd_conn *cn = rd_conn_connect(rc, at->host, at->port, err);
    struct rd_reply *r = cn ? rd_conn_command(cn, RD_T(RD_ARRAY), err, "CLUSTER SLOTS") : NULL;
    int st = RD_FAIL;

    if (r && parse_slots(c, r, at->host, map) >= 0)
        st = RD_OK;
    else if (r)
        rd_fail(err, RD_E_PROTOCOL, "%.64s:%d: CLUSTER SLOTS answered an unreadable map",
                  at->host, at->port);
    else if (cn && err->fault == RD_E_REPLY)
        rd_fail(err, RD_E_USAGE, "%.64s:%d is not a cluster node (cluster mode off?): %.40s",
                  at->host, at->port, err->msg);
    rd_reply_free(r);
    rd_conn_close(cn);
    return st;
}

/* Reads the map from the nodes known, then the seeds, the first that answers. Unless
 * forced (no map yet), only when the last read is MAP_GAP_MS old and no other thread is
 * reading. RD_OK, or RD_FAIL with err when no node answered. */
static int read_map(struct rd_client *rc, struct cluster *c, struct rd_error *err)
{
    short *map;
    int st = RD_FAIL, tried = 0;

    if (atomic_load(&c->mapped)) {
        if (clock_now_ms() - atomic_load(&c->read_ms) < MAP_GAP_MS ||
            pthread_mutex_trylock(&c->read_mu) != 0)
            return RD_OK;
    } else {
        pthread_mutex_lock(&c->read_mu);
        if (atomic_load(&c->mapped)) {   /* another thread read it meanwhile */
            pthread_mutex_unlock(&c->read_mu);
            return RD_OK;
        }
    }
    if ((map = malloc(sizeof(short) * RD_SLOTS)) == NULL) {
        pthread_mutex_unlock(&c->read_mu);
        return rd_fail(err, RD_E_NOMEM, "out of memory");
    }
    /* The nodes marked down last: one cut off would hold the reader for a connect. */
    for (int pass = 0; pass < 2 && st != RD_OK; pass++)
        for (int i = 0; st != RD_OK && i < atomic_load(&c->nodes) + c->seeds; i++) {
            int n = atomic_load(&c->nodes);
            const struct rd_server *at = i < n ? &c->node[i] : &c->seed[i - n];
            if ((i < n && rd_health_is_down(rc, i)) != pass)
                continue;
            for (int s = 0; s < RD_SLOTS; s++)
                map[s] = -1;
            st = ask_map(rc, c, at, map, err);
            tried++;
        }
    atomic_fetch_add(&rc->map_reads, 1);
    if (st == RD_OK) {
        for (int s = 0; s < RD_SLOTS; s++)
            atomic_store_explicit(&c->slot[s], map[s], memory_order_relaxed);
        atomic_store(&c->mapped, 1);
        atomic_store(&c->stale, 0);
    } else {
        char why[sizeof(err->msg)];
        memcpy(why, err->msg, sizeof(why));
        rd_fail(err, RD_E_CONNECT, "no node of the cluster gave its slot map (%d asked): "
                  "%.80s", tried, why);
    }
    atomic_store(&c->read_ms, clock_now_ms());
    free(map);
    pthread_mutex_unlock(&c->read_mu);
    return st;
}

static int cluster_route(struct rd_client *rc, int slot, struct rd_error *err)
{
    struct cluster *c = rc->locator_state;
    int node;

    if ((!atomic_load(&c->mapped) || atomic_load(&c->stale)) && read_map(rc, c, err) != RD_OK &&
        !atomic_load(&c->mapped))
        return -1;
    if (slot == RD_SLOT_NONE) {   /* no key: any master */
        for (int s = 0; s < RD_SLOTS; s += 64)
            if ((node = atomic_load_explicit(&c->slot[s], memory_order_relaxed)) >= 0)
                return node;
        slot = 0;
    }
    if ((node = atomic_load_explicit(&c->slot[slot], memory_order_relaxed)) >= 0)
        return node;
    atomic_store(&c->stale, 1);
    if (read_map(rc, c, err) == RD_OK &&
        (node = atomic_load_explicit(&c->slot[slot], memory_order_relaxed)) >= 0)
        return node;
    rd_fail(err, RD_E_CLUSTERDOWN, "no master serves slot %d now (the cluster's map, read "
              "%lld ms ago)", slot, clock_now_ms() - atomic_load(&c->read_ms));
    return -1;
}

static struct rd_conn *cluster_open(struct rd_client *rc, int server, struct rd_error *err)
{
    struct cluster *c = rc->locator_state;

    if (server < 0 || server >= atomic_load(&c->nodes)) {
        rd_fail(err, RD_E_CONNECT, "no cluster node number %d", server);
        return NULL;
    }
    return rd_conn_connect(rc, c->node[server].host, c->node[server].port, err);
}

/* A connection failed, or the cluster said CLUSTERDOWN: read the map again soon. */
static void cluster_forget(struct rd_client *rc)
{
    struct cluster *c = rc->locator_state;

    atomic_store(&c->stale, 1);
}

static int cluster_peek(struct rd_client *rc, int slot)
{
    struct cluster *c = rc->locator_state;

    return slot >= 0 && slot < RD_SLOTS ? atomic_load_explicit(&c->slot[slot], memory_order_relaxed)
                                        : -1;
}

static int cluster_describe(struct rd_client *rc, int server, char *buf, size_t size)
{
    struct cluster *c = rc->locator_state;

    if (server < 0 || server >= atomic_load(&c->nodes))
        return RD_FAIL;
    snprintf(buf, size, "%s:%d", c->node[server].host, c->node[server].port);
    return RD_OK;
}

/* "MOVED 3999 127.0.0.1:6381" or "ASK 3999 127.0.0.1:6381". */
static int cluster_redirected(struct rd_client *rc, const struct rd_reply *r, int moved)
{
    struct cluster *c = rc->locator_state;
    char host[256];
    int slot, port, node;

    if (r->type != RD_ERROR || sscanf(r->str, "%*s %d %255[^:]:%d", &slot, host, &port) != 3 ||
        slot < 0 || slot >= RD_SLOTS || (node = node_number(c, host, port)) < 0)
        return -1;
    if (moved) {
        atomic_store_explicit(&c->slot[slot], (short)node, memory_order_relaxed);
        atomic_store(&c->stale, 1);   /* others moved too, likely: read the map once */
    }
    return node;
}

static void cluster_destroy(struct rd_client *rc)
{
    struct cluster *c = rc->locator_state;

    pthread_mutex_destroy(&c->nodes_mu);
    pthread_mutex_destroy(&c->read_mu);
    free(c);
}

static int cluster_init(struct rd_client *rc, const struct rd_config *cfg, struct rd_error *err)
{
    struct cluster *c = calloc(1, sizeof(*c));

    if (c == NULL)
        return rd_fail(err, RD_E_NOMEM, "out of memory");
    if ((c->seeds = rd_servers_parse(cfg->cluster, c->seed, RD_SERVERS_MAX)) <= 0) {
        free(c);
        return rd_fail(err, RD_E_USAGE, "--redis-cluster HOST:PORT,... (1 to %d seed nodes)",
                         RD_SERVERS_MAX);
    }
    pthread_mutex_init(&c->nodes_mu, NULL);
    pthread_mutex_init(&c->read_mu, NULL);
    for (int s = 0; s < RD_SLOTS; s++)
        atomic_init(&c->slot[s], -1);
    rc->locator_state = c;
    return RD_OK;
}

const struct rd_locator rd_cluster_locator = {
    .name = "cluster",
    .init = cluster_init,
    .destroy = cluster_destroy,
    .route = cluster_route,
    .open = cluster_open,
    .forget = cluster_forget,
    .redirected = cluster_redirected,
    .marks_down = 1,
    .peek = cluster_peek,
    .describe = cluster_describe,
};
