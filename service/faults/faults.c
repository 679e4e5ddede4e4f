/* faults.c - The teaching faults (--faults): the probe, the nested acquire, the work that
 * outlasts a lease, the gap between the lease check and the write, the gap inside a
 * release. */
#include "service/faults/faults.h"

#include <stdatomic.h>
#include <stdio.h>

#include "common/clock.h"
#include "service/config/config.h"
#include "service/metrics/metrics.h"
#include "service/store/store.h"

/* nested=1: the helper of the classic reentrancy test: takes the same lock again and
 * gives it back. 0, or -1 with here saying how it failed. */
static int nested_acquire(const struct lock_grant *outer, struct faults_inside *here)
{
    struct lock_grant inner;
    int st = lock_acquire(svc_lock, outer->item, svc.wait_ms, &inner, NULL, &here->nested_err);

    metrics_lock_wait(inner.waited_ms);
    if (st == LOCK_OK) {
        lock_release(svc_lock, &inner, NULL, NULL, &here->nested_err);
        return 0;
    }
    here->nested = st;
    return -1;
}

/* The probe enters: this batch's id into the item's probe; an overlap counted when
 * someone else is inside. */
static void probe_enter(const struct lock_grant *g, struct faults_inside *here)
{
    static atomic_llong seq;

    snprintf(here->probe_id, sizeof(here->probe_id), "%s:%s:%lld", svc.name, g->owner,
             (long long)atomic_fetch_add(&seq, 1));
    if (svc_store->ops->probe_enter == NULL)
        return;   /* a store without the probe */
    here->probe = here->probe_id;
    if (svc_store->ops->probe_enter(svc_store, g->item, here->probe_id))
        metrics_overlap();
}

/* release_gap_ms: the sleep between a release's steps. */
static void release_gap(void *arg)
{
    clock_sleep_ms(*(const long *)arg);
}

void faults_write_gap(const struct sale_request *lead)
{
    if (!svc.faults || lead->write_gap_ms <= 0)
        return;
    metrics_write_gap();
    clock_sleep_ms(lead->write_gap_ms);
}

int faults_inside(const struct lock_grant *g, struct sale_request *lead, long long k,
                  struct faults_inside *here)
{
    here->probe = NULL;
    here->pause = NULL;
    if (!svc.faults)
        return 0;
    probe_enter(g, here);
    if (lead->release_gap_ms > 0) {
        here->pause_at = (struct lock_pause){ .fn = release_gap, .arg = (void *)&lead->release_gap_ms };
        here->pause = &here->pause_at;
    }
    if (lead->nested && nested_acquire(g, here) != 0)
        return -1;
    if (k > 0 && lead->work_ms > 0)
        clock_sleep_ms(lead->work_ms);   /* work_ms: the work outlasts the lease */
    return 0;
}
