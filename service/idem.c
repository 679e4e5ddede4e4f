/* idem.c - An Idempotency-Key K's two records: its first answer, beside the item
 * (idem:{I}:K, in the item's slot, read and written by the sale's own script), and the
 * item K was first used for (idem-item:K, a key of K's own: on a cluster, in another
 * slot, so no script touches both). The second is claimed before the sale, in one
 * command: SET NX GET sets it when K is new and answers the item it already names
 * otherwise. It outlives the first answer (by BIND_MARGIN_MS): while an answer is kept,
 * K stays bound to its item. */
#include "service/service.h"

#include <stdio.h>
#include <string.h>

enum { BIND_MARGIN_MS = 60 * 1000 };

void sale_idem_record(const struct sale_request *rq, char (*record)[ITEM_MAX + IDEM_KEY_MAX + 16])
{
    snprintf(*record, sizeof(*record), "idem:{%s}:%s", rq->item, rq->idem_key);
}

int sale_idem_bind(struct sale_request *rq)
{
    struct lock_error err = { 0 };
    struct rd_reply *r = rd_call(svc_redis, RD_T(RD_STRING) | RD_T(RD_NIL), &err,
                                 "SET idem-item:%s %s NX PX %ld GET", rq->idem_key, rq->item,
                                 svc.idem_ttl_ms + BIND_MARGIN_MS);
    int reused;

    if (r == NULL) {
        sale_set_all(&rq, 1, lock_fault_is_io(err.fault) || lock_fault_is_cluster(err.fault)
                                 ? SALE_REDIS_DOWN : SALE_ERROR, err.msg);
        return -1;
    }
    reused = r->type == RD_STRING && strcmp(r->str, rq->item) != 0;
    if (reused)
        snprintf(rq->out.message, sizeof(rq->out.message),
                 "this Idempotency-Key was first used for item %.64s", r->str);
    rd_reply_free(r);
    if (reused)
        rq->out.result = SALE_KEY_REUSED;
    return reused ? -1 : 0;
}
