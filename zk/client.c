/* client.c - One ZooKeeper session for the instance: opened at start, made anew when the
 * ensemble expires it, the old handle closed after its last caller left; the session's
 * state as the client's watcher saw it (on the client's completion thread: it only
 * notes, under a mutex, and signals). */
#include "zk/internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

/* The session watcher: called by the C client on its completion thread. Notes the state
 * of h's session; never blocks beyond the mutex. */
static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    struct zk_handle *h = ctx;
    struct zk_client *zc = h->zc;

    (void)zh, (void)path;
    if (type != ZOO_SESSION_EVENT)
        return;
    pthread_mutex_lock(&zc->mu);
    if (state == ZOO_CONNECTED_STATE) {
        h->connected = 1;
        h->down_since_ms = 0;
    } else {
        if (h->connected)
            zc->disconnects++;
        h->connected = 0;
        if (h->down_since_ms == 0)
            h->down_since_ms = clock_now_ms();
        if (state == ZOO_EXPIRED_SESSION_STATE && !h->expired) {
            h->expired = 1;
            zc->expirations++;
        }
    }
    pthread_cond_broadcast(&zc->cv);
    for (struct zk_waiter *w = h->waiters; w; w = w->next)
        pthread_cond_signal(&w->cv);   /* each looks at its session again */
    pthread_mutex_unlock(&zc->mu);
}

/* A new handle for the ensemble (not yet connected); NULL when the client cannot make
 * one. With zc->mu held. */
static struct zk_handle *handle_open(struct zk_client *zc)
{
    struct zk_handle *h = calloc(1, sizeof(*h));

    if (h == NULL)
        return NULL;
    h->zc = zc;
    h->id = ++zc->opened;
    h->down_since_ms = clock_now_ms();
    if ((h->zh = zookeeper_init(zc->servers, watcher, (int)zc->asked_ms, NULL, h, 0)) == NULL) {
        free(h);
        zc->opened--;
        return NULL;
    }
    return h;
}

/* Closes h (its session ends on the server at once). Without zc->mu: zookeeper_close
 * waits for the client's threads. */
static void handle_close(struct zk_handle *h)
{
    zookeeper_close(h->zh);
    free(h);
}

/* Waits, with zc->mu held, until h answers or until_ms; 1 when connected. */
static int wait_connected(struct zk_client *zc, struct zk_handle *h, long long until_ms)
{
    while (!h->connected && !h->expired && clock_now_ms() < until_ms)
        clock_cond_wait_until(&zc->cv, &zc->mu, until_ms);
    return h->connected;
}

enum { GIVE_UP_POLL_MS = 50 };   /* how often the first wait asks cfg->give_up */

/* The first session: waits for it, with zc->mu held, up to the session timeout asked for,
 * asking cfg->give_up every GIVE_UP_POLL_MS. 1 when connected; 0 when not (*gave_up set
 * when give_up ended the wait). */
static int first_session(struct zk_client *zc, const struct zk_config *cfg, int *gave_up)
{
    long long until = clock_now_ms() + zc->asked_ms;

    *gave_up = 0;
    while (zc->cur && !zc->cur->expired) {
        long long step = clock_now_ms() + GIVE_UP_POLL_MS;
        if (wait_connected(zc, zc->cur, step < until ? step : until))
            return 1;
        if (clock_now_ms() >= until)
            return 0;
        if (cfg->give_up && cfg->give_up(cfg->give_up_arg)) {
            *gave_up = 1;
            return 0;
        }
    }
    return 0;
}

/* Tells on_state, outside the mutex, when the ensemble stopped or started answering. */
static void tell(struct zk_client *zc, int up, const char *why)
{
    if (zc->on_state && atomic_exchange(&zc->down, !up) == up)
        zc->on_state(zc->state_arg, up, why);
}

struct zk_client *zk_client_create(const struct zk_config *cfg, struct zk_error *err)
{
    struct zk_client *zc = calloc(1, sizeof(*zc));
    long long t0 = clock_now_ms();
    int up, gave_up = 0;

    if (zc == NULL) {
        zk_fail(err, ZK_E_NOMEM, 0, "out of memory");
        return NULL;
    }
    if (cfg->servers == NULL || *cfg->servers == '\0' || (zc->servers = strdup(cfg->servers)) == NULL) {
        zk_fail(err, ZK_E_USAGE, 0, "no ZooKeeper servers given");
        free(zc);
        return NULL;
    }
    zc->asked_ms = cfg->session_ms > 0 ? cfg->session_ms : 10000;
    zc->connect_wait_ms = cfg->connect_wait_ms;
    zc->on_state = cfg->on_state;
    zc->state_arg = cfg->state_arg;
    pthread_mutex_init(&zc->mu, NULL);
    clock_cond_init_monotonic(&zc->cv);
    zoo_set_debug_level((ZooLogLevel)0);   /* the layer reports; the client prints nothing */
    pthread_mutex_lock(&zc->mu);
    zc->cur = handle_open(zc);
    up = first_session(zc, cfg, &gave_up);
    if (up)
        zc->session_ms = zoo_recv_timeout(zc->cur->zh);
    pthread_mutex_unlock(&zc->mu);
    if (up)
        return zc;
    if (gave_up)
        zk_fail(err, ZK_E_CONNECT, 0, "ZooKeeper %.80s: no session after %lld ms, and the wait "
                "given up", zc->servers, clock_now_ms() - t0);
    else
        zk_fail(err, ZK_E_CONNECT, 0, "ZooKeeper %.80s: no session within %ld ms", zc->servers,
                zc->asked_ms);
    zk_client_destroy(zc);
    return NULL;
}

void zk_client_destroy(struct zk_client *zc)
{
    if (zc == NULL)
        return;
    if (zc->cur)
        handle_close(zc->cur);
    pthread_cond_destroy(&zc->cv);
    pthread_mutex_destroy(&zc->mu);
    free(zc->servers);
    free(zc);
}

long zk_session_ms(const struct zk_client *zc)
{
    return zc->session_ms;
}

long long zk_sessions(const struct zk_client *zc)
{
    return zc->opened;
}

long long zk_expirations(const struct zk_client *zc)
{
    return zc->expirations;
}

long long zk_disconnects(const struct zk_client *zc)
{
    return zc->disconnects;
}

/* The current handle, made anew when the last one's session expired (the old one is
 * closed by its last caller, or here when it has none). With zc->mu held; *old gets a
 * handle to close after the mutex is let go. */
static struct zk_handle *current(struct zk_client *zc, struct zk_handle **old)
{
    struct zk_handle *h = zc->cur, *fresh;

    *old = NULL;
    if (h && !h->expired)
        return h;
    if ((fresh = handle_open(zc)) == NULL)
        return h;
    if (h && h->refs == 0)
        *old = h;
    else if (h)
        h->retired = 1;   /* its last caller closes it */
    zc->cur = fresh;
    return fresh;
}

int zk_enter(struct zk_client *zc, struct zk_session *s, struct zk_error *err)
{
    long wait = zc->connect_wait_ms > 0 ? zc->connect_wait_ms : zc->session_ms / 3;
    long long until = clock_now_ms() + wait;
    struct zk_handle *h, *old;
    int up, expired;

    /* A handle the ensemble expires while we wait for it to answer is replaced at once:
     * the next turn opens a new session. */
    do {
        pthread_mutex_lock(&zc->mu);
        h = current(zc, &old);
        up = h && wait_connected(zc, h, until);
        expired = h && !up && h->expired;
        if (up) {
            h->refs++;
            zc->session_ms = zoo_recv_timeout(h->zh);
        }
        pthread_mutex_unlock(&zc->mu);
        if (old)
            handle_close(old);
        if (!up && (expired || h == NULL))
            clock_sleep_ms(20);   /* (a new handle that could not be made: not again at once) */
    } while ((expired || h == NULL) && clock_now_ms() < until);
    if (!up) {
        tell(zc, 0, "no session");
        return zk_fail(err, ZK_E_CONNECT, 0, "ZooKeeper %.80s: no session answers (no quorum "
                       "reached within %ld ms)", zc->servers, wait);
    }
    tell(zc, 1, NULL);
    *s = (struct zk_session){ .zc = zc, .h_ = h, .id = h->id };
    return ZK_OK;
}

void zk_leave(struct zk_session *s)
{
    struct zk_client *zc = s->zc;
    struct zk_handle *h = s->h_;
    int close_it;

    if (h == NULL)
        return;
    pthread_mutex_lock(&zc->mu);
    close_it = --h->refs == 0 && h->retired;
    pthread_mutex_unlock(&zc->mu);
    if (close_it)
        handle_close(h);
    s->h_ = NULL;
}

int zk_session_lost_locked(struct zk_client *zc, long long id)
{
    struct zk_handle *h = zc->cur;

    return h == NULL || h->id != id || h->expired ||
           (h->down_since_ms != 0 && clock_now_ms() - h->down_since_ms >= zc->session_ms);
}

int zk_session_ended(struct zk_client *zc, long long id)
{
    pthread_mutex_lock(&zc->mu);
    int ended = zc->cur == NULL || zc->cur->id != id || zc->cur->expired;
    pthread_mutex_unlock(&zc->mu);
    return ended;
}

int zk_session_lost(struct zk_client *zc, long long id)
{
    pthread_mutex_lock(&zc->mu);
    int lost = zk_session_lost_locked(zc, id);
    pthread_mutex_unlock(&zc->mu);
    return lost;
}

int zk_fail(struct zk_error *err, enum zk_fault fault, int rc, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return ZK_FAIL;
    err->fault = fault;
    err->rc = rc;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return ZK_FAIL;
}

void zk_error_map(const struct zk_error *from, struct error *to)
{
    static const enum fault up[] = {
        [ZK_E_NONE] = FAULT_NONE,          [ZK_E_CONNECT] = FAULT_CONNECT,
        [ZK_E_LOST] = FAULT_CONNECTION,    [ZK_E_EXPIRED] = FAULT_CONNECTION,
        [ZK_E_NONODE] = FAULT_REPLY,       [ZK_E_EXISTS] = FAULT_REPLY,
        [ZK_E_VERSION] = FAULT_REPLY,      [ZK_E_NOTEMPTY] = FAULT_REPLY,
        [ZK_E_USAGE] = FAULT_USAGE,        [ZK_E_NOMEM] = FAULT_NOMEM,
        [ZK_E_OTHER] = FAULT_REPLY,
    };

    if (to == NULL)
        return;
    to->fault = (unsigned)from->fault < sizeof(up) / sizeof(up[0]) ? up[from->fault] : FAULT_REPLY;
    snprintf(to->code, sizeof(to->code), "%s", zerror(from->rc));
    snprintf(to->msg, sizeof(to->msg), "%s", from->msg);
}

/* The watcher of the handle that takes a session over: nothing to note. */
static void quiet_watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
    (void)zh, (void)type, (void)state, (void)path, (void)ctx;
}

int zk_expire(struct zk_client *zc, struct zk_error *err)
{
    clientid_t id;
    zhandle_t *other;
    long long until = clock_now_ms() + zc->session_ms;

    pthread_mutex_lock(&zc->mu);
    if (zc->cur == NULL || !zc->cur->connected) {
        pthread_mutex_unlock(&zc->mu);
        return zk_fail(err, ZK_E_CONNECT, 0, "no session to end");
    }
    id = *zoo_client_id(zc->cur->zh);
    pthread_mutex_unlock(&zc->mu);
    if ((other = zookeeper_init(zc->servers, quiet_watcher, (int)zc->session_ms, &id, NULL, 0)) == NULL)
        return zk_fail(err, ZK_E_NOMEM, 0, "cannot make a second handle");
    while (zoo_state(other) != ZOO_CONNECTED_STATE && clock_now_ms() < until)
        clock_sleep_ms(10);
    zookeeper_close(other);   /* the session ends with this close */
    pthread_mutex_lock(&zc->mu);
    while (zc->cur && !zc->cur->expired && clock_now_ms() < until)
        clock_cond_wait_until(&zc->cv, &zc->mu, until);
    int expired = zc->cur && zc->cur->expired;
    pthread_mutex_unlock(&zc->mu);
    return expired ? ZK_OK : zk_fail(err, ZK_E_OTHER, 0, "the session did not end within %ld ms", zc->session_ms);
}
