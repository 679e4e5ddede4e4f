/* faults.c - The teaching faults (--faults): hooks the sale calls at named points, so
 * that each version's flaw can be made to happen on demand. The lock library knows none
 * of them: a release is only handed a pause to call between its steps. */
#include "service/service.h"

#include <stdio.h>

/* nested=1: the helper the seeds' reentrancy test calls: takes the same lock again and
 * gives it back. 0, or -1 with rq's outcome saying why. */
static int nested_acquire(const struct lock_grant *outer, struct sale_request *rq)
{
    struct lock_grant inner;
    struct lock_error err = { 0 };
    int st = lock_acquire(svc_lock, outer->item, svc.wait_ms, &inner, NULL, &err);

    metrics_lock_wait(inner.waited_ms);
    if (st == LOCK_OK) {
        lock_release(svc_lock, &inner, NULL, NULL, &err);
        return 0;
    }
    sale_acquire_failed(st, &err, &rq, 1);
    snprintf(rq->out.message, sizeof(rq->out.message), "lock: %s", err.msg);
    return -1;
}

int faults_inside(const struct lock_grant *g, struct sale_request *lead, long long k)
{
    if (lead->nested && nested_acquire(g, lead) != 0)
        return -1;
    if (k > 0 && lead->work_ms > 0)
        lock_sleep_ms(lead->work_ms);   /* work_ms: the work outlasts the lease */
    return 0;
}

/* release_gap_ms: the sleep between a release's steps. */
static void release_gap(void *arg)
{
    lock_sleep_ms(*(const long *)arg);
}

const struct lock_pause *faults_release_pause(const struct sale_request *lead,
                                              struct lock_pause *p)
{
    if (lead->release_gap_ms <= 0)
        return NULL;
    *p = (struct lock_pause){ .fn = release_gap, .arg = (void *)&lead->release_gap_ms };
    return p;
}
