/* redis_events.c - The live page's channels on Redis: an item's messages are published on
 * events:{I} (SPUBLISH on a cluster: the item's node), every item of a server in one round
 * trip; a subscription (SUBSCRIBE, SSUBSCRIBE on a cluster) has a connection of its own. */
#include "service/store/redis.h"

#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

enum { SERVERS_MAX = 16, RESUBSCRIBE_MS = 500, MESSAGES_MAX = 4096 };

/* One round of publishing: a batch per server (up to RD_BATCH_MAX messages each). */
struct round {
    struct rd_batch batches[SERVERS_MAX];
    struct rd_trip trips[SERVERS_MAX];
    int server[SERVERS_MAX];
    int of[SERVERS_MAX][RD_BATCH_MAX];   /* the message of each batch's command */
    int nt;
};

/* Adds message i (to server) to its server's batch in r (a new one when there is room):
 * 1 when it went in (or is lost with an error), 0 when it waits for the next round. */
static int round_add(struct round *r, struct redis_store *rs, const struct store_message *m,
                     int i, int server)
{
    char channel[RS_KEY_MAX];
    struct rd_error err;
    int t;

    for (t = 0; t < r->nt && r->server[t] != server; t++)
        ;
    if (t == r->nt) {
        if (r->nt == SERVERS_MAX)
            return 0;
        memset(&r->batches[t], 0, sizeof(r->batches[t]));
        r->trips[t] = (struct rd_trip){ .main = &r->batches[t] };
        r->server[r->nt++] = server;
    }
    if (r->batches[t].n == RD_BATCH_MAX)
        return 0;
    if (rd_batch_add(&r->batches[t], &err, "%s %s %s", rs->cluster ? "SPUBLISH" : "PUBLISH",
                     rs_key(&channel, RS_EVENTS, m->item), m->text) == RD_OK)
        r->of[t][r->batches[t].n - 1] = i;
    return 1;
}

void rs_publish(struct store *s, const struct store_message *msgs, int n, long long *heard)
{
    static struct round r;   /* the publisher thread's alone */
    static int server[MESSAGES_MAX], left[MESSAGES_MAX];
    struct redis_store *rs = redis_of(s);
    char channel[RS_KEY_MAX];
    struct rd_error err;
    int done = 0;

    for (int i = n; i > MESSAGES_MAX; i--)
        heard[i - 1] = -1;   /* more than a round can hold: not published */
    n = n < MESSAGES_MAX ? n : MESSAGES_MAX;
    for (int i = 0; i < n; i++) {
        heard[i] = -1;
        server[i] = rd_key_server(s->redis, rs_key(&channel, RS_EVENTS, msgs[i].item), &err);
        left[i] = server[i] >= 0;   /* an item with no server now: not published */
        done += !left[i];
    }
    while (done < n) {
        r.nt = 0;
        for (int i = 0; i < n; i++)
            if (left[i] && round_add(&r, rs, &msgs[i], i, server[i]))
                left[i] = 0, done++;
        rd_round_trips(s->redis, r.trips, r.nt);
        for (int t = 0; t < r.nt; t++) {
            for (int c = 0; c < r.batches[t].n; c++) {
                const struct rd_reply *reply = r.batches[t].reply[c];
                if (reply && reply->type == RD_INTEGER)
                    heard[r.of[t][c]] = reply->integer;
            }
            rd_batch_reset(&r.batches[t]);
        }
    }
}

/* A subscription: the connection, and the channel it listens to. */
struct store_sub {
    struct store *s;
    struct rd_conn *cn;
};

struct store_sub *rs_subscribe(struct store *s, const char *item, struct error *err)
{
    struct redis_store *rs = redis_of(s);
    struct store_sub *sub = calloc(1, sizeof(*sub));
    char channel[RS_KEY_MAX];
    struct rd_error why = { 0 };

    if (sub == NULL) {
        error_set(err, FAULT_NOMEM, "out of memory");
        return NULL;
    }
    sub->s = s;
    rs_key(&channel, RS_EVENTS, item);
    if ((sub->cn = rd_conn_open(s->redis, channel, &why)) == NULL ||
        rd_conn_send(sub->cn, &why, "%s %s", rs->cluster ? "SSUBSCRIBE" : "SUBSCRIBE",
                     channel) != RD_OK) {
        rd_error_map(&why, err);
        rs_sub_close(sub);
        return NULL;
    }
    return sub;
}

/* What one reply on the subscription means; -1 for a reply that means nothing here. */
static int heard_of(struct store_sub *sub, const struct rd_reply *r, char **text)
{
    const char *kind;

    if (r->type == RD_ERROR) {
        /* SSUBSCRIBE sent where the slot map said, but the slot has moved (MOVED: the map
         * is told), or the cluster cannot serve it now: try again shortly. */
        rd_client_moved(sub->s->redis, r);
        clock_sleep_ms(r->fault == RD_E_MOVED ? 0 : RESUBSCRIBE_MS);
        return STORE_HEARD_AGAIN;
    }
    if (r->type != RD_ARRAY || r->elements < 2 || r->element[0]->type != RD_STRING)
        return -1;
    kind = r->element[0]->str;
    if ((strcmp(kind, "message") == 0 || strcmp(kind, "smessage") == 0) && r->elements == 3 &&
        r->element[2]->type == RD_STRING)
        return (*text = strdup(r->element[2]->str)) ? STORE_HEARD_MESSAGE : -1;
    if (strcmp(kind, "pong") == 0)
        return STORE_HEARD_QUIET;
    if (strcmp(kind, "subscribe") == 0 || strcmp(kind, "ssubscribe") == 0)
        return STORE_HEARD_SUBSCRIBED;
    if (strcmp(kind, "sunsubscribe") == 0)
        return STORE_HEARD_AGAIN;   /* the item's slot moved: subscribe on its new node */
    return -1;
}

enum store_heard rs_sub_read(struct store_sub *sub, long idle_ms, char **text)
{
    struct rd_reply *r;
    int what = -1;

    while (what < 0) {
        if ((r = rd_conn_read(sub->cn, idle_ms)) == NULL)
            return STORE_HEARD_END;
        what = heard_of(sub, r, text);
        rd_reply_free(r);
    }
    return (enum store_heard)what;
}

void rs_sub_shutdown(struct store_sub *sub)
{
    rd_conn_shutdown(sub->cn);
}

void rs_sub_close(struct store_sub *sub)
{
    if (sub == NULL)
        return;
    rd_conn_close(sub->cn);
    free(sub);
}
