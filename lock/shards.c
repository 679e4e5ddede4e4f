/* shards.c - The notify wait's subscriber on a Redis Cluster: sharded channels, one
 * SSUBSCRIBE per key waited on, on the node of its slot (made within SHARD_POLL_MS of the
 * first wait; until Redis confirms it, that key's waiters poll); a slot that moves ends
 * its channels' subscriptions (sunsubscribe), and they are made again on its new node. */
#include "lock/notify.h"

#include <string.h>

/* The subscriber's connection to one node. */
struct shard {
    int server;
    struct rd_conn *cn;
};

/* The connection to the node serving key, opened (and added to shards) when new; NULL
 * when it cannot be reached now. */
static struct rd_conn *shard_for(struct notify *n, struct shard *shards, int *ns, int server,
                                 const char *key)
{
    struct rd_error err;

    for (int i = 0; i < *ns; i++)
        if (shards[i].server == server)
            return shards[i].cn;
    if (*ns == RD_SERVERS_MAX ||
        (shards[*ns].cn = rd_conn_open(n->lc->redis, key, &err)) == NULL)
        return NULL;
    shards[*ns].server = rd_conn_server(shards[*ns].cn);
    return shards[(*ns)++].cn;
}

/* Sends SSUBSCRIBE for every key waited on that has no subscription (nor one asked for),
 * on its slot's node. The keys are taken under the table's lock, the network is used
 * outside it (finding a slot's node may read the cluster's map): waiters go on meanwhile. */
static void subscribe_new(struct notify *n, struct shard *shards, int *ns)
{
    enum { BATCH = 64 };
    struct key_queue *todo[BATCH];
    struct rd_error err;
    int k = 0;

    if (!atomic_exchange(&n->unasked, 0))
        return;   /* no queue made, nor subscription lost, since the last look */
    pthread_mutex_lock(&n->table_mu);
    for (struct key_queue *q = n->queues; q && k < BATCH; q = q->next)
        if (!q->asked && !atomic_load(&q->subscribed)) {
            q->asked = 1;   /* taken; put back below if it cannot be sent */
            todo[k++] = q;
        }
    if (k == BATCH)
        atomic_store(&n->unasked, 1);   /* more, maybe: the next round */
    pthread_mutex_unlock(&n->table_mu);
    for (int i = 0; i < k; i++) {
        struct key_queue *q = todo[i];   /* queues live until the client goes */
        struct rd_conn *cn = NULL;
        int server = rd_key_server(n->lc->redis, q->key, &err);
        if (server < 0 || (cn = shard_for(n, shards, ns, server, q->key)) == NULL ||
            rd_conn_send(cn, &err, "SSUBSCRIBE %s", q->key) != RD_OK)
            cn = NULL;
        pthread_mutex_lock(&n->table_mu);
        q->asked = cn != NULL;
        if (cn)
            q->server = rd_conn_server(cn);
        else
            atomic_store(&n->unasked, 1);   /* asked again next round */
        pthread_mutex_unlock(&n->table_mu);
    }
}

/* Every key subscribed or asked for on server (all when server is -1) loses it: asked
 * again on the next round (on the slot's node then), its waiters poll meanwhile. */
static void unsubscribed(struct notify *n, int server, const struct rd_reply *channel)
{
    pthread_mutex_lock(&n->table_mu);
    for (struct key_queue *q = n->queues; q; q = q->next)
        if ((server < 0 || q->server == server) &&
            (channel == NULL || strcmp(q->key, channel->str) == 0)) {
            q->asked = 0;
            atomic_store(&q->subscribed, 0);
            atomic_store(&n->unasked, 1);
            notify_bump(q);
        }
    pthread_mutex_unlock(&n->table_mu);
}

/* One reply on a node's subscription: a message, a confirmation, an end (the slot moved),
 * or an error (MOVED: the map notes it; the keys asked there are asked again). */
static void shard_reply(struct notify *n, int server, const struct rd_reply *r)
{
    struct key_queue *q;

    if (r->type == RD_ERROR) {
        rd_client_moved(n->lc->redis, r);
        unsubscribed(n, server, NULL);
        clock_sleep_ms(SHARD_POLL_MS);
        return;
    }
    if (r->type != RD_ARRAY || r->elements < 3 || r->element[0]->type != RD_STRING ||
        r->element[1]->type != RD_STRING)
        return;
    if (strcmp(r->element[0]->str, "smessage") == 0 && r->element[2]->type == RD_STRING) {
        notify_heard(n, r->element[1], r->element[2]->str);
    } else if (strcmp(r->element[0]->str, "ssubscribe") == 0 &&
               (q = notify_queue(n, r->element[1]->str, r->element[1]->len, 0)) != NULL) {
        atomic_store(&q->subscribed, 1);
        notify_bump(q);   /* a release before it was confirmed was not heard */
    } else if (strcmp(r->element[0]->str, "sunsubscribe") == 0) {
        unsubscribed(n, server, r->element[1]);
    }
}

/* The subscriber on a cluster: SSUBSCRIBE per key waited on, on the node of its slot;
 * the replies of every node's connection read as they come. */
void *notify_sharded_main(void *arg)
{
    struct notify *n = arg;
    struct shard shards[RD_SERVERS_MAX];
    struct rd_conn *cns[RD_SERVERS_MAX];
    int ns = 0;

    atomic_store(&n->connected, 1);
    while (!atomic_load(&n->stopping)) {
        struct rd_reply *r;
        int i;
        subscribe_new(n, shards, &ns);
        for (i = 0; i < ns; i++)
            cns[i] = shards[i].cn;
        if ((i = rd_conn_poll(cns, ns, SHARD_POLL_MS)) < 0) {
            if (ns == 0)
                clock_sleep_ms(SHARD_POLL_MS);
            continue;
        }
        if ((r = rd_conn_read(shards[i].cn, SUB_IDLE_MS)) != NULL) {
            shard_reply(n, shards[i].server, r);
            rd_reply_free(r);
            continue;
        }
        unsubscribed(n, shards[i].server, NULL);   /* the node died or closed it */
        rd_conn_close(shards[i].cn);
        shards[i] = shards[--ns];
    }
    while (ns > 0)
        rd_conn_close(shards[--ns].cn);
    return NULL;
}
