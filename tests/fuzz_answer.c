/* fuzz_answer.c - libFuzzer target for loadtest/answer.c, the load client's HTTP answer
 * parser: the bytes are parsed whole, then delivered in pieces (byte by byte, and in up to
 * 16 pieces cut where a hash of them says), each call given a copy exactly as long as
 * the bytes come so far (ASan sees any read past them); each result is checked against
 * what answer.h promises and against a plain second reading of the chunked coding. A
 * broken promise aborts (a finding).
 *
 *   make build/fuzz_answer && build/fuzz_answer -max_total_time=30 tests/fuzz_corpus_answer
 */
#include "loadtest/answer.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

enum { BYTE_BY_BYTE_MAX = 512, PIECES_MAX = 16 };

/* What one parse of an answer gave; body is a copy (owned) when rc > 0. */
struct outcome {
    long rc;
    struct answer a;
    char *body;
};

static void promise(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_answer: promise broken: %s\n", what);
        abort();
    }
}

/* copy_of: len bytes of data in a block exactly that long (the caller frees). */
static char *copy_of(const uint8_t *data, size_t len)
{
    char *p = malloc(len);

    promise(p != NULL || len == 0, "memory for a copy");
    if (len > 0)
        memcpy(p, data, len);
    return p;
}

/* parse_step: answer_parse(a) on the first len bytes of data, in a copy of that length.
 * Fills out (its body copied when complete). */
static void parse_step(struct answer *a, const uint8_t *data, size_t len, struct outcome *out)
{
    char *buf = copy_of(data, len);

    out->rc = answer_parse(a, buf, len);
    out->a = *a;
    out->body = NULL;
    if (out->rc > 0) {
        promise(a->body_off <= (size_t)out->rc && a->body_len <= (size_t)out->rc - a->body_off,
                "answer_parse: the body lies within the bytes it took");
        out->body = copy_of((const uint8_t *)buf + a->body_off, a->body_len);
    }
    free(buf);
}

/* same_outcome: 1 when x and y say the same: result, status, close, body. */
static int same_outcome(const struct outcome *x, const struct outcome *y)
{
    if (x->rc != y->rc)
        return 0;
    if (x->rc == -1)
        return 1;
    if (x->a.head_len != y->a.head_len)
        return 0;
    if (x->a.head_len && (x->a.status != y->a.status || x->a.close != y->a.close ||
                          x->a.kind != y->a.kind))
        return 0;
    return x->rc < 0 || (x->a.body_len == y->a.body_len &&
                         memcmp(x->body, y->body, x->a.body_len) == 0);
}

/* hexval: the value of a hex digit. */
static size_t hexval(uint8_t c)
{
    return c <= '9' ? (size_t)(c - '0') : (size_t)((c | 0x20) - 'a' + 10);
}

/* ref_chunked: the chunked body p (len bytes) read plainly, line by line, by the rules
 * answer.h gives: a size in hex (at most ANSWER_MAX), anything to the LF, the data, CRLF;
 * after the 0 chunk, trailer lines to an empty one. Returns the bytes taken with the data
 * in out (room for len) and *out_len, -2 if partial, -1 when malformed. */
static long ref_chunked(const uint8_t *p, size_t len, uint8_t *out, size_t *out_len)
{
    size_t i = 0, o = 0;

    for (;;) {
        size_t size = 0, digits = 0;
        const uint8_t *lf;

        while (i + digits < len && isxdigit(p[i + digits])) {
            size = size * 16 + hexval(p[i + digits++]);
            if (size > ANSWER_MAX)
                return -1;
        }
        lf = memchr(p + i + digits, '\n', len - i - digits);
        if (lf == NULL)
            return -2;
        if (digits == 0)
            return -1;
        i = (size_t)(lf - p) + 1;
        if (size == 0)
            break;
        if (len - i < size + 2)
            return -2;
        memcpy(out + o, p + i, size);
        o += size;
        i += size;
        if (p[i] != '\r' || p[i + 1] != '\n')
            return -1;
        i += 2;
    }
    for (;;) {
        const uint8_t *lf = memchr(p + i, '\n', len - i);
        size_t l;

        if (lf == NULL)
            return -2;
        l = (size_t)(lf - (p + i));
        i += l + 1;
        if (l == 0 || (l == 1 && p[i - 2] == '\r'))
            break;
    }
    *out_len = o;
    return (long)i;
}

/* check_chunked: answer_chunked on the bytes as a chunked body, with and without a copy
 * out, in place, against ref_chunked. */
static void check_chunked(const uint8_t *data, size_t size)
{
    char *buf = copy_of(data, size), *out = copy_of(data, size);
    uint8_t *ref = malloc(size ? size : 1);
    size_t n1 = 0, n2 = 0, n3 = 0, nr = 0;
    long r1 = answer_chunked(buf, size, NULL, &n1);
    long r2 = answer_chunked(buf, size, out, &n2);
    long rr = ref_chunked(data, size, ref, &nr);

    promise(r1 == -1 || r1 == -2 || (r1 > 0 && (size_t)r1 <= size),
            "answer_chunked: bytes taken, -2 or -1");
    promise(r1 == rr, "answer_chunked: the same result as a plain reading");
    promise(r1 == r2, "answer_chunked: the same result with a copy out");
    if (r1 > 0) {
        promise(n1 == nr && n2 == nr && memcmp(out, ref, nr) == 0,
                "answer_chunked: the data of the chunks, copied out");
        promise(answer_chunked(buf, size, buf, &n3) == r1 && n3 == nr &&
                memcmp(buf, ref, nr) == 0, "answer_chunked: the data moved together in place");
    }
    free(buf);
    free(out);
    free(ref);
}

/* head_is_plain: 1 when every line of the head (len bytes) ends in CRLF, has no other CR
 * or LF and (but the last) is not empty: where the head needs no leniency. */
static int head_is_plain(const uint8_t *h, size_t len)
{
    size_t start = 0;

    for (size_t i = 0; i < len; i++) {
        if (h[i] == '\r' && (i + 1 >= len || h[i + 1] != '\n'))
            return 0;
        if (h[i] != '\n')
            continue;
        if (i == 0 || h[i - 1] != '\r' || (i - start < 2 && i + 1 < len))
            return 0;
        start = i + 1;
    }
    return 1;
}

/* ref_content_length: the last Content-Length of a plain head (len bytes), read plainly;
 * -1 when there is none, -2 when one is not a bare number. */
static long ref_content_length(const uint8_t *h, size_t len)
{
    long found = -1;
    const uint8_t *p = memchr(h, '\n', len) + 1, *end = h + len;

    while (p < end) {
        const uint8_t *eol = memchr(p, '\r', (size_t)(end - p));
        const uint8_t *v = p + 15, *ve = eol;

        if (eol - p > 15 && strncasecmp((const char *)p, "Content-Length:", 15) == 0) {
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            found = ve > v ? 0 : -2;
            for (; v < ve && found >= 0; v++)
                found = isdigit(*v) && found <= ANSWER_MAX ? found * 10 + (*v - '0') : -2;
        }
        p = eol + 2;
    }
    return found;
}

/* check_complete: a complete answer (whole, data its size bytes) as answer.h promises. */
static void check_complete(const struct outcome *w, const uint8_t *data, size_t size)
{
    const struct answer *a = &w->a;
    uint8_t *ref = malloc(size ? size : 1);
    size_t nr = 0;
    long cl;

    promise((size_t)w->rc <= size, "complete: took no more than it was given");
    promise(a->head_len >= 16 && a->head_len <= (size_t)w->rc &&
            memcmp(data + a->head_len - 4, "\r\n\r\n", 4) == 0,
            "complete: the head ends at a blank line");
    promise(memmem(data, a->head_len - 1, "\r\n\r\n", 4) == NULL,
            "complete: the head ends at the first blank line");
    promise(a->status >= 100 && a->status <= 599 && memcmp(data, "HTTP/1.", 7) == 0 &&
            a->status == (data[9] - '0') * 100 + (data[10] - '0') * 10 + (data[11] - '0'),
            "complete: an HTTP/1.x status line and its status");
    promise(a->body_off == a->head_len, "complete: the body follows the head");
    promise(a->kind != ANSWER_UNTIL_CLOSE, "complete: a body until the close is not complete");
    if (a->kind == ANSWER_LENGTH) {
        promise(a->length <= ANSWER_MAX && a->body_len == a->length &&
                (size_t)w->rc == a->head_len + a->length &&
                memcmp(w->body, data + a->head_len, a->length) == 0,
                "complete: the body is the Content-Length bytes after the head");
        cl = ref_content_length(data, a->head_len);
        if (head_is_plain(data, a->head_len))
            promise(cl == (long)a->length || (cl == -1 && a->length == 0),
                    "complete: the body length is the Content-Length header's");
    } else {
        long rr = ref_chunked(data + a->head_len, size - a->head_len, ref, &nr);
        promise(rr > 0 && (size_t)w->rc == a->head_len + (size_t)rr && a->body_len == nr &&
                memcmp(w->body, ref, nr) == 0,
                "complete: the body is the chunks' data, to the end of the trailers");
    }
    free(ref);
}

/* check_whole: the promises of one parse of the whole input. */
static void check_whole(struct outcome *w, const uint8_t *data, size_t size)
{
    struct answer a = { 0 };

    parse_step(&a, data, size, w);
    promise(w->rc == -1 || w->rc == -2 || w->rc > 0, "answer_parse: bytes taken, -2 or -1");
    if (w->rc > 0)
        check_complete(w, data, size);
    if (a.head_len && a.kind == ANSWER_UNTIL_CLOSE)
        promise(a.close == 1, "a body until the close: the connection closes");
    if (w->rc != -2)
        return;
    if (a.head_len && a.kind == ANSWER_UNTIL_CLOSE)
        promise(answer_closed(&a, size) == (long)size && a.body_off == a.head_len &&
                a.body_len == size - a.head_len, "answer_closed: the body is all after the head");
    else
        promise(answer_closed(&a, size) == -1, "answer_closed: an answer cut short");
}

/* check_pieces: the input in pieces ending at cuts[0..n-1] (rising, the last = size):
 * the first result that is not partial (or the last) is the whole's; with fresh, each
 * prefix parsed anew says the same as the pieces so far, and its -1 or completion is the
 * whole's. */
static void check_pieces(const struct outcome *w, const uint8_t *data, const size_t *cuts,
                         size_t n, int fresh)
{
    struct answer a = { 0 };
    struct outcome step = { 0 };

    for (size_t i = 0; i < n; i++) {
        free(step.body);
        parse_step(&a, data, cuts[i], &step);
        if (fresh) {
            struct answer b = { 0 };
            struct outcome once;

            parse_step(&b, data, cuts[i], &once);
            promise(same_outcome(&step, &once), "in pieces: the same as the bytes so far at once");
            free(once.body);
        }
        if (step.rc != -2)
            break;
    }
    promise(same_outcome(&step, w), "in pieces: the same result as whole (an error stays one)");
    free(step.body);
}

/* cuts_hashed: up to PIECES_MAX cuts of size bytes, where a hash of the bytes says. */
static size_t cuts_hashed(const uint8_t *data, size_t size, size_t *cuts)
{
    uint64_t h = 1469598103934665603ULL;
    size_t n = 0, at = 0;

    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ULL;
    while (n + 1 < PIECES_MAX && at < size) {
        h ^= h >> 29;
        h *= 0xbf58476d1ce4e5b9ULL;
        at += 1 + (size_t)(h >> 33) % (size / 4 + 1);
        if (at < size)
            cuts[n++] = at;
    }
    cuts[n++] = size;
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct outcome whole;
    size_t cuts[PIECES_MAX], n;

    check_chunked(data, size);
    check_whole(&whole, data, size);
    if (size > 0) {
        n = cuts_hashed(data, size, cuts);
        check_pieces(&whole, data, cuts, n, 1);
    }
    if (size > 0 && size <= BYTE_BY_BYTE_MAX) {
        size_t *each = malloc(size * sizeof(*each));

        promise(each != NULL, "memory for the cuts");
        for (size_t i = 0; i < size; i++)
            each[i] = i + 1;
        check_pieces(&whole, data, each, size, 0);
        free(each);
    }
    free(whole.body);
    return 0;
}
