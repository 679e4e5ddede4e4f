/* call.c - Commands on the calling thread's connection: batches the caller owns, sent
 * in one round trip; scripts by SHA with the one NOSCRIPT path; one command alone; one
 * command on several servers at once. */
#include "redis/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"

enum { SLICE_MS = 10 };   /* trips_read: how often a gated thread looks for silence */

/* --- batches --- */

/* Appends the formatted command cmd of len bytes (taken: freed here) for script s. */
static int batch_append(struct rd_batch *b, char *cmd, int len, const struct rd_script *s,
                        struct rd_error *err)
{
    char *grown;
    int slot;

    if (len < 0)
        return rd_fail(err, RD_E_NOMEM, "cannot format the command");
    if ((slot = rd_command_slot(cmd, (size_t)len)) == RD_SLOT_CROSS) {
        free(cmd);
        return rd_fail(err, RD_E_USAGE, "keys of two slots in one command (CROSSSLOT on a "
                         "cluster): give them one hash tag");
    }
    if (b->n >= RD_BATCH_MAX || (grown = realloc(b->buf, b->len + (size_t)len)) == NULL) {
        free(cmd);
        return rd_fail(err, RD_E_NOMEM, "batch full or out of memory");
    }
    memcpy(grown + b->len, cmd, (size_t)len);
    free(cmd);
    if (slot >= 0 && !b->keyed) {
        b->keyed = 1;
        b->slot = (unsigned)slot;
    }
    b->buf = grown;
    b->off[b->n] = b->len;
    b->script[b->n] = s;
    b->len += (size_t)len;
    b->off[++b->n] = b->len;
    return RD_OK;
}

int rd_batch_vadd(struct rd_batch *b, struct rd_error *err, const char *fmt, va_list ap)
{
    char *cmd = NULL;
    int len = redisvFormatCommand(&cmd, fmt, ap);

    return batch_append(b, cmd, len, NULL, err);
}

int rd_batch_add(struct rd_batch *b, struct rd_error *err, const char *fmt, ...)
{
    va_list ap;
    int st;

    va_start(ap, fmt);
    st = rd_batch_vadd(b, err, fmt, ap);
    va_end(ap);
    return st;
}

int rd_batch_add_argv(struct rd_batch *b, int argc, const char **argv, struct rd_error *err)
{
    char *cmd = NULL;
    int len = redisFormatCommandArgv(&cmd, argc, argv, NULL);

    return batch_append(b, cmd, len, NULL, err);
}

int rd_batch_add_eval(struct rd_batch *b, const struct rd_script *s, int nkeys, int nargs,
                      const char **argv, struct rd_error *err)
{
    enum { ARGS_MAX = 320 };   /* a combined sale's write: keys, args, a request id per sale */
    const char *cmd[ARGS_MAX + 3];
    char numkeys[16], *out = NULL;
    int len;

    if (nkeys < 0 || nargs < 0 || nkeys + nargs > ARGS_MAX)
        return rd_fail(err, RD_E_USAGE, "%s: too many script arguments", s->name);
    snprintf(numkeys, sizeof(numkeys), "%d", nkeys);
    cmd[0] = "EVALSHA";
    cmd[1] = s->sha;
    cmd[2] = numkeys;
    memcpy(cmd + 3, argv, sizeof(*argv) * (size_t)(nkeys + nargs));
    len = redisFormatCommandArgv(&out, 3 + nkeys + nargs, cmd, NULL);
    return batch_append(b, out, len, s, err);
}

static void free_replies(struct rd_batch *b)
{
    for (int i = 0; i < b->n; i++) {
        rd_reply_free(b->reply[i]);
        b->reply[i] = NULL;
    }
}

void rd_batch_reset(struct rd_batch *b)
{
    free_replies(b);
    free(b->buf);
    memset(b, 0, sizeof(*b));
}

/* --- the round trip --- */

/* Appends commands from..to of b to the connection's output. */
static void send_range(redisContext *c, struct rd_batch *b, int from, int to)
{
    if (b && to > from) {
        redisAppendFormattedCommand(c, b->buf + b->off[from], b->off[to] - b->off[from]);
        b->sent = 1;
    }
}

/* Reads one reply per command from..to of b. RD_FAIL when the connection broke. */
static int read_range(redisContext *c, struct rd_batch *b, int from, int to, struct rd_error *err)
{
    for (int i = from; b && i < to; i++) {
        void *r = NULL;
        rd_reply_free(b->reply[i]);
        b->reply[i] = NULL;
        if (redisGetReply(c, &r) != REDIS_OK)
            return rd_context_error(c, "reply", err);
        b->reply[i] = r;
    }
    return RD_OK;
}

/* 1 when s was loaded on cn's server (and it said no NOSCRIPT for it since). */
static int is_known(const struct rd_conn *cn, const struct rd_script *s)
{
    for (int i = 0; i < RD_SCRIPTS_KNOWN; i++)
        if (cn->known[i] == s)
            return 1;
    return 0;
}

/* Records that cn's server has s (yes: into a free place) or said NOSCRIPT for it. */
static void set_known(struct rd_conn *cn, const struct rd_script *s, int yes)
{
    for (int i = 0; i < RD_SCRIPTS_KNOWN; i++)
        if (cn->known[i] == (yes ? NULL : s)) {
            cn->known[i] = yes ? s : NULL;
            if (yes)
                return;
        }
}

/* SCRIPT LOAD s on cn: RD_OK when Redis has it under the sha we call it by. */
static int script_load(struct rd_conn *cn, const struct rd_script *s, struct rd_error *err)
{
    struct rd_reply *r = rd_conn_command(cn, RD_T(RD_STRING), err, "SCRIPT LOAD %s", s->source);
    int same;

    if (r == NULL)
        return RD_FAIL;
    same = strcmp(r->str, s->sha) == 0;
    rd_reply_free(r);
    if (!same)
        return rd_fail(err, RD_E_PROTOCOL, "%s: Redis's sha is not the one built in", s->name);
    set_known(cn, s, 1);
    return RD_OK;
}

int rd_script_load(struct rd_client *rc, const struct rd_script *s, const char *key,
                   struct rd_error *err)
{
    int server = rd_route(rc, key ? (int)rd_key_slot(key, strlen(key)) : RD_SLOT_NONE, err);
    struct rd_conn *cn = server >= 0 ? rd_health_conn(rc, server, err) : NULL;

    int st = RD_FAIL, sent = 0;

    if (cn != NULL && (is_known(cn, s) || (sent = 1, st = script_load(cn, s, err)) == RD_OK))
        st = RD_OK;
    else if (cn != NULL && rd_fault_is_io(err->fault))
        rd_conn_failed(rc, err);
    if (sent)
        rd_health_trip_leave(rc);
    else
        rd_health_leave(rc);
    return st;
}

/* The one NOSCRIPT path: loads every script Redis said it did not have; sends those of
 * main again, followed by all of after (before's are not sent twice: what came after
 * them ran without them, so their caller decides). RD_OK or RD_FAIL. */
static int resend_noscript(struct rd_conn *cn, struct rd_batch *before, struct rd_batch *main,
                           struct rd_batch *after, struct rd_error *err)
{
    int again[RD_BATCH_MAX], n = 0;

    for (int i = 0; before && i < before->n; i++)
        if (before->reply[i] && before->reply[i]->fault == RD_E_NOSCRIPT && before->script[i]) {
            set_known(cn, before->script[i], 0);
            if (script_load(cn, before->script[i], err) != RD_OK)
                return RD_FAIL;
        }
    for (int i = 0; main && i < main->n; i++)
        if (main->reply[i] && main->reply[i]->fault == RD_E_NOSCRIPT && main->script[i]) {
            set_known(cn, main->script[i], 0);
            if (script_load(cn, main->script[i], err) != RD_OK)
                return RD_FAIL;
            again[n++] = i;
        }
    if (n == 0)
        return RD_OK;
    for (int k = 0; k < n; k++)
        send_range(cn->c, main, again[k], again[k] + 1);
    send_range(cn->c, after, 0, after ? after->n : 0);
    for (int k = 0; k < n; k++)
        if (read_range(cn->c, main, again[k], again[k] + 1, err) != RD_OK)
            return RD_FAIL;
    return read_range(cn->c, after, 0, after ? after->n : 0, err);
}

/* 1 when a reply of b says its server cannot take writes now (READONLY, LOADING). */
static int demoted(const struct rd_batch *b)
{
    for (int i = 0; b && i < b->n; i++)
        if (b->reply[i] && rd_fault_is_io(b->reply[i]->fault))
            return 1;
    return 0;
}

/* --- a cluster's redirects --- */

/* A round trip's batches in the order they are sent: before, main, after. */
enum { TRIP_BATCHES = 3 };

/* The slot of the trip's first command with keys (RD_SLOT_NONE: none has any): the trip
 * goes to its server. (A command for another node is answered MOVED.) */
static int trip_slot(struct rd_batch *const b[TRIP_BATCHES])
{
    for (int k = 0; k < TRIP_BATCHES; k++)
        if (b[k] && b[k]->keyed)
            return (int)b[k]->slot;
    return RD_SLOT_NONE;
}

static int is_redirect(const struct rd_reply *r)
{
    return r && (r->fault == RD_E_MOVED || r->fault == RD_E_ASK || r->fault == RD_E_TRYAGAIN);
}

/* The first command (batch *k, command *i) that Redis redirected or told to try again,
 * when every command sent after it was too (so that none of theirs ran): 1; else 0 (none
 * was, or one after it ran: sending it again could run it out of its order). */
static int redirected_tail(struct rd_batch *const b[TRIP_BATCHES], int *k, int *i)
{
    int found = 0;

    for (int bk = 0; bk < TRIP_BATCHES; bk++)
        for (int bi = 0; b[bk] && bi < b[bk]->n; bi++) {
            if (!is_redirect(b[bk]->reply[bi])) {
                found = 0;
                continue;
            }
            if (!found) {
                *k = bk;
                *i = bi;
            }
            found = 1;
        }
    return found;
}

/* A reply of the trip that says the cluster cannot serve now, or NULL. */
static const struct rd_reply *cluster_down(struct rd_batch *const b[TRIP_BATCHES])
{
    for (int k = 0; k < TRIP_BATCHES; k++)
        for (int i = 0; b[k] && i < b[k]->n; i++)
            if (b[k]->reply[i] && b[k]->reply[i]->fault == RD_E_CLUSTERDOWN)
                return b[k]->reply[i];
    return NULL;
}

/* One command of a trip: command i of batch b. */
struct cmd_ref {
    struct rd_batch *b;
    int i;
};

/* The trip's commands from batch k0, command i0 on, in the order they are sent, into
 * out: how many. */
static int tail_of(struct rd_batch *const b[TRIP_BATCHES], int k0, int i0, struct cmd_ref *out)
{
    int n = 0;

    for (int k = k0; k < TRIP_BATCHES; k++)
        for (int i = k == k0 ? i0 : 0; b[k] && i < b[k]->n; i++)
            out[n++] = (struct cmd_ref){ b[k], i };
    return n;
}

/* Sends the trip's commands from batch k0, command i0 on to cn, each after ASKING when
 * asking (ASK: the slot is being imported there; ASKING lets one command in), its scripts
 * loaded there first (a node that never saw them); reads their replies in place. */
static int send_tail(struct rd_conn *cn, struct rd_batch *const b[TRIP_BATCHES], int k0, int i0,
                     int asking, struct rd_error *err)
{
    struct cmd_ref tail[TRIP_BATCHES * RD_BATCH_MAX];
    int n = tail_of(b, k0, i0, tail);

    for (int t = 0; t < n; t++) {
        const struct rd_script *s = tail[t].b->script[tail[t].i];
        if (s && !is_known(cn, s) && script_load(cn, s, err) != RD_OK)
            return RD_FAIL;
    }
    for (int t = 0; t < n; t++) {
        if (asking)
            redisAppendCommand(cn->c, "ASKING");
        send_range(cn->c, tail[t].b, tail[t].i, tail[t].i + 1);
    }
    for (int t = 0; t < n; t++) {
        void *ok = NULL;
        if (asking && redisGetReply(cn->c, &ok) != REDIS_OK)
            return rd_context_error(cn->c, "ASKING", err);
        rd_reply_free(ok);
        if (read_range(cn->c, tail[t].b, tail[t].i, tail[t].i + 1, err) != RD_OK)
            return RD_FAIL;
    }
    return RD_OK;
}

/* On a cluster: what Redis redirected (MOVED: the slot map notes it, and is read again
 * once per burst; ASK: once to the node named, the map unchanged) or told to try again
 * (TRYAGAIN: a multi-key command while its slot moves; after a pause, for at most
 * RD_TRYAGAIN_MS) is sent again, while nothing after it ran. RD_OK with the replies
 * Redis gave last (a redirect it could not follow stays: nothing of its ran), or
 * RD_FAIL when a connection broke. */
static int follow_redirects(struct rd_client *rc, struct rd_batch *const b[TRIP_BATCHES], int slot,
                            struct rd_error *err)
{
    long long deadline = clock_now_ms() + RD_TRYAGAIN_MS;
    const struct rd_reply *r;
    long pause = 5;
    int k = 0, i = 0;

    if ((r = cluster_down(b)) != NULL) {
        rd_tell_state(rc, 0, r->str);
        rc->locator->forget(rc);      /* a failover under way: read the map again soon */
    } else if (atomic_load(&rc->down)) {
        rd_tell_state(rc, 1, NULL);
    }
    for (int hops = 0; hops < 32 && redirected_tail(b, &k, &i); hops++) {
        int asking, server;
        struct rd_conn *cn;

        r = b[k]->reply[i];
        asking = r->fault == RD_E_ASK;
        atomic_fetch_add(r->fault == RD_E_MOVED ? &rc->moved
                         : asking                 ? &rc->ask
                                                  : &rc->tryagain, 1);
        if (r->fault == RD_E_TRYAGAIN) {
            if (clock_now_ms() + pause > deadline)
                break;
            rd_health_trip_leave(rc);   /* (it waits on no server while it sleeps) */
            clock_sleep_ms(pause);
            atomic_fetch_add(&rc->tryagain_wait_ms, pause);
            pause = pause * 2 > 100 ? 100 : pause * 2;
            server = rd_route(rc, slot, err);
        } else {
            server = rc->locator->redirected(rc, r, !asking);
        }
        if (server < 0 || (cn = rd_health_conn(rc, server, err)) == NULL)
            break;
        if (send_tail(cn, b, k, i, asking, err) != RD_OK)
            return RD_FAIL;
        rd_health_answered(rc, server, 0);
    }
    return RD_OK;
}

/* 1 when b holds a WAIT (it blocks on the server until replicas answer, by design). */
static int has_wait(const struct rd_batch *b)
{
    static const char wait[] = "*3\r\n$4\r\nWAIT\r\n";

    for (int i = 0; b && i < b->n; i++)
        if (b->off[i + 1] - b->off[i] > sizeof(wait) - 1 &&
            memcmp(b->buf + b->off[i], wait, sizeof(wait) - 1) == 0)
            return 1;
    return 0;
}

/* Sends trip t's commands on the connection to its keys' server, written out at once. */
static void trip_send(struct rd_client *rc, struct rd_trip *t)
{
    struct rd_batch *const b[TRIP_BATCHES] = { t->before, t->main, t->after };
    int done = 0;

    t->slot_ = trip_slot(b);
    t->cn_ = NULL;
    t->status = RD_FAIL;
    if ((t->server_ = rd_route(rc, t->slot_, &t->err)) < 0 ||
        (t->cn_ = rd_health_conn(rc, t->server_, &t->err)) == NULL)
        return;
    if (rd_conn_deadline(rc, t->cn_, &t->err) != RD_OK) {
        t->cn_ = NULL;   /* not sent: the connection is as good as it was */
        return;
    }
    t->deadline_ = t->cn_->deadline_set;
    for (int k = 0; k < TRIP_BATCHES; k++) {
        send_range(t->cn_->c, b[k], 0, b[k] ? b[k]->n : 0);
        if (has_wait(b[k]))   /* WAIT blocks by itself: no sign of a silent server */
            rd_health_blocking(rc, t->server_);
    }
    while (!done && redisBufferWrite(t->cn_->c, &done) == REDIS_OK)
        ;   /* a write that failed shows as the read's error */
    t->status = RD_OK;
}

/* Reads the replies of a trip that was sent. */
static void trip_read(struct rd_trip *t)
{
    struct rd_batch *const b[TRIP_BATCHES] = { t->before, t->main, t->after };

    for (int k = 0; k < TRIP_BATCHES && t->status == RD_OK; k++)
        t->status = read_range(t->cn_->c, b[k], 0, b[k] ? b[k]->n : 0, &t->err);
}

/* What trip t's end says of its server's health: it answered, or it did not within the
 * command timeout (a thread's own shorter deadline missed says nothing of the server). */
static void trip_health(struct rd_client *rc, const struct rd_trip *t)
{
    if (t->status == RD_OK)
        rd_health_answered(rc, t->server_, 0);
    else if (t->err.fault == RD_E_TIMEOUT && !t->deadline_)
        rd_health_failed(rc, t->server_);
}

/* What a trip's replies ask for: scripts loaded and sent again (NOSCRIPT), commands sent
 * where a cluster says (MOVED, ASK, TRYAGAIN); then a broken connection dropped, or one
 * to a server that no longer takes writes. */
static void trip_finish(struct rd_client *rc, struct rd_trip *t)
{
    struct rd_batch *const b[TRIP_BATCHES] = { t->before, t->main, t->after };

    if (t->cn_ == NULL)
        return;
    trip_health(rc, t);
    rd_thread_at(rc, t->server_);   /* what a failure drops: this trip's connection, or */
    if (t->status == RD_OK)
        t->status = resend_noscript(t->cn_, t->before, t->main, t->after, &t->err);
    if (t->status == RD_OK && rc->locator->redirected)   /* the one it was redirected to */
        t->status = follow_redirects(rc, b, t->slot_, &t->err);
    if (t->status != RD_OK)
        rd_conn_failed(rc, &t->err);
    else if (demoted(t->before) || demoted(t->main) || demoted(t->after))
        rd_conn_moved(rc);   /* a replica now, or loading: the next call looks for the master */
}

/* Reads the replies of the trips sent (several servers) in the order they come, so that
 * a server that does not answer holds back no other's answer, nor its health (a server
 * answered, its caller leaves it); a trip whose server has not answered when the time is
 * up (the command timeout, or the thread's deadline) fails as a timeout. A gated thread
 * on a cluster that no other thread watches for it (rd_health_watching: the atomic sale's
 * one thread) looks every SLICE_MS whether a server it waits on went silent: given up,
 * its connection is shut down and its read ends now. */
static void trips_read(struct rd_client *rc, struct rd_trip *trips, int n)
{
    struct rd_conn *wait[RD_SERVERS_KNOWN];
    int who[RD_SERVERS_KNOWN], waiting = 0, watching = rd_health_watching(rc);
    long long until = clock_now_ms() + rd_wait_left(rc);

    for (int i = 0; i < n; i++)
        if (trips[i].status == RD_OK && waiting < RD_SERVERS_KNOWN)
            wait[waiting] = trips[i].cn_, who[waiting++] = i;
        else if (trips[i].status == RD_OK)
            trip_read(&trips[i]);   /* (past the poll's table: in turn) */
    while (waiting > 0) {
        long long left = until - clock_now_ms();
        long slice = watching && left > SLICE_MS ? SLICE_MS : (long)left;
        int k = left > 0 ? rd_conn_poll(wait, waiting, slice) : -1;
        struct rd_trip *t = &trips[who[k >= 0 ? k : 0]];

        if (k < 0 && left > slice) {   /* a slice, not the time, is up: any server silent? */
            for (int i = 0; i < waiting; i++)
                rd_health_is_down(rc, trips[who[i]].server_);   /* (given up: its read ends) */
            continue;
        }

        if (k >= 0) {
            trip_read(t);
            if (t->status == RD_OK)
                rd_health_answered(rc, t->server_, 1);
        } else {
            t->status = rd_fail(&t->err, RD_E_TIMEOUT, "no reply in time");
            k = 0;
        }
        /* Out in order: two trips on one connection are read in the order sent. */
        memmove(&wait[k], &wait[k + 1], sizeof(wait[0]) * (size_t)(waiting - k - 1));
        memmove(&who[k], &who[k + 1], sizeof(who[0]) * (size_t)(waiting - k - 1));
        waiting--;
    }
}

void rd_round_trips(struct rd_client *rc, struct rd_trip *trips, int n)
{
    for (int i = 0; i < n; i++)
        trip_send(rc, &trips[i]);
    if (n == 1 && trips[0].status == RD_OK && !rd_health_watching(rc))
        trip_read(&trips[0]);
    else if (n >= 1)
        trips_read(rc, trips, n);
    /* Only now, with no reply of any trip left unread on a connection, may one trip's
     * commands be sent again (on a connection another trip used). */
    for (int i = 0; i < n; i++)
        trip_finish(rc, &trips[i]);
    rd_health_trip_leave(rc);
}

int rd_round_trip(struct rd_client *rc, struct rd_batch *before, struct rd_batch *main,
                  struct rd_batch *after, struct rd_error *err)
{
    struct rd_trip t = { .before = before, .main = main, .after = after };

    rd_round_trips(rc, &t, 1);
    if (t.status != RD_OK)
        *err = t.err;
    return t.status;
}

/* --- one command --- */

struct rd_reply *rd_call_batch(struct rd_client *rc, struct rd_batch *before, struct rd_batch *b,
                               struct rd_batch *after, int types, const char *what,
                               struct rd_error *err)
{
    struct rd_reply *r = NULL;

    if (rd_round_trip(rc, before, b, after, err) == RD_OK) {
        r = rd_expect(b->reply[0], types, what, err);
        b->reply[0] = NULL;
    }
    rd_batch_reset(b);
    return r;
}

struct rd_reply *rd_call(struct rd_client *rc, int types, struct rd_error *err,
                         const char *fmt, ...)
{
    struct rd_batch b = { 0 };
    char *cmd = NULL;
    va_list ap;
    int len;

    va_start(ap, fmt);
    len = redisvFormatCommand(&cmd, fmt, ap);
    va_end(ap);
    if (batch_append(&b, cmd, len, NULL, err) != RD_OK)
        return NULL;
    return rd_call_batch(rc, NULL, &b, NULL, types, fmt, err);
}

struct rd_reply *rd_eval(struct rd_client *rc, const struct rd_script *s, int types, int nkeys,
                         int nargs, const char **argv, struct rd_error *err)
{
    struct rd_batch b = { 0 };

    if (rd_batch_add_eval(&b, s, nkeys, nargs, argv, err) != RD_OK)
        return NULL;
    return rd_call_batch(rc, NULL, &b, NULL, types, s->name, err);
}

/* --- several servers at once --- */

/* A fan-out reply read: a server that never saw the script (or restarted) has it loaded
 * and is asked again. 1 when *r is an answer, 0 when none came. */
static int fanout_reply(struct rd_client *rc, struct rd_batch *b, struct rd_reply **r)
{
    struct rd_error err;

    if ((*r)->fault != RD_E_NOSCRIPT || !b->script[0])
        return 1;
    rd_reply_free(*r);
    *r = NULL;
    if (rd_round_trip(rc, NULL, b, NULL, &err) != RD_OK)
        return 0;
    *r = b->reply[0];
    b->reply[0] = NULL;
    return 1;
}

/* Reads the fan-out's replies in the order they come, so that a server that does not
 * answer holds back no other's, until each has answered or the time is up (the command
 * timeout, or the thread's deadline); one that has not answered by then has its
 * connection failed. Returns how many answered. */
static int fanout_read(struct rd_client *const *rcs, int n, struct rd_batch *b,
                       struct rd_conn **cn, struct rd_reply **replies)
{
    struct rd_conn *wait[RD_SERVERS_MAX];
    int who[RD_SERVERS_MAX], waiting = 0, answered = 0;
    long long until = clock_now_ms() + rd_wait_left(rcs[0]);
    struct rd_error err;

    for (int i = 0; i < n; i++)
        if (cn[i] != NULL)
            wait[waiting] = cn[i], who[waiting++] = i;
    while (waiting > 0) {
        long long left = until - clock_now_ms();
        int k = left > 0 ? rd_conn_poll(wait, waiting, (long)left) : -1;
        int i = k >= 0 ? who[k] : who[0];
        void *r = NULL;

        if (k >= 0 && !cn[i]->c->err && redisGetReply(cn[i]->c, &r) == REDIS_OK) {
            replies[i] = r;
            answered += fanout_reply(rcs[i], b, &replies[i]);
        } else {
            if (k < 0)
                rd_fail(&err, RD_E_TIMEOUT, "no reply in time");
            else
                rd_context_error(cn[i]->c, "reply", &err);
            rd_thread_at(rcs[i], 0);
            rd_conn_failed(rcs[i], &err);
            k = k >= 0 ? k : 0;
        }
        wait[k] = wait[waiting - 1], who[k] = who[waiting - 1];
        waiting--;
    }
    return answered;
}

int rd_fanout(struct rd_client *const *rcs, int n, struct rd_batch *b, struct rd_reply **replies)
{
    struct rd_conn *cn[RD_SERVERS_MAX];
    struct rd_error err;

    for (int i = 0; i < n; i++) {
        int done = 0;
        replies[i] = NULL;
        if ((cn[i] = rd_health_conn(rcs[i], 0, &err)) == NULL)
            continue;
        if (rd_conn_deadline(rcs[i], cn[i], &err) != RD_OK) {
            cn[i] = NULL;
            continue;
        }
        send_range(cn[i]->c, b, 0, 1);
        while (!done && redisBufferWrite(cn[i]->c, &done) == REDIS_OK)
            ;
    }
    int answered = fanout_read(rcs, n, b, cn, replies);

    for (int i = 0; i < n; i++)
        rd_health_trip_leave(rcs[i]);
    return answered;
}
