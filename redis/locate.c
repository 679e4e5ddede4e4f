/* locate.c - Where the server is, the simplest way: one address. (Sentinel, which
 * follows a failover, is sentinel.c.) */
#include "redis/internal.h"

/* One address. */
static struct rd_conn *single_open(struct rd_client *rc, int server, struct rd_error *err)
{
    (void)server;
    return rd_conn_connect(rc, rc->host, rc->port, err);
}

const struct rd_locator rd_single_locator = {
    .name = "single",
    .open = single_open,
};
