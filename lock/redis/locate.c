/* locate.c - Where the server is, the two simple ways: one address; or an address and
 * its standbys, the first that says it is a master (the way before Sentinel). */
#include "lock/redis/internal.h"

#include <stdio.h>
#include <stdlib.h>

/* One address. */
static struct rd_conn *single_open(struct rd_client *rc, const char *key, struct lock_error *err)
{
    (void)key;
    return rd_conn_connect(rc, rc->host, rc->port, err);
}

const struct rd_locator rd_single_locator = {
    .name = "single",
    .open = single_open,
};

/* An address and its standbys: the first that says it is a master (ROLE), so that after
 * a failover writes go to the promoted replica (a replica refuses them: READONLY). */
struct standby {
    struct rd_server server[RD_SERVERS_MAX];
    int n;                        /* the address itself first */
};

static int standby_init(struct rd_client *rc, const struct rd_config *cfg, struct lock_error *err)
{
    struct standby *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return lock_fail(err, LOCK_E_NOMEM, "out of memory");
    snprintf(s->server[0].host, sizeof(s->server[0].host), "%s", rc->host);
    s->server[0].port = rc->port;
    int n = rd_servers_parse(cfg->standby, s->server + 1, RD_SERVERS_MAX - 1);
    if (n <= 0) {
        free(s);
        return lock_fail(err, LOCK_E_USAGE, "--redis-standby: HOST:PORT,... (ports 1 to 65535, at most %d)",
                         RD_SERVERS_MAX - 1);
    }
    s->n = n + 1;
    rc->locator_state = s;
    return LOCK_OK;
}

static void standby_destroy(struct rd_client *rc)
{
    free(rc->locator_state);
}

static struct rd_conn *standby_open(struct rd_client *rc, const char *key, struct lock_error *err)
{
    const struct standby *s = rc->locator_state;
    int refused = 0;

    (void)key;
    for (int i = 0; i < s->n; i++) {
        struct rd_conn *cn = rd_conn_connect(rc, s->server[i].host, s->server[i].port, err);
        if (cn && rd_conn_is_master(cn))
            return cn;
        refused |= cn == NULL && err->fault == LOCK_E_AUTH;
        rd_conn_close(cn);
    }
    if (!refused)   /* a refusal (NOAUTH, WRONGPASS) keeps its own message */
        lock_fail(err, LOCK_E_CONNECTION, "no master at the data Redis or its standbys");
    return NULL;
}

const struct rd_locator rd_standby_locator = {
    .name = "standby",
    .init = standby_init,
    .destroy = standby_destroy,
    .open = standby_open,
    .check_each_use = 1,
};
