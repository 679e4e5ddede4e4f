/* sentinel.c - Where the master is, by Redis Sentinel: ask a sentinel that answers
 * (SENTINEL get-master-addr-by-name), confirm with ROLE on that address before using
 * it, keep it until an error or a READONLY/LOADING reply (then ask again), and follow
 * +switch-master: one listener thread per sentinel, so that the switch is heard from any
 * that can be reached, and every connection to the old master is cut at once. A
 * partition sends no reset: a silent subscription is PINGed and, silent still, made
 * anew; a sentinel no listener reaches is not asked; every connection has TCP
 * keepalive. Never a server that says it is a replica. */
#include "redis/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "common/clock.h"

/* A listener's liveness check: a subscription silent this long is sent a PING; silent as
 * long again, it is taken as dead and made anew (a sentinel behind a partition never
 * answers, and never resets). */
enum { LISTEN_IDLE_MS = 1000 };

struct sentinel {
    struct rd_server sentinel[RD_SERVERS_MAX];
    int n;
    char master[128];             /* the master's name, as the sentinels know it */
    char *user, *password;        /* the sentinels' credentials */
    pthread_mutex_t mu;           /* guards at, known, known_once, sub */
    struct rd_server at;          /* the master, as last confirmed or announced */
    int known, known_once;
    atomic_uint generation;       /* bumped whenever the master moves */
    /* One listener per sentinel, each subscribed to +switch-master on its own: the
     * switch is heard from whichever sentinel can still be reached. */
    struct listener {
        struct rd_client *rc;
        int i;
        pthread_t thread;
        int started;
    } listener[RD_SERVERS_MAX];
    struct rd_conn *sub[RD_SERVERS_MAX];   /* each listener's subscription, while it has one */
    atomic_int reach[RD_SERVERS_MAX];      /* 1 subscribed, -1 not reached, 0 not tried */
    atomic_int stopping;
};

/* A connection to sentinel i, or NULL. */
static struct rd_conn *sentinel_connect(struct rd_client *rc, const struct sentinel *s, int i,
                                        struct rd_error *err)
{
    return rd_conn_connect_as(rc, s->sentinel[i].host, s->sentinel[i].port, s->user, s->password,
                              err);
}

/* What the sentinels answered: the distinct addresses they name for the master, in the
 * order first named, and how many of them answered at all. */
struct answers {
    struct rd_server at[RD_SERVERS_MAX];
    int n, answered;
};

/* Adds at to a unless it is there already. */
static void answers_add(struct answers *a, const struct rd_server *at)
{
    for (int i = 0; i < a->n; i++)
        if (a->at[i].port == at->port && strcmp(a->at[i].host, at->host) == 0)
            return;
    a->at[a->n++] = *at;
}

/* Asks every sentinel for the master's address (they may disagree: one that missed a
 * failover, one behind a partition), but those its listener cannot reach now (each would
 * cost a connect timeout: a partition answers nothing), unless no listener reaches one.
 * RD_OK when at least one named one, else RD_FAIL with err saying why (none
 * answered, or none knows the name). */
static int ask(struct rd_client *rc, struct sentinel *s, struct answers *a,
               struct rd_error *err)
{
    int any_reached = 0;

    for (int i = 0; i < s->n; i++)
        any_reached |= atomic_load(&s->reach[i]) >= 0;
    a->n = a->answered = 0;
    for (int i = 0; i < s->n; i++) {
        if (any_reached && atomic_load(&s->reach[i]) < 0)
            continue;
        struct rd_conn *cn = sentinel_connect(rc, s, i, err);
        struct rd_reply *r = cn ? rd_conn_command(cn, RD_T(RD_ARRAY) | RD_T(RD_NIL), err,
                                                  "SENTINEL get-master-addr-by-name %s", s->master)
                                : NULL;
        struct rd_server at;

        a->answered += r != NULL;
        if (r && r->type == RD_ARRAY && r->elements == 2 && r->element[0]->type == RD_STRING &&
            r->element[1]->type == RD_STRING) {
            snprintf(at.host, sizeof(at.host), "%s", r->element[0]->str);
            at.port = atoi(r->element[1]->str);
            answers_add(a, &at);
        }
        rd_reply_free(r);
        rd_conn_close(cn);
    }
    if (a->n > 0)
        return RD_OK;
    if (a->answered)
        return rd_fail(err, RD_E_CONNECTION, "no sentinel knows a master named %.64s", s->master);
    return rd_fail(err, RD_E_CONNECTION, "no sentinel of %d answered for master %.64s (%.40s)",
                     s->n, s->master, err->msg);
}

/* Records where the master is; bumps the generation when it moved (or was forgotten).
 * When it moved to another address, every connection to the old one is cut: a command
 * waiting there (behind a partition, an answer never comes) fails now and its thread
 * moves, rather than at its 5 s timeout. Returns the generation of at, for a connection
 * made to it. */
static unsigned set_master(struct rd_client *rc, struct sentinel *s, const struct rd_server *at)
{
    int moved;
    unsigned gen;

    pthread_mutex_lock(&s->mu);
    moved = s->known_once && (strcmp(s->at.host, at->host) != 0 || s->at.port != at->port);
    if (!s->known || moved)
        atomic_fetch_add(&s->generation, 1);
    s->at = *at;
    s->known = s->known_once = 1;
    gen = atomic_load(&s->generation);
    pthread_mutex_unlock(&s->mu);
    if (moved)
        rd_client_cut_stale(rc);
    return gen;
}

/* A connection to the address at, if it says it is a master (ROLE); else NULL. */
static struct rd_conn *master_at(struct rd_client *rc, const struct rd_server *at,
                                 struct rd_error *err)
{
    struct rd_conn *cn = rd_conn_connect(rc, at->host, at->port, err);

    if (cn && rd_conn_is_master(cn))
        return cn;
    if (cn)
        rd_fail(err, RD_E_READONLY, "%.64s:%d, named master by the sentinels, says it is a replica",
                  at->host, at->port);
    rd_conn_close(cn);
    return NULL;
}

/* Of the addresses the sentinels named, the one master: a named address that says it is
 * a replica was named by a sentinel that missed a failover; two that say master are two
 * masters at once (a partition, a failover under way): none is written to until the
 * sentinels agree again. */
static struct rd_conn *confirm(struct rd_client *rc, struct sentinel *s, const struct answers *a,
                               struct rd_error *err)
{
    struct rd_conn *found = NULL, *cn;
    int which = -1;

    for (int i = 0; i < a->n; i++) {
        if ((cn = master_at(rc, &a->at[i], err)) == NULL)
            continue;
        if (found) {
            rd_conn_close(cn);
            rd_conn_close(found);
            rd_fail(err, RD_E_CONNECTION, "the sentinels disagree: %.64s:%d and %.64s:%d both "
                      "say they are master %.40s", a->at[which].host, a->at[which].port,
                      a->at[i].host, a->at[i].port, s->master);
            return NULL;
        }
        found = cn;
        which = i;
    }
    if (found)
        found->generation = set_master(rc, s, &a->at[which]);
    return found;
}

static struct rd_conn *sentinel_open(struct rd_client *rc, int server, struct rd_error *err)
{
    struct sentinel *s = rc->locator_state;
    struct answers a;
    struct rd_server at;
    struct rd_conn *cn;
    unsigned gen;
    int known;

    (void)server;
    /* The generation of this address, read with it: a move heard while we connect makes
     * the connection stale at once (cut, or replaced on its next use). */
    pthread_mutex_lock(&s->mu);
    at = s->at;
    known = s->known;
    gen = atomic_load(&s->generation);
    pthread_mutex_unlock(&s->mu);
    if (known && (cn = master_at(rc, &at, err)) != NULL) {
        cn->generation = gen;
        return cn;
    }
    if (ask(rc, s, &a, err) != RD_OK)
        return NULL;
    return confirm(rc, s, &a, err);
}

static void sentinel_forget(struct rd_client *rc)
{
    struct sentinel *s = rc->locator_state;

    pthread_mutex_lock(&s->mu);
    s->known = 0;
    pthread_mutex_unlock(&s->mu);
}

static int sentinel_stale(struct rd_client *rc, const struct rd_conn *cn)
{
    const struct sentinel *s = rc->locator_state;

    return cn->generation != atomic_load(&s->generation);
}

/* A +switch-master message: "NAME OLD-HOST OLD-PORT NEW-HOST NEW-PORT". */
static void heard_switch(struct rd_client *rc, struct sentinel *s, const char *payload)
{
    char name[128], old_host[256], new_host[256];
    int old_port, new_port;
    struct rd_server at;

    if (sscanf(payload, "%127s %255s %d %255s %d", name, old_host, &old_port, new_host,
               &new_port) != 5 || strcmp(name, s->master) != 0)
        return;
    snprintf(at.host, sizeof(at.host), "%s", new_host);
    at.port = new_port;
    set_master(rc, s, &at);
}

/* One subscription to sentinel i, read until it ends or goes silent (rd_conn_read's
 * PING). */
static void listen_to(struct rd_client *rc, struct sentinel *s, int i)
{
    struct rd_error err;
    struct rd_conn *cn = sentinel_connect(rc, s, i, &err);
    struct rd_reply *r = cn ? rd_conn_call(cn, RD_T(RD_ARRAY), 2 * LISTEN_IDLE_MS, &err,
                                           "SUBSCRIBE +switch-master") : NULL;
    struct answers a;

    rd_reply_free(r);
    if (r == NULL) {
        atomic_store(&s->reach[i], -1);
        rd_conn_close(cn);
        clock_sleep_ms(200);
        return;
    }
    atomic_store(&s->reach[i], 1);
    pthread_mutex_lock(&s->mu);
    s->sub[i] = cn;
    pthread_mutex_unlock(&s->mu);
    /* A switch missed while not subscribed: the sentinels' answer now says it (when they
     * agree; else the next connection sorts it out by ROLE). */
    if (ask(rc, s, &a, &err) == RD_OK && a.n == 1)
        set_master(rc, s, &a.at[0]);
    while (!atomic_load(&s->stopping) && (r = rd_conn_read(cn, LISTEN_IDLE_MS)) != NULL) {
        if (r->type == RD_ARRAY && r->elements == 3 && r->element[2]->type == RD_STRING)
            heard_switch(rc, s, r->element[2]->str);
        rd_reply_free(r);
    }
    atomic_store(&s->reach[i], -1);
    pthread_mutex_lock(&s->mu);
    s->sub[i] = NULL;
    pthread_mutex_unlock(&s->mu);
    rd_conn_close(cn);
}

static void *listener_main(void *arg)
{
    struct listener *l = arg;
    struct sentinel *s = l->rc->locator_state;

    while (!atomic_load(&s->stopping))
        listen_to(l->rc, s, l->i);
    return NULL;
}

static void sentinel_free(struct sentinel *s)
{
    if (s->password)
        explicit_bzero(s->password, strlen(s->password));
    free(s->user);
    free(s->password);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static void sentinel_destroy(struct rd_client *rc);

static int sentinel_init(struct rd_client *rc, const struct rd_config *cfg, struct rd_error *err)
{
    struct sentinel *s = calloc(1, sizeof(*s));

    if (s == NULL)
        return rd_fail(err, RD_E_NOMEM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    if ((s->n = rd_servers_parse(cfg->sentinels, s->sentinel, RD_SERVERS_MAX)) <= 0 ||
        cfg->sentinel_master == NULL || *cfg->sentinel_master == '\0' ||
        strlen(cfg->sentinel_master) >= sizeof(s->master)) {
        sentinel_free(s);
        return rd_fail(err, RD_E_USAGE, "--sentinel HOST:PORT,... (at most %d) and "
                         "--sentinel-master NAME (1 to 127 characters)", RD_SERVERS_MAX);
    }
    snprintf(s->master, sizeof(s->master), "%s", cfg->sentinel_master);
    s->user = cfg->sentinel_user ? strdup(cfg->sentinel_user) : NULL;
    s->password = cfg->sentinel_password ? strdup(cfg->sentinel_password) : NULL;
    rc->locator_state = s;
    for (int i = 0; i < s->n; i++) {
        s->listener[i] = (struct listener){ .rc = rc, .i = i };
        if (pthread_create(&s->listener[i].thread, NULL, listener_main, &s->listener[i]) != 0) {
            sentinel_destroy(rc);
            rc->locator_state = NULL;
            return rd_fail(err, RD_E_NOMEM, "cannot start the sentinel listeners");
        }
        s->listener[i].started = 1;
    }
    return RD_OK;
}

static void sentinel_destroy(struct rd_client *rc)
{
    struct sentinel *s = rc->locator_state;

    atomic_store(&s->stopping, 1);
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n; i++)
        if (s->sub[i])
            rd_conn_shutdown(s->sub[i]);   /* ends its blocking read */
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < s->n; i++)
        if (s->listener[i].started)
            pthread_join(s->listener[i].thread, NULL);
    sentinel_free(s);
}

const struct rd_locator rd_sentinel_locator = {
    .name = "sentinel",
    .init = sentinel_init,
    .destroy = sentinel_destroy,
    .open = sentinel_open,
    .forget = sentinel_forget,
    .stale = sentinel_stale,
    .check_each_use = 1,
};
