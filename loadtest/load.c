/* load.c - sale-load's run: its connections' states and deadlines on one epoll loop, and
 * main. sale-load is a keep-alive HTTP load client that records each sale request. */
/*
 * Usage: sale-load --url http://HOST:PORT/PATH[?QUERY] -c CONNS -d SECONDS
 *                  [--history FILE] [--keys] [--timeout-ms MS] [--items I1,I2,...]
 *                  [--item-count K] [--zipf S [--seed N]] [--rate R]
 *
 * Why our own client: wrk's Lua cannot tell which connection an answer came on, so it
 * cannot time one request from its sending to its answer. This client can: CONNS
 * keep-alive HTTP/1.1 connections, each sending one GET, waiting for its answer and
 * sending the next, on one thread with edge-triggered epoll. With --history it writes
 * one JSON object a line per request, the input of loadtest/check-history:
 *
 *   {"start_ns":N,"end_ns":N,"status":200,"error":"...","remaining":R,"item":"I",
 *    "key":"...","instance":"..."}
 *
 * start_ns: CLOCK_MONOTONIC just before the write that sent the request's first byte;
 * end_ns: just after the read that completed its answer (so the interval holds the
 * moment the sale took effect). status 0: no answer (the connection was reset or
 * closed, or --timeout-ms passed; the connection is then closed and made again).
 * error, remaining and instance are copied from the JSON body when it has them; key
 * only with --keys. A request is recorded once its first byte was written: a connect
 * that fails sent nothing and sold nothing, so it is counted (connect_failures) but is
 * not a request; the connection waits 10 ms before it tries again.
 *
 * With --rate R the requests are sent on a schedule instead (open loop, as wrk2 does):
 * request k is due at k / R seconds from the start and goes out on the first connection
 * free then; its latency counts from when it was due, so that a request that waited for
 * a connection counts that wait (a slow answer cannot hide the requests it held back).
 *
 * When SECONDS have passed (or at the first SIGINT or SIGTERM), no request is sent any
 * more; the answers still due are awaited up to --timeout-ms, the rest recorded as
 * status 0. Then a summary on stdout and, last, one JSON line: requests, by_status,
 * by_error, no_answer, rps (requests over the whole run), p50_ms, p99_ms (of the
 * answers, to within 1.6 %), seconds, connect_failures.
 *
 * The network rule of the project: load goes only to loopback (127.0.0.1) or to the
 * test hosts in 198.18.0.0/15; any other host is refused.
 *
 * Exit status: 0 the run was done (whatever the answers), 1 it could not be done (the
 * history cannot be written, no request could be sent), 2 bad usage.
 *
 * Its parts: load_opts.c (the command line), load_target.c (the requests and which goes
 * next), load_conn.c (one connection's I/O), answer.c (the HTTP answer parser),
 * load_record.c (the history, the counts, the summary), load_hist.c (the latencies).
 */
#include "loadtest/load_conn.h"
#include "loadtest/load_opts.h"
#include "loadtest/load_record.h"
#include "loadtest/load_target.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <unistd.h>

enum { LOAD_EVENTS = 256 };             /* epoll events taken at once */
#define LOAD_BACKOFF_NS   10000000LL    /* a failed connection waits this long */

/* The whole run. Single thread: everything here belongs to it. */
struct load_run {
    const struct load_opts *o;
    struct load_targets targets;
    struct load_conn *conns;
    int epfd;
    struct load_record rec;         /* the history and the summary's counts */
    int64_t start_ns, stop_ns;
    int64_t timer_ns;               /* earliest deadline of any connection */
    long long due;                  /* --rate: requests scheduled so far */
    int64_t due_ns;                 /* --rate: when the next one is due */
    int stopping, has_idle, in_flight;
};

/* Set by SIGINT or SIGTERM: end the run as if its duration were over. */
static volatile sig_atomic_t load_interrupted;

/* timeout_ns: --timeout-ms in nanoseconds. */
static int64_t timeout_ns(const struct load_run *r)
{
    return (int64_t)r->o->timeout_ms * 1000000;
}

/* --- connections --- */

/* timer_note: the run's next timer is no later than at. */
static void timer_note(struct load_run *r, int64_t at)
{
    if (at < r->timer_ns)
        r->timer_ns = at;
}

/* conn_backoff: closes c; it connects again after LOAD_BACKOFF_NS unless the run stops. */
static void conn_backoff(struct load_run *r, struct load_conn *c)
{
    load_conn_close(c);
    if (r->stopping)
        return;
    c->state = CONN_BACKOFF;
    c->deadline_ns = load_now_ns() + LOAD_BACKOFF_NS;
    timer_note(r, c->deadline_ns);
}

/* conn_idle: c is connected and free: the main loop sends its next request. */
static void conn_idle(struct load_run *r, struct load_conn *c)
{
    c->state = CONN_IDLE;
    r->has_idle = 1;
}

/* connect_failed: c's connect did not succeed (err: why); nothing was sent. */
static void connect_failed(struct load_run *r, struct load_conn *c, int err)
{
    load_record_connect_failed(&r->rec, err);
    conn_backoff(r, c);
}

/* request_end: c's request is over: status 0 (no answer), or its answer's status and
 * body (in c->in). Counts it and writes its history line. */
static void request_end(struct load_run *r, const struct load_conn *c, int status,
                        int64_t end_ns)
{
    struct load_request q = {
        .start_ns = c->start_ns, .end_ns = end_ns, .status = status,
        .item = r->targets.t[c->target].item, .key = r->o->keys ? c->key : NULL,
        .conn = c->id, .due_ns = c->due_ns,
    };

    if (status != 0) {
        q.body = c->in + c->ans.body_off;
        q.body_len = c->ans.body_len;
        q.retry_after = c->ans.retry_after;
    }
    r->in_flight--;
    load_record_request(&r->rec, &q);
}

/* request_failed: c's request got no (usable) answer: status 0, and a new connection. */
static void request_failed(struct load_run *r, struct load_conn *c)
{
    request_end(r, c, 0, load_now_ns());
    conn_backoff(r, c);
}

/* unsent: c's request never got a byte out (err why): it is not a request, and the
 * connection starts again after a pause, as after a failed connect. */
static void unsent(struct load_run *r, struct load_conn *c, int err)
{
    r->in_flight--;
    connect_failed(r, c, err);
}

/* conn_connect: opens c's socket and starts connecting. */
static void conn_connect(struct load_run *r, struct load_conn *c)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(r->o->port),
                              .sin_addr = r->o->addr };
    int err = 0;

    switch (load_conn_open(c, r->epfd, &sa, &err)) {
    case CONN_IO_DONE:
        conn_idle(r, c);
        break;
    case CONN_IO_AGAIN:
        c->state = CONN_CONNECTING;
        c->deadline_ns = load_now_ns() + timeout_ns(r);
        timer_note(r, c->deadline_ns);
        break;
    default:
        connect_failed(r, c, err);
    }
}

/* conn_connected: c's connect finished, well or not. */
static void conn_connected(struct load_run *r, struct load_conn *c)
{
    int err = load_conn_error(c);

    if (err != 0)
        connect_failed(r, c, err);
    else
        conn_idle(r, c);
}

/* answer_done: c's answer is complete: records it, then frees the connection for the
 * next request, or makes a new one when the server closes this one. */
static void answer_done(struct load_run *r, struct load_conn *c, int64_t end_ns)
{
    request_end(r, c, c->ans.status, end_ns);
    if (!c->ans.close) {
        conn_idle(r, c);
        return;
    }
    load_conn_close(c);
    if (!r->stopping)
        conn_connect(r, c);
}

/* conn_read: reads what has come on c; ends the request when its answer is complete,
 * unreadable, or the connection is gone. */
static void conn_read(struct load_run *r, struct load_conn *c)
{
    switch (load_conn_read(c)) {
    case CONN_IO_AGAIN:
        break;
    case CONN_IO_DONE:
        answer_done(r, c, load_now_ns());
        break;
    default:
        request_failed(r, c);
    }
}

/* conn_send: writes what is left of c's request; then reads its answer. */
static void conn_send(struct load_run *r, struct load_conn *c)
{
    int err = 0;

    switch (load_conn_send(c, timeout_ns(r), &err)) {
    case CONN_IO_AGAIN:
        timer_note(r, c->deadline_ns);          /* (its first byte may have gone) */
        break;
    case CONN_IO_UNSENT:
        unsent(r, c, err);
        break;
    case CONN_IO_FAILED:
        request_failed(r, c);
        break;
    default:
        timer_note(r, c->deadline_ns);
        c->state = CONN_READING;
        conn_read(r, c);
    }
}

/* request_waits: with --rate, 1 when the next request is not due yet at now (the run's
 * timer is then set for when it is). */
static int request_waits(struct load_run *r, int64_t now)
{
    if (r->o->rate <= 0 || now >= r->due_ns)
        return 0;
    timer_note(r, r->due_ns);
    return 1;
}

/* request_start: sends c's next request: the next target in turn, with its key; with
 * --rate, the request due next. */
static void request_start(struct load_run *r, struct load_conn *c)
{
    const struct load_target *t;

    c->due_ns = 0;
    if (r->o->rate > 0) {
        c->due_ns = r->due_ns;
        r->due++;
        r->due_ns = r->start_ns + (int64_t)((double)r->due * 1e9 / r->o->rate);
    }
    c->target = load_targets_next(&r->targets);
    t = &r->targets.t[c->target];
    c->seq++;
    if (r->o->keys)
        snprintf(c->key, sizeof(c->key), "%ld-%d-%lld", (long)getpid(), c->id, c->seq);
    load_conn_request(c, t->head, t->head_len, r->o->keys ? c->key : NULL);
    c->deadline_ns = load_now_ns() + timeout_ns(r);
    timer_note(r, c->deadline_ns);
    c->state = CONN_SENDING;
    r->in_flight++;
    conn_send(r, c);
}

/* conn_event: what epoll reported on c's socket. */
static void conn_event(struct load_run *r, struct load_conn *c, uint32_t events)
{
    switch (c->state) {
    case CONN_CONNECTING:
        if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
            conn_connected(r, c);
        break;
    case CONN_SENDING:
        conn_send(r, c);
        break;
    case CONN_READING:
        conn_read(r, c);
        break;
    default:
        break;                                  /* idle: the main loop sends next */
    }
}

/* --- the run --- */

/* conn_expire: c's deadline has passed. */
static void conn_expire(struct load_run *r, struct load_conn *c)
{
    switch (c->state) {
    case CONN_BACKOFF:
        conn_connect(r, c);
        break;
    case CONN_CONNECTING:
        connect_failed(r, c, ETIMEDOUT);
        break;
    case CONN_SENDING:
        if (c->req_off == 0) {
            unsent(r, c, ETIMEDOUT);
            break;
        }
        request_failed(r, c);                   /* --timeout-ms passed */
        break;
    case CONN_READING:
        request_failed(r, c);
        break;
    default:
        break;
    }
}

/* run_scan: starts the idle connections' next requests (with --rate, those due), or closes
 * them once the run stops; handles the deadlines that have passed, and sets the next
 * timer. */
static void run_scan(struct load_run *r, int64_t now)
{
    r->has_idle = 0;
    r->timer_ns = INT64_MAX;
    for (int i = 0; i < r->o->conns; i++) {
        struct load_conn *c = &r->conns[i];

        if (c->state == CONN_IDLE && r->stopping)
            load_conn_close(c);
        else if (c->state == CONN_IDLE && !request_waits(r, now))
            request_start(r, c);
        else if (c->state != CONN_CLOSED && now >= c->deadline_ns)
            conn_expire(r, c);
        if (c->state != CONN_CLOSED && c->state != CONN_IDLE)
            timer_note(r, c->deadline_ns);
    }
}

/* run_stop: the duration is over: no more requests; what is not in flight is closed. */
static void run_stop(struct load_run *r)
{
    r->stopping = 1;
    for (int i = 0; i < r->o->conns; i++) {
        struct load_conn *c = &r->conns[i];

        if (c->state != CONN_SENDING && c->state != CONN_READING)
            load_conn_close(c);
    }
}

/* run_wait_ms: how long epoll may wait: until the next timer or the end of the duration. */
static int run_wait_ms(const struct load_run *r, int64_t now)
{
    int64_t next = r->timer_ns;

    if (r->has_idle)
        return 0;
    if (!r->stopping && r->stop_ns < next)
        next = r->stop_ns;
    if (next <= now)
        return 0;
    next = (next - now + 999999) / 1000000;
    return next > 1000 ? 1000 : (int)next;
}

/* run_loop: the event loop, until the duration is over and no answer is due. Returns 0,
 * or -1 when epoll fails. */
static int run_loop(struct load_run *r)
{
    struct epoll_event ev[LOAD_EVENTS];

    for (int i = 0; i < r->o->conns; i++)
        conn_connect(r, &r->conns[i]);
    for (;;) {
        int64_t now = load_now_ns();
        int n;

        if (!r->stopping && (now >= r->stop_ns || load_interrupted))
            run_stop(r);
        if (r->has_idle || now >= r->timer_ns)
            run_scan(r, now);
        if (r->stopping && r->in_flight == 0)
            return 0;
        n = epoll_wait(r->epfd, ev, LOAD_EVENTS, run_wait_ms(r, now));
        if (n < 0 && errno != EINTR) {
            perror("sale-load: epoll_wait");
            return -1;
        }
        for (int i = 0; i < n; i++) {
            struct load_conn *c = &r->conns[(uint32_t)ev[i].data.u64];

            if ((uint32_t)(ev[i].data.u64 >> 32) == c->gen)
                conn_event(r, c, ev[i].events);
        }
    }
}

/* --- set-up --- */

/* on_interrupt: SIGINT or SIGTERM: the run ends as if its duration were over. */
static void on_interrupt(int sig)
{
    (void)sig;
    load_interrupted = 1;
}

/* signals_set: SIGPIPE ignored (a closed connection is an error of send, not a death);
 * the first SIGINT or SIGTERM ends the run early but whole (answers awaited, summary,
 * history flushed), a second one kills. */
static void signals_set(void)
{
    struct sigaction sa = { .sa_handler = on_interrupt, .sa_flags = SA_RESETHAND };

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

/* fd_limit_raise: enough file descriptors for conns connections, as far as the hard
 * limit allows (1024 connections need more than the usual soft limit of 1024). */
static void fd_limit_raise(int conns)
{
    struct rlimit rl;
    rlim_t want = (rlim_t)conns + 32;

    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur >= want)
        return;
    rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
    setrlimit(RLIMIT_NOFILE, &rl);
}

/* run_init: the run's resources. Returns 0, or 1 after printing why not. */
static int run_init(struct load_run *r, const struct load_opts *o)
{
    r->o = o;
    r->epfd = -1;
    r->timer_ns = INT64_MAX;
    r->conns = calloc((size_t)o->conns, sizeof(*r->conns));
    if (r->conns == NULL || load_targets_build(&r->targets, o) != 0) {
        fputs("sale-load: out of memory\n", stderr);
        return 1;
    }
    for (int i = 0; i < o->conns; i++)
        r->conns[i] = (struct load_conn){ .id = i, .fd = -1 };
    if (load_record_open(&r->rec, o) != 0)
        return 1;
    r->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (r->epfd < 0) {
        perror("sale-load: epoll_create1");
        return 1;
    }
    fd_limit_raise(o->conns);
    return 0;
}

/* run_free: closes and frees what run_init and the run made. Returns 0, or 1 when the
 * history could not be written whole. */
static int run_free(struct load_run *r)
{
    int rc = load_record_close(&r->rec);

    for (int i = 0; r->conns && i < r->o->conns; i++) {
        load_conn_close(&r->conns[i]);
        free(r->conns[i].req);
        free(r->conns[i].in);
    }
    load_targets_free(&r->targets);
    free(r->conns);
    if (r->epfd >= 0)
        close(r->epfd);
    return rc;
}

int main(int argc, char **argv)
{
    static struct load_opts o;
    static struct load_run r;
    int rc;

    rc = load_opts_parse(argc, argv, &o);
    if (rc != 0)
        return rc == 1 ? 0 : rc;
    signals_set();
    rc = run_init(&r, &o);
    if (rc == 0) {
        r.start_ns = load_now_ns();
        r.stop_ns = r.start_ns + (int64_t)(o.seconds * 1e9);
        r.due_ns = r.start_ns;
        rc = run_loop(&r) == 0 ? 0 : 1;
    }
    if (rc == 0) {
        load_record_summary(&r.rec, (double)(load_now_ns() - r.start_ns) / 1e9);
        if (r.rec.st.requests == 0) {
            fprintf(stderr, "sale-load: no request could be sent to %s (%lld connect failures)\n",
                    o.host, r.rec.st.connect_failures);
            rc = 1;
        }
    }
    fflush(stdout);
    return run_free(&r) ? 1 : rc;
}
