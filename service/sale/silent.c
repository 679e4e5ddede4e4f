/* silent.c - What the event-loop engines share: a sale whose item's server is not
 * answering, answered at once instead of joining the sales that wait on it. */
#include "service/sale/engine.h"

#include <stdio.h>

#include "service/config/config.h"
#include "service/store/store.h"

int engine_answer_silent(struct sale_job *j)
{
    if (!svc_store || !svc_store->spread || !svc_store->ops->item_silent ||
        !svc_store->ops->item_silent(svc_store, j->item))
        return 0;
    j->rq.out.result = SALE_STORE_DOWN;
    snprintf(j->rq.out.message, sizeof(j->rq.out.message), "the item's server is not "
             "answering (a call waits on it unanswered, or it is marked down): not sent");
    engine_resume(j);
    return 1;
}
