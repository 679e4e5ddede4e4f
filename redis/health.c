/* health.c - A cluster node that stops answering, kept from taking the service with it.
 *
 * Marked down: once a command to a node timed out, or a connect to it failed, or calls
 * have waited on it RD_SILENT_MS with no answer from it (found by rd_key_silent, or by a
 * watch: rd_client_watch; a reply come in and not yet read counts as an answer: on a
 * busy machine the reader may not have run yet), calls for that node fail at once
 * (RD_E_CONNECT, "marked down": nothing was sent) until a probe is answered. The probe
 * goes PROBE_GAP_MS after the node was marked or the last probe failed: a thread of its
 * own where a watch ticks (the service's reaper), so that no caller waits on it; else one
 * caller at a time goes through as the probe. Any answer from the node (a probe's, or a
 * reply to a command sent before) marks it up again. Given up for silence, the gated
 * threads' connections to it are shut down: their calls fail now (a command sent may
 * have run), not at the timeout. A renewal lane's calls (rd_thread_past_down) go to a
 * node marked down all the same, bounded by their lease's deadline: a false mark (a
 * node that stalled a moment) must not cost the leases it holds. Only a cluster's nodes
 * are marked (the locator's marks_down): one Redis or a Sentinel's master is the whole
 * deployment, and its failures are the locator's to follow.
 *
 * The gate: a client may cap the gated threads (rd_thread_gate: the service's sale
 * workers) inside a round trip to one node at once (rd_client_gate). A gated caller that
 * finds the cap reached waits up to GATE_WAIT_MS for one of them to be answered; if none
 * is, the node is stalled for it and the call fails at once, as every later one does until
 * the node answers again. So a node that stops answering holds at most the cap of the
 * workers until its first timeout marks it down, and no more than the probe after; on a
 * node that answers, a slot frees within a reply. The count is a compare-and-swap; only a
 * caller that waits takes a lock. Other threads (the renewal lanes, the subscribers) pass
 * the gate uncounted.
 *
 * A thread enters a node when it is handed a connection to it (rd_thread_conn) and leaves
 * every node it entered when its call ends (rd_health_leave): a round trip, its redirects
 * and its NOSCRIPT resend are one entry. */
#include "redis/internal.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "common/clock.h"

enum {
    PROBE_GAP_MS = 250,          /* a node marked down is asked again this long after */
    GATE_WAIT_MS = RD_SILENT_MS  /* a gated caller waits this long for a node's slot */
};

static _Thread_local int thread_gated, thread_watches, thread_past_down;
static _Thread_local atomic_long *thread_trips;

void rd_thread_gate(int on)
{
    thread_gated = on;
}

void rd_thread_trips(atomic_long *trips)
{
    thread_trips = trips;
}

void rd_thread_past_down(int on)
{
    thread_past_down = on;
}

int rd_health_watching(const struct rd_client *rc)
{
    return thread_gated && rc->locator->marks_down &&
           (thread_watches || !atomic_load(&rc->watched));
}

void rd_client_gate(struct rd_client *rc, int most)
{
    atomic_store(&rc->gate, most > 0 ? most : 0);
}

/* The absolute time ms from now on CLOCK_MONOTONIC (the gate's condition uses it). */
static struct timespec abs_after(long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* One more gated caller inside a trip to h, when fewer than gate are: 1, else 0. */
static int gate_try(struct rd_health *h, int gate)
{
    int in = atomic_load(&h->inside), peak;

    while (in < gate)
        if (atomic_compare_exchange_weak(&h->inside, &in, in + 1)) {
            peak = atomic_load(&h->peak);
            while (peak < in + 1 && !atomic_compare_exchange_weak(&h->peak, &peak, in + 1))
                ;
            return 1;
        }
    return 0;
}

/* A gated caller's place among those inside a trip to h: RD_OK (counted), or RD_FAIL
 * with err when the cap stayed reached for GATE_WAIT_MS, or the node is stalled (a wait
 * gave up and it has not answered since). The count is taken without a lock; only a
 * caller that finds the cap reached takes the client's gate_mu, to wait (gate_out wakes
 * it when waiters says one may be waiting). */
static int gate_in(struct rd_client *rc, struct rd_health *h, int server, struct rd_error *err)
{
    struct timespec until;
    long long stalled, since;
    int gate = atomic_load(&rc->gate), in, timed_out;

    if (gate_try(h, gate))
        return RD_OK;
    until = abs_after(GATE_WAIT_MS);
    since = clock_now_ms();
    pthread_mutex_lock(&rc->gate_mu);
    atomic_fetch_add(&rc->gate_waiters, 1);   /* (before the next try: gate_out sees it) */
    stalled = atomic_load(&h->stalled_ms);
    in = gate_try(h, gate);
    timed_out = !in && stalled && atomic_load(&h->answered_ms) < stalled;   /* (no wait) */
    if (!in && !timed_out)
        atomic_fetch_add(&h->waited, 1);
    while (!in && !timed_out) {
        int w = pthread_cond_timedwait(&rc->gate_cv, &rc->gate_mu, &until);
        in = gate_try(h, gate);
        timed_out = !in && w == ETIMEDOUT;
    }
    atomic_fetch_sub(&rc->gate_waiters, 1);
    pthread_mutex_unlock(&rc->gate_mu);
    if (in)
        return RD_OK;
    /* Stalled: none of those inside was answered, nor anyone else, all the wait. */
    if (atomic_load(&h->answered_ms) < since)
        atomic_store(&h->stalled_ms, clock_now_ms());
    atomic_fetch_add(&h->refused_full, 1);
    return rd_fail(err, RD_E_CONNECT, "cluster node %d: %d workers wait on it and none was "
                   "answered in %d ms: not sent", server, atomic_load(&h->inside), GATE_WAIT_MS);
}

/* A gated caller leaves h: a waiter for a place, if any, is woken. */
static void gate_out(struct rd_client *rc, struct rd_health *h)
{
    atomic_fetch_sub(&h->inside, 1);
    if (atomic_load(&rc->gate_waiters) > 0) {
        pthread_mutex_lock(&rc->gate_mu);
        pthread_cond_broadcast(&rc->gate_cv);
        pthread_mutex_unlock(&rc->gate_mu);
    }
}

int rd_health_enter(struct rd_client *rc, struct rd_thread *t, int server, struct rd_error *err)
{
    unsigned long long bit = 1ULL << server;
    struct rd_health *h = &rc->health[server];
    long long down;

    if (!rc->locator->marks_down || (t->inside & bit))
        return RD_OK;
    if ((down = atomic_load(&h->down_ms)) != 0 && !thread_past_down) {
        int idle = 0;
        if (atomic_load(&rc->watched) || clock_now_ms() < atomic_load(&h->probe_ms) ||
            !atomic_compare_exchange_strong(&h->probing, &idle, 1)) {
            atomic_fetch_add(&h->refused_down, 1);
            return rd_fail(err, RD_E_CONNECT, "cluster node %d marked down %lld ms ago (no "
                           "answer in time); a probe asks again: not sent", server,
                           clock_now_ms() - down);
        }
        t->probe |= bit;
    }
    if (atomic_load(&h->calls) == 0)   /* (before the count: silent() reads it first) */
        atomic_store(&h->busy_ms, clock_now_ms());
    atomic_fetch_add(&h->calls, 1);
    t->called |= bit;
    if (thread_gated && atomic_load(&rc->gate) > 0) {
        if (gate_in(rc, h, server, err) != RD_OK) {
            if (t->probe & bit) {
                t->probe &= ~bit;
                atomic_store(&h->probing, 0);
            }
            t->called &= ~bit;
            atomic_fetch_sub(&h->calls, 1);
            return RD_FAIL;
        }
        t->gated |= bit;
    }
    t->inside |= bit;
    return RD_OK;
}

struct rd_conn *rd_health_conn(struct rd_client *rc, int server, struct rd_error *err)
{
    struct rd_thread *t = rd_thread_of(rc, 1);
    struct rd_conn *cn;

    if (t == NULL || server < 0 || server >= RD_SERVERS_KNOWN) {
        rd_fail(err, RD_E_NOMEM, "out of memory, or server %d out of range", server);
        return NULL;
    }
    if (rd_health_enter(rc, t, server, err) != RD_OK)
        return NULL;   /* marked down, or its gate full: nothing sent, nothing changed */
    if ((cn = rd_thread_conn(rc, server, err)) == NULL) {
        if (err->fault == RD_E_CONNECT && !rd_thread_has_deadline())
            rd_health_failed(rc, server);   /* (a deadline's short connect says nothing) */
        return NULL;
    }
    atomic_store(&cn->gated, thread_gated);
    return cn;
}

/* The calling thread t leaves server s (its bits cleared, its counts given back). */
static void leave_one(struct rd_client *rc, struct rd_thread *t, int s)
{
    unsigned long long bit = 1ULL << s;

    if (t->gated & bit)
        gate_out(rc, &rc->health[s]);
    if (t->called & bit)
        atomic_fetch_sub(&rc->health[s].calls, 1);
    /* (A probe that failed set the next one's time; one that sent nothing, a script the
     * connection knew, leaves it: the next call probes.) */
    if (t->probe & bit)
        atomic_store(&rc->health[s].probing, 0);
    t->inside &= ~bit;
    t->gated &= ~bit;
    t->called &= ~bit;
    t->probe &= ~bit;
}

void rd_health_answered(struct rd_client *rc, int server, int leave)
{
    struct rd_thread *t;
    struct rd_health *h;

    if (!rc->locator->marks_down || server < 0 || server >= RD_SERVERS_KNOWN)
        return;
    h = &rc->health[server];
    atomic_store(&h->answered_ms, clock_now_ms());
    if (atomic_load(&h->down_ms))
        atomic_store(&h->down_ms, 0);
    if (leave && (t = pthread_getspecific(rc->key)) != NULL && (t->inside & (1ULL << server)))
        leave_one(rc, t, server);
}

void rd_health_blocking(struct rd_client *rc, int server)
{
    struct rd_thread *t = pthread_getspecific(rc->key);
    unsigned long long bit = 1ULL << server;

    if (t && server >= 0 && server < RD_SERVERS_KNOWN && (t->called & bit)) {
        t->called &= ~bit;
        atomic_fetch_sub(&rc->health[server].calls, 1);
    }
}

void rd_health_failed(struct rd_client *rc, int server)
{
    struct rd_health *h;
    long long now = clock_now_ms(), up = 0;

    if (!rc->locator->marks_down || server < 0 || server >= RD_SERVERS_KNOWN)
        return;
    h = &rc->health[server];
    atomic_store(&h->probe_ms, now + PROBE_GAP_MS);
    if (atomic_compare_exchange_strong(&h->down_ms, &up, now))
        atomic_fetch_add(&h->marked, 1);
}

/* Server s stopped answering while calls wait on it: unless a gated connection to it has
 * a reply come in that its thread has not read yet (s answered, and this process has not
 * run to read it: a busy machine), it is marked down, and the gated threads' connections
 * to it are shut down, so that their calls fail now (as a lost connection: a command sent
 * may have run) instead of at the command timeout. 1 when it was given up. All under one
 * hold of the connections' lock (no connection closed under the poll). */
static int give_up(struct rd_client *rc, int s)
{
    struct pollfd fds[64];
    nfds_t n = 0;
    int unread;

    pthread_mutex_lock(&rc->conns_mu);
    for (struct rd_conn *cn = rc->conns; cn && n < 64; cn = cn->next)
        if (cn->server == s && atomic_load(&cn->gated) && cn->c)
            fds[n++] = (struct pollfd){ .fd = cn->c->fd, .events = POLLIN };
    unread = n > 0 && poll(fds, n, 0) > 0;
    if (!unread) {
        rd_health_failed(rc, s);
        for (struct rd_conn *cn = rc->conns; cn; cn = cn->next)
            if (cn->server == s && atomic_load(&cn->gated) && cn->c)
                shutdown(cn->c->fd, SHUT_RDWR);
    }
    pthread_mutex_unlock(&rc->conns_mu);
    return !unread;
}

/* 1 when server s does not answer: marked down (and no probe may go now), a gated wait
 * gave up on it and it has not answered since, or a call has been inside it RD_SILENT_MS
 * with no answer from it meanwhile (then it is given up: give_up). */
static int silent(struct rd_client *rc, int s)
{
    struct rd_health *h = &rc->health[s];
    int calls = atomic_load(&h->calls);   /* (first: busy_ms is set before it counts) */
    long long answered = atomic_load(&h->answered_ms), since = atomic_load(&h->busy_ms);
    long long stalled = atomic_load(&h->stalled_ms);

    if (atomic_load(&h->down_ms))   /* (unless a probe may go: a call goes as one) */
        return atomic_load(&rc->watched) || clock_now_ms() < atomic_load(&h->probe_ms) ||
               atomic_load(&h->probing);
    if (calls > 0 && clock_now_ms() - (answered > since ? answered : since) > RD_SILENT_MS &&
        give_up(rc, s))
        return 1;
    return stalled && answered < stalled;
}

int rd_health_is_down(struct rd_client *rc, int server)
{
    return rc->locator->marks_down && server >= 0 && server < RD_SERVERS_KNOWN &&
           silent(rc, server);
}

int rd_key_silent(struct rd_client *rc, const char *key)
{
    int server = rc->locator->marks_down ? rd_key_node(rc, key) : -1;

    return server >= 0 && silent(rc, server);
}

/* t leaves every server it entered; a gated round trip that went out counts in the
 * thread's trips (trip). */
static void leave_all(struct rd_client *rc, struct rd_thread *t, int trip)
{
    if (t == NULL)
        return;
    if (trip && t->gated && thread_trips)
        atomic_fetch_add(thread_trips, 1);
    for (int s = 0; t->inside && s < RD_SERVERS_KNOWN; s++)
        if (t->inside & (1ULL << s))
            leave_one(rc, t, s);
}

void rd_health_leave(struct rd_client *rc)
{
    leave_all(rc, pthread_getspecific(rc->key), 0);
}

void rd_health_trip_leave(struct rd_client *rc)
{
    leave_all(rc, pthread_getspecific(rc->key), 1);
}

int rd_client_health(struct rd_client *rc, int server, struct rd_node_health *out)
{
    struct rd_health *h;

    if (!rc->locator->marks_down || !rc->locator->describe || server < 0 ||
        server >= RD_SERVERS_KNOWN || rc->locator->describe(rc, server, out->node,
                                                            sizeof(out->node)) != RD_OK)
        return RD_FAIL;
    h = &rc->health[server];
    out->inside = atomic_load(&h->inside);
    out->peak = atomic_load(&h->peak);
    out->down = atomic_load(&h->down_ms) != 0;
    out->marked = atomic_load(&h->marked);
    out->refused_down = atomic_load(&h->refused_down);
    out->refused_full = atomic_load(&h->refused_full);
    out->waited = atomic_load(&h->waited);
    return RD_OK;
}

/* A probe of its own (a thread): connects to the server and PINGs it, each within the
 * connect timeout; an answer marks it up, else the next probe goes a gap later. */
struct probe {
    struct rd_client *rc;
    int server;
};

static void *probe_main(void *arg)
{
    struct probe *p = arg;
    struct rd_client *rc = p->rc;
    struct rd_health *h = &rc->health[p->server];
    struct rd_error err;
    struct rd_conn *cn = rc->locator->open(rc, p->server, &err);
    struct rd_reply *r = cn ? rd_conn_call(cn, RD_T(RD_STATUS), rc->connect_timeout_ms, &err,
                                           "PING") : NULL;

    if (r)
        rd_health_answered(rc, p->server, 0);
    else
        atomic_store(&h->probe_ms, clock_now_ms() + PROBE_GAP_MS);
    rd_reply_free(r);
    rd_conn_close(cn);
    atomic_store(&h->probing, 0);
    atomic_fetch_sub(&rc->probes, 1);
    free(p);
    return NULL;
}

/* Starts a probe of server s, when one is due and none runs. */
static void probe_start(struct rd_client *rc, int s)
{
    struct rd_health *h = &rc->health[s];
    struct probe *p;
    pthread_attr_t attr;
    pthread_t id;
    int idle = 0;

    if (clock_now_ms() < atomic_load(&h->probe_ms) ||
        !atomic_compare_exchange_strong(&h->probing, &idle, 1))
        return;
    atomic_fetch_add(&rc->probes, 1);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if ((p = malloc(sizeof(*p))) == NULL ||
        (*p = (struct probe){ rc, s }, pthread_create(&id, &attr, probe_main, p)) != 0) {
        free(p);
        atomic_store(&h->probing, 0);
        atomic_fetch_sub(&rc->probes, 1);
    }
    pthread_attr_destroy(&attr);
}

void rd_client_watch(struct rd_client *rc)
{
    if (!rc->locator->marks_down)
        return;
    atomic_store(&rc->watched, 1);   /* from now on, probes are the watch's own */
    thread_watches = 1;
    for (int s = 0; s < RD_SERVERS_KNOWN; s++)
        if (atomic_load(&rc->health[s].down_ms))
            probe_start(rc, s);
        else if (atomic_load(&rc->health[s].calls) > 0)
            silent(rc, s);
}

void rd_health_end(struct rd_client *rc)
{
    while (atomic_load(&rc->probes) > 0)   /* each within two connect timeouts */
        clock_sleep_ms(5);
}
