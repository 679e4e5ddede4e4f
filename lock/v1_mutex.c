/* v1_mutex.c - v1: a pthread mutex per item, in the process. Safe with one instance only. */
#include "lock/internal.h"

/* The store is lock/mutex.c: one pthread_mutex_t per item, taken with a timed lock. */
const struct lock_ops lock_v1 = {
    .name = "v1",
    .alias = "mutex",
    .title = "pthread mutex in the process",
    .flaw = "none while there is one instance",
    .remote = 0,
    .in_process = 1,
    .init = lock_mutex_init,
    .destroy = lock_mutex_destroy,
    .try_acquire = lock_mutex_try_acquire,
    .release = lock_mutex_release,
    .wait = LOCK_WAIT_LOCAL,
};
