/* load_conn.c - One keep-alive connection of sale-load: connect, send a request, read its
 * answer (parsed by loadtest/answer.c); it says what happened and decides nothing. */
#include "loadtest/load_conn.h"

#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

int64_t load_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* out_of_memory: says so and exits 1 (a load client that cannot hold its requests has no
 * run to report). */
static void out_of_memory(void)
{
    fputs("sale-load: out of memory\n", stderr);
    exit(1);
}

enum conn_io load_conn_open(struct load_conn *c, int epfd, const struct sockaddr_in *sa,
                            int *err)
{
    struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET };
    int one = 1;

    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) {
        *err = errno;
        return CONN_IO_FAILED;
    }
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    ev.data.u64 = (uint64_t)c->gen << 32 | (uint32_t)c->id;
    if (epoll_ctl(epfd, EPOLL_CTL_ADD, c->fd, &ev) != 0) {
        *err = errno;
        return CONN_IO_FAILED;
    }
    if (connect(c->fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0)
        return CONN_IO_DONE;
    if (errno == EINPROGRESS)
        return CONN_IO_AGAIN;
    *err = errno;
    return CONN_IO_FAILED;
}

int load_conn_error(const struct load_conn *c)
{
    int err = 0;
    socklen_t len = sizeof(err);

    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    return err;
}

void load_conn_close(struct load_conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->gen++;
    c->state = CONN_CLOSED;
}

void load_conn_request(struct load_conn *c, const char *head, size_t head_len,
                       const char *key)
{
    size_t need = head_len + sizeof(c->key) + 24;

    if (need > c->req_cap) {
        free(c->req);
        c->req_cap = need;
        if ((c->req = malloc(need)) == NULL)
            out_of_memory();
    }
    memcpy(c->req, head, head_len);
    c->req_len = head_len;
    if (key)
        c->req_len += (size_t)sprintf(c->req + c->req_len, "Idempotency-Key: %.64s\r\n", key);
    memcpy(c->req + c->req_len, "\r\n", 2);
    c->req_len += 2;
    c->req_off = 0;
    c->in_len = 0;
    c->ans = (struct answer){ 0 };
}

enum conn_io load_conn_send(struct load_conn *c, int64_t timeout_ns, int *err)
{
    while (c->req_off < c->req_len) {
        int64_t t = load_now_ns();
        ssize_t n = send(c->fd, c->req + c->req_off, c->req_len - c->req_off, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return CONN_IO_AGAIN;
        if (n <= 0 && c->req_off == 0) {
            *err = n < 0 ? errno : EPIPE;
            return CONN_IO_UNSENT;
        }
        if (n <= 0)
            return CONN_IO_FAILED;
        if (c->req_off == 0) {
            c->start_ns = t;
            c->deadline_ns = t + timeout_ns;
        }
        c->req_off += (size_t)n;
    }
    return CONN_IO_DONE;
}

/* in_grow: room for more of the answer in c->in. Returns 0, or -1 when the answer would
 * pass ANSWER_MAX. */
static int in_grow(struct load_conn *c)
{
    if (c->in_cap >= ANSWER_MAX)
        return -1;
    c->in_cap = c->in_cap ? 2 * c->in_cap : 4096;
    c->in = realloc(c->in, c->in_cap);
    if (c->in == NULL)
        out_of_memory();
    return 0;
}

enum conn_io load_conn_read(struct load_conn *c)
{
    for (;;) {
        ssize_t n;
        long rc;

        if (c->in_len == c->in_cap && in_grow(c) != 0)
            return CONN_IO_FAILED;
        n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return CONN_IO_AGAIN;
        if (n == 0)                             /* the close may end a body */
            return answer_closed(&c->ans, c->in_len) > 0 ? CONN_IO_DONE : CONN_IO_FAILED;
        if (n < 0)
            return CONN_IO_FAILED;
        c->in_len += (size_t)n;
        rc = answer_parse(&c->ans, c->in, c->in_len);
        if (rc != -2)
            return rc > 0 ? CONN_IO_DONE : CONN_IO_FAILED;
    }
}
