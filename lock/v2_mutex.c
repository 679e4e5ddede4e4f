/* v2_mutex.c - v2: v1's process mutex, run as two instances. Each has its own mutex: oversell. */
#include "lock/internal.h"

/* The code is v1's: what changed is the deployment, not the lock. */
const struct lock_ops lock_v2 = {
    .name = "v2",
    .alias = "mutex",
    .title = "pthread mutex, two instances behind nginx",
    .flaw = "each process has its own mutex: oversell",
    .remote = 0,
    .in_process = 1,
    .init = lock_mutex_init,
    .destroy = lock_mutex_destroy,
    .try_acquire = lock_mutex_try_acquire,
    .release = lock_mutex_release,
    .wait = LOCK_WAIT_LOCAL,
};
