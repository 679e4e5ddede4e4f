/* subscriber.c - The notify wait's subscriber on one Redis (alone or under Sentinel): one
 * thread per process, subscribed to every lock's channel (PSUBSCRIBE lock:{*}), counting
 * the messages per key and waking that key's first waiter; made anew when its connection
 * ends or falls silent (a partition sends no reset). */
#include "lock/notify.h"

/* A connection subscribed to every lock's channel; NULL (after a short sleep) when the
 * data Redis cannot be reached now. */
static struct rd_conn *subscribe(struct notify *n)
{
    struct rd_error err;
    struct rd_conn *c = rd_conn_open(n->lc->redis, NULL, &err);
    struct rd_reply *r = NULL;

    if (c && (r = rd_conn_call(c, RD_T(RD_ARRAY), 2 * SUB_IDLE_MS, &err, "PSUBSCRIBE lock:{*}")) != NULL) {
        rd_reply_free(r);
        return c;   /* its reads block until a message comes */
    }
    rd_conn_close(c);
    clock_sleep_ms(100);
    return NULL;
}

/* Sets the subscriber's connection (NULL: none), and wakes every first waiter: messages
 * may have been missed while it changed. */
static void set_sub(struct notify *n, struct rd_conn *c)
{
    pthread_mutex_lock(&n->table_mu);
    n->sub = c;
    pthread_mutex_unlock(&n->table_mu);
    atomic_store(&n->connected, c != NULL);
    notify_bump_all(n);
}

void *notify_subscriber_main(void *arg)
{
    struct notify *n = arg;
    struct rd_conn *c;
    struct rd_reply *r;

    while (!atomic_load(&n->stopping)) {
        if ((c = subscribe(n)) == NULL)
            continue;
        set_sub(n, c);
        /* ["pmessage", pattern, channel, payload] per message, until the connection ends. */
        while (!atomic_load(&n->stopping) && (r = rd_conn_read(c, SUB_IDLE_MS)) != NULL) {
            if (r->type == RD_ARRAY && r->elements == 4 && r->element[2]->type == RD_STRING &&
                r->element[3]->type == RD_STRING)
                notify_heard(n, r->element[2], r->element[3]->str);
            rd_reply_free(r);
        }
        set_sub(n, NULL);
        rd_conn_close(c);
    }
    return NULL;
}

/* --- Redis Cluster: sharded channels, one subscription per key on its slot's node --- */
