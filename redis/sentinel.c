/* sentinel.c - Where the master is, by Redis Sentinel: ask every sentinel at once
 * (SENTINEL get-master-addr-by-name and the configuration epoch, one thread each, one
 * deadline: a majority that agree end the round, so a sentinel behind a partition costs
 * nothing; a round that must hear every answer does not wait for a sentinel that did not
 * answer its last ask, nor past a move a listener heard), confirm with ROLE on the address named under the highest epoch before using
 * it, keep it until an error or a READONLY/LOADING reply (then ask again), and follow
 * +switch-master: one listener thread per sentinel, so that the switch is heard from any
 * that can be reached, and every connection to the old master is cut at once. A
 * partition sends no reset: a silent subscription is PINGed and, silent still, made
 * anew; every connection has TCP keepalive. Masters are compared by address, not by
 * spelling. Never a server that says it is a replica. */
#include "redis/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netdb.h>
#include <sys/socket.h>

#include "common/clock.h"

/* A listener's liveness check: a subscription silent this long is sent a PING; silent as
 * long again, it is taken as dead and made anew (a sentinel behind a partition never
 * answers, and never resets). */
enum { LISTEN_IDLE_MS = 1000 };
/* A round waiting for answers looks this often whether a listener heard the master move. */
enum { ROUND_SLICE_MS = 10 };

struct sentinel {
    struct rd_server sentinel[RD_SERVERS_MAX];
    int n;
    char master[128];             /* the master's name, as the sentinels know it */
    char *user, *password;        /* the sentinels' credentials */
    pthread_mutex_t mu;           /* guards at, known, known_once, sub */
    struct rd_server at;          /* the master, as last confirmed or announced */
    char at_addr[64];             /* its numeric address (masters are compared by it) */
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
    /* Each sentinel that did not answer its last ask (a connect or a command that timed
     * out: behind a partition, down): a round that waits for every answer does not wait
     * for its, which cannot come within the round. 1 until it answers again. */
    atomic_int silent[RD_SERVERS_MAX];
    atomic_int askers;                     /* asker threads still running (ask) */
    atomic_int stopping;
};

/* A connection to sentinel i, or NULL. */
static struct rd_conn *sentinel_connect(struct rd_client *rc, const struct sentinel *s, int i,
                                        struct rd_error *err)
{
    return rd_conn_connect_as(rc, s->sentinel[i].host, s->sentinel[i].port, s->user, s->password,
                              err);
}

/* What the sentinels answered: the distinct masters they name (told apart by address,
 * not by spelling: a hostname and its address are one master), each with the highest
 * configuration epoch of the sentinels that named it, in the order first named; how
 * many sentinels answered at all. */
struct answers {
    struct rd_server at[RD_SERVERS_MAX];
    char addr[RD_SERVERS_MAX][64];    /* at's address, numeric */
    long long epoch[RD_SERVERS_MAX];
    int named[RD_SERVERS_MAX];        /* how many sentinels named it */
    int n, answered;
    int moved;                        /* the round ended as a listener heard the master
                                         move: the answers are partial, maybe stale */
};

/* host:port as a numeric address ("127.0.0.1:6379"), or as spelt when it cannot be
 * resolved. */
static void address_of(const struct rd_server *at, char *out, size_t size)
{
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
    char host[NI_MAXHOST];

    if (getaddrinfo(at->host, NULL, &hints, &ai) == 0 && ai != NULL &&
        getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof(host), NULL, 0,
                    NI_NUMERICHOST) == 0)
        snprintf(out, size, "%.48s:%d", host, at->port);
    else
        snprintf(out, size, "%.48s:%d", at->host, at->port);
    if (ai)
        freeaddrinfo(ai);
}

/* Adds what one sentinel named to a: a new master, or one more vote (and perhaps a
 * higher epoch) for one named already. */
static void answers_add(struct answers *a, const struct rd_server *at, const char *addr,
                        long long epoch)
{
    for (int i = 0; i < a->n; i++)
        if (strcmp(a->addr[i], addr) == 0) {
            a->named[i]++;
            if (epoch > a->epoch[i])
                a->epoch[i] = epoch;
            return;
        }
    a->at[a->n] = *at;
    snprintf(a->addr[a->n], sizeof(a->addr[0]), "%s", addr);
    a->epoch[a->n] = epoch;
    a->named[a->n++] = 1;
}

/* One round of asking: the caller and one asker thread per sentinel share it, and the
 * last of them to leave frees it (an asker behind a partition outlives the caller's
 * deadline: a connect, two commands and a name lookup, each bounded by its timeout). */
struct round {
    struct rd_client *rc;
    struct sentinel *s;
    long deadline_ms;                 /* each asker's command timeout */
    pthread_mutex_t mu;
    pthread_cond_t changed;
    int refs, pending;
    struct answers a;
    struct rd_error err;              /* the last asker's failure */
    char waiting[RD_SERVERS_MAX];     /* sentinel i has not answered this round yet */
    unsigned generation;              /* the master's when the round began */
};
struct asker { struct round *round; int i; };

/* Leaves a round; the last to leave frees it. */
static void round_leave(struct round *r)
{
    int last;

    pthread_mutex_lock(&r->mu);
    last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (!last)
        return;
    pthread_cond_destroy(&r->changed);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* The configuration epoch sentinel cn holds for the master (SENTINEL MASTER's
 * config-epoch), or -1. */
static long long epoch_of(struct rd_conn *cn, const struct sentinel *s, long timeout_ms)
{
    struct rd_error err;
    struct rd_reply *r = rd_conn_call(cn, RD_T(RD_ARRAY), timeout_ms, &err, "SENTINEL master %s",
                                      s->master);
    long long epoch = -1;

    for (size_t k = 0; r && k + 1 < r->elements; k += 2)
        if (r->element[k]->type == RD_STRING && r->element[k + 1]->type == RD_STRING &&
            strcmp(r->element[k]->str, "config-epoch") == 0)
            epoch = atoll(r->element[k + 1]->str);
    rd_reply_free(r);
    return epoch;
}

/* One asker: sentinel i's answer into the round. */
static void *asker_main(void *arg)
{
    struct asker *k = arg;
    struct round *rd = k->round;
    struct sentinel *s = rd->s;
    struct rd_error err;
    struct rd_conn *cn = sentinel_connect(rd->rc, s, k->i, &err);
    struct rd_reply *r = cn ? rd_conn_call(cn, RD_T(RD_ARRAY) | RD_T(RD_NIL), rd->deadline_ms, &err,
                                           "SENTINEL get-master-addr-by-name %s", s->master)
                            : NULL;
    struct rd_server at;
    int answered = r != NULL, named = answered && r->type == RD_ARRAY && r->elements == 2 &&
                r->element[0]->type == RD_STRING && r->element[1]->type == RD_STRING;
    long long epoch = -1;
    char addr[64];

    if (named) {
        snprintf(at.host, sizeof(at.host), "%s", r->element[0]->str);
        at.port = atoi(r->element[1]->str);
        epoch = epoch_of(cn, s, rd->deadline_ms);
        address_of(&at, addr, sizeof(addr));   /* (may ask a resolver: not under mu) */
    }
    rd_reply_free(r);
    rd_conn_close(cn);
    pthread_mutex_lock(&rd->mu);
    rd->a.answered += answered;
    if (named)
        answers_add(&rd->a, &at, addr, epoch);
    else if (!answered)
        rd->err = err;
    atomic_store(&s->silent[k->i], !answered);
    rd->waiting[k->i] = 0;
    rd->pending--;
    pthread_cond_signal(&rd->changed);
    pthread_mutex_unlock(&rd->mu);
    free(k);
    round_leave(rd);
    atomic_fetch_sub(&s->askers, 1);
    return NULL;
}

/* Whether a round may end: every sentinel answered; the master moved meanwhile (a
 * listener heard +switch-master: the caller goes there); where all are awaited, every one
 * yet to answer is one that did not answer its last ask either (silent: its answer cannot
 * come in time); else a majority of all of them named one master (the rest cannot
 * outvote it). */
static int round_settled(const struct round *r, int n, int all)
{
    int awaited = 0;

    if (r->pending == 0 || atomic_load(&r->s->generation) != r->generation)
        return 1;
    if (all) {
        for (int i = 0; i < n; i++)
            awaited += r->waiting[i] && !atomic_load(&r->s->silent[i]);
        return awaited == 0;
    }
    for (int i = 0; i < r->a.n; i++)
        if (r->a.named[i] > n / 2)
            return 1;
    return 0;
}

/* Asks every sentinel for the master's address at once, each on its own thread, and
 * waits until they have all answered (all set: all but those silent at their last ask),
 * a majority agree (unless all is set), a listener heard the master move, or one
 * connect timeout has passed: a sentinel behind a partition (it answers nothing, and
 * never resets) costs the round nothing when the others agree, and at most that deadline
 * when they do not. RD_OK when at least one named a master, else RD_FAIL with err saying
 * why (none answered, or none knows the name). */
static int ask(struct rd_client *rc, struct sentinel *s, int all, struct answers *a,
               struct rd_error *err)
{
    struct round *rd = calloc(1, sizeof(*rd));
    long long until = clock_now_ms() + rc->connect_timeout_ms;

    if (rd == NULL)
        return rd_fail(err, RD_E_NOMEM, "out of memory");
    *rd = (struct round){ .rc = rc, .s = s, .deadline_ms = rc->connect_timeout_ms, .refs = 1,
                          .generation = atomic_load(&s->generation) };
    pthread_mutex_init(&rd->mu, NULL);
    clock_cond_init_monotonic(&rd->changed);
    rd_fail(&rd->err, RD_E_CONNECTION, "not asked");
    pthread_mutex_lock(&rd->mu);
    for (int i = 0; i < s->n; i++) {
        struct asker *k = malloc(sizeof(*k));
        pthread_t t;

        if (k == NULL)
            break;
        *k = (struct asker){ .round = rd, .i = i };
        rd->refs++;
        rd->pending++;
        rd->waiting[i] = 1;
        atomic_fetch_add(&s->askers, 1);
        if (pthread_create(&t, NULL, asker_main, k) != 0) {
            rd->refs--;
            rd->pending--;
            rd->waiting[i] = 0;
            atomic_fetch_sub(&s->askers, 1);
            free(k);
            continue;
        }
        pthread_detach(t);
    }
    /* (In slices: a move a listener hears signals no round.) */
    while (!round_settled(rd, s->n, all) && clock_now_ms() < until)
        clock_cond_wait_until(&rd->changed, &rd->mu,
                              until < clock_now_ms() + ROUND_SLICE_MS ? until
                                                                       : clock_now_ms() + ROUND_SLICE_MS);
    *a = rd->a;
    a->moved = atomic_load(&s->generation) != rd->generation;
    *err = rd->err;
    pthread_mutex_unlock(&rd->mu);
    round_leave(rd);
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
    char now[64];
    int moved;
    unsigned gen;

    address_of(at, now, sizeof(now));
    pthread_mutex_lock(&s->mu);
    moved = s->known_once && strcmp(s->at_addr, now) != 0;
    if (!s->known || moved)
        atomic_fetch_add(&s->generation, 1);
    if (moved)
        atomic_fetch_add(&rc->changes, 1);
    s->at = *at;
    snprintf(s->at_addr, sizeof(s->at_addr), "%s", now);
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

/* Of the masters the sentinels named, the one to use: the first that says it is a
 * master (ROLE), asked in order of the highest configuration epoch that named it (a
 * sentinel on a minority side, or one that missed a failover, still names the old master
 * under the old epoch). A named address that says it is a replica is passed over; two
 * that say master under the same epoch are two masters at once (a partition, a failover
 * under way): the one a majority of all the sentinels named is used, and where neither
 * has a majority, neither is written to until the sentinels agree again. */
static struct rd_conn *confirm(struct rd_client *rc, struct sentinel *s, const struct answers *a,
                               struct rd_error *err)
{
    struct rd_conn *found = NULL, *cn;
    int order[RD_SERVERS_MAX], which = -1;

    for (int i = 0; i < a->n; i++) {       /* by epoch, highest first; stable */
        int j = i;

        for (; j > 0 && a->epoch[order[j - 1]] < a->epoch[i]; j--)
            order[j] = order[j - 1];
        order[j] = i;
    }
    for (int k = 0; k < a->n; k++) {
        int i = order[k];

        if (found && a->epoch[i] < a->epoch[which])
            break;
        if ((cn = master_at(rc, &a->at[i], err)) == NULL)
            continue;
        if (found && (a->named[which] > s->n / 2 || a->named[i] > s->n / 2)) {
            /* A majority of all the sentinels named one of the two: the rest cannot
             * outvote it (the round may have ended before or after the others spoke). */
            if (a->named[i] > s->n / 2) {
                rd_conn_close(found);
                found = cn;
                which = i;
            } else {
                rd_conn_close(cn);
            }
            continue;
        }
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

/* A connection to the master as last confirmed or announced, if there is one and it says
 * it is a master; else NULL. The generation of its address is read with it: a move heard
 * while we connect makes the connection stale at once (cut, or replaced on its next use). */
static struct rd_conn *known_master(struct rd_client *rc, struct sentinel *s, struct rd_error *err)
{
    struct rd_server at;
    struct rd_conn *cn;
    unsigned gen;
    int known;

    pthread_mutex_lock(&s->mu);
    at = s->at;
    known = s->known;
    gen = atomic_load(&s->generation);
    pthread_mutex_unlock(&s->mu);
    if (!known) {
        rd_fail(err, RD_E_CONNECT, "no master known yet for %.64s", s->master);
        return NULL;
    }
    if ((cn = master_at(rc, &at, err)) != NULL)
        cn->generation = gen;
    return cn;
}

static struct rd_conn *sentinel_open(struct rd_client *rc, int server, struct rd_error *err)
{
    struct sentinel *s = rc->locator_state;
    struct answers a = { 0 };
    struct rd_conn *cn;

    (void)server;
    if ((cn = known_master(rc, s, err)) != NULL)
        return cn;
    if (ask(rc, s, 0, &a, err) != RD_OK && !a.moved)
        return NULL;
    if (a.moved)   /* a listener heard the switch meanwhile: go there */
        return known_master(rc, s, err);
    if ((cn = confirm(rc, s, &a, err)) != NULL || a.answered == s->n)
        return cn;
    /* The majority's master is not one (the sentinels still name the old master just
     * after a failover): the answers not yet in may name the new one. */
    if (ask(rc, s, 1, &a, err) != RD_OK && !a.moved)
        return NULL;
    return a.moved ? known_master(rc, s, err) : confirm(rc, s, &a, err);
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
        rd_conn_close(cn);
        clock_sleep_ms(200);
        return;
    }
    pthread_mutex_lock(&s->mu);
    s->sub[i] = cn;
    pthread_mutex_unlock(&s->mu);
    /* A switch missed while not subscribed: the sentinels' answer now says it (when they
     * agree; else the next connection sorts it out by ROLE). */
    if (ask(rc, s, 0, &a, &err) == RD_OK && a.n == 1 && !a.moved)
        set_master(rc, s, &a.at[0]);
    while (!atomic_load(&s->stopping) && (r = rd_conn_read(cn, LISTEN_IDLE_MS)) != NULL) {
        if (r->type == RD_ARRAY && r->elements == 3 && r->element[2]->type == RD_STRING)
            heard_switch(rc, s, r->element[2]->str);
        rd_reply_free(r);
    }
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
    while (atomic_load(&s->askers) > 0)    /* each bounded by its timeouts */
        clock_sleep_ms(10);
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
