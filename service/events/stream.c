/* stream.c - GET /events?item=I: every instance's events of item I, as Server-Sent Events.
 *
 * Each stream has a reader thread with a subscription of its own to the item's channel
 * (the store's: on Redis SUBSCRIBE events:{I}, SSUBSCRIBE on the item's node of a
 * cluster) and a buffer of bytes to send.
 * libmicrohttpd pulls the bytes through stream_read():
 *   - thread per connection (a lock without --combine): the connection's own thread
 *     waits in stream_read for bytes (up to a second at a time);
 *   - event loop (--combine, atomic): stream_read never blocks the loop; with nothing to
 *     send it suspends the connection, and the reader resumes it when bytes come.
 * Quiet for HEARTBEAT_MS, the store answers the reader's heartbeat and the stream sends a comment
 * line: a closed page is noticed at the next write, and a proxy's read timeout never
 * fires. A suspended connection never times out and cannot be left suspended when the
 * daemon stops: streams_end() ends every stream first (main.c, before anything else).
 * The stream and its reader each hold a reference; the last one frees it. */
#include "service/events/stream.h"

#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "service/config/config.h"
#include "service/store/store.h"

enum {
    HEARTBEAT_MS = 2000,
    STREAM_BYTES = 256 * 1024,   /* unsent bytes a stream holds; more are dropped */
    RECONNECT_MS = 500,
};

struct stream {
    struct MHD_Connection *conn; /* NULL once libmicrohttpd is done with the response */
    char item[ITEM_MAX + 1];
    pthread_mutex_t mu;          /* guards everything below */
    pthread_cond_t cv;           /* bytes came, or the stream ends */
    char *buf;
    size_t len, off, cap;        /* buf[off..len) is to send */
    long long dropped;           /* messages that did not fit */
    int ending;                  /* send what is left, then end */
    int suspended;               /* event loop: waiting for bytes */
    int event_loop;              /* the daemon suspends connections: never block it */
    int refs;
    struct store_sub *sub;       /* the reader's, while subscribed */
    struct stream *next;
};

static pthread_mutex_t list_mu = PTHREAD_MUTEX_INITIALIZER;
static struct stream *streams;   /* guarded by list_mu, with count and refusing */
static int count, refusing;

static void stream_unref(struct stream *s)
{
    pthread_mutex_lock(&s->mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last)
        return;
    pthread_mutex_lock(&list_mu);
    for (struct stream **p = &streams; *p; p = &(*p)->next)
        if (*p == s) {
            *p = s->next;
            break;
        }
    count--;
    pthread_mutex_unlock(&list_mu);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    free(s->buf);
    free(s);
}

/* Wakes whoever sends: the waiting thread, or the suspended connection. Under s->mu. */
static void wake(struct stream *s)
{
    pthread_cond_signal(&s->cv);
    if (s->suspended && s->conn) {
        s->suspended = 0;
        MHD_resume_connection(s->conn);
    }
}

/* Appends fmt's text to what the stream sends; dropped when it does not fit. */
static void stream_put(struct stream *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void stream_put(struct stream *s, const char *fmt, ...)
{
    va_list ap;
    char small[256], *text = small;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(small, sizeof(small), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(small)) {
        if ((text = malloc((size_t)n + 1)) == NULL)
            return;
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    pthread_mutex_lock(&s->mu);
    if (s->len - s->off + (size_t)n > STREAM_BYTES) {
        s->dropped++;
    } else {
        if (s->off > 0 && s->off == s->len)
            s->off = s->len = 0;
        if (s->len + (size_t)n > s->cap) {
            size_t cap = s->cap ? s->cap : 4096;
            char *p;
            while (cap < s->len + (size_t)n)
                cap *= 2;
            if ((p = realloc(s->buf, cap)) != NULL)
                s->buf = p, s->cap = cap;
        }
        if (s->len + (size_t)n <= s->cap) {
            memcpy(s->buf + s->len, text, (size_t)n);
            s->len += (size_t)n;
        }
        wake(s);
    }
    pthread_mutex_unlock(&s->mu);
    if (text != small)
        free(text);
}

static int is_ending(struct stream *s)
{
    pthread_mutex_lock(&s->mu);
    int ending = s->ending;
    pthread_mutex_unlock(&s->mu);
    return ending;
}

/* What the reader heard; 0 to go on reading, -1 to subscribe anew. */
static int on_heard(struct stream *s, enum store_heard what, char *text)
{
    switch (what) {
    case STORE_HEARD_MESSAGE:
        stream_put(s, "data: %s\n\n", text);
        free(text);
        return 0;
    case STORE_HEARD_QUIET:
        stream_put(s, ": heartbeat\n\n");
        return 0;
    case STORE_HEARD_SUBSCRIBED:
        stream_put(s, "event: subscribed\ndata: {\"instance\":\"%s\"}\n\n", svc.name);
        return 0;
    default:
        return -1;   /* the item's server changed, or the connection ended */
    }
}

/* Subscribes to the item's channel and copies what comes, until the stream ends; a lost
 * subscription is made anew. */
static void *reader_main(void *arg)
{
    struct stream *s = arg;
    const struct store_ops *ops = svc_store->ops;

    while (!is_ending(s)) {
        struct error err = { 0 };
        struct store_sub *sub = ops->subscribe(svc_store, s->item, &err);
        if (sub == NULL) {
            stream_put(s, "event: redis\ndata: {\"up\":false}\n\n");
            clock_sleep_ms(RECONNECT_MS);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        s->sub = s->ending ? NULL : sub;
        pthread_mutex_unlock(&s->mu);
        for (;;) {
            char *text = NULL;
            enum store_heard what = is_ending(s) ? STORE_HEARD_END
                                                 : ops->sub_read(sub, HEARTBEAT_MS, &text);
            if (on_heard(s, what, text) != 0)
                break;
        }
        pthread_mutex_lock(&s->mu);
        s->sub = NULL;
        pthread_mutex_unlock(&s->mu);
        ops->sub_close(sub);
    }
    stream_unref(s);
    return NULL;
}

/* libmicrohttpd asks for the next bytes of the stream. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    struct stream *s = cls;
    ssize_t n = 0;

    (void)pos;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (s->len > s->off) {
            n = (ssize_t)(s->len - s->off < max ? s->len - s->off : max);
            memcpy(buf, s->buf + s->off, (size_t)n);
            s->off += (size_t)n;
            break;
        }
        if (s->ending) {
            n = MHD_CONTENT_READER_END_OF_STREAM;
            break;
        }
        if (s->event_loop) {
            s->suspended = 1;
            MHD_suspend_connection(s->conn);
            break;   /* 0 bytes: the reader resumes it */
        }
        struct timespec until = clock_monotonic_at(clock_now_ms() + 1000);
        pthread_cond_timedwait(&s->cv, &s->mu, &until);
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* libmicrohttpd is done with the response (the client left, or the stream ended). */
static void stream_done(void *cls)
{
    struct stream *s = cls;

    pthread_mutex_lock(&s->mu);
    s->conn = NULL;
    s->ending = 1;
    if (s->sub)
        svc_store->ops->sub_shutdown(s->sub);   /* the reader stops reading */
    pthread_mutex_unlock(&s->mu);
    stream_unref(s);
}

/* A new stream, counted in the list; NULL when the cap is reached or we are stopping. */
static struct stream *stream_new(struct MHD_Connection *conn, const char *item, int event_loop)
{
    struct stream *s;

    pthread_mutex_lock(&list_mu);
    if (refusing || count >= svc.max_streams || (s = calloc(1, sizeof(*s))) == NULL) {
        pthread_mutex_unlock(&list_mu);
        return NULL;
    }
    s->conn = conn;
    s->event_loop = event_loop;
    snprintf(s->item, sizeof(s->item), "%s", item);
    pthread_mutex_init(&s->mu, NULL);
    clock_cond_init_monotonic(&s->cv);
    s->refs = 2;   /* the response's and the reader's */
    s->next = streams;
    streams = s;
    count++;
    pthread_mutex_unlock(&list_mu);
    return s;
}

struct MHD_Response *stream_response(struct MHD_Connection *conn, const char *item,
                                     int event_loop, int *full)
{
    struct stream *s = stream_new(conn, item, event_loop);
    struct MHD_Response *resp;
    pthread_t reader;

    *full = s == NULL;
    if (s == NULL)
        return NULL;
    stream_put(s, "retry: 1000\n\nevent: hello\ndata: {\"instance\":\"%s\",\"item\":\"%s\","
               "\"lock\":\"%s\",\"events\":%s,\"heartbeat_ms\":%d}\n\n",
               svc.name, item, svc.version, svc.no_events ? "false" : "true", HEARTBEAT_MS);
    resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 4096, stream_read, s, stream_done);
    if (resp == NULL || pthread_create(&reader, NULL, reader_main, s) != 0) {
        s->refs = 1;   /* no reader: the response's reference is the only one */
        if (resp)
            MHD_destroy_response(resp);   /* stream_done frees it */
        else
            stream_unref(s);
        return NULL;
    }
    pthread_detach(reader);
    MHD_add_response_header(resp, "Content-Type", "text/event-stream");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    return resp;   /* the caller queues it; stream_done frees the stream when it is done */
}

void streams_end(long wait_ms)
{
    pthread_mutex_lock(&list_mu);
    refusing = 1;
    for (struct stream *s = streams; s; s = s->next) {
        stream_put(s, "event: end\ndata: {\"why\":\"the instance is stopping\"}\n\n");
        pthread_mutex_lock(&s->mu);
        s->ending = 1;
        if (s->sub)
            svc_store->ops->sub_shutdown(s->sub);   /* the reader stops reading */
        wake(s);
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&list_mu);
    for (long long end = clock_now_ms() + wait_ms; streams_open() > 0 && clock_now_ms() < end;)
        clock_sleep_ms(10);
}

int streams_open(void)
{
    pthread_mutex_lock(&list_mu);
    int n = count;
    pthread_mutex_unlock(&list_mu);
    return n;
}
