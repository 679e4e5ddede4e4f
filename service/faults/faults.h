/* faults.h - The teaching faults (--faults): hooks the sale calls at named points, so
 * that each version's flaw can be made to happen on demand, and the mutual-exclusion
 * probe that counts two sales inside at once. The lock library knows none of them: a
 * release is only handed a pause to call between its steps. */
#ifndef FAULTS_FAULTS_H
#define FAULTS_FAULTS_H

#include "lock/lock.h"
#include "service/store/request.h"

/* What the faults leave for the rest of the critical section. */
struct faults_inside {
    char probe_id[LOCK_OWNER_MAX + 96]; /* the probe's id for this batch */
    const char *probe;                  /* probe_id when the probe entered, else NULL: the
                                           store takes it out again with the write */
    struct lock_pause pause_at;
    const struct lock_pause *pause;     /* the release's pause (release_gap_ms), or NULL */
    int nested;                         /* the nested acquire's status when it failed */
    struct error nested_err;            /* and why */
};

/* Inside the critical section, between the read and the write, for the batch led by lead
 * under g (k: what it will sell): the probe enters (--faults), the nested acquire
 * (nested=1), the work (work_ms, when k > 0); and here the pause the release will take
 * (release_gap_ms). 0, or -1 when the nested acquire failed (here->nested and
 * here->nested_err say how). here must live until the release returns. */
int faults_inside(const struct lock_grant *g, struct sale_request *lead, long long k,
                  struct faults_inside *here);
/* After the lease check, just before a write goes out (write_gap_ms): the holder stops
 * where no check of its own can see a pause (a process stopped there writes on a lease it
 * may have lost: only the store can refuse it). Counted when it begins. */
void faults_write_gap(const struct sale_request *lead);

#endif
