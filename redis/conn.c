/* conn.c - Connections: made with a timeout, authenticated, kept alive (TCP keepalive);
 * one per calling thread, made again after the server closed it or an error broke it;
 * and the caller's own (a subscriber's). Where the server is, is the locators' business
 * (locate.c, sentinel.c). */
#include "redis/internal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"

int rd_servers_parse(const char *list, struct rd_server *out, int max)
{
    const char *p = list;
    int n = 0;

    while (p && *p) {
        const char *end = strchr(p, ','), *colon;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char *stop;
        long port;

        colon = memchr(p, ':', len);
        if (n == max || colon == NULL || colon == p || (size_t)(colon - p) >= sizeof(out->host))
            return -1;
        port = strtol(colon + 1, &stop, 10);
        if (stop != p + len || port < 1 || port > 65535)
            return -1;
        memcpy(out[n].host, p, (size_t)(colon - p));
        out[n].host[colon - p] = '\0';
        out[n].port = (int)port;
        n++;
        p += len + (end != NULL);
    }
    return n;
}

static struct timeval timeval_of(long ms)
{
    return (struct timeval){ .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };
}

/* The calling thread's deadline for its commands (rd_thread_deadline); 0: none. */
static _Thread_local long long thread_deadline_ms;

void rd_thread_deadline(long long until_ms)
{
    thread_deadline_ms = until_ms;
}

int rd_thread_has_deadline(void)
{
    return thread_deadline_ms != 0;
}

/* How long a connect (and its AUTH) may take: the connect timeout, or what is left of
 * the calling thread's deadline when that is less (<= 0: it has passed). */
static long connect_ms(const struct rd_client *rc)
{
    long long left = thread_deadline_ms ? thread_deadline_ms - clock_now_ms()
                                        : rc->connect_timeout_ms;

    return left < rc->connect_timeout_ms ? (long)left : rc->connect_timeout_ms;
}

long rd_wait_left(const struct rd_client *rc)
{
    long long left = thread_deadline_ms ? thread_deadline_ms - clock_now_ms()
                                        : rc->command_timeout_ms;

    return left < rc->command_timeout_ms ? (long)left : rc->command_timeout_ms;
}

int rd_conn_deadline(struct rd_client *rc, struct rd_conn *cn, struct rd_error *err)
{
    long long left;

    if (thread_deadline_ms == 0) {
        if (cn->deadline_set)
            redisSetTimeout(cn->c, timeval_of(rc->command_timeout_ms));
        cn->deadline_set = 0;
        return RD_OK;
    }
    if ((left = thread_deadline_ms - clock_now_ms()) <= 0)
        return rd_fail(err, RD_E_TIMEOUT, "the deadline passed before the command was sent");
    if (left > rc->command_timeout_ms)
        left = rc->command_timeout_ms;
    redisSetTimeout(cn->c, timeval_of(left));
    cn->deadline_set = 1;
    return RD_OK;
}

/* One command on cn within its timeout: rd_expect's contract. */
static struct rd_reply *conn_vcommand(struct rd_conn *cn, int types, struct rd_error *err,
                                      const char *fmt, va_list ap)
{
    struct rd_reply *r = redisvCommand(cn->c, fmt, ap);

    if (r == NULL) {
        rd_context_error(cn->c, fmt, err);
        return NULL;
    }
    return rd_expect(r, types, fmt, err);
}

struct rd_reply *rd_conn_command(struct rd_conn *cn, int types, struct rd_error *err,
                                 const char *fmt, ...)
{
    struct rd_reply *r;
    va_list ap;

    va_start(ap, fmt);
    r = conn_vcommand(cn, types, err, fmt, ap);
    va_end(ap);
    return r;
}

/* Puts cn in rc's list of connections that rd_client_cut_stale may cut. */
static void conn_list(struct rd_client *rc, struct rd_conn *cn)
{
    pthread_mutex_lock(&rc->conns_mu);
    cn->listed = rc;
    cn->prev = NULL;
    cn->next = rc->conns;
    if (rc->conns)
        rc->conns->prev = cn;
    rc->conns = cn;
    pthread_mutex_unlock(&rc->conns_mu);
}

void rd_conn_close(struct rd_conn *cn)
{
    struct rd_client *rc;

    if (cn == NULL)
        return;
    if ((rc = cn->listed) != NULL) {
        pthread_mutex_lock(&rc->conns_mu);
        if (cn->prev)
            cn->prev->next = cn->next;
        else
            rc->conns = cn->next;
        if (cn->next)
            cn->next->prev = cn->prev;
        pthread_mutex_unlock(&rc->conns_mu);
    }
    if (cn->c)
        redisFree(cn->c);
    free(cn);
}

/* AUTH with the given credentials, or PING: a Redis that wants a password says so
 * here, once per connection, rather than on every sale. */
static int authenticate(struct rd_conn *cn, const char *user, const char *password, int port,
                        struct rd_error *err)
{
    struct rd_reply *r;

    if (password && user)
        r = rd_conn_command(cn, RD_T(RD_STATUS), err, "AUTH %s %s", user, password);
    else if (password)
        r = rd_conn_command(cn, RD_T(RD_STATUS), err, "AUTH %s", password);
    else
        r = rd_conn_command(cn, RD_T(RD_STATUS), err, "PING");
    if (r == NULL && err->fault != RD_E_CONNECTION && err->fault != RD_E_TIMEOUT) {
        char why[sizeof(err->msg)];
        memcpy(why, err->msg, sizeof(why));
        rd_fail(err, err->fault == RD_E_REPLY ? RD_E_AUTH : err->fault,
                  "Redis :%d refused us: %.56s%s", port, why, password ? "" : " (no password set)");
    }
    rd_reply_free(r);
    return r ? RD_OK : RD_FAIL;
}

struct rd_conn *rd_conn_connect_as(struct rd_client *rc, const char *host, int port,
                                   const char *user, const char *password, struct rd_error *err)
{
    struct rd_conn *cn = calloc(1, sizeof(*cn));
    long limit;

    if (cn == NULL) {
        rd_fail(err, RD_E_NOMEM, "out of memory");
        return NULL;
    }
    if ((limit = connect_ms(rc)) <= 0) {
        rd_fail(err, RD_E_CONNECT, "the deadline passed before %.64s:%d was connected to",
                host, port);
        goto out_close;
    }
    cn->c = redisConnectWithTimeout(host, port, timeval_of(limit));
    if (cn->c == NULL) {
        rd_fail(err, RD_E_NOMEM, "out of memory");
        goto out_close;
    }
    if (cn->c->err || redisSetTimeout(cn->c, timeval_of(limit)) != REDIS_OK) {
        rd_context_error(cn->c, "connect", err);
        goto out_close;
    }
    redisEnableKeepAlive(cn->c);   /* a peer gone without a reset is found out */
    cn->c->reader->fn = &rd_reply_functions;
    if (authenticate(cn, user, password, port, err) != RD_OK)
        goto out_close;
    redisSetTimeout(cn->c, timeval_of(rc->command_timeout_ms));
    cn->used_ms = clock_now_ms();
    return cn;

out_close:
    rd_conn_close(cn);
    return NULL;
}

struct rd_conn *rd_conn_connect(struct rd_client *rc, const char *host, int port,
                                struct rd_error *err)
{
    return rd_conn_connect_as(rc, host, port, rc->user, rc->password, err);
}

int rd_conn_is_master(struct rd_conn *cn)
{
    struct rd_error ignored;
    struct rd_reply *r = rd_conn_command(cn, RD_T(RD_ARRAY), &ignored, "ROLE");
    int yes = r && r->elements > 0 && r->element[0]->type == RD_STRING &&
              strcmp(r->element[0]->str, "master") == 0;

    rd_reply_free(r);
    return yes;
}

/* The server closed this idle connection (it died or restarted; with Sentinel, the
 * master may have moved): it is replaced before use, so that a Redis restart costs no
 * sale an error, as clients that follow a failover do. One poll, no wait; asked only of
 * a connection idle for IDLE_CHECK_MS (a restart takes longer than that), or of every
 * use when there is a failover to follow (Sentinel). */
enum { IDLE_CHECK_MS = 100 };

static int closed_by_server(const redisContext *c)
{
    struct pollfd p = { .fd = c->fd, .events = POLLIN | POLLRDHUP };
    char byte;

    if (poll(&p, 1, 0) != 1)
        return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) ||
           recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

void rd_tell_state(struct rd_client *rc, int up, const char *why)
{
    if (rc->on_state && atomic_exchange(&rc->down, !up) == up)
        rc->on_state(rc->state_arg, up, why);
}

/* 1 when cn can be handed out as it is: not broken, not to a master that moved, not
 * closed by the server (asked of one idle IDLE_CHECK_MS, or each time with Sentinel). */
static int usable(struct rd_client *rc, const struct rd_conn *cn, long long now)
{
    return !cn->c->err && !(rc->locator->stale && rc->locator->stale(rc, cn)) &&
           ((now - cn->used_ms < IDLE_CHECK_MS && !rc->locator->check_each_use) ||
            !closed_by_server(cn->c));
}

/* The calling thread's connections; NULL when it has none and create is 0. */
struct rd_thread *rd_thread_of(struct rd_client *rc, int create)
{
    struct rd_thread *t = pthread_getspecific(rc->key);

    if (t == NULL && create && (t = calloc(1, sizeof(*t))) != NULL) {
        t->rc = rc;
        pthread_setspecific(rc->key, t);
    }
    return t;
}

int rd_route(struct rd_client *rc, int slot, struct rd_error *err)
{
    struct rd_thread *t;
    int server;

    if (rc->locator->route == NULL)
        return 0;
    if (slot == RD_SLOT_NONE && (t = rd_thread_of(rc, 0)) != NULL && t->conn[t->at])
        return t->at;
    if ((server = rc->locator->route(rc, slot, err)) < 0)
        rd_tell_state(rc, 0, err->msg);
    return server;
}

void rd_client_moved(struct rd_client *rc, const struct rd_reply *r)
{
    if (rc->locator->redirected && r && r->fault == RD_E_MOVED) {
        atomic_fetch_add(&rc->moved, 1);   /* counted as a command's MOVED is */
        rc->locator->redirected(rc, r, 1);
    }
}

struct rd_conn *rd_thread_conn(struct rd_client *rc, int server, struct rd_error *err)
{
    struct rd_thread *t = rd_thread_of(rc, 1);
    struct rd_conn *cn;
    long long now = clock_now_ms();

    if (t == NULL || server < 0 || server >= RD_SERVERS_KNOWN) {
        rd_fail(err, RD_E_NOMEM, "out of memory, or server %d out of range", server);
        return NULL;
    }
    t->at = server;
    if ((cn = t->conn[server]) != NULL && usable(rc, cn, now)) {
        cn->used_ms = now;
        return cn;
    }
    if (cn) {                       /* broken, closed by the server, or its master moved */
        rd_thread_conn_close(rc, cn);
        atomic_fetch_add(&rc->drops, 1);
        atomic_fetch_add(&rc->changes, 1);
    }
    for (int tries = 0;; tries++) {
        if ((cn = rc->locator->open(rc, server, err)) == NULL) {
            /* No connection: nothing of the caller's was sent (a try took nothing). The
             * server may have moved (a cluster's master died): the locator looks again. */
            if (err->fault == RD_E_CONNECTION || err->fault == RD_E_TIMEOUT)
                err->fault = RD_E_CONNECT;
            atomic_fetch_add(&rc->changes, 1);
            rd_tell_state(rc, 0, err->msg);
            if (rc->locator->forget)
                rc->locator->forget(rc);
            return NULL;
        }
        cn->server = server;   /* (before it is listed: health.c walks the list) */
        conn_list(rc, cn);
        /* The master moved while it was made (a cut then missed it): once more. */
        if (tries > 0 || !(rc->locator->stale && rc->locator->stale(rc, cn)))
            break;
        rd_conn_close(cn);
    }
    cn->server = server;
    t->conn[server] = cn;
    atomic_fetch_add(&rc->opens, 1);
    if (atomic_load(&rc->down))
        rd_tell_state(rc, 1, NULL);
    return cn;
}

void rd_thread_conn_close(struct rd_client *rc, struct rd_conn *cn)
{
    struct rd_thread *t = rd_thread_of(rc, 0);

    if (t && cn->server >= 0 && cn->server < RD_SERVERS_KNOWN && t->conn[cn->server] == cn)
        t->conn[cn->server] = NULL;
    rd_conn_close(cn);
}

void rd_thread_free(struct rd_thread *t)
{
    for (int i = 0; i < RD_SERVERS_KNOWN; i++)
        rd_conn_close(t->conn[i]);
    free(t);
}

int rd_client_cut_stale(struct rd_client *rc)
{
    int n = 0;

    if (rc->locator->stale == NULL)
        return 0;
    pthread_mutex_lock(&rc->conns_mu);
    for (struct rd_conn *cn = rc->conns; cn; cn = cn->next)
        if (rc->locator->stale(rc, cn) && shutdown(cn->c->fd, SHUT_RDWR) == 0)
            n++;
    pthread_mutex_unlock(&rc->conns_mu);
    return n;
}

void rd_thread_at(struct rd_client *rc, int server)
{
    struct rd_thread *t = rd_thread_of(rc, 0);

    if (t && server >= 0 && server < RD_SERVERS_KNOWN)
        t->at = server;
}

/* The connection the calling thread was last handed, or NULL. */
static struct rd_conn *thread_current(struct rd_client *rc)
{
    struct rd_thread *t = rd_thread_of(rc, 0);

    return t ? t->conn[t->at] : NULL;
}

void rd_drop(struct rd_client *rc)
{
    struct rd_conn *cn = thread_current(rc);

    if (cn) {
        rd_thread_conn_close(rc, cn);
        atomic_fetch_add(&rc->drops, 1);
        atomic_fetch_add(&rc->changes, 1);
    }
}

void rd_conn_failed(struct rd_client *rc, const struct rd_error *why)
{
    struct rd_conn *cn = thread_current(rc);

    /* A connection to a master that moved was cut on purpose (rd_client_cut_stale): the
     * locator knows the new one; Redis is not down. */
    if (cn && rc->locator->stale && rc->locator->stale(rc, cn)) {
        rd_drop(rc);
        return;
    }
    /* A thread's own deadline missed (a renewal's): the server is slow, or cut off, for
     * this thread's purpose; its late reply must not be read as the next command's, but
     * nothing says it is down or moved. */
    if (cn && cn->deadline_set && why->fault == RD_E_TIMEOUT) {
        rd_thread_conn_close(rc, cn);
        atomic_fetch_add(&rc->drops, 1);   /* (not a change: nothing may have been lost) */
        return;
    }
    rd_tell_state(rc, 0, why->msg);
    rd_conn_moved(rc);
}

void rd_conn_moved(struct rd_client *rc)
{
    if (rc->locator->forget)
        rc->locator->forget(rc);
    rd_drop(rc);
}

/* --- a connection of the caller's own --- */

int rd_key_server(struct rd_client *rc, const char *key, struct rd_error *err)
{
    if (rc->locator->route == NULL)
        return 0;
    return rc->locator->route(rc, key ? (int)rd_key_slot(key, strlen(key)) : RD_SLOT_NONE, err);
}

int rd_key_node(struct rd_client *rc, const char *key)
{
    int server;

    if (!rc->locator->peek || key == NULL)
        return -1;
    server = rc->locator->peek(rc, (int)rd_key_slot(key, strlen(key)));
    return server >= 0 && server < RD_SERVERS_KNOWN ? server : -1;
}

int rd_conn_server(const struct rd_conn *cn)
{
    return cn->server;
}

struct rd_conn *rd_conn_open(struct rd_client *rc, const char *key, struct rd_error *err)
{
    int server = rd_key_server(rc, key, err);
    struct rd_conn *cn = server >= 0 ? rc->locator->open(rc, server, err) : NULL;

    if (cn) {
        cn->server = server;
        conn_list(rc, cn);
    }
    return cn;
}

int rd_conn_send(struct rd_conn *cn, struct rd_error *err, const char *fmt, ...)
{
    va_list ap;
    int done = 0, st;

    va_start(ap, fmt);
    st = redisvAppendCommand(cn->c, fmt, ap);
    va_end(ap);
    while (st == REDIS_OK && !done)
        st = redisBufferWrite(cn->c, &done);
    return st == REDIS_OK ? RD_OK : rd_context_error(cn->c, fmt, err);
}

int rd_conn_poll(struct rd_conn *const *cns, int n, long timeout_ms)
{
    struct pollfd p[RD_SERVERS_KNOWN];

    if (n > RD_SERVERS_KNOWN)
        n = RD_SERVERS_KNOWN;
    for (int i = 0; i < n; i++) {
        if (cns[i]->c->reader->pos < cns[i]->c->reader->len)
            return i;   /* read already, not yet taken */
        p[i] = (struct pollfd){ .fd = cns[i]->c->fd, .events = POLLIN };
    }
    if (poll(p, (nfds_t)n, (int)timeout_ms) <= 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (p[i].revents)
            return i;
    return -1;
}

struct rd_reply *rd_conn_call(struct rd_conn *cn, int types, long timeout_ms,
                              struct rd_error *err, const char *fmt, ...)
{
    struct rd_reply *r;
    va_list ap;

    redisSetTimeout(cn->c, timeval_of(timeout_ms));
    va_start(ap, fmt);
    r = conn_vcommand(cn, types, err, fmt, ap);
    va_end(ap);
    return r;
}

/* Sends PING without waiting for its answer. */
static int ping_sent(struct rd_conn *cn)
{
    int done = 0;

    if (redisAppendCommand(cn->c, "PING") != REDIS_OK)
        return 0;
    while (!done)
        if (redisBufferWrite(cn->c, &done) != REDIS_OK)
            return 0;
    return 1;
}

struct rd_reply *rd_conn_read(struct rd_conn *cn, long idle_ms)
{
    int pinged = 0;

    for (;;) {
        void *r = NULL;
        struct pollfd p = { .fd = cn->c->fd, .events = POLLIN };
        int n;

        if (redisGetReplyFromReader(cn->c, &r) != REDIS_OK)
            return NULL;
        if (r)
            return r;
        n = poll(&p, 1, idle_ms > 0 ? (int)idle_ms : -1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 && !pinged && ping_sent(cn)) {
            pinged = 1;
            continue;
        }
        if (n <= 0 || redisBufferRead(cn->c) != REDIS_OK)
            return NULL;   /* silent after a PING, or ended */
        pinged = 0;
    }
}

void rd_conn_shutdown(struct rd_conn *cn)
{
    shutdown(cn->c->fd, SHUT_RDWR);
}
