/* answer.h - The load client's HTTP/1.x answer parser: status line, headers, a body by
 * Content-Length, chunks or the close. Pure functions on a buffer: no socket, no
 * allocation (fuzzed by tests/fuzz_answer.c). */
#ifndef LOADTEST_ANSWER_H
#define LOADTEST_ANSWER_H

#include <stddef.h>

/* Bytes of one answer, at most: a larger Content-Length or chunk is an error. */
#define ANSWER_MAX (1 << 20)

/* How an answer's body ends. */
enum answer_body {
    ANSWER_LENGTH,              /* after Content-Length bytes (none: 1xx, 204, 304) */
    ANSWER_CHUNKED,             /* after the last chunk and its trailers */
    ANSWER_UNTIL_CLOSE,         /* when the server closes the connection */
};

/* The parse state of one answer: all zero before its first byte. Offsets, not pointers:
 * the buffer may move (grow) between two calls. */
struct answer {
    size_t scan;                /* bytes searched for the end of the head */
    size_t head_len;            /* the head through its blank line; 0 until it all came */
    int status;                 /* 100..599, once head_len is set */
    int close;                  /* 1: the server closes the connection after this answer */
    int retry_after;            /* 1: the head has a Retry-After header */
    enum answer_body kind;
    size_t length;              /* Content-Length (ANSWER_LENGTH) */
    size_t body_off;            /* the body, once complete: body_len bytes at buf + body_off */
    size_t body_len;
};

/* answer_parse: parses buf, the len bytes of the answer so far (those of the last call and
 * more). Returns the bytes the answer took when it is complete (a chunked body's data then
 * moved together in place at body_off: call it no more), -2 if partial, -1 on error. */
long answer_parse(struct answer *a, char *buf, size_t len);

/* answer_closed: the server closed the connection after len bytes (those answer_parse was
 * last given). Returns len when that completes the answer (a body that ends at the close),
 * -1 when the answer was cut short. */
long answer_closed(struct answer *a, size_t len);

/* answer_chunked: walks a chunked body p (len bytes so far), copying its data to out when
 * out is not NULL (out may be p: the copy only moves bytes back). Returns the bytes the
 * body took, its trailers included, with *out_len set, when it is complete; -2 if partial,
 * -1 on error. */
long answer_chunked(char *p, size_t len, char *out, size_t *out_len);

#endif
