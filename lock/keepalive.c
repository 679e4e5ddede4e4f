/* keepalive.c - The watchdog: held leases renewed every ttl/3, for any store that can
 * renew. A whole-process pause (SIGSTOP, GC) stops it too: v8's flaw.
 *
 * One lane per server: each lease is renewed by the lane thread of the server its key
 * lives on (rd_key_server: a cluster's node; one lane for one Redis), on that thread's
 * own connection, so a server that is slow or cut off delays only the leases it holds,
 * never the others' (one thread renewing one lease after another let a renewal stuck on
 * a cut master run the leases on the healthy masters out). Each renewal waits no longer
 * than its lease has left, less a margin (rd_thread_deadline); one that misses it closes
 * its connection (the layer drops it: its late reply would answer the next command) and
 * counts the lease lost, which its holder learns as from any lost lease. A store that
 * renews on several masters at once (rd_fanout) does so under the same deadline, reading
 * the answers as they come. Lanes start when a server's first lease is held. */
#include "lock/internal.h"
#include "redis/redis.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One held lock as the watchdog sees it: one entry per key and owner, however deep the
 * nesting. Fields other than lost and valid_until_ms are guarded by watchdog.mu. */
struct lease {
    struct lock_grant g;        /* key and owner, for the store's renew */
    int holds;                  /* grants in this process not yet released */
    unsigned long grants;       /* grants made on it so far: a renewal's answer is for the
                                   grant it was sent under, and only while that one holds */
    int pins;                   /* renewals in progress (the watchdog is using it) */
    atomic_int lost;            /* renewal refused (not ours any more) or time ran out */
    atomic_llong valid_until_ms;
    int lane;                   /* the lane that renews it (its key's server) */
    struct lease *next;
};

/* A lane's thread renews the leases of one server. */
enum { LANES_MAX = 64 };
struct lane {
    struct watchdog *w;
    int index;
    pthread_t thread;
    int started;
};

/* Made by init (lane 0 started), stopped by destroy. Each lane thread has its own
 * connections (the Redis layer keeps them per thread). */
struct watchdog {
    struct lock_client *lc;
    pthread_mutex_t mu;         /* guards leases, lanes' started, stopping */
    pthread_cond_t cv;          /* on CLOCK_MONOTONIC: a wall clock set back must not
                                   stretch a period past the lease */
    struct lease *leases;
    int stopping;
    struct lane lane[LANES_MAX];
};

static struct lease *lease_find(struct watchdog *w, const struct lock_grant *g)
{
    for (struct lease *l = w->leases; l; l = l->next)
        if (strcmp(l->g.key, g->key) == 0 && strcmp(l->g.owner, g->owner) == 0)
            return l;
    return NULL;
}

static void lease_unlink_free(struct watchdog *w, struct lease *lease)
{
    for (struct lease **p = &w->leases; *p; p = &(*p)->next)
        if (*p == lease) {
            *p = lease->next;
            break;
        }
    free(lease);
}

/* The lease is found lost (once: counted then). */
static void lease_lose(struct lock_client *lc, struct lease *lease)
{
    if (!atomic_exchange(&lease->lost, 1)) {
        atomic_fetch_add(&lc->lost_leases, 1);
        if (lc->cfg.observe)
            lc->cfg.observe(&lease->g, "lost", 0);
    }
}

/* How long before a lease's end its renewal gives up waiting: the answer must come back
 * while the lease still holds. */
static long margin_ms(const struct lock_client *lc)
{
    return lc->cfg.ttl_ms / 10;
}

/* Renews one lease with the store's renew, waiting no longer than the lease has left
 * less the margin; called with w->mu let go. Its answer counts only when the grant it
 * was sent under (gen) still holds: a renewal that crossed a release is answered "not
 * ours" by a Redis that is right, and a new grant of the same owner (granted anew, with
 * a full lease) must not take that answer for its own. */
static void renew_one(struct watchdog *w, struct lease *lease, unsigned long gen)
{
    struct lock_client *lc = w->lc;
    struct error err = { 0 };
    long long sent = clock_now_ms(), until = atomic_load(&lease->valid_until_ms);
    int st;

    rd_thread_deadline(until - margin_ms(lc));
    st = lc->ops->renew(lc, &lease->g, &err);
    rd_thread_deadline(0);
    pthread_mutex_lock(&w->mu);
    if (lease->holds == 0 || lease->grants != gen) {
        /* released or granted anew meanwhile: the answer is about a grant that is over */
    } else if (st == LOCK_OK) {
        atomic_store(&lease->valid_until_ms, sent + lc->cfg.ttl_ms);
        atomic_fetch_add(&lc->renewals, 1);
        if (lc->cfg.observe)
            lc->cfg.observe(&lease->g, "renewed", sent + lc->cfg.ttl_ms - clock_now_ms());
    } else if (st == LOCK_NOT_OWNER) {
        /* The lock no longer holds us: the lease ran out and someone else may hold it. */
        lease_lose(lc, lease);
    } else if (clock_now_ms() >= atomic_load(&lease->valid_until_ms) - margin_ms(lc)) {
        /* No answer in time (the layer dropped the connection): the lease could not be
         * confirmed before its end. */
        lease_lose(lc, lease);
    }
    pthread_mutex_unlock(&w->mu);
}

/* A lane: every period, renews the leases of its server, one after another. */
static void *lane_main(void *arg)
{
    struct lane *ln = arg;
    struct watchdog *w = ln->w;
    long period = w->lc->cfg.ttl_ms / 3 > 0 ? w->lc->cfg.ttl_ms / 3 : 1;
    struct timespec until;

    rd_thread_past_down(1);   /* a node marked down is renewed on all the same */
    pthread_mutex_lock(&w->mu);
    while (!w->stopping) {
        until = clock_monotonic_at(clock_now_ms() + period);
        /* Sleeps a full period, or until stopped; with nothing held it issues no command. */
        while (!w->stopping && pthread_cond_timedwait(&w->cv, &w->mu, &until) != ETIMEDOUT)
            ;
        if (w->stopping)
            break;
        for (struct lease *lease = w->leases, *next; lease; lease = next) {
            if (lease->lane != ln->index || atomic_load(&lease->lost)) {
                next = lease->next;
                continue;
            }
            /* Pinned, the lease outlives a release while the mutex is let go for I/O. */
            unsigned long gen = lease->grants;
            lease->pins++;
            pthread_mutex_unlock(&w->mu);
            renew_one(w, lease, gen);
            pthread_mutex_lock(&w->mu);
            lease->pins--;
            next = lease->next;
            if (lease->holds == 0 && lease->pins == 0)
                lease_unlink_free(w, lease);
        }
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* Starts lane i unless it runs; with w->mu held. 0, or -1 when it cannot start. */
static int lane_start(struct watchdog *w, int i)
{
    struct lane *ln = &w->lane[i];

    if (ln->started)
        return 0;
    *ln = (struct lane){ .w = w, .index = i };
    if (pthread_create(&ln->thread, NULL, lane_main, ln) != 0)
        return -1;
    ln->started = 1;
    return 0;
}

/* The lane of g: its key's server (a cluster's node), or lane 0. */
static int lane_of(struct lock_client *lc, const struct lock_grant *g)
{
    struct rd_error err;
    int server = lc->redis ? rd_key_server(lc->redis, g->key, &err) : 0;

    return server > 0 ? server % LANES_MAX : 0;
}

int lock_keepalive_init(struct lock_client *lc, struct error *err)
{
    struct watchdog *w = calloc(1, sizeof(*w));

    if (w == NULL)
        return error_set(err, FAULT_NOMEM, "out of memory");
    w->lc = lc;
    pthread_mutex_init(&w->mu, NULL);
    clock_cond_init_monotonic(&w->cv);
    if (lane_start(w, 0) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return error_set(err, FAULT_NOMEM, "cannot start the watchdog thread");
    }
    lc->keepalive_state = w;
    return LOCK_OK;
}

void lock_keepalive_destroy(struct lock_client *lc)
{
    struct watchdog *w = lc->keepalive_state;

    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    for (int i = 0; i < LANES_MAX; i++)
        if (w->lane[i].started)
            pthread_join(w->lane[i].thread, NULL);
    while (w->leases)
        lease_unlink_free(w, w->leases);
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

/* Out of memory leaves the grant unrenewed: then it is plain v7. */
void lock_keepalive_hold(struct lock_client *lc, const struct lock_grant *g)
{
    struct watchdog *w = lc->keepalive_state;
    int lane = lane_of(lc, g);   /* (before the mutex: it may ask the cluster) */
    struct lease *lease;

    pthread_mutex_lock(&w->mu);
    if (lane_start(w, lane) != 0)
        lane = 0;   /* no thread for it: lane 0 renews it beside its own */
    lease = lease_find(w, g);
    if (lease == NULL && (lease = calloc(1, sizeof(*lease))) != NULL) {
        strcpy(lease->g.item, g->item);
        strcpy(lease->g.key, g->key);
        strcpy(lease->g.owner, g->owner);
        lease->lane = lane;
        lease->next = w->leases;
        w->leases = lease;
    }
    if (lease) {
        lease->holds++;
        lease->grants++;
        atomic_store(&lease->lost, 0);
        atomic_store(&lease->valid_until_ms, g->valid_until_ms);
    }
    pthread_mutex_unlock(&w->mu);
}

int lock_keepalive_drop(struct lock_client *lc, struct lock_grant *g)
{
    struct watchdog *w = lc->keepalive_state;
    struct lease *lease;
    int lost = 0;

    pthread_mutex_lock(&w->mu);
    lease = lease_find(w, g);
    if (lease) {
        g->valid_until_ms = atomic_load(&lease->valid_until_ms);
        lost = atomic_load(&lease->lost);
        if (--lease->holds == 0 && lease->pins == 0)
            lease_unlink_free(w, lease);
    }
    pthread_mutex_unlock(&w->mu);
    return lost;
}

int lock_keepalive_is_lost(struct lock_client *lc, const struct lock_grant *g)
{
    struct watchdog *w = lc->keepalive_state;
    struct lease *lease;
    long long until = g->valid_until_ms;
    int lost = 0;

    pthread_mutex_lock(&w->mu);
    lease = lease_find(w, g);
    if (lease) {
        lost = atomic_load(&lease->lost);
        until = atomic_load(&lease->valid_until_ms);
    }
    pthread_mutex_unlock(&w->mu);
    return lost || (until != 0 && clock_now_ms() >= until);
}
