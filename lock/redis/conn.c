/* conn.c - Clients and their connections: one per calling thread, connected with a
 * timeout, authenticated, made again after the server closed it; and where the server
 * is (the locators: one address, or an address and its standbys). */
#include "lock/redis/internal.h"

#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "lock/clock.h"

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

/* One command on cn within its timeout: rd_expect's contract. */
static struct rd_reply *conn_vcommand(struct rd_conn *cn, int types, struct lock_error *err,
                                      const char *fmt, va_list ap)
{
    struct rd_reply *r = redisvCommand(cn->c, fmt, ap);

    if (r == NULL) {
        rd_context_error(cn->c, fmt, err);
        return NULL;
    }
    return rd_expect(r, types, fmt, err);
}

struct rd_reply *rd_conn_command(struct rd_conn *cn, int types, struct lock_error *err,
                                 const char *fmt, ...)
{
    struct rd_reply *r;
    va_list ap;

    va_start(ap, fmt);
    r = conn_vcommand(cn, types, err, fmt, ap);
    va_end(ap);
    return r;
}

void rd_conn_close(struct rd_conn *cn)
{
    if (cn == NULL)
        return;
    if (cn->c)
        redisFree(cn->c);
    free(cn);
}

/* AUTH with the configured credentials, or PING: a Redis that wants a password says so
 * here, once per connection, rather than on every sale. */
static int authenticate(struct rd_client *rc, struct rd_conn *cn, int port, struct lock_error *err)
{
    struct rd_reply *r;

    if (rc->password && rc->user)
        r = rd_conn_command(cn, RD_T(RD_STATUS), err, "AUTH %s %s", rc->user, rc->password);
    else if (rc->password)
        r = rd_conn_command(cn, RD_T(RD_STATUS), err, "AUTH %s", rc->password);
    else
        r = rd_conn_command(cn, RD_T(RD_STATUS), err, "PING");
    if (r == NULL && err->fault != LOCK_E_CONNECTION && err->fault != LOCK_E_TIMEOUT) {
        char why[sizeof(err->msg)];
        memcpy(why, err->msg, sizeof(why));
        lock_fail(err, err->fault == LOCK_E_REPLY ? LOCK_E_AUTH : err->fault,
                  "Redis :%d refused us: %.56s%s", port, why, rc->password ? "" : " (no password set)");
    }
    rd_reply_free(r);
    return r ? LOCK_OK : LOCK_ERROR;
}

struct rd_conn *rd_conn_connect(struct rd_client *rc, const char *host, int port,
                                struct lock_error *err)
{
    struct rd_conn *cn = calloc(1, sizeof(*cn));

    if (cn == NULL) {
        lock_fail(err, LOCK_E_NOMEM, "out of memory");
        return NULL;
    }
    cn->c = redisConnectWithTimeout(host, port, timeval_of(rc->connect_timeout_ms));
    if (cn->c == NULL) {
        lock_fail(err, LOCK_E_NOMEM, "out of memory");
        goto out_close;
    }
    if (cn->c->err || redisSetTimeout(cn->c, timeval_of(rc->connect_timeout_ms)) != REDIS_OK) {
        rd_context_error(cn->c, "connect", err);
        goto out_close;
    }
    cn->c->reader->fn = &rd_reply_functions;
    if (authenticate(rc, cn, port, err) != LOCK_OK)
        goto out_close;
    redisSetTimeout(cn->c, timeval_of(rc->command_timeout_ms));
    cn->used_ms = lock_now_ms();
    return cn;

out_close:
    rd_conn_close(cn);
    return NULL;
}

/* --- locators --- */

/* One address. */
static struct rd_conn *single_open(struct rd_client *rc, const char *key, struct lock_error *err)
{
    (void)key;
    return rd_conn_connect(rc, rc->host, rc->port, err);
}

static const struct rd_locator single_locator = {
    .name = "single",
    .open = single_open,
};

/* An address and its standbys: the first that says it is a master (ROLE), so that after
 * a failover writes go to the promoted replica (a replica refuses them: READONLY). */
struct standby {
    struct rd_server server[RD_SERVERS_MAX];
    int n;                        /* the address itself first */
};

static int standby_init(struct rd_client *rc, const struct rd_config *cfg, struct lock_error *err)
{
    struct standby *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return lock_fail(err, LOCK_E_NOMEM, "out of memory");
    snprintf(s->server[0].host, sizeof(s->server[0].host), "%s", rc->host);
    s->server[0].port = rc->port;
    int n = rd_servers_parse(cfg->standby, s->server + 1, RD_SERVERS_MAX - 1);
    if (n <= 0) {
        free(s);
        return lock_fail(err, LOCK_E_USAGE, "--redis-standby: HOST:PORT,... (ports 1 to 65535, at most %d)",
                         RD_SERVERS_MAX - 1);
    }
    s->n = n + 1;
    rc->locator_state = s;
    return LOCK_OK;
}

static void standby_destroy(struct rd_client *rc)
{
    free(rc->locator_state);
}

static int is_master(struct rd_conn *cn)
{
    struct lock_error ignored;
    struct rd_reply *r = rd_conn_command(cn, RD_T(RD_ARRAY), &ignored, "ROLE");
    int yes = r && r->elements > 0 && r->element[0]->type == RD_STRING &&
              strcmp(r->element[0]->str, "master") == 0;

    rd_reply_free(r);
    return yes;
}

static struct rd_conn *standby_open(struct rd_client *rc, const char *key, struct lock_error *err)
{
    const struct standby *s = rc->locator_state;
    int refused = 0;

    (void)key;
    for (int i = 0; i < s->n; i++) {
        struct rd_conn *cn = rd_conn_connect(rc, s->server[i].host, s->server[i].port, err);
        if (cn && is_master(cn))
            return cn;
        refused |= cn == NULL && err->fault == LOCK_E_AUTH;
        rd_conn_close(cn);
    }
    if (!refused)   /* a refusal (NOAUTH, WRONGPASS) keeps its own message */
        lock_fail(err, LOCK_E_CONNECTION, "no master at the data Redis or its standbys");
    return NULL;
}

static const struct rd_locator standby_locator = {
    .name = "standby",
    .init = standby_init,
    .destroy = standby_destroy,
    .open = standby_open,
};

/* --- clients --- */

static void thread_conn_free(void *p)
{
    rd_conn_close(p);
}

static void client_free(struct rd_client *rc)
{
    pthread_mutex_destroy(&rc->known_mu);
    if (rc->password)
        explicit_bzero(rc->password, strlen(rc->password));
    free(rc->host);
    free(rc->user);
    free(rc->password);
    free(rc);
}

struct rd_client *rd_client_create(const struct rd_config *cfg, struct lock_error *err)
{
    struct rd_client *rc = calloc(1, sizeof(*rc));

    if (rc == NULL) {
        lock_fail(err, LOCK_E_NOMEM, "out of memory");
        return NULL;
    }
    rc->locator = cfg->standby ? &standby_locator : &single_locator;
    rc->host = strdup(cfg->host ? cfg->host : "127.0.0.1");
    rc->port = cfg->port ? cfg->port : 6379;
    rc->user = cfg->user ? strdup(cfg->user) : NULL;
    rc->password = cfg->password ? strdup(cfg->password) : NULL;
    rc->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 1000;
    rc->command_timeout_ms = cfg->command_timeout_ms > 0 ? cfg->command_timeout_ms : 5000;
    rc->on_state = cfg->on_state;
    rc->state_arg = cfg->state_arg;
    if (rc->host == NULL || (cfg->user && !rc->user) || (cfg->password && !rc->password)) {
        lock_fail(err, LOCK_E_NOMEM, "out of memory");
        goto out_free;
    }
    if (rc->locator->init && rc->locator->init(rc, cfg, err) != LOCK_OK)
        goto out_free;
    pthread_mutex_init(&rc->known_mu, NULL);
    if (pthread_key_create(&rc->key, thread_conn_free) != 0) {
        lock_fail(err, LOCK_E_NOMEM, "cannot create the per-thread connections");
        if (rc->locator->destroy)
            rc->locator->destroy(rc);
        goto out_free;
    }
    return rc;

out_free:
    client_free(rc);
    return NULL;
}

void rd_client_destroy(struct rd_client *rc)
{
    struct rd_conn *cn;

    if (rc == NULL)
        return;
    if ((cn = pthread_getspecific(rc->key)) != NULL) {
        pthread_setspecific(rc->key, NULL);
        rd_conn_close(cn);
    }
    pthread_key_delete(rc->key);
    if (rc->locator->destroy)
        rc->locator->destroy(rc);
    client_free(rc);
}

const char *rd_client_locator(const struct rd_client *rc)
{
    return rc->locator->name;
}

long long rd_client_drops(const struct rd_client *rc)
{
    return atomic_load(&rc->drops);
}

/* The server closed this idle connection (it died or restarted; with standbys, the
 * master may have moved): it is replaced before use, so that a Redis restart costs no
 * sale an error, as clients that follow a failover do. One poll, no wait; asked only of
 * a connection idle for IDLE_CHECK_MS (a restart takes longer than that), or of every
 * use when there are standbys to follow. */
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

static void tell_state(struct rd_client *rc, int up, const char *why)
{
    if (rc->on_state && atomic_exchange(&rc->down, !up) == up)
        rc->on_state(rc->state_arg, up, why);
}

struct rd_conn *rd_thread_conn(struct rd_client *rc, const char *key, struct lock_error *err)
{
    struct rd_conn *cn = pthread_getspecific(rc->key);
    long long now = lock_now_ms();

    if (cn && !cn->c->err &&
        ((now - cn->used_ms < IDLE_CHECK_MS && rc->locator == &single_locator) ||
         !closed_by_server(cn->c))) {
        cn->used_ms = now;
        return cn;
    }
    if (cn) {
        pthread_setspecific(rc->key, NULL);
        rd_conn_close(cn);
    }
    if ((cn = rc->locator->open(rc, key, err)) == NULL) {
        tell_state(rc, 0, err->msg);
        return NULL;
    }
    pthread_setspecific(rc->key, cn);
    if (atomic_load(&rc->down))
        tell_state(rc, 1, NULL);
    return cn;
}

void rd_drop(struct rd_client *rc)
{
    struct rd_conn *cn = pthread_getspecific(rc->key);

    if (cn) {
        pthread_setspecific(rc->key, NULL);
        rd_conn_close(cn);
        atomic_fetch_add(&rc->drops, 1);
    }
}

void rd_conn_failed(struct rd_client *rc, const struct lock_error *why)
{
    tell_state(rc, 0, why->msg);
    rd_drop(rc);
}

/* --- a connection of the caller's own --- */

struct rd_conn *rd_conn_open(struct rd_client *rc, struct lock_error *err)
{
    return rc->locator->open(rc, NULL, err);
}

struct rd_reply *rd_conn_call(struct rd_conn *cn, int types, long timeout_ms,
                              struct lock_error *err, const char *fmt, ...)
{
    struct rd_reply *r;
    va_list ap;

    redisSetTimeout(cn->c, timeval_of(timeout_ms));
    va_start(ap, fmt);
    r = conn_vcommand(cn, types, err, fmt, ap);
    va_end(ap);
    return r;
}

struct rd_reply *rd_conn_read(struct rd_conn *cn)
{
    void *r = NULL;

    if (redisGetReply(cn->c, &r) != REDIS_OK)
        return NULL;
    return r;
}

void rd_conn_shutdown(struct rd_conn *cn)
{
    shutdown(cn->c->fd, SHUT_RDWR);
}
