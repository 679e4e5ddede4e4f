/* answer.c - The load client's HTTP/1.x answer parser: head, headers, Content-Length,
 * chunks and trailers, as pure functions on the bytes come so far. */
#include "loadtest/answer.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* head_end: returns the length of the head (status line and headers, through the blank
 * line) when it is all in buf, 0 if partial; *scan keeps how far the search got. */
static size_t head_end(const char *buf, size_t len, size_t *scan)
{
    size_t i = *scan > 3 ? *scan - 3 : 0;

    for (; i + 4 <= len; i++)
        if (buf[i] == '\r' && memcmp(buf + i, "\r\n\r\n", 4) == 0)
            return i + 4;
    *scan = len;
    return 0;
}

/* header_is: returns 1 when the header line (len bytes, no CRLF) is name: value, with
 * *value and *vlen set to the value without its surrounding blanks; else 0. */
static int header_is(const char *line, size_t len, const char *name, const char **value,
                     size_t *vlen)
{
    size_t n = strlen(name);

    if (len <= n || line[n] != ':' || strncasecmp(line, name, n) != 0)
        return 0;
    *value = line + n + 1;
    *vlen = len - n - 1;
    while (*vlen && (**value == ' ' || **value == '\t'))
        (*value)++, (*vlen)--;
    while (*vlen && ((*value)[*vlen - 1] == ' ' || (*value)[*vlen - 1] == '\t'))
        (*vlen)--;
    return 1;
}

/* content_length: the value v (vl bytes) as a Content-Length into *length. Returns 0, or -1
 * when it is not a number within ANSWER_MAX. */
static int content_length(const char *v, size_t vl, size_t *length)
{
    *length = 0;
    for (size_t i = 0; i < vl; i++) {
        if (!isdigit((unsigned char)v[i]) || *length > ANSWER_MAX)
            return -1;
        *length = *length * 10 + (size_t)(v[i] - '0');
    }
    return vl > 0 && *length <= ANSWER_MAX ? 0 : -1;
}

/* header_apply: what one header line (len bytes, no CRLF) says about the body and the
 * connection, into a. Returns 0, or -1 on a Content-Length that is not a number within
 * ANSWER_MAX. */
static int header_apply(struct answer *a, const char *line, size_t len, int *has_length)
{
    const char *v;
    size_t vl;

    if (header_is(line, len, "Content-Length", &v, &vl)) {
        *has_length = vl > 0;
        return content_length(v, vl, &a->length);
    }
    if (header_is(line, len, "Transfer-Encoding", &v, &vl))
        a->kind = vl >= 7 && strncasecmp(v + vl - 7, "chunked", 7) == 0 ? ANSWER_CHUNKED
                                                                        : ANSWER_UNTIL_CLOSE;
    else if (header_is(line, len, "Connection", &v, &vl) && vl == 5 &&
             strncasecmp(v, "close", 5) == 0)
        a->close = 1;
    else if (header_is(line, len, "Connection", &v, &vl) && vl == 10 &&
             strncasecmp(v, "keep-alive", 10) == 0)
        a->close = 0;
    else if (header_is(line, len, "Retry-After", &v, &vl))
        a->retry_after = 1;
    return 0;
}

/* status_parse: returns the status of the status line "HTTP/1.x NNN ..." (buf holds at
 * least 16 bytes), -1 when it is not one. */
static int status_parse(const char *buf)
{
    int status = 0;

    if (strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
        return -1;
    for (int i = 9; i < 12; i++) {
        if (!isdigit((unsigned char)buf[i]))
            return -1;
        status = status * 10 + (buf[i] - '0');
    }
    return status >= 100 && status <= 599 ? status : -1;
}

/* head_parse: the status and how the body ends, from the head (len bytes through the
 * blank line), into a. Returns 0, or -1 when it is not an HTTP/1.x answer we can read. */
static int head_parse(struct answer *a, const char *buf, size_t len)
{
    const char *p, *eol;
    int has_length = 0;

    if (len < 16 || (a->status = status_parse(buf)) < 0)
        return -1;
    a->close = buf[7] == '0';                   /* HTTP/1.0 closes unless it says keep-alive */
    a->kind = ANSWER_LENGTH;
    a->length = 0;
    p = (const char *)memchr(buf, '\n', len) + 1;
    while ((eol = memchr(p, '\n', (size_t)(buf + len - p))) != NULL && eol - p > 1) {
        if (header_apply(a, p, (size_t)(eol - p - 1), &has_length) != 0)
            return -1;
        p = eol + 1;
    }
    /* Neither length nor chunks: the body ends at the close (1xx, 204, 304 have none). */
    if (a->kind == ANSWER_LENGTH && !has_length && a->status >= 200 && a->status != 204 &&
        a->status != 304)
        a->kind = ANSWER_UNTIL_CLOSE;
    if (a->kind == ANSWER_UNTIL_CLOSE)
        a->close = 1;
    return 0;
}

/* trailer_end: returns the offset after the blank line that ends the chunked trailers,
 * looking from offset i of p (len bytes), 0 if partial. */
static size_t trailer_end(const char *p, size_t len, size_t i)
{
    for (;;) {
        const char *nl = memchr(p + i, '\n', len - i);
        size_t l;

        if (nl == NULL)
            return 0;
        l = (size_t)(nl - (p + i));
        i += l + 1;
        if (l == 0 || (l == 1 && p[i - 2] == '\r'))
            return i;
    }
}

/* chunk_size: reads the hex size of the chunk at offset *i of p (len bytes) into *size,
 * *i past its digits. Returns the number of digits, or -1 when the size is over
 * ANSWER_MAX. */
static long chunk_size(const char *p, size_t len, size_t *i, size_t *size)
{
    long digits = 0;

    for (*size = 0; *i < len && isxdigit((unsigned char)p[*i]); (*i)++, digits++) {
        *size = *size * 16 + (size_t)(isdigit((unsigned char)p[*i]) ? p[*i] - '0'
                                                                    : (p[*i] | 0x20) - 'a' + 10);
        if (*size > ANSWER_MAX)
            return -1;
    }
    return digits;
}

long answer_chunked(char *p, size_t len, char *out, size_t *out_len)
{
    size_t i = 0, o = 0, size;
    const char *nl;
    long digits;

    for (;;) {
        if ((digits = chunk_size(p, len, &i, &size)) < 0)
            return -1;
        if ((nl = memchr(p + i, '\n', len - i)) == NULL)
            return -2;
        if (digits == 0)
            return -1;
        i = (size_t)(nl - p) + 1;               /* past any chunk extension */
        if (size == 0)
            break;
        if (len - i < size + 2)
            return -2;
        if (out)
            memmove(out + o, p + i, size);
        o += size;
        i += size;
        if (p[i] != '\r' || p[i + 1] != '\n')
            return -1;
        i += 2;
    }
    if ((i = trailer_end(p, len, i)) == 0)
        return -2;
    *out_len = o;
    return (long)i;
}

long answer_parse(struct answer *a, char *buf, size_t len)
{
    char *body;
    long n;

    if (a->head_len == 0) {
        size_t h = head_end(buf, len, &a->scan);
        if (h == 0)
            return -2;
        if (head_parse(a, buf, h) != 0)
            return -1;
        a->head_len = h;
    }
    a->body_off = a->head_len;
    body = buf + a->head_len;
    switch (a->kind) {
    case ANSWER_LENGTH:
        a->body_len = a->length;
        return len - a->head_len >= a->length ? (long)(a->head_len + a->length) : -2;
    case ANSWER_CHUNKED:
        n = answer_chunked(body, len - a->head_len, NULL, &a->body_len);
        if (n < 0)
            return n;
        answer_chunked(body, len - a->head_len, body, &a->body_len);
        return (long)a->head_len + n;
    default:
        return -2;                              /* complete at the close */
    }
}

long answer_closed(struct answer *a, size_t len)
{
    if (a->head_len == 0 || a->kind != ANSWER_UNTIL_CLOSE || len < a->head_len)
        return -1;
    a->body_off = a->head_len;
    a->body_len = len - a->head_len;
    return (long)len;
}
