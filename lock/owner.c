/* owner.c - Owner ids, and the locks a thread gave up on without an answer.
 *
 * An owner id is "<instance id>:<n>.<g>", n the calling thread's number (the live page's
 * lane) and g its grant: a new g whenever the thread holds nothing and takes a lock, the
 * same g for the grants nested in it (reentrant). A release whose
 * reply never came (Redis died, a failover moved the master) may not have run; a try
 * that was sent and never answered may have granted. Either way Redis may hold a lock in
 * our name for the rest of its lease, and worse: the same thread asking again under the
 * same id would re-enter it (v7 on are reentrant), reset its lease and give back only its
 * own hold, so that the abandoned one lived on for as long as that thread kept selling,
 * and every other thread and instance waited. Hence two rules:
 *   - the thread's id is retired once it holds nothing more: its next grant is made
 *     under a new id, never inside the abandoned one;
 *   - the abandoned lock is kept here, and given back (below: the store's release,
 *     a compare-and-delete on that owner, never another's lock) before the next try of
 *     any thread of this client, as soon as a master (the old one restarted, or a
 *     promoted replica) answers; and kept until its lease is surely over, to be given
 *     back again whenever the client connects anew (a second failover, a restart, can
 *     bring back a copy of the data that still has it).
 * And a release that was answered may still be lost: the master acknowledged it and died
 * before its replica had it, and the promoted replica holds the lock in our name for the
 * rest of its lease (every other thread and instance waiting, as a stall). So the client
 * keeps its last answered releases (16 rings of 16) for as long as their leases could
 * last, whichever thread made them and whether or not it still lives (a connection's
 * thread ends with its connection). When something that may lose an answered write has
 * happened since one was answered (rd_client_changes: a connection dropped, a server
 * found unreachable, a new master named; never in a steady run), the next grant of any
 * thread hands it over as abandoned: given back once a master answers, as above (on a
 * server that never lost it, the give-back finds nothing). A give-back never deletes a
 * live grant: a thread's id is retired whenever it holds nothing (its next grant takes a
 * new g: ids are never reused), and a release reaches the client's rings only then.
 * Not after a timeout: a command that timed out may still run later on a live server,
 * and a give-back on a new connection could overtake it (a sale's write landing after
 * another holder's); that lock runs out with its lease, as before. Stores whose release
 * does not compare the owner atomically (v3, v4: a plain DEL; v5: GET, then DEL) keep
 * nothing. A client is destroyed only when no thread holds a grant of it.
 */
#include "lock/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PENDING_MAX = 8, ABANDONED_MAX = 256, RECENT_SHARDS = 16, RECENT_MAX = 16,
       OWN_RECENT_MAX = 8 };

/* A lock Redis may still hold in our name: enough of its grant for the store's release. */
struct lock_abandoned {
    struct lock_client *lc;
    struct lock_grant g;          /* item, key and owner */
    long long until_ms;           /* monotonic: its lease is over by then, whatever happened */
    long long changes;            /* rd_client_changes() when its release was answered */
    long long given_at;           /* rd_client_opens() when it was last given back; -1: not
                                     yet. Until until_ms it is given back again whenever the
                                     client has reconnected since: a failover, or a restart,
                                     may bring back a copy that still has it */
    struct lock_abandoned *next;
};

/* The client's abandoned locks, and its last answered releases. */
struct owners {
    pthread_mutex_t mu;           /* guards list */
    struct lock_abandoned *list;
    atomic_int count;             /* read without the mutex: is there anything to do */
    /* The last answered releases, in shards (a thread writes to the shard of its
     * number: the threads do not queue on one mutex at every release), a ring each. */
    struct recent_shard {
        pthread_mutex_t mu;       /* guards the rest */
        struct lock_abandoned ring[RECENT_MAX];
        int n, next;
    } recent[RECENT_SHARDS];
    atomic_llong changes_seen;    /* rd_client_changes() when the ring was last looked at */
};

static void owner_keep(struct lock_abandoned *a);

/* The calling thread: its number (0: take one at the next grant), its grant g (live
 * while it holds one; a new g at its next grant once retired), its grants not
 * yet released, and what it gave up on while it still held an outer grant under the same
 * id (kept until it holds nothing: the id may not be given back while still in use). */
static _Thread_local struct {
    long number;
    long grant;
    int grant_live;
    long long grant_changes;      /* rd_client_changes() when the grant's id was taken */
    const struct lock_client *lc; /* the client the counts below are of */
    int holds;
    int pending;
    struct lock_abandoned *pend[PENDING_MAX];
    /* Its releases that Redis answered while it still held another grant under its id:
     * they join the client's ring when it holds nothing (and its id is retired). */
    struct lock_abandoned recent[OWN_RECENT_MAX];
    int recent_n;
} self;

/* The calling thread's counts, for lc: a thread that turns to another client (tests do)
 * starts afresh; what it kept for the one before is dropped (that client may be gone),
 * and runs out with its lease. */
static void use_client(const struct lock_client *lc)
{
    if (self.lc == lc)
        return;
    for (int i = 0; i < self.pending; i++)
        free(self.pend[i]);
    self.lc = lc;
    self.number = 0;   /* another client's ring may keep releases under the old ids */
    self.grant_live = 0;
    self.holds = self.pending = 0;
    self.recent_n = 0;
}

int lock_owner_init(struct lock_client *lc, struct error *err)
{
    struct owners *o = calloc(1, sizeof(*o));

    if (o == NULL)
        return error_set(err, FAULT_NOMEM, "out of memory");
    pthread_mutex_init(&o->mu, NULL);
    for (int i = 0; i < RECENT_SHARDS; i++)
        pthread_mutex_init(&o->recent[i].mu, NULL);
    atomic_init(&o->changes_seen, lc->redis ? rd_client_changes(lc->redis) : 0);
    lc->owner_state = o;
    return LOCK_OK;
}

void lock_owner_destroy(struct lock_client *lc)
{
    struct owners *o = lc->owner_state;

    if (o == NULL)
        return;
    while (o->list) {
        struct lock_abandoned *next = o->list->next;
        free(o->list);
        o->list = next;
    }
    pthread_mutex_destroy(&o->mu);
    for (int i = 0; i < RECENT_SHARDS; i++)
        pthread_mutex_destroy(&o->recent[i].mu);
    free(o);
    lc->owner_state = NULL;
}

/* Something that may lose an answered write happened since the client last looked (a
 * connection dropped, a server unreachable, a new master): its answered releases from
 * before it, still within their leases, are kept as abandoned (to be given back
 * before the next try). Any thread, any time: their ids are retired. */
static void recent_suspect(struct lock_client *lc)
{
    struct owners *o = lc->owner_state;
    struct lock_abandoned *suspect = NULL, *a;
    long long changes, seen, now;

    if (lc->redis == NULL || !lc->ops->checks_owner)
        return;
    changes = rd_client_changes(lc->redis);
    seen = atomic_load(&o->changes_seen);
    do {
        if (changes <= seen)
            return;   /* seen already (by this thread or another) */
    } while (!atomic_compare_exchange_weak(&o->changes_seen, &seen, changes));
    now = clock_now_ms();
    for (int k = 0; k < RECENT_SHARDS; k++) {
        struct recent_shard *sh = &o->recent[k];
        pthread_mutex_lock(&sh->mu);
        for (int i = 0; i < sh->n; i++) {
            struct lock_abandoned *r = &sh->ring[i];
            if (r->until_ms > now && r->changes < changes && (a = malloc(sizeof(*a))) != NULL) {
                *a = *r;
                a->next = suspect;
                suspect = a;
                r->until_ms = 0;   /* handed over: nothing left to do here */
            }
        }
        pthread_mutex_unlock(&sh->mu);
    }
    for (struct lock_abandoned *next; suspect; suspect = next) {
        next = suspect->next;
        owner_keep(suspect);
        atomic_fetch_add(&lc->abandoned, 1);
    }
}

/* The thread's answered releases join the client's ring, in the shard of its grant (it
 * holds nothing now: called before its id is retired); one handed over at once when
 * something that may lose it has been seen since it was answered. */
static void recent_publish(struct lock_client *lc)
{
    struct owners *o = lc->owner_state;
    struct lock_abandoned *late = NULL, *a;
    struct recent_shard *sh;
    long long seen;

    if (self.recent_n == 0 || o == NULL)
        return;
    sh = &o->recent[(unsigned long)(self.number + self.grant) % RECENT_SHARDS];
    seen = atomic_load(&o->changes_seen);
    pthread_mutex_lock(&sh->mu);
    for (int i = 0; i < self.recent_n; i++) {
        if (self.recent[i].changes < seen && (a = malloc(sizeof(*a))) != NULL) {
            *a = self.recent[i];   /* a scan already passed: handed over now */
            a->next = late;
            late = a;
            continue;
        }
        sh->ring[sh->next] = self.recent[i];
        sh->next = (sh->next + 1) % RECENT_MAX;
        if (sh->n < RECENT_MAX)
            sh->n++;
    }
    pthread_mutex_unlock(&sh->mu);
    self.recent_n = 0;
    for (struct lock_abandoned *next; late; late = next) {
        next = late->next;
        owner_keep(late);
        atomic_fetch_add(&lc->abandoned, 1);
    }
}

void lock_owner_id(struct lock_client *lc, char *owner, size_t size)
{
    static atomic_long next_number;

    use_client(lc);
    recent_suspect(lc);
    if (self.number == 0)
        self.number = atomic_fetch_add(&next_number, 1) + 1;
    if (!self.grant_live) {
        self.grant++, self.grant_live = 1;
        self.grant_changes = lc->redis ? rd_client_changes(lc->redis) : 0;
    }
    snprintf(owner, size, "%s:%ld.%ld", lc->cfg.instance_id, self.number, self.grant);
}

/* Keeps a (taken) to be given back later. */
static void owner_keep(struct lock_abandoned *a)
{
    struct owners *o = a->lc->owner_state;
    int kept = 0;

    pthread_mutex_lock(&o->mu);
    if (atomic_load(&o->count) < ABANDONED_MAX) {
        a->next = o->list;
        o->list = a;
        atomic_fetch_add(&o->count, 1);
        kept = 1;
    }
    pthread_mutex_unlock(&o->mu);
    if (!kept)
        free(a);   /* too many: this one runs out with its lease */
}

/* All the client's abandoned locks (the caller owns them now), or NULL: cheap when none. */
static struct lock_abandoned *owner_take(struct lock_client *lc)
{
    struct owners *o = lc->owner_state;
    struct lock_abandoned *list;

    if (o == NULL || atomic_load(&o->count) == 0)
        return NULL;
    pthread_mutex_lock(&o->mu);
    list = o->list;
    o->list = NULL;
    atomic_store(&o->count, 0);
    pthread_mutex_unlock(&o->mu);
    return list;
}

/* The thread holds nothing under its id any more: its id is retired (its next grant
 * takes a new number), what it gave up on can be given back, and its answered releases
 * join the client's ring. */
static void settle(struct lock_client *lc)
{
    if (self.holds > 0)
        return;
    for (int i = 0; i < self.pending; i++)
        owner_keep(self.pend[i]);
    self.pending = 0;
    recent_publish(lc);
    self.grant_live = 0;
}

void lock_owner_held(const struct lock_client *lc)
{
    use_client(lc);
    self.holds++;
}

/* a: g's lock (item, key and owner), as lc may still hold it until its lease is surely
 * over (a tenth more than a whole lease from now), not yet given back. */
static void abandoned_set(struct lock_abandoned *a, struct lock_client *lc,
                          const struct lock_grant *g)
{
    *a = (struct lock_abandoned){ .lc = lc, .given_at = -1,
                                  .until_ms = clock_now_ms() + lc->cfg.ttl_ms + lc->cfg.ttl_ms / 10 };
    memcpy(a->g.item, g->item, sizeof(a->g.item));
    memcpy(a->g.key, g->key, sizeof(a->g.key));
    memcpy(a->g.owner, g->owner, sizeof(a->g.owner));
}

void lock_owner_released(struct lock_client *lc, const struct lock_grant *g, int answered)
{
    use_client(lc);
    if (self.holds > 0)
        self.holds--;
    if (answered && lc->redis && lc->ops->checks_owner && self.recent_n < OWN_RECENT_MAX) {
        abandoned_set(&self.recent[self.recent_n], lc, g);
        /* Stamped when its id was taken, before anything was sent: a change counted
         * while its release was on its way is after the stamp, never lost. */
        self.recent[self.recent_n++].changes = self.grant_changes;
    }
    settle(lc);
}

/* 1 when Redis may hold the lock in g's name after a try (releasing 0) or a release
 * (releasing 1) failed with fault, and a give-back on a new connection is safe; 0 when
 * nothing can be held; -1 when it may be held but must run out with its lease. */
static int left_held(enum fault fault, int releasing)
{
    switch (fault) {
    case FAULT_CONNECT:      /* nothing was sent */
    case FAULT_READONLY:     /* refused by a replica: nothing ran there */
    case FAULT_LOADING:
    case FAULT_QUORUM:       /* redlock: too few masters answered */
        return releasing;
    case FAULT_CONNECTION:   /* sent; the server died or closed before answering */
        return 1;
    case FAULT_TIMEOUT:      /* sent; it may still run */
        return -1;
    default:                  /* answered with an error (NOREPLICAS, OOM, ...): a try took
                                 nothing; a release gave nothing back, the lock is ours */
        return releasing;
    }
}

void lock_owner_failed(struct lock_client *lc, const struct lock_grant *g, enum fault fault,
                       int releasing)
{
    int held = left_held(fault, releasing);
    struct lock_abandoned *a;

    if (!lc->ops->checks_owner || held == 0)
        return;
    use_client(lc);
    if (held > 0 && self.pending < PENDING_MAX && (a = malloc(sizeof(*a))) != NULL) {
        abandoned_set(a, lc, g);
        self.pend[self.pending++] = a;
        atomic_fetch_add(&lc->abandoned, 1);
    }
    settle(lc);
}

/* Gives a back: the store's release under its owner, again while it gives
 * back a hold (a nested grant left two), the waiters told as by any release (other
 * processes by the notice; ours here, since we do not hear our own). The store's last
 * status: LOCK_ERROR when Redis could not take it. */
static int give_back_one(struct lock_client *lc, struct lock_abandoned *a, struct error *err,
                         int *given)
{
    enum { HOLDS_MAX = 64 };
    int st = LOCK_OK, rounds = 0;

    while (st == LOCK_OK && rounds++ < HOLDS_MAX) {
        struct rd_batch notice = { 0 };
        struct lock_trip trip = { .after = &notice };
        notify_releasing(lc, &a->g, &notice);
        st = lc->ops->release(lc, &a->g, &trip, err);
        rd_batch_reset(&notice);
    }
    if (rounds > 1) {
        atomic_fetch_add(&lc->given_back, 1);
        (*given)++;
        notify_given_back(lc, a->g.key);
    }
    return st;
}

/* The client's abandoned locks go back before a try. One is kept until its lease is over
 * in any case, and given back again whenever the client has connected anew since (a
 * second failover, or a restart, may bring back a copy of the data that still has it);
 * when Redis cannot take it yet, it and the rest wait for the next try. Returns how many
 * Redis still held (and now let go). */
int lock_owner_give_back(struct lock_client *lc)
{
    struct lock_abandoned *a = owner_take(lc), *next;
    int given = 0;

    for (; a; a = next) {
        struct error err = { 0 };
        next = a->next;
        if (clock_now_ms() >= a->until_ms) {
            free(a);                          /* its lease is over, wherever it was */
            continue;
        }
        if (a->given_at == rd_client_opens(lc->redis)) {
            owner_keep(a);               /* given back on these very connections */
            continue;
        }
        if (give_back_one(lc, a, &err, &given) != LOCK_ERROR) {
            a->given_at = rd_client_opens(lc->redis);
            owner_keep(a);
            continue;
        }
        owner_keep(a);
        if (fault_is_io(err.fault)) {   /* no master yet: the rest wait too */
            for (a = next; a; a = next) {
                next = a->next;
                owner_keep(a);
            }
            break;
        }
    }
    return given;
}
