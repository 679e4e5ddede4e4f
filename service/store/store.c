/* store.c - Which store the instance runs on: today Redis (alone, under Sentinel, or a
 * Cluster); the next is one more line here, behind its flag. */
#include "service/store/store.h"

#include <stddef.h>

#include "service/store/redis.h"

struct store *store_open(const struct service_config *cfg, struct error *err)
{
    return redis_store_open(cfg, err);
}

void store_close(struct store *s)
{
    if (s)
        s->ops->close(s);
}
