/* silent.c - What the event-loop engines share: a sale whose item's server is not
 * answering, answered at once instead of joining the sales that wait on it. */
#include "service/sale/engine.h"

#include <stdio.h>

#include "service/config/config.h"
#include "service/store/store.h"

int engine_item_silent(const char *item)
{
    return svc_store && svc_store->spread && svc_store->ops->item_silent &&
           svc_store->ops->item_silent(svc_store, item);
}

void engine_answer_down(struct sale_job *j)
{
    j->rq.out.result = SALE_STORE_DOWN;
    snprintf(j->rq.out.message, sizeof(j->rq.out.message), "the item's server is not "
             "answering (a call waits on it unanswered, or it is marked down): not sent");
    engine_resume(j);
}

int engine_answer_silent(struct sale_job *j)
{
    if (!engine_item_silent(j->item))
        return 0;
    engine_answer_down(j);
    return 1;
}
