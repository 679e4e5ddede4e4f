/* error.c - The Redis layer's errors: filling a struct rd_error, its kinds' names, and
 * the map to the kinds the layers above see (common/error.h). */
#include "redis/redis.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int rd_fail(struct rd_error *err, enum rd_fault fault, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return RD_FAIL;
    err->fault = fault;
    err->code[0] = '\0';
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return RD_FAIL;
}

int rd_fault_is_io(enum rd_fault fault)
{
    return fault == RD_E_CONNECTION || fault == RD_E_CONNECT || fault == RD_E_TIMEOUT ||
           fault == RD_E_LOADING || fault == RD_E_READONLY;
}

int rd_fault_is_cluster(enum rd_fault fault)
{
    return fault == RD_E_MOVED || fault == RD_E_ASK || fault == RD_E_TRYAGAIN ||
           fault == RD_E_CLUSTERDOWN;
}

/* Each kind's name, and what the layers above see of it. */
static const struct {
    const char *name;
    enum fault up;
} kinds[] = {
    [RD_E_NONE] = { "none", FAULT_NONE },
    [RD_E_CONNECTION] = { "connection", FAULT_CONNECTION },
    [RD_E_CONNECT] = { "connect", FAULT_CONNECT },
    [RD_E_TIMEOUT] = { "timeout", FAULT_TIMEOUT },
    [RD_E_AUTH] = { "auth", FAULT_AUTH },
    [RD_E_LOADING] = { "loading", FAULT_LOADING },
    [RD_E_READONLY] = { "readonly", FAULT_READONLY },
    [RD_E_NOSCRIPT] = { "noscript", FAULT_REPLY },
    [RD_E_BUSY] = { "busy", FAULT_REPLY },
    [RD_E_NOREPLICAS] = { "noreplicas", FAULT_NOREPLICAS },
    [RD_E_MOVED] = { "moved", FAULT_MOVING },
    [RD_E_ASK] = { "ask", FAULT_MOVING },
    [RD_E_TRYAGAIN] = { "tryagain", FAULT_MOVING },
    [RD_E_CLUSTERDOWN] = { "clusterdown", FAULT_MOVING },
    [RD_E_REPLY] = { "reply", FAULT_REPLY },
    [RD_E_PROTOCOL] = { "protocol", FAULT_PROTOCOL },
    [RD_E_USAGE] = { "usage", FAULT_USAGE },
    [RD_E_NOMEM] = { "nomem", FAULT_NOMEM },
};
enum { KINDS = sizeof(kinds) / sizeof(kinds[0]) };

const char *rd_fault_name(enum rd_fault fault)
{
    return (unsigned)fault < KINDS ? kinds[fault].name : "?";
}

void rd_error_map(const struct rd_error *from, struct error *to)
{
    if (to == NULL)
        return;
    to->fault = (unsigned)from->fault < KINDS ? kinds[from->fault].up : FAULT_REPLY;
    snprintf(to->code, sizeof(to->code), "%s", from->code);
    snprintf(to->msg, sizeof(to->msg), "%s", from->msg);
}
