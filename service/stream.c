/* stream.c - GET /events?item=I: every instance's events of item I, as Server-Sent Events.
 *
 * Each stream has a reader thread with a subscriber connection of its own (SUBSCRIBE
 * events:{I}; SSUBSCRIBE on the item's node of a cluster) and a buffer of bytes to send.
 * libmicrohttpd pulls the bytes through stream_read():
 *   - thread per connection (a lock without --combine): the connection's own thread
 *     waits in stream_read for bytes (up to a second at a time);
 *   - event loop (--combine, atomic): stream_read never blocks the loop; with nothing to
 *     send it suspends the connection, and the reader resumes it when bytes come.
 * Quiet for HEARTBEAT_MS, Redis answers the reader's PING and the stream sends a comment
 * line: a closed page is noticed at the next write, and a proxy's read timeout never
 * fires. A suspended connection never times out and cannot be left suspended when the
 * daemon stops: streams_end() ends every stream first (main.c, before anything else).
 * The stream and its reader each hold a reference; the last one frees it. */
#include "service/events.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/service.h"

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
    int refs;
    struct rd_conn *sub;         /* the reader's, while connected */
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

/* One reply on the subscriber connection; 0 to go on reading, -1 to subscribe anew. */
static int on_reply(struct stream *s, const struct rd_reply *r)
{
    if (r->type == RD_ERROR) {
        /* SSUBSCRIBE sent where the slot map said, but the slot has moved (MOVED: the map
         * is told), or the cluster cannot serve it now: try again shortly. */
        rd_client_moved(svc_redis, r);
        lock_sleep_ms(r->fault == LOCK_E_MOVED ? 0 : RECONNECT_MS);
        return -1;
    }
    if (r->type != RD_ARRAY || r->elements < 2 || r->element[0]->type != RD_STRING)
        return 0;
    const char *kind = r->element[0]->str;
    if ((strcmp(kind, "message") == 0 || strcmp(kind, "smessage") == 0) && r->elements == 3 &&
        r->element[2]->type == RD_STRING)
        stream_put(s, "data: %s\n\n", r->element[2]->str);
    else if (strcmp(kind, "pong") == 0)
        stream_put(s, ": heartbeat\n\n");
    else if (strcmp(kind, "subscribe") == 0 || strcmp(kind, "ssubscribe") == 0)
        stream_put(s, "event: subscribed\ndata: {\"instance\":\"%s\"}\n\n", svc.name);
    else if (strcmp(kind, "sunsubscribe") == 0)
        return -1;   /* the item's slot moved: subscribe on its new node */
    return 0;
}

/* Subscribes to the item's channel and copies what comes, until the stream ends; a lost
 * connection is made anew. */
static void *reader_main(void *arg)
{
    struct stream *s = arg;
    char channel[ITEM_MAX + 16];

    snprintf(channel, sizeof(channel), "events:{%s}", s->item);
    while (!is_ending(s)) {
        struct lock_error err = { 0 };
        struct rd_conn *cn = rd_conn_open(svc_redis, channel, &err);
        if (cn && rd_conn_send(cn, &err, "%s %s", svc.cluster ? "SSUBSCRIBE" : "SUBSCRIBE",
                               channel) != LOCK_OK) {
            rd_conn_close(cn);
            cn = NULL;
        }
        if (cn == NULL) {
            stream_put(s, "event: redis\ndata: {\"up\":false}\n\n");
            lock_sleep_ms(RECONNECT_MS);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        s->sub = s->ending ? NULL : cn;
        pthread_mutex_unlock(&s->mu);
        struct rd_reply *r;
        while (!is_ending(s) && (r = rd_conn_read(cn, HEARTBEAT_MS)) != NULL) {
            int again = on_reply(s, r);
            rd_reply_free(r);
            if (again)
                break;
        }
        pthread_mutex_lock(&s->mu);
        s->sub = NULL;
        pthread_mutex_unlock(&s->mu);
        rd_conn_close(cn);
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
        if (svc.event_loop) {
            s->suspended = 1;
            MHD_suspend_connection(s->conn);
            break;   /* 0 bytes: the reader resumes it */
        }
        struct timespec until = lock_monotonic_at(lock_now_ms() + 1000);
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
        rd_conn_shutdown(s->sub);   /* the reader stops reading */
    pthread_mutex_unlock(&s->mu);
    stream_unref(s);
}

/* A new stream, counted in the list; NULL when the cap is reached or we are stopping. */
static struct stream *stream_new(struct MHD_Connection *conn, const char *item)
{
    struct stream *s;

    pthread_mutex_lock(&list_mu);
    if (refusing || count >= svc.max_streams || (s = calloc(1, sizeof(*s))) == NULL) {
        pthread_mutex_unlock(&list_mu);
        return NULL;
    }
    s->conn = conn;
    snprintf(s->item, sizeof(s->item), "%s", item);
    pthread_mutex_init(&s->mu, NULL);
    lock_cond_init_monotonic(&s->cv);
    s->refs = 2;   /* the response's and the reader's */
    s->next = streams;
    streams = s;
    count++;
    pthread_mutex_unlock(&list_mu);
    return s;
}

struct MHD_Response *stream_response(struct MHD_Connection *conn, const char *item, int *full)
{
    struct stream *s = stream_new(conn, item);
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
            rd_conn_shutdown(s->sub);   /* the reader stops reading */
        wake(s);
        pthread_mutex_unlock(&s->mu);
    }
    pthread_mutex_unlock(&list_mu);
    for (long long end = lock_now_ms() + wait_ms; streams_open() > 0 && lock_now_ms() < end;)
        lock_sleep_ms(10);
}

int streams_open(void)
{
    pthread_mutex_lock(&list_mu);
    int n = count;
    pthread_mutex_unlock(&list_mu);
    return n;
}
