/* reply.c - Replies as the layer hands them out (struct rd_reply), built by hiredis's
 * reader through our own functions, with every error reply typed as it is read. */
#include "redis/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>

/* An error reply's code (its first word) and the fault it means. */
static const struct {
    const char *code;
    enum rd_fault fault;
} codes[] = {
    { "NOSCRIPT", RD_E_NOSCRIPT },   { "READONLY", RD_E_READONLY },
    { "LOADING", RD_E_LOADING },     { "BUSY", RD_E_BUSY },
    { "NOREPLICAS", RD_E_NOREPLICAS }, { "MOVED", RD_E_MOVED },
    { "ASK", RD_E_ASK },             { "TRYAGAIN", RD_E_TRYAGAIN },
    { "CLUSTERDOWN", RD_E_CLUSTERDOWN }, { "NOAUTH", RD_E_AUTH },
    { "WRONGPASS", RD_E_AUTH },      { "NOPERM", RD_E_AUTH },
};

static size_t code_len(const char *s, size_t len)
{
    size_t n = 0;

    while (n < len && s[n] != ' ')
        n++;
    return n;
}

static enum rd_fault fault_of(const char *s, size_t len)
{
    size_t n = code_len(s, len);

    for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
        if (strlen(codes[i].code) == n && memcmp(codes[i].code, s, n) == 0)
            return codes[i].fault;
    return RD_E_REPLY;
}

/* Links r into its parent array, as hiredis's own functions do. */
static void *placed(const redisReadTask *task, struct rd_reply *r)
{
    if (task->parent) {
        struct rd_reply *parent = task->parent->obj;
        parent->element[task->idx] = r;
    }
    return r;
}

static struct rd_reply *reply_new(const redisReadTask *task)
{
    struct rd_reply *r = calloc(1, sizeof(*r));

    if (r)
        r->type = (enum rd_type)task->type;
    return r;
}

static void *create_string(const redisReadTask *task, char *str, size_t len)
{
    struct rd_reply *r = reply_new(task);

    if (r == NULL || (r->str = malloc(len + 1)) == NULL) {
        free(r);
        return NULL;
    }
    memcpy(r->str, str, len);
    r->str[len] = '\0';
    r->len = len;
    if (r->type == RD_ERROR)
        r->fault = fault_of(str, len);
    return placed(task, r);
}

static void *create_array(const redisReadTask *task, int elements)
{
    struct rd_reply *r = reply_new(task);

    if (r == NULL)
        return NULL;
    if (elements > 0 && (r->element = calloc((size_t)elements, sizeof(*r->element))) == NULL) {
        free(r);
        return NULL;
    }
    r->elements = elements > 0 ? (size_t)elements : 0;
    return placed(task, r);
}

static void *create_integer(const redisReadTask *task, long long value)
{
    struct rd_reply *r = reply_new(task);

    if (r == NULL)
        return NULL;
    r->integer = value;
    return placed(task, r);
}

/* A nil bulk string or array: the task says string or array, the reply is nil. */
static void *create_nil(const redisReadTask *task)
{
    struct rd_reply *r = reply_new(task);

    if (r == NULL)
        return NULL;
    r->type = RD_NIL;
    return placed(task, r);
}

void rd_reply_free(struct rd_reply *r)
{
    if (r == NULL)
        return;
    for (size_t i = 0; i < r->elements; i++)
        rd_reply_free(r->element[i]);
    free(r->element);
    free(r->str);
    free(r);
}

static void free_object(void *r)
{
    rd_reply_free(r);
}

redisReplyObjectFunctions rd_reply_functions = {
    .createString = create_string,
    .createArray = create_array,
    .createInteger = create_integer,
    .createNil = create_nil,
    .freeObject = free_object,
};

int rd_reply_error(const struct rd_reply *r, struct rd_error *err)
{
    size_t n = code_len(r->str, r->len);

    rd_fail(err, r->fault, "%.120s", r->str);
    if (err && n < sizeof(err->code)) {
        memcpy(err->code, r->str, n);
        err->code[n] = '\0';
    }
    return RD_FAIL;
}

struct rd_reply *rd_expect(struct rd_reply *r, int types, const char *what,
                           struct rd_error *err)
{
    if (r == NULL || (types & RD_T(r->type)))
        return r;
    if (r->type == RD_ERROR)
        rd_reply_error(r, err);
    else
        rd_fail(err, RD_E_PROTOCOL, "%.60s: unexpected reply type %d", what, r->type);
    rd_reply_free(r);
    return NULL;
}

int rd_context_error(const redisContext *c, const char *what, struct rd_error *err)
{
    /* hiredis reports a command timeout as an I/O error with EAGAIN. */
    enum rd_fault fault = c->err == REDIS_ERR_IO && (errno == EAGAIN || errno == EWOULDBLOCK)
                                ? RD_E_TIMEOUT
                            : c->err == REDIS_ERR_OOM ? RD_E_NOMEM
                                                      : RD_E_CONNECTION;

    return rd_fail(err, fault, "%.40s: %.80s", what, c->errstr);
}
