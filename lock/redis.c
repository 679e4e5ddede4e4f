/* redis.c - The library's Redis side: one connection per thread, the command and script
 * helpers every store uses, riders sent in the same round trip, and the Lua runner. */
#include "lock/internal.h"

#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* The calling thread's connection and the riders waiting for its next lock command.
 * Owned by that thread (a redisContext is not thread-safe); freed when it exits. */
struct conn {
    redisContext *c;
    long long used_ms;            /* monotonic: when c was last handed out */
    struct lock_rider *before, *after;
};

struct conns {
    pthread_key_t key;
    struct lock_server standby[LOCK_SERVERS_MAX];   /* cfg.redis_standby, parsed */
    int standbys;
};

int lock_servers_parse(const char *list, struct lock_server *out, int max)
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

static void conn_free(void *p)
{
    struct conn *cn = p;

    if (cn->c)
        redisFree(cn->c);
    free(cn);
}

int lock_redis_init(struct lock_client *lc, struct lock_error *err)
{
    struct conns *cs = calloc(1, sizeof(*cs));

    if (cs == NULL)
        return lock_fail(err, NULL, "out of memory");
    if (lc->cfg.redis_standby &&
        (cs->standbys = lock_servers_parse(lc->cfg.redis_standby, cs->standby, LOCK_SERVERS_MAX)) <= 0) {
        free(cs);
        return lock_fail(err, NULL, "--redis-standby: HOST:PORT,... (ports 1 to 65535, at most 9)");
    }
    if (pthread_key_create(&cs->key, conn_free) != 0) {
        free(cs);
        return lock_fail(err, NULL, "cannot create the per-thread connections");
    }
    lc->conns = cs;
    return LOCK_OK;
}

/* Frees the calling thread's connection; other threads free theirs when they exit. */
void lock_redis_destroy(struct lock_client *lc)
{
    struct conns *cs = lc->conns;
    struct conn *cn = pthread_getspecific(cs->key);

    if (cn) {
        pthread_setspecific(cs->key, NULL);
        conn_free(cn);
    }
    pthread_key_delete(cs->key);
    free(cs);
}

static struct conn *thread_conn(struct lock_client *lc)
{
    struct conns *cs = lc->conns;
    struct conn *cn = pthread_getspecific(cs->key);

    if (cn == NULL && (cn = calloc(1, sizeof(*cn))) != NULL)
        pthread_setspecific(cs->key, cn);
    return cn;
}

redisContext *lock_redis_open(const struct lock_client *lc, const char *host, int port,
                              long timeout_ms, struct lock_error *err)
{
    struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
    redisContext *c = redisConnectWithTimeout(host, port, tv);
    redisReply *r;

    if (c == NULL) {
        lock_fail(err, NULL, "out of memory");
        return NULL;
    }
    if (c->err || redisSetTimeout(c, tv) != REDIS_OK) {
        lock_fail(err, c, "connect");
        redisFree(c);
        return NULL;
    }
    /* AUTH with the configured credentials, or PING: a Redis that wants a password says
     * so here, once per connection, rather than on every sale. */
    if (lc->cfg.redis_password && lc->cfg.redis_user)
        r = redisCommand(c, "AUTH %s %s", lc->cfg.redis_user, lc->cfg.redis_password);
    else if (lc->cfg.redis_password)
        r = redisCommand(c, "AUTH %s", lc->cfg.redis_password);
    else
        r = redisCommand(c, "PING");
    if (r == NULL) {
        lock_fail(err, c, "connect");
        redisFree(c);
        return NULL;
    }
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(err->msg, sizeof(err->msg), "Redis :%d refused us: %.56s%s", port, r->str,
                 lc->cfg.redis_password ? "" : " (no password set)");
        err->io = 1;
        freeReplyObject(r);
        redisFree(c);
        return NULL;
    }
    freeReplyObject(r);
    return c;
}

/* ROLE says "master": writes go here (a replica would refuse them, READONLY). */
static int is_master(redisContext *c)
{
    redisReply *r = redisCommand(c, "ROLE");
    int yes;

    if (r == NULL)
        return 0;
    yes = r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
          r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "master") == 0;
    freeReplyObject(r);
    return yes;
}

/* The data Redis; with standbys, the first of it and them that says it is a master (after
 * a failover, the promoted replica). */
redisContext *lock_redis_connect(const struct lock_client *lc, long timeout_ms,
                                 struct lock_error *err)
{
    const struct conns *cs = lc->conns;
    redisContext *c = lock_redis_open(lc, lc->cfg.redis_host, lc->cfg.redis_port, timeout_ms, err);

    if (cs->standbys == 0 || (c && is_master(c)))
        return c;
    if (c)
        redisFree(c);
    for (int i = 0; i < cs->standbys; i++) {
        c = lock_redis_open(lc, cs->standby[i].host, cs->standby[i].port, timeout_ms, err);
        if (c && is_master(c))
            return c;
        if (c)
            redisFree(c);
    }
    if (err->msg[0] == '\0' || strstr(err->msg, "refused us") == NULL)
        lock_fail(err, NULL, "no master at the data Redis or its standbys");
    err->io = 1;   /* a refusal (NOAUTH, WRONGPASS) keeps its own message */
    return NULL;
}

/* The server closed this idle connection (it died or restarted; with standbys, the
 * master may have moved): it is replaced before use, so that a Redis restart costs no
 * sale an error, as clients that follow a failover do. One poll, no wait; lock_redis
 * asks only of a connection idle for IDLE_CHECK_MS (a restart takes longer than
 * that), or of every use when there are standbys to follow. */
enum { IDLE_CHECK_MS = 100 };

static int closed_by_server(redisContext *c)
{
    struct pollfd p = { .fd = c->fd, .events = POLLIN | POLLRDHUP };
    char byte;

    if (poll(&p, 1, 0) != 1)
        return 0;
    return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) ||
           recv(c->fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}

redisContext *lock_redis(struct lock_client *lc, struct lock_error *err)
{
    struct conn *cn = thread_conn(lc);
    struct timeval cmd_tv = { 5, 0 };
    long long now = lock_now_ms();

    if (cn == NULL) {
        lock_fail(err, NULL, "out of memory");
        return NULL;
    }
    if (cn->c && !cn->c->err &&
        ((now - cn->used_ms < IDLE_CHECK_MS && !lc->cfg.redis_standby) ||
         !closed_by_server(cn->c))) {
        cn->used_ms = now;
        return cn->c;
    }
    if (cn->c) {
        redisFree(cn->c);
        cn->c = NULL;
    }
    cn->c = lock_redis_connect(lc, 1000, err);
    if (cn->c)
        redisSetTimeout(cn->c, cmd_tv);
    cn->used_ms = now;
    return cn->c;
}

void lock_redis_drop(struct lock_client *lc)
{
    struct conn *cn = thread_conn(lc);

    if (cn && cn->c) {
        redisFree(cn->c);
        cn->c = NULL;
    }
}

void lock_riders_set(struct lock_client *lc, struct lock_rider *before, struct lock_rider *after)
{
    struct conn *cn = thread_conn(lc);

    if (cn) {
        cn->before = before;
        cn->after = after;
    }
}

/* Reads one reply per command of r into r->replies. -1 on an I/O error. */
static int read_rider(redisContext *c, struct lock_rider *r)
{
    for (int i = 0; i < r->n; i++) {
        freeReplyObject(r->replies[i]);
        r->replies[i] = NULL;
        if (redisGetReply(c, (void **)&r->replies[i]) != REDIS_OK)
            return -1;
    }
    return 0;
}

/* Sends cmd (RESP, may be NULL) with the pending riders: before, cmd, after, in one
 * write; then reads every reply. The riders are taken off the connection (sent once).
 * Returns cmd's reply (NULL with err on I/O failure; NULL and no error when cmd is NULL). */
static redisReply *roundtrip(struct lock_client *lc, const char *cmd, size_t len,
                             struct lock_error *err)
{
    struct conn *cn = thread_conn(lc);
    redisContext *c = lock_redis(lc, err);
    struct lock_rider *before, *after;
    redisReply *r = NULL;

    if (c == NULL)
        return NULL;
    before = cn->before, after = cn->after;
    cn->before = cn->after = NULL;
    if (before && before->n)
        redisAppendFormattedCommand(c, before->cmds, before->len);
    if (cmd)
        redisAppendFormattedCommand(c, cmd, len);
    if (after && after->n)
        redisAppendFormattedCommand(c, after->cmds, after->len);
    if ((before && read_rider(c, before) != 0) ||
        (cmd && redisGetReply(c, (void **)&r) != REDIS_OK) ||
        (after && read_rider(c, after) != 0)) {
        freeReplyObject(r);
        lock_fail(err, c, cmd ? "lock command" : "riders");
        return NULL;
    }
    return r;
}

/* Checks r's type against types: r, or NULL with err filled (r freed). */
static redisReply *check_type(redisReply *r, int types, const char *what, struct lock_error *err)
{
    if (r == NULL || (types & (1 << r->type)))
        return r;
    if (r->type == REDIS_REPLY_ERROR)
        snprintf(err->msg, sizeof(err->msg), "%.120s", r->str);
    else
        snprintf(err->msg, sizeof(err->msg), "%.60s: unexpected reply type %d", what, r->type);
    /* A server demoted to replica (or still loading) keeps our connection open: treat it
     * as gone, so that the next connection looks for the master again. */
    err->io = r->type == REDIS_REPLY_ERROR &&
              (strncmp(r->str, "READONLY", 8) == 0 || strncmp(r->str, "LOADING", 7) == 0);
    freeReplyObject(r);
    return NULL;
}

redisReply *lock_command(struct lock_client *lc, int types, struct lock_error *err,
                         const char *fmt, ...)
{
    char *cmd;
    int len;
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (len < 0) {
        lock_fail(err, NULL, "cannot format the command");
        return NULL;
    }
    r = roundtrip(lc, cmd, (size_t)len, err);
    free(cmd);
    return check_type(r, types, fmt, err);
}

int lock_script_load(redisContext *c, struct lock_script *s, struct lock_error *err)
{
    static pthread_mutex_t sha_mu = PTHREAD_MUTEX_INITIALIZER;
    redisReply *r = redisCommand(c, "SCRIPT LOAD %s", s->source);
    int st = LOCK_OK;

    if (r == NULL)
        return lock_fail(err, c, "SCRIPT LOAD");
    if (r->type != REDIS_REPLY_STRING || r->len != 40) {
        st = lock_fail(err, NULL, r->type == REDIS_REPLY_ERROR ? r->str : "SCRIPT LOAD: bad reply");
        goto out_free_reply;
    }
    pthread_mutex_lock(&sha_mu);
    if (!atomic_load_explicit(&s->loaded, memory_order_acquire)) {
        memcpy(s->sha, r->str, 40);
        s->sha[40] = '\0';
        atomic_store_explicit(&s->loaded, 1, memory_order_release);
    }
    pthread_mutex_unlock(&sha_mu);

out_free_reply:
    freeReplyObject(r);
    return st;
}

/* EVALSHA argv as one RESP command; the caller frees *out. Returns its length, -1. */
static int format_evalsha(struct lock_script *s, int nkeys, int nargs, const char **argv,
                          char **out, struct lock_error *err)
{
    enum { MAX_ARGS = 320 };   /* a combined sale's write: keys, args, a request id per sale */
    const char *cmd[MAX_ARGS + 3];
    char numkeys[16];
    int len;

    if (nkeys + nargs > MAX_ARGS)
        return lock_fail(err, NULL, "too many script arguments"), -1;
    snprintf(numkeys, sizeof(numkeys), "%d", nkeys);
    cmd[0] = "EVALSHA";
    cmd[1] = s->sha;
    cmd[2] = numkeys;
    for (int i = 0; i < nkeys + nargs; i++)
        cmd[3 + i] = argv[i];
    len = redisFormatCommandArgv(out, 3 + nkeys + nargs, cmd, NULL);
    if (len < 0)
        lock_fail(err, NULL, "cannot format the script call");
    return len;
}

redisReply *lock_eval(struct lock_client *lc, struct lock_script *s, int types, int nkeys,
                      int nargs, const char **argv, struct lock_error *err)
{
    struct conn *cn = thread_conn(lc);
    struct lock_rider *after = cn ? cn->after : NULL;
    redisContext *c;
    redisReply *r = NULL;
    char *cmd;
    int len;

    for (int attempt = 0; attempt < 2; attempt++) {
        if (!atomic_load_explicit(&s->loaded, memory_order_acquire) || attempt == 1) {
            if ((c = lock_redis(lc, err)) == NULL || lock_script_load(c, s, err) != LOCK_OK)
                return NULL;
        }
        if ((len = format_evalsha(s, nkeys, nargs, argv, &cmd, err)) < 0)
            return NULL;
        r = roundtrip(lc, cmd, (size_t)len, err);
        free(cmd);
        if (r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0 &&
            attempt == 0) {
            /* Redis forgot the script: nothing of ours ran. A read riding after it did
             * run, before the lock was ours: send it again after the retry. */
            freeReplyObject(r);
            r = NULL;
            lock_riders_set(lc, NULL, after);
            continue;
        }
        break;
    }
    return check_type(r, types, s->name, err);
}

int lock_riders_flush(struct lock_client *lc, struct lock_error *err)
{
    struct conn *cn = thread_conn(lc);

    if (cn == NULL || (cn->before == NULL && cn->after == NULL))
        return LOCK_OK;
    err->msg[0] = '\0';
    if (roundtrip(lc, NULL, 0, err) == NULL && err->msg[0])
        return LOCK_ERROR;
    return LOCK_OK;
}

int lock_riders_flush_before(struct lock_client *lc, struct lock_error *err)
{
    struct conn *cn = thread_conn(lc);
    struct lock_rider *after;
    int st;

    if (cn == NULL || cn->before == NULL)
        return LOCK_OK;
    after = cn->after;
    cn->after = NULL;
    st = lock_riders_flush(lc, err);
    cn->after = after;
    return st;
}

void lock_release_gap(struct lock_client *lc, const struct lock_grant *g)
{
    struct lock_error err;

    if (g->release_gap_ms <= 0)
        return;
    /* A failure here leaves the connection broken: the release's own command reports it. */
    lock_riders_flush(lc, &err);
    lock_sleep_ms(g->release_gap_ms);
}

redisReply *lock_script_eval(redisContext *c, struct lock_script *s, int nkeys, int nargs,
                             const char **argv, struct lock_error *err)
{
    redisReply *r = NULL;
    char *cmd;
    int len;

    for (int attempt = 0; attempt < 2; attempt++) {
        if ((!atomic_load_explicit(&s->loaded, memory_order_acquire) || attempt == 1) &&
            lock_script_load(c, s, err) != LOCK_OK)
            return NULL;
        if ((len = format_evalsha(s, nkeys, nargs, argv, &cmd, err)) < 0)
            return NULL;
        redisAppendFormattedCommand(c, cmd, (size_t)len);
        free(cmd);
        if (redisGetReply(c, (void **)&r) != REDIS_OK) {
            lock_fail(err, c, s->name);
            return NULL;
        }
        if (r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0 && attempt == 0) {
            freeReplyObject(r);
            r = NULL;
            continue;
        }
        break;
    }
    return r;
}

/* Appends one formatted command of len bytes to r; takes cmd (freed here). */
static int rider_append(struct lock_rider *r, char *cmd, int len)
{
    char *grown;

    if (len < 0)
        return -1;
    if (r->n >= LOCK_RIDER_MAX || (grown = realloc(r->cmds, r->len + (size_t)len)) == NULL) {
        free(cmd);
        return -1;
    }
    memcpy(grown + r->len, cmd, (size_t)len);
    free(cmd);
    r->cmds = grown;
    r->len += (size_t)len;
    r->n++;
    return 0;
}

int lock_rider_add(struct lock_rider *r, const char *fmt, ...)
{
    char *cmd = NULL;
    va_list ap;
    int len;

    va_start(ap, fmt);
    len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    return rider_append(r, cmd, len);
}

int lock_rider_add_argv(struct lock_rider *r, int argc, const char **argv)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);

    return rider_append(r, cmd, len);
}

void lock_rider_reset(struct lock_rider *r)
{
    for (int i = 0; i < LOCK_RIDER_MAX; i++)
        freeReplyObject(r->replies[i]);
    free(r->cmds);
    memset(r, 0, sizeof(*r));
}
