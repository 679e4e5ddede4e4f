/* client.c - A Redis client: its settings, its locator (rd_client_create picks one from
 * rd_config) and its connections, one per thread. */
#include "redis/internal.h"

#include <stdlib.h>
#include <string.h>

/* A thread ends: its connections, out of its client's list. */
static void thread_conns_free(void *p)
{
    rd_thread_free(p);
}

static void client_free(struct rd_client *rc)
{
    if (rc->password)
        explicit_bzero(rc->password, strlen(rc->password));
    free(rc->host);
    free(rc->user);
    free(rc->password);
    pthread_mutex_destroy(&rc->conns_mu);
    pthread_mutex_destroy(&rc->gate_mu);
    pthread_cond_destroy(&rc->gate_cv);
    free(rc);
}

struct rd_client *rd_client_create(const struct rd_config *cfg, struct rd_error *err)
{
    struct rd_client *rc = calloc(1, sizeof(*rc));
    pthread_condattr_t ca;

    if (rc == NULL) {
        rd_fail(err, RD_E_NOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&rc->conns_mu, NULL);
    pthread_mutex_init(&rc->gate_mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);   /* health.c waits on this clock */
    pthread_cond_init(&rc->gate_cv, &ca);
    pthread_condattr_destroy(&ca);
    rc->locator = cfg->cluster     ? &rd_cluster_locator
                  : cfg->sentinels ? &rd_sentinel_locator
                                   : &rd_single_locator;
    rc->host = strdup(cfg->host ? cfg->host : "127.0.0.1");
    rc->port = cfg->port ? cfg->port : 6379;
    rc->user = cfg->user ? strdup(cfg->user) : NULL;
    rc->password = cfg->password ? strdup(cfg->password) : NULL;
    rc->connect_timeout_ms = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 1000;
    rc->command_timeout_ms = cfg->command_timeout_ms > 0 ? cfg->command_timeout_ms : 5000;
    rc->on_state = cfg->on_state;
    rc->state_arg = cfg->state_arg;
    if (rc->host == NULL || (cfg->user && !rc->user) || (cfg->password && !rc->password)) {
        rd_fail(err, RD_E_NOMEM, "out of memory");
        goto out_free;
    }
    if (rc->locator->init && rc->locator->init(rc, cfg, err) != RD_OK)
        goto out_free;
    if (pthread_key_create(&rc->key, thread_conns_free) != 0) {
        rd_fail(err, RD_E_NOMEM, "cannot create the per-thread connections");
        if (rc->locator->destroy)
            rc->locator->destroy(rc);
        goto out_free;
    }
    return rc;

out_free:
    client_free(rc);
    return NULL;
}

void rd_client_destroy(struct rd_client *rc)
{
    struct rd_thread *t;

    if (rc == NULL)
        return;
    if ((t = pthread_getspecific(rc->key)) != NULL) {
        pthread_setspecific(rc->key, NULL);
        rd_thread_free(t);
    }
    pthread_key_delete(rc->key);
    rd_health_end(rc);
    if (rc->locator->destroy)
        rc->locator->destroy(rc);
    client_free(rc);
}

const char *rd_client_locator(const struct rd_client *rc)
{
    return rc->locator->name;
}

long long rd_client_opens(const struct rd_client *rc)
{
    return atomic_load(&rc->opens);
}

long long rd_client_drops(const struct rd_client *rc)
{
    return atomic_load(&rc->drops);
}

long long rd_client_changes(const struct rd_client *rc)
{
    return atomic_load(&rc->changes);
}

void rd_client_redirects(const struct rd_client *rc, struct rd_redirects *out)
{
    out->moved = atomic_load(&rc->moved);
    out->ask = atomic_load(&rc->ask);
    out->tryagain = atomic_load(&rc->tryagain);
    out->tryagain_wait_ms = atomic_load(&rc->tryagain_wait_ms);
    out->map_reads = atomic_load(&rc->map_reads);
}
