/* command.c - How a store talks to the data Redis: one command or script with what the
 * caller sent along (a trip), in one round trip, through the Redis layer. The lock's
 * boundary with that layer: its errors are mapped here to the kinds the lock reports. */
#include "lock/internal.h"

#include <stdarg.h>

/* Runs the one command of b with trip's batches around it; b is reset. */
static struct rd_reply *run(struct lock_client *lc, const struct lock_trip *trip,
                            struct rd_batch *b, int types, const char *what,
                            struct error *err)
{
    struct rd_error why = { 0 };
    struct rd_reply *r = rd_call_batch(lc->redis, trip ? trip->before : NULL, b,
                                       trip ? trip->after : NULL, types, what, &why);

    if (r == NULL)
        rd_error_map(&why, err);
    return r;
}

struct rd_reply *lock_command(struct lock_client *lc, const struct lock_trip *trip, int types,
                              struct error *err, const char *fmt, ...)
{
    struct rd_batch b = { 0 };
    struct rd_error why = { 0 };
    va_list ap;
    int st;

    va_start(ap, fmt);
    st = rd_batch_vadd(&b, &why, fmt, ap);
    va_end(ap);
    if (st != RD_OK) {
        rd_error_map(&why, err);
        return NULL;
    }
    return run(lc, trip, &b, types, fmt, err);
}

struct rd_reply *lock_eval(struct lock_client *lc, const struct lock_trip *trip,
                           const struct rd_script *s, int types, int nkeys, int nargs,
                           const char **argv, struct error *err)
{
    struct rd_batch b = { 0 };
    struct rd_error why = { 0 };

    if (rd_batch_add_eval(&b, s, nkeys, nargs, argv, &why) != RD_OK) {
        rd_error_map(&why, err);
        return NULL;
    }
    return run(lc, trip, &b, types, s->name, err);
}

int lock_trip_send(struct lock_client *lc, const struct lock_trip *trip, struct error *err)
{
    struct rd_error why = { 0 };

    if (trip == NULL || ((trip->before == NULL || trip->before->n == 0) &&
                         (trip->after == NULL || trip->after->n == 0)))
        return LOCK_OK;
    if (rd_round_trip(lc->redis, trip->before, NULL, trip->after, &why) == RD_OK)
        return LOCK_OK;
    rd_error_map(&why, err);
    return LOCK_ERROR;
}

int lock_pause_here(struct lock_client *lc, struct lock_trip *trip, struct error *err)
{
    struct lock_trip writes = lock_trip_before(trip);

    if (trip == NULL || trip->pause == NULL || trip->pause->fn == NULL)
        return LOCK_OK;
    trip->before = NULL;
    if (lock_trip_send(lc, &writes, err) != LOCK_OK)
        return LOCK_ERROR;
    trip->pause->fn(trip->pause->arg);
    return LOCK_OK;
}

struct lock_trip lock_trip_before(const struct lock_trip *trip)
{
    return (struct lock_trip){ .before = trip ? trip->before : NULL };
}

struct lock_trip lock_trip_after(const struct lock_trip *trip)
{
    return (struct lock_trip){ .after = trip ? trip->after : NULL };
}
