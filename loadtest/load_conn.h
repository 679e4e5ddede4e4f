/* load_conn.h - One keep-alive connection of sale-load: its socket, the request it sends
 * and the answer it reads. It does the I/O and says what happened; the run (load.c)
 * decides what comes next. */
#ifndef LOADTEST_LOAD_CONN_H
#define LOADTEST_LOAD_CONN_H

#include "loadtest/answer.h"

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>

/* Where a connection is. IDLE: connected, its next request not yet sent. */
enum conn_state { CONN_CLOSED, CONN_BACKOFF, CONN_CONNECTING, CONN_IDLE, CONN_SENDING,
                  CONN_READING };

/* What an I/O call on a connection did. */
enum conn_io {
    CONN_IO_AGAIN,                  /* the socket would block: wait for epoll */
    CONN_IO_DONE,                   /* connected; the request sent whole; the answer complete */
    CONN_IO_UNSENT,                 /* no byte of the request went out (*err: why) */
    CONN_IO_FAILED,                 /* the connection cannot go on */
};

/* One connection slot: it is made again after a close, with the same id. */
struct load_conn {
    int id, fd;
    uint32_t gen;                   /* bumped at each close: epoll events of old fds are stale */
    enum conn_state state;
    long long seq;                  /* requests sent by this slot */
    int target;                     /* the request in flight: its index in the targets */
    char key[65];                   /* its Idempotency-Key (--keys) */
    char *req;                      /* the request's bytes; owned */
    size_t req_len, req_off, req_cap;
    int64_t due_ns;                 /* --rate: when its request was due (0: no schedule) */
    int64_t start_ns;               /* first byte written */
    int64_t deadline_ns;            /* backoff end, connect or answer deadline */
    char *in;                       /* the answer's bytes so far; owned */
    size_t in_len, in_cap;
    struct answer ans;              /* the answer's parse: its status, body, close */
};

/* load_now_ns: returns CLOCK_MONOTONIC in nanoseconds. */
int64_t load_now_ns(void);

/* load_conn_open: a socket for c, watched by epfd (edge-triggered, its events tagged with
 * c's id and gen), connecting to sa. Returns CONN_IO_DONE when connected, CONN_IO_AGAIN
 * when the connect is under way, CONN_IO_FAILED with *err set. */
enum conn_io load_conn_open(struct load_conn *c, int epfd, const struct sockaddr_in *sa,
                            int *err);

/* load_conn_error: returns how c's connect under way ended: 0 (connected) or an errno. */
int load_conn_error(const struct load_conn *c);

/* load_conn_close: closes c's socket (its pending epoll events become stale); c is
 * CONN_CLOSED. */
void load_conn_close(struct load_conn *c);

/* load_conn_request: c's next request: head (head_len bytes), an Idempotency-Key header
 * when key is not NULL, the blank line; its answer is read from scratch. Exits when out
 * of memory. */
void load_conn_request(struct load_conn *c, const char *head, size_t head_len,
                       const char *key);

/* load_conn_send: writes what is left of c's request; at its first byte, c->start_ns is
 * set and c->deadline_ns is timeout_ns later. Returns CONN_IO_DONE when all is sent,
 * CONN_IO_AGAIN, CONN_IO_UNSENT (*err set) or CONN_IO_FAILED. */
enum conn_io load_conn_send(struct load_conn *c, int64_t timeout_ns, int *err);

/* load_conn_read: reads what has come on c. Returns CONN_IO_DONE when the answer is
 * complete (c->ans: its status, body and close; the body in c->in), CONN_IO_AGAIN, or
 * CONN_IO_FAILED (unreadable, over ANSWER_MAX, or the connection gone before its end).
 * Exits when out of memory. */
enum conn_io load_conn_read(struct load_conn *c);

#endif
