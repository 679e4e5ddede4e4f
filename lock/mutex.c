/* mutex.c - The process-local store of v1 and v2: one pthread mutex per lock key. */
#include "lock/internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The process's mutexes, one per lock key, created on first use and kept until
 * lock_client_destroy(). The table is guarded by table_mu; each entry's mutex is the lock. */
struct mutex_entry {
    char key[LOCK_KEY_MAX];
    pthread_mutex_t mu;
    struct mutex_entry *next;
};

struct mutex_table {
    pthread_mutex_t table_mu;
    struct mutex_entry *head;
    int count;
};

enum { MUTEX_TABLE_MAX = 4096 };

int lock_mutex_init(struct lock_client *lc, struct error *err)
{
    struct mutex_table *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return error_set(err, FAULT_NOMEM, "out of memory");
    pthread_mutex_init(&t->table_mu, NULL);
    lc->store_state = t;
    return LOCK_OK;
}

void lock_mutex_destroy(struct lock_client *lc)
{
    struct mutex_table *t = lc->store_state;
    struct mutex_entry *e, *next;

    for (e = t->head; e; e = next) {
        next = e->next;
        pthread_mutex_destroy(&e->mu);
        free(e);
    }
    pthread_mutex_destroy(&t->table_mu);
    free(t);
}

/* Returns the mutex for key, creating it; NULL when the table is full. */
static pthread_mutex_t *mutex_for(struct mutex_table *t, const char *key)
{
    struct mutex_entry *e;

    pthread_mutex_lock(&t->table_mu);
    for (e = t->head; e; e = e->next)
        if (strcmp(e->key, key) == 0)
            goto out_unlock;
    if (t->count >= MUTEX_TABLE_MAX || (e = calloc(1, sizeof(*e))) == NULL)
        goto out_unlock;
    strcpy(e->key, key);
    pthread_mutex_init(&e->mu, NULL); /* not recursive: a nested lock waits on itself */
    e->next = t->head;
    t->head = e;
    t->count++;
out_unlock:
    pthread_mutex_unlock(&t->table_mu);
    return e ? &e->mu : NULL;
}

/* Blocks up to wait_ms on the key's mutex (its wait policy is LOCK_WAIT_LOCAL). */
int lock_mutex_try_acquire(struct lock_client *lc, struct lock_grant *g, long wait_ms,
                           struct lock_trip *trip, struct error *err)
{
    pthread_mutex_t *mu = mutex_for(lc->store_state, g->key);
    struct timespec until;
    int rc;

    (void)trip;   /* nothing goes to Redis: lock_acquire sends the read after the grant */
    if (mu == NULL)
        return error_set(err, FAULT_NOMEM, "too many distinct items for the local mutex table");
    until = clock_realtime_in(wait_ms);
    rc = pthread_mutex_timedlock(mu, &until);
    if (rc == ETIMEDOUT || rc == EDEADLK)
        return LOCK_TIMEOUT;
    if (rc != 0)
        return error_set(err, FAULT_USAGE, "%s", strerror(rc));
    g->acquired_ms = clock_now_ms();
    g->priv = mu;
    g->depth = 1;
    return LOCK_OK;
}

int lock_mutex_release(struct lock_client *lc, struct lock_grant *g, struct lock_trip *trip,
                       struct error *err)
{
    (void)err;
    /* A lock in the process is given back whatever happened to writes in Redis. */
    lock_pause_here(lc, trip, &(struct error){ 0 });
    pthread_mutex_unlock(g->priv);
    g->priv = NULL;
    return LOCK_OK;
}
