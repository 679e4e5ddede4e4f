/* store.c - The stock and the data Redis's health, through the Redis layer; one log line
 * when Redis goes away and one when it comes back. */
#include "service/service.h"

#include <stdio.h>

void store_log_state(void *arg, int up, const char *why)
{
    (void)arg;
    if (up)
        log_event("INFO", "redis %s reachable again", svc.redis_label);
    else
        log_event("WARN", "redis %s unreachable: %s", svc.redis_label,
                  why && *why ? why : "connection dropped");
}

int store_ping(void)
{
    struct lock_error err;
    struct rd_reply *r = rd_call(svc_redis, RD_T(RD_STATUS), &err, "PING");

    rd_reply_free(r);
    return r != NULL;
}

enum sale_result store_read(const char *item, long long *stock, long long *sold, char *msg,
                            size_t msg_size)
{
    struct lock_error err;
    struct rd_reply *r = rd_call(svc_redis, RD_T(RD_ARRAY), &err, "MGET stock:{%s} sold:{%s}",
                                 item, item);
    enum sale_result res;

    if (r == NULL && (lock_fault_is_io(err.fault) || lock_fault_is_cluster(err.fault) ||
                      err.fault == LOCK_E_AUTH))
        return SALE_REDIS_DOWN;
    if (r == NULL || r->elements != 2) {
        rd_reply_free(r);
        snprintf(msg, msg_size, "MGET: unexpected reply");
        return SALE_ERROR;
    }
    res = sale_stock_of(r->element[0], item, stock, msg, msg_size);
    *sold = 0;
    if (r->element[1]->type == RD_STRING && parse_integer(r->element[1]->str, sold) != 0)
        *sold = 0;
    rd_reply_free(r);
    return res;
}
