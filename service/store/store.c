/* store.c - Which store the instance runs on: Redis (alone, under Sentinel, or a Cluster),
 * ZooKeeper (--zookeeper), or a database (--mysql). */
#include "service/store/store.h"

#include <stddef.h>

#include "service/config/config.h"
#include "service/store/db.h"
#include "service/store/redis.h"
#include "service/store/zk.h"

struct store *store_open(const struct service_config *cfg, struct error *err)
{
    if (cfg->mysql)
        return db_store_open(cfg, err);
    return cfg->zookeeper ? zk_store_open(cfg, err) : redis_store_open(cfg, err);
}

void store_close(struct store *s)
{
    if (s)
        s->ops->close(s);
}
