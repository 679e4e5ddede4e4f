/* events.c - What the lock and the sale do, told to whoever watches (the live page).
 *
 * A thread that sells calls one function per event (event_acquired, event_sale, ...): the
 * event is one small JSON object printed straight into a buffer (numbers, and the
 * service's own names: nothing to escape, checked so; a tree of jansson objects per event
 * cost four allocations and a dump, 1.2 us against 0.16, four times per sale), appended
 * to its item's buffer under one mutex (nothing of the store on the sale's path). Every EVENTS_TICK_MS the publisher
 * thread takes the buffers and publishes one message per item through the store (Redis:
 * PUBLISH events:{I}, SPUBLISH on a cluster's node), every item of a server in one round
 * trip:
 *
 *     {"instance":"inventory-8081","events":[{"t":..,"ev":"acquired",..},..],"dropped":0}
 *
 * Nobody listening (the store says nobody heard), an item goes quiet for EVENTS_QUIET_MS:
 * its events are let go at once, before anything is built (no buffer, no message); the
 * first message after that asks again (a page opened meanwhile sees its first events
 * within that time). An item's buffer holds at most EVENTS_ITEM_BYTES a tick; what does
 * not fit is counted in "dropped" (the page shows it: the drawing is then a sample).
 * --no-events: none of it. */
#include "service/events/events.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/clock.h"
#include "common/hash.h"
#include "service/config/config.h"
#include "service/store/store.h"

enum {
    EVENTS_TICK_MS = 50,
    EVENTS_QUIET_MS = 1000,
    EVENTS_ITEM_BYTES = 64 * 1024,
    EVENTS_ITEMS = 4096,         /* items with events, at most (a cluster's many items) */
    EVENTS_PROBES = 32,          /* slots looked at for an item: beyond, it is not kept */
    EVENT_BYTES = 512,           /* one event, at most */
};

/* One item's events of this tick. Guarded by mu, but for named and quiet_until_ms: an
 * entry, once named, keeps its item until events_stop, so a sale's thread reads those two
 * without the mutex (quiet: nothing to build). */
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
static char *instance_json;      /* the instance's name as a JSON string */

/* The item's entry (created when there is room); NULL when the EVENTS_PROBES slots its
 * hash names are all other items' (its events are counted dropped). Under mu. */
static struct item_events *entry(const char *item)
{
    for (unsigned i = 0, h = hash_bytes(item, strlen(item)); i < EVENTS_PROBES; i++) {
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

/* 1 when events of item are wanted now: the publisher runs and the item is not quiet.
 * Without the mutex (an item not yet in the table is not quiet). */
static int wanted(const char *item)
{
    if (!atomic_load(&started) || item == NULL)
        return 0;
    for (unsigned i = 0, h = hash_bytes(item, strlen(item)); i < EVENTS_PROBES; i++) {
        struct item_events *e = &items[(h + i) % EVENTS_ITEMS];
        if (!atomic_load_explicit(&e->named, memory_order_acquire))
            return 1;
        if (strcmp(e->item, item) == 0) {
            long long until = atomic_load(&e->quiet_until_ms);
            return until == 0 || until <= clock_now_ms();
        }
    }
    return 1;
}


/* The thread's lane, from an owner id "<instance id>:<thread number>.<grant>": the
 * number. */
static long long lane_of(const char *owner)
{
    const char *colon = strrchr(owner, ':');

    return colon ? strtoll(colon + 1, NULL, 10) : 0;
}

/* Appends the text of one event (n bytes, a comma first) to its item's buffer. */
static void append(const char *item, const char *ev, size_t n)
{
    pthread_mutex_lock(&mu);
    struct item_events *e = entry(item);
    if (e == NULL) {
        atomic_fetch_add(&dropped_total, 1);
    } else if (atomic_load(&e->quiet_until_ms) > clock_now_ms()) {
        /* nobody listens to this item now (it went quiet while this one was built) */
    } else if (e->len + n > EVENTS_ITEM_BYTES) {
        e->dropped++;
        atomic_fetch_add(&dropped_total, 1);
    } else {
        if (e->len + n > e->cap) {
            size_t cap = e->cap ? e->cap * 2 : 4096;
            char *p;
            while (cap < e->len + n)
                cap *= 2;
            if ((p = realloc(e->buf, cap)) == NULL) {
                e->dropped++;
                pthread_mutex_unlock(&mu);
                return;
            }
            e->buf = p, e->cap = cap;
        }
        memcpy(e->buf + e->len, ev, n);
        e->len += n;
    }
    pthread_mutex_unlock(&mu);
}

/* name when it needs no escaping in JSON (letters, digits, ':', '-', '_', '.'), else "?":
 * the events' strings are the service's own names. */
static const char *plain(const char *name)
{
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == ':' || *c == '-' || *c == '_' || *c == '.'))
            return "?";
    return name;
}

/* One event of g's item at wall-clock µs t (0: now): {"t":..,"ev":what,"th":lane} and the
 * members fmt prints (each after a comma: ",\"k\":v"), appended as one compact JSON object. */
static void emit_at(const struct lock_grant *g, long long t, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void emit_at(const struct lock_grant *g, long long t, const char *what, const char *fmt, ...)
{
    char text[EVENT_BYTES];
    va_list ap;
    int n = snprintf(text, sizeof(text), ",{\"t\":%lld,\"ev\":\"%s\",\"th\":%lld",
                     t ? t : clock_wall_us(), plain(what), lane_of(g->owner));

    va_start(ap, fmt);
    if (n > 0 && n < (int)sizeof(text))
        n += vsnprintf(text + n, sizeof(text) - (size_t)n, fmt, ap);
    va_end(ap);
    if (n > 0 && n + 1 < (int)sizeof(text)) {
        text[n++] = '}';
        append(g->item, text, (size_t)n);   /* else a bug's event, never a broken message */
    }
}

void event_acquired(const struct lock_grant *g)
{
    const char *lane = strrchr(g->owner, ':');   /* "<instance id>:<thread>" */
    char owner[LOCK_OWNER_MAX];

    if (!wanted(g->item))
        return;
    snprintf(owner, sizeof(owner), "%.8s%s", g->owner, lane ? lane : "");
    /* A lock in the process: from its grant, before the read (its whole critical section). */
    emit_at(g, g->held_from_us, "acquired", ",\"owner\":\"%s\",\"token\":%lld,\"depth\":%d,\"lease_ms\":%lld,\"waited_ms\":%lld",
         plain(owner), g->token, g->depth,
         g->valid_until_ms ? g->valid_until_ms - clock_now_ms() : 0, (long long)g->waited_ms);
}

void event_timeout(const struct lock_grant *g)
{
    if (wanted(g->item))
        emit_at(g, 0, "timeout", ",\"waited_ms\":%lld", (long long)g->waited_ms);
}

void event_sale(const struct lock_grant *g, long long stock, int n, long long sold, int lost)
{
    if (wanted(g->item))
        emit_at(g, 0, "sale", ",\"stock\":%lld,\"n\":%d,\"sold\":%lld,\"lost\":%d", stock, n, sold, lost);
}

void event_leave(const struct lock_grant *g)
{
    if (wanted(g->item))
        emit_at(g, g->held_to_us, "leave", "%s", "");
}

void event_released(const struct lock_grant *g, const char *how)
{
    if (wanted(g->item))
        emit_at(g, 0, "released", ",\"result\":\"%s\"", plain(how));
}

void event_fenced(const struct lock_grant *g)
{
    if (wanted(g->item))
        emit_at(g, 0, "fenced", ",\"token\":%lld", g->token);
}

void event_refused(const struct lock_grant *g)
{
    if (wanted(g->item))
        emit_at(g, 0, "refused", ",\"token\":%lld", g->token);
}

void events_observe(const struct lock_grant *g, const char *what, long long lease_ms)
{
    if (wanted(g->item))
        emit_at(g, 0, what, ",\"lease_ms\":%lld", lease_ms);
}

/* Takes every item's events of this tick into msgs (at most max; the texts malloc'd);
 * returns how many. */
static int take_messages(struct store_message *msgs, int max)
{
    int n = 0;

    pthread_mutex_lock(&mu);
    for (int i = 0; i < EVENTS_ITEMS && n < max; i++) {
        struct item_events *e = &items[i];
        if (e->item[0] == '\0' || (e->len == 0 && e->dropped == 0))
            continue;
        size_t size = e->len + strlen(instance_json) + 96;
        char *text = malloc(size);
        if (text == NULL)
            continue;
        snprintf(text, size, "{\"instance\":%s,\"events\":[%.*s],\"dropped\":%lld}", instance_json,
                 e->len ? (int)e->len - 1 : 0, e->len ? e->buf + 1 : "", e->dropped);
        msgs[n].item = e->item;   /* an entry keeps its item until events_stop */
        msgs[n].text = text;
        e->len = 0;
        e->dropped = 0;
        n++;
    }
    pthread_mutex_unlock(&mu);
    return n;
}

/* What publishing said for an item: how many heard; none makes it quiet for a while. */
static void heard_by(const char *item, long long heard)
{
    if (heard < 0)
        return;   /* not published (no server now): ask again next time */
    pthread_mutex_lock(&mu);
    struct item_events *e = entry(item);
    if (e) {
        atomic_store(&e->quiet_until_ms, heard == 0 ? clock_now_ms() + EVENTS_QUIET_MS : 0);
        if (heard == 0) {   /* nothing kept while quiet: its buffer goes too */
            free(e->buf);
            e->buf = NULL;
            e->len = e->cap = 0;
        }
    }
    pthread_mutex_unlock(&mu);
}

/* Publishes msgs[0..n) through the store and frees their texts. */
static void publish_all(struct store_message *msgs, int n)
{
    static long long heard[EVENTS_ITEMS];   /* the publisher thread's alone */

    svc_store->ops->publish(svc_store, msgs, n, heard);
    for (int i = 0; i < n; i++) {
        heard_by(msgs[i].item, heard[i]);
        if (heard[i] >= 0)
            atomic_fetch_add(&published, 1);
        free((char *)msgs[i].text);
    }
}

static void *events_main(void *arg)
{
    static struct store_message msgs[EVENTS_ITEMS];
    (void)arg;

    pthread_mutex_lock(&mu);
    while (!stopping) {
        struct timespec until = clock_monotonic_at(clock_now_ms() + EVENTS_TICK_MS);
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
    json_t *name = json_string(svc.name);

    instance_json = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    json_decref(name);
    if (instance_json == NULL)
        return -1;
    clock_cond_init_monotonic(&cv);
    stopping = 0;
    if (pthread_create(&thread, NULL, events_main, NULL) != 0) {
        free(instance_json);
        instance_json = NULL;
        return -1;
    }
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
    free(instance_json);
    instance_json = NULL;
}

long long events_published(void)
{
    return atomic_load(&published);
}

long long events_dropped(void)
{
    return atomic_load(&dropped_total);
}
