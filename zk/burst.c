/* burst.c - The ensemble's own ceiling, for the bench: one node set as fast as the client
 * can, a number of sets in flight at once (asynchronous), for a while. */
#include "zk/internal.h"

#include "common/clock.h"

/* The sets in flight, counted down by the completions (on the client's thread). */
struct burst {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int in_flight;
    long long done, failed;
};

/* One set answered (on the completion thread): counted, and the sender woken. */
static void set_done(int rc, const struct Stat *stat, const void *data)
{
    struct burst *b = (struct burst *)data;

    (void)stat;
    pthread_mutex_lock(&b->mu);
    b->in_flight--;
    if (rc == ZOK)
        b->done++;
    else
        b->failed++;
    pthread_cond_signal(&b->cv);
    pthread_mutex_unlock(&b->mu);
}

long long zk_set_burst(struct zk_session *s, const char *path, int in_flight, long ms,
                       long long *failed)
{
    struct burst b = { .in_flight = 0 };
    zhandle_t *zh = ((struct zk_handle *)s->h_)->zh;
    long long until = clock_now_ms() + ms;

    pthread_mutex_init(&b.mu, NULL);
    clock_cond_init_monotonic(&b.cv);
    pthread_mutex_lock(&b.mu);
    while (clock_now_ms() < until) {
        while (b.in_flight < in_flight) {
            b.in_flight++;
            pthread_mutex_unlock(&b.mu);
            if (zoo_aset(zh, path, "x", 1, -1, set_done, &b) != ZOK) {
                pthread_mutex_lock(&b.mu);
                b.in_flight--, b.failed++;
                break;
            }
            pthread_mutex_lock(&b.mu);
        }
        clock_cond_wait_until(&b.cv, &b.mu, until);
    }
    while (b.in_flight > 0)   /* the completions still owed use b */
        clock_cond_wait_until(&b.cv, &b.mu, clock_now_ms() + 1000);
    pthread_mutex_unlock(&b.mu);
    pthread_cond_destroy(&b.cv);
    pthread_mutex_destroy(&b.mu);
    *failed = b.failed;
    return b.done;
}
