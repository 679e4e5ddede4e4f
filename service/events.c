/* events.c - What the lock and the sale do, told to whoever watches (the live page).
 *
 * A thread that sells calls event_emit(): the event is one small JSON object, appended
 * to its item's buffer under one mutex (no Redis on the sale's path). Every
 * EVENTS_TICK_MS the publisher thread takes the buffers and publishes one message per
 * item on `events:{I}` (SPUBLISH on a cluster: the item's node), every item of a server
 * in one round trip:
 *
 *     {"instance":"inventory-8081","events":[{"t":..,"ev":"acquired",..},..],"dropped":0}
 *
 * Nobody listening (PUBLISH answered 0 receivers), an item goes quiet for EVENTS_QUIET_MS:
 * its events are let go at once (no buffer, no message); the first message after that
 * asks again (a page
 * opened meanwhile sees its first events within that time). An item's
 * buffer holds at most EVENTS_ITEM_BYTES a tick; what does not fit is counted in
 * "dropped" (the page shows it: the drawing is then a sample). --no-events: none of it. */
#include "service/events.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lock/hash.h"
#include "service/service.h"

enum {
    EVENTS_TICK_MS = 50,
    EVENTS_QUIET_MS = 1000,
    EVENTS_ITEM_BYTES = 64 * 1024,
    EVENTS_ITEMS = 4096,         /* items with events, at most (a cluster's many items) */
    EVENTS_PROBES = 32,          /* slots looked at for an item: beyond, it is not kept */
    EVENTS_SERVERS = 16,         /* servers published to in one round (more: the next) */
};

/* One item's events of this tick. Guarded by mu, but for named and quiet_until_ms: an
 * entry, once named, keeps its item until events_stop, so a sale's thread reads those two
 * without the mutex (quiet: nothing to format). */
struct item_events {
    char item[ITEM_MAX + 1];
    atomic_int named;            /* item is set */
    char *buf;                   /* ",{..},{..}" (each event after a comma) */
    size_t len, cap;
    long long dropped;
    atomic_llong quiet_until_ms; /* nobody listened: keep nothing until then */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv;
static struct item_events items[EVENTS_ITEMS];   /* open addressing by the item's hash */
static int stopping;
static atomic_int started;
static pthread_t thread;
static atomic_llong published, dropped_total;

/* The item's entry (created when there is room); NULL when the EVENTS_PROBES slots its
 * hash names are all other items' (its events are counted dropped). Under mu. */
static struct item_events *entry(const char *item)
{
    for (unsigned i = 0, h = lock_hash(item, strlen(item)); i < EVENTS_PROBES; i++) {
        struct item_events *e = &items[(h + i) % EVENTS_ITEMS];
        if (e->item[0] == '\0') {
            snprintf(e->item, sizeof(e->item), "%s", item);
            atomic_store_explicit(&e->named, 1, memory_order_release);
            return e;
        }
        if (strcmp(e->item, item) == 0)
            return e;
    }
    return NULL;
}

/* Whether nobody listens to item now; without the mutex (an item not yet in the table
 * is not quiet). */
static int quiet(const char *item)
{
    for (unsigned i = 0, h = lock_hash(item, strlen(item)); i < EVENTS_PROBES; i++) {
        struct item_events *e = &items[(h + i) % EVENTS_ITEMS];
        if (!atomic_load_explicit(&e->named, memory_order_acquire))
            return 0;
        if (strcmp(e->item, item) == 0) {
            long long until = atomic_load(&e->quiet_until_ms);
            return until != 0 && until > lock_now_ms();
        }
    }
    return 0;
}

long long events_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* The thread's lane, from an owner id "<instance id>:<thread number>": the number. */
static const char *lane_of(const char *owner)
{
    const char *colon = owner ? strrchr(owner, ':') : NULL;
    return colon ? colon + 1 : "0";
}

void event_emit(const char *item, const char *owner, const char *what, const char *fmt, ...)
{
    char ev[512];
    int n;
    va_list ap;

    if (!atomic_load(&started) || item == NULL || quiet(item))
        return;
    n = snprintf(ev, sizeof(ev), ",{\"t\":%lld,\"ev\":\"%s\",\"th\":%s", events_now_us(), what,
                 lane_of(owner));
    if (fmt && n < (int)sizeof(ev) - 1) {
        ev[n++] = ',';
        va_start(ap, fmt);
        n += vsnprintf(ev + n, sizeof(ev) - (size_t)n, fmt, ap);
        va_end(ap);
    }
    if (n >= (int)sizeof(ev) - 1)
        return;   /* a bug's event, not a reader's: never a broken message */
    ev[n++] = '}';

    pthread_mutex_lock(&mu);
    struct item_events *e = entry(item);
    if (e == NULL) {
        atomic_fetch_add(&dropped_total, 1);
    } else if (atomic_load(&e->quiet_until_ms) > lock_now_ms()) {
        /* nobody listens to this item now (it went quiet while this one was formatted) */
    } else if (e->len + (size_t)n > EVENTS_ITEM_BYTES) {
        e->dropped++;
        atomic_fetch_add(&dropped_total, 1);
    } else {
        if (e->len + (size_t)n > e->cap) {
            size_t cap = e->cap ? e->cap * 2 : 4096;
            char *p;
            while (cap < e->len + (size_t)n)
                cap *= 2;
            if ((p = realloc(e->buf, cap)) == NULL) {
                e->dropped++;
                pthread_mutex_unlock(&mu);
                return;
            }
            e->buf = p, e->cap = cap;
        }
        memcpy(e->buf + e->len, ev, (size_t)n);
        e->len += (size_t)n;
    }
    pthread_mutex_unlock(&mu);
}

/* One tick's message of an item, taken out of the table. */
struct message {
    char item[ITEM_MAX + 1];
    char *text;                  /* the JSON message (malloc'd) */
    int server;
};

/* Takes every item's events of this tick into msgs (at most max); returns how many. */
static int take_messages(struct message *msgs, int max)
{
    int n = 0;

    pthread_mutex_lock(&mu);
    for (int i = 0; i < EVENTS_ITEMS && n < max; i++) {
        struct item_events *e = &items[i];
        if (e->item[0] == '\0' || (e->len == 0 && e->dropped == 0))
            continue;
        size_t size = e->len + strlen(svc.name) + 96;
        char *text = malloc(size);
        if (text == NULL)
            continue;
        snprintf(text, size, "{\"instance\":\"%s\",\"events\":[%.*s],\"dropped\":%lld}", svc.name,
                 e->len ? (int)e->len - 1 : 0, e->len ? e->buf + 1 : "", e->dropped);
        memcpy(msgs[n].item, e->item, sizeof(msgs[n].item));
        msgs[n].text = text;
        e->len = 0;
        e->dropped = 0;
        n++;
    }
    pthread_mutex_unlock(&mu);
    return n;
}

/* What PUBLISH said for an item: receivers; 0 makes it quiet for a while. */
static void heard(const char *item, const struct rd_reply *r)
{
    pthread_mutex_lock(&mu);
    struct item_events *e = entry(item);
    if (e && r && r->type == RD_INTEGER) {
        atomic_store(&e->quiet_until_ms, r->integer == 0 ? lock_now_ms() + EVENTS_QUIET_MS : 0);
        if (r->integer == 0) {   /* nothing kept while quiet: its buffer goes too */
            free(e->buf);
            e->buf = NULL;
            e->len = e->cap = 0;
        }
    }
    pthread_mutex_unlock(&mu);
}

/* One round of publishing: a batch per server (up to RD_BATCH_MAX messages each). */
struct round {
    struct rd_batch batches[EVENTS_SERVERS];
    struct rd_trip trips[EVENTS_SERVERS];
    int server[EVENTS_SERVERS];
    int of[EVENTS_SERVERS][RD_BATCH_MAX];   /* the message of each batch's command */
    int nt;
};

/* Adds message i to its server's batch in r (a new one when there is room); 1 when it
 * went in (its text is freed then), 0 when it waits for the next round. */
static int round_add(struct round *r, struct message *msgs, int i)
{
    const char *cmd = svc.cluster ? "SPUBLISH" : "PUBLISH";
    char channel[ITEM_MAX + 16];
    struct lock_error err;
    int t;

    for (t = 0; t < r->nt && r->server[t] != msgs[i].server; t++)
        ;
    if (t == r->nt) {
        if (r->nt == EVENTS_SERVERS)
            return 0;
        memset(&r->batches[t], 0, sizeof(r->batches[t]));
        r->trips[t] = (struct rd_trip){ .main = &r->batches[t] };
        r->server[r->nt++] = msgs[i].server;
    }
    if (r->batches[t].n == RD_BATCH_MAX)
        return 0;
    snprintf(channel, sizeof(channel), "events:{%.*s}", ITEM_MAX, msgs[i].item);
    if (rd_batch_add(&r->batches[t], &err, "%s %s %s", cmd, channel, msgs[i].text) == LOCK_OK)
        r->of[t][r->batches[t].n - 1] = i;
    free(msgs[i].text);   /* in the batch, or lost with an error */
    msgs[i].text = NULL;
    return 1;
}

/* Publishes msgs[0..n): one round trip per server, all sent before any is read; a
 * message whose item has no server now is lost. */
static void publish_all(struct message *msgs, int n)
{
    static struct round r;   /* the publisher thread's alone */
    char channel[ITEM_MAX + 16];
    struct lock_error err;
    int done = 0;

    for (int i = 0; i < n; i++) {
        snprintf(channel, sizeof(channel), "events:{%.*s}", ITEM_MAX, msgs[i].item);
        if ((msgs[i].server = rd_key_server(svc_redis, channel, &err)) < 0) {
            free(msgs[i].text);
            msgs[i].text = NULL;
            done++;
        }
    }
    while (done < n) {
        r.nt = 0;
        for (int i = 0; i < n; i++)
            if (msgs[i].text)
                done += round_add(&r, msgs, i);
        rd_round_trips(svc_redis, r.trips, r.nt);
        for (int t = 0; t < r.nt; t++) {
            for (int c = 0; c < r.batches[t].n; c++) {
                heard(msgs[r.of[t][c]].item, r.batches[t].reply[c]);
                if (r.batches[t].reply[c] && r.batches[t].reply[c]->type == RD_INTEGER)
                    atomic_fetch_add(&published, 1);
            }
            rd_batch_reset(&r.batches[t]);
        }
    }
}

static void *events_main(void *arg)
{
    static struct message msgs[EVENTS_ITEMS];
    (void)arg;

    pthread_mutex_lock(&mu);
    while (!stopping) {
        struct timespec until = lock_monotonic_at(lock_now_ms() + EVENTS_TICK_MS);
        while (!stopping && pthread_cond_timedwait(&cv, &mu, &until) != ETIMEDOUT)
            ;
        pthread_mutex_unlock(&mu);
        int n = take_messages(msgs, EVENTS_ITEMS);
        if (n > 0)
            publish_all(msgs, n);
        pthread_mutex_lock(&mu);
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int events_start(void)
{
    lock_cond_init_monotonic(&cv);
    stopping = 0;
    if (pthread_create(&thread, NULL, events_main, NULL) != 0)
        return -1;
    started = 1;
    return 0;
}

void events_stop(void)
{
    if (!started)
        return;
    pthread_mutex_lock(&mu);
    stopping = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(thread, NULL);
    started = 0;
    for (int i = 0; i < EVENTS_ITEMS; i++) {
        free(items[i].buf);
        memset(&items[i], 0, sizeof(items[i]));
    }
}

void events_observe(const struct lock_grant *g, const char *what, long long lease_ms)
{
    event_emit(g->item, g->owner, what, "\"lease_ms\":%lld", lease_ms);
}

long long events_published(void)
{
    return atomic_load(&published);
}

long long events_dropped(void)
{
    return atomic_load(&dropped_total);
}
