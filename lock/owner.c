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
 *     any thread of this client, and by its give-back thread, as soon as a master (the
 *     old one restarted, or a promoted replica) answers; and kept until its lease is surely over, to be given
 *     back again whenever the client has seen a change since (a dropped connection, a
 *     new master: a second failover, a restart, can bring back a copy of the data that
 *     still has it) and, as long as it is one that was never answered, whenever the
 *     client connected anew (a thread's first connection may be the first to reach a
 *     restarted server).
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
 *
 * The walk that gives them back runs before any thread's try, and on a thread of the
 * client's own every GIVER_TICK_MS (lock_owner_start): a lock this instance abandoned
 * must not wait for a sale to reach this instance. Behind nginx the other instance may
 * get every sale while this one gets none (the load over, a user's one request at a
 * time): its waiters waited out their deadline (3 s and more after Redis answered)
 * for a lock only a try of ours would give back.
 *
 * The two kinds are kept apart, and the unanswered ones go back first: Redis most likely
 * holds a lock whose try or release was never answered, and seldom one whose release was
 * answered. One bound for both let the answered releases of a crash (up to 256 at each
 * change) push out the one lock Redis did hold, which then stalled every sale for the
 * rest of its lease (28 s of 30 after a crash). Each abandoned lock is counted once when
 * handed over, and once more by what became of it: given back (Redis held it), found
 * gone, its lease over before any master answered, or dropped over the bound.
 */
#include "lock/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { PENDING_MAX = 8, UNANSWERED_MAX = 4096, ANSWERED_MAX = 1024, RECENT_SHARDS = 16,
       RECENT_MAX = 16, OWN_RECENT_MAX = 8,
       GIVER_TICK_MS = 50 };   /* the giver's walk, at most this long after Redis answers */

/* A lock Redis may still hold in our name: enough of its grant for the store's release. */
struct lock_abandoned {
    struct lock_client *lc;
    struct lock_grant g;          /* item, key and owner */
    long long until_ms;           /* monotonic: its lease is over by then, whatever happened */
    long long changes;            /* rd_client_changes() when its release was answered */
    long long given_at;           /* rd_client_changes() when it was last given back; -1: not
                                     yet. Until until_ms it is given back again whenever the
                                     client has seen a change since (a failover, or a
                                     restart, may bring back a copy that still has it), and
                                     an unanswered one also whenever it connected anew */
    long long given_opens;        /* rd_client_opens() then */
    int answered;                 /* 1: an answered release (seldom still held); 0: a try or
                                     release never answered */
    int held;                     /* a give-back let a hold of it go (one cut short counts) */
    struct lock_abandoned *next;
};

/* Abandoned locks, oldest first. */
struct kept {
    struct lock_abandoned *head, *tail;
    int n;
};

/* The client's abandoned locks, and its last answered releases. */
struct owners {
    pthread_mutex_t mu;           /* guards unanswered and answered */
    struct kept unanswered;       /* tries and releases sent and never answered */
    struct kept answered;         /* answered releases a lost write may bring back */
    atomic_int count;             /* both lists' length, read without the mutex */
    atomic_int unanswered_n;      /* unanswered's length when last kept or walked */
    atomic_int fresh;             /* 1: one was kept since the last walk took the lists */
    atomic_llong walked;          /* rd_client_changes() when a walk last gave every one back */
    atomic_llong walked_opens;    /* rd_client_opens() then */
    pthread_mutex_t giving;       /* held by the one thread that walks the lists */
    /* The last answered releases, in shards (a thread writes to the shard of its
     * number: the threads do not queue on one mutex at every release), a ring each. */
    struct recent_shard {
        pthread_mutex_t mu;       /* guards the rest */
        struct lock_abandoned ring[RECENT_MAX];
        int n, next;
    } recent[RECENT_SHARDS];
    atomic_llong changes_seen;    /* rd_client_changes() when the ring was last looked at */
    /* The giver: a thread that looks at the ring and walks the lists every GIVER_TICK_MS
     * (cheap when nothing is due: a few atomic reads). */
    pthread_mutex_t giver_mu;     /* guards giver_stopping */
    pthread_cond_t giver_cv;
    int giver_stopping;
    int giver_started;
    pthread_t giver;
};

static void owner_keep(struct lock_abandoned *a);
static void recent_suspect(struct lock_client *lc);
static void outcome(struct lock_abandoned *a, atomic_llong *what);
static struct lock_abandoned *abandoned_new(struct lock_client *lc, const struct lock_abandoned *a);

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
    int giving;                   /* 1 while it gives an abandoned lock back: a release that
                                     fails then is that lock's, kept already (its own grant,
                                     named for the try to come, stays live) */
} self;

/* The calling thread's counts, for lc: a thread that turns to another client (tests do)
 * starts afresh; what it kept for the one before is dropped (that client may be gone),
 * and runs out with its lease. */
static void use_client(const struct lock_client *lc)
{
    if (self.lc == lc)
        return;
    for (int i = 0; i < self.pending; i++)
        free(self.pend[i]);   /* uncounted: the client they count in may be gone */
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
    pthread_mutex_init(&o->giving, NULL);
    atomic_init(&o->walked, -1);
    for (int i = 0; i < RECENT_SHARDS; i++)
        pthread_mutex_init(&o->recent[i].mu, NULL);
    atomic_init(&o->changes_seen, lc->redis ? rd_client_changes(lc->redis) : 0);
    pthread_mutex_init(&o->giver_mu, NULL);
    clock_cond_init_monotonic(&o->giver_cv);
    lc->owner_state = o;
    return LOCK_OK;
}

static void *giver_main(void *arg)
{
    struct lock_client *lc = arg;
    struct owners *o = lc->owner_state;

    pthread_mutex_lock(&o->giver_mu);
    while (!o->giver_stopping) {
        struct timespec until = clock_monotonic_at(clock_now_ms() + GIVER_TICK_MS);
        while (!o->giver_stopping &&
               pthread_cond_timedwait(&o->giver_cv, &o->giver_mu, &until) != ETIMEDOUT)
            ;
        if (o->giver_stopping)
            break;
        pthread_mutex_unlock(&o->giver_mu);
        recent_suspect(lc);
        lock_owner_give_back(lc);
        pthread_mutex_lock(&o->giver_mu);
    }
    pthread_mutex_unlock(&o->giver_mu);
    return NULL;
}

int lock_owner_start(struct lock_client *lc, struct error *err)
{
    struct owners *o = lc->owner_state;

    if (lc->redis == NULL || !lc->ops->checks_owner)
        return LOCK_OK;   /* nothing is ever kept */
    if (pthread_create(&o->giver, NULL, giver_main, lc) != 0)
        return error_set(err, FAULT_NOMEM, "cannot start the give-back thread");
    o->giver_started = 1;
    return LOCK_OK;
}

void lock_owner_stop(struct lock_client *lc)
{
    struct owners *o = lc->owner_state;

    if (o == NULL || !o->giver_started)
        return;
    pthread_mutex_lock(&o->giver_mu);
    o->giver_stopping = 1;
    pthread_cond_signal(&o->giver_cv);
    pthread_mutex_unlock(&o->giver_mu);
    pthread_join(o->giver, NULL);
    o->giver_started = 0;
}

void lock_owner_destroy(struct lock_client *lc)
{
    struct owners *o = lc->owner_state;

    if (o == NULL)
        return;
    lock_owner_stop(lc);
    for (struct kept *k = &o->unanswered; k; k = k == &o->unanswered ? &o->answered : NULL)
        while (k->head) {
            struct lock_abandoned *next = k->head->next;
            free(k->head);
            k->head = next;
        }
    pthread_mutex_destroy(&o->mu);
    pthread_mutex_destroy(&o->giving);
    pthread_mutex_destroy(&o->giver_mu);
    pthread_cond_destroy(&o->giver_cv);
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
            if (r->until_ms > now && r->changes < changes && (a = abandoned_new(lc, r)) != NULL) {
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
        if (self.recent[i].changes < seen && (a = abandoned_new(lc, &self.recent[i])) != NULL) {
            /* a scan already passed: handed over now */
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

/* a's end is counted in what (given back, found gone, expired, dropped), once: nothing
 * when a give-back reached a master already. */
static void outcome(struct lock_abandoned *a, atomic_llong *what)
{
    if (a->given_at >= 0)
        return;
    atomic_fetch_add(what, 1);
    atomic_fetch_sub(&a->lc->abandoned_waiting, 1);
}

/* A copy of a on the heap (NULL when memory ran out), handed over as abandoned: counted
 * once, here. */
static struct lock_abandoned *abandoned_new(struct lock_client *lc, const struct lock_abandoned *a)
{
    struct lock_abandoned *c = malloc(sizeof(*c));

    atomic_fetch_add(&lc->abandoned, 1);
    if (!a->answered)
        atomic_fetch_add(&lc->abandoned_unanswered, 1);
    if (c == NULL) {
        atomic_fetch_add(&lc->abandoned_dropped, 1);
        return NULL;
    }
    *c = *a;
    c->given_at = -1;
    c->next = NULL;
    atomic_fetch_add(&lc->abandoned_waiting, 1);
    return c;
}

static void kept_push(struct kept *k, struct lock_abandoned *a)
{
    a->next = NULL;
    if (k->tail)
        k->tail->next = a;
    else
        k->head = a;
    k->tail = a;
    k->n++;
}

static struct lock_abandoned *kept_pop(struct kept *k)
{
    struct lock_abandoned *a = k->head;

    if (a) {
        k->head = a->next;
        if (k->head == NULL)
            k->tail = NULL;
        k->n--;
    }
    return a;
}

/* front, then k, into k (front is older). */
static void kept_prepend(struct kept *k, struct kept *front)
{
    if (front->head == NULL)
        return;
    front->tail->next = k->head;
    if (k->tail == NULL)
        k->tail = front->tail;
    k->head = front->head;
    k->n += front->n;
    *front = (struct kept){ 0 };
}

/* Over the bound, first those given back already (kept only in case a failover brings
 * them back), then the oldest: each runs out with its lease (counted as dropped when it
 * was never given back). With o->mu held. */
static void kept_trim(struct owners *o, struct kept *k, int most)
{
    struct lock_abandoned *a, **at = &k->head, *prev = NULL;

    while (k->n > most && *at != NULL) {
        a = *at;
        if (a->given_at < 0) {
            prev = a, at = &a->next;
            continue;
        }
        *at = a->next;
        if (k->tail == a)
            k->tail = prev;
        k->n--;
        free(a);
        atomic_fetch_sub(&o->count, 1);
    }
    while (k->n > most && (a = kept_pop(k)) != NULL) {
        outcome(a, &a->lc->abandoned_dropped);
        free(a);
        atomic_fetch_sub(&o->count, 1);
    }
}

/* Keeps a (taken) to be given back before the next try: in its kind's list, whose bound
 * it may push the oldest out of. */
static void owner_keep(struct lock_abandoned *a)
{
    struct lock_client *lc = a->lc;
    struct owners *o = lc->owner_state;
    struct kept *k = a->answered ? &o->answered : &o->unanswered;
    char key[sizeof(a->g.key)];

    memcpy(key, a->g.key, sizeof(key));   /* (a may be trimmed away below) */
    pthread_mutex_lock(&o->mu);
    kept_push(k, a);
    atomic_fetch_add(&o->count, 1);
    atomic_store(&o->fresh, 1);
    kept_trim(o, k, a->answered ? ANSWERED_MAX : UNANSWERED_MAX);
    atomic_store(&o->unanswered_n, o->unanswered.n);
    pthread_mutex_unlock(&o->mu);
    /* A waiter of ours asleep on that lock (its last try was refused before it was kept)
     * wakes to try again, and a try gives it back first. */
    notify_given_back(lc, key);
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
        self.recent[self.recent_n].answered = 1;
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
    struct lock_abandoned one, *a;

    if (!lc->ops->checks_owner || held == 0 || self.giving)
        return;
    use_client(lc);
    if (held > 0) {
        abandoned_set(&one, lc, g);
        if (self.pending == PENDING_MAX) {   /* nested past the bound: one more dropped */
            outcome(self.pend[0], &lc->abandoned_dropped);
            free(self.pend[0]);
            memmove(&self.pend[0], &self.pend[1], (PENDING_MAX - 1) * sizeof(self.pend[0]));
            self.pending--;
        }
        if ((a = abandoned_new(lc, &one)) != NULL)
            self.pend[self.pending++] = a;
    }
    settle(lc);
}

/* What a give-back found. */
enum give { GIVE_HELD, GIVE_GONE, GIVE_FAILED };

/* Gives a back: the store's release under its owner, again while it gives back a hold (a
 * nested grant left two); when Redis held it, the waiters are told as by any release
 * (other processes by the notice, sent only then; ours here, since we do not hear our
 * own). GIVE_FAILED, err filled, when Redis could not take it. */
static enum give give_back_one(struct lock_client *lc, struct lock_abandoned *a,
                               struct error *err)
{
    enum { HOLDS_MAX = 64 };
    struct rd_batch notice = { 0 };
    struct lock_trip trip = { 0 }, alone = { .after = &notice };
    struct error ignored = { 0 };
    int st = LOCK_OK;

    for (int i = 0; i < HOLDS_MAX && st == LOCK_OK; i++)
        if ((st = lc->ops->release(lc, &a->g, &trip, err)) == LOCK_OK)
            a->held = 1;
    if (st == LOCK_ERROR)
        return GIVE_FAILED;
    if (!a->held)
        return GIVE_GONE;
    notify_releasing(lc, &a->g, &notice);
    lock_trip_send(lc, &alone, &ignored);
    rd_batch_reset(&notice);
    notify_given_back(lc, a->g.key);
    return GIVE_HELD;
}

/* One abandoned lock at a walk with the client's changes and opens at that: freed when
 * its lease is over, given back when it was not since the last change (an unanswered one:
 * nor since the last new connection). Returns what the give-back
 * found (GIVE_GONE when none was due); *kept: a is still the caller's. */
static enum give walk_one(struct lock_client *lc, struct lock_abandoned *a, long long changes,
                          long long opens, struct error *err, int *kept)
{
    enum give r;

    *kept = 0;
    if (clock_now_ms() >= a->until_ms) {
        outcome(a, &lc->abandoned_expired);   /* its lease is over, wherever it was */
        free(a);
        return GIVE_GONE;
    }
    *kept = 1;
    if (a->given_at == changes && (a->answered || a->given_opens == opens))
        return GIVE_GONE;                     /* given back on the servers of now */
    self.giving = 1;
    r = give_back_one(lc, a, err);
    self.giving = 0;
    if (r == GIVE_FAILED)
        return r;
    if (a->given_at >= 0) {
        if (r == GIVE_HELD)
            atomic_fetch_add(&lc->given_back_again, 1);
    } else {
        outcome(a, r == GIVE_HELD ? &lc->given_back : &lc->abandoned_gone);
    }
    a->given_at = changes;
    a->given_opens = opens;
    a->held = 0;
    return r;
}

int lock_owner_due(struct lock_client *lc)
{
    struct owners *o = lc->owner_state;
    long long changes, opens;

    if (o == NULL || atomic_load(&o->count) == 0)
        return 0;
    changes = rd_client_changes(lc->redis);
    opens = rd_client_opens(lc->redis);
    return atomic_load(&o->fresh) || atomic_load(&o->walked) != changes ||
           (atomic_load(&o->walked_opens) != opens && atomic_load(&o->unanswered_n) > 0);
}

/* The client's abandoned locks go back before a try, the unanswered ones first, by the one
 * thread that takes the walk (another finds it taken and goes on to its try). Each is kept
 * until its lease is over in any case, and given back again whenever the client has seen a
 * change since (a second failover, or a restart, may bring back a copy of the data that
 * still has it). One that Redis refuses waits for the next try; when no master answers
 * (or, for redlock, too few), the rest wait with it. Returns how many Redis still held (and
 * now let go); cheap when there is nothing to do. */
static int walk(struct lock_client *lc, struct owners *o, int *failed_out);

int lock_owner_give_back(struct lock_client *lc)
{
    struct owners *o = lc->owner_state;
    int given, failed = 0;

    if (!lock_owner_due(lc))
        return 0;
    if (pthread_mutex_trylock(&o->giving) != 0)
        return 0;
    given = walk(lc, o, &failed);
    /* Locks kept while it walked (another thread's hand-over, which found the walk taken)
     * are walked now too, a few times at most: the thread that would have walked them has
     * gone on to its try, and there may be no try after it. */
    for (int again = 0; again < 3 && !failed && atomic_load(&o->fresh); again++)
        given += walk(lc, o, &failed);
    pthread_mutex_unlock(&o->giving);
    return given;
}

/* One walk of lock_owner_give_back's, with o->giving held; *failed: a give-back failed. */
static int walk(struct lock_client *lc, struct owners *o, int *failed_out)
{
    struct kept todo[2], left[2] = { { 0 }, { 0 } };
    long long changes, opens;
    int given = 0, failed = 0, io = 0, kept;

    changes = rd_client_changes(lc->redis);   /* read with the walk taken: a change while */
    opens = rd_client_opens(lc->redis);       /* it runs makes another */
    pthread_mutex_lock(&o->mu);
    todo[0] = o->unanswered, todo[1] = o->answered;
    o->unanswered = o->answered = (struct kept){ 0 };
    atomic_store(&o->fresh, 0);
    pthread_mutex_unlock(&o->mu);
    for (int k = 0; k < 2; k++) {
        for (struct lock_abandoned *a; (a = kept_pop(&todo[k])) != NULL;) {
            struct error err = { 0 };
            enum give r;
            if (io) {                     /* no master yet: the rest wait too */
                kept_push(&left[k], a);
                continue;
            }
            r = walk_one(lc, a, changes, opens, &err, &kept);
            if (!kept) {
                atomic_fetch_sub(&o->count, 1);
                continue;
            }
            kept_push(&left[k], a);
            given += r == GIVE_HELD;
            if (r == GIVE_FAILED) {
                failed = 1;
                io = fault_is_io(err.fault) || err.fault == FAULT_QUORUM;
            }
        }
    }
    pthread_mutex_lock(&o->mu);
    kept_prepend(&o->unanswered, &left[0]);
    kept_prepend(&o->answered, &left[1]);
    kept_trim(o, &o->unanswered, UNANSWERED_MAX);
    kept_trim(o, &o->answered, ANSWERED_MAX);
    atomic_store(&o->unanswered_n, o->unanswered.n);
    pthread_mutex_unlock(&o->mu);
    atomic_store(&o->walked_opens, opens);
    atomic_store(&o->walked, failed ? -1 : changes);   /* one failed: the next try walks */
    *failed_out = failed;
    return given;
}
