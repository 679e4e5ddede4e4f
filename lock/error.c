/* error.c - Filling a struct lock_error, and the names of its faults. */
#include "lock/error.h"

#include <stdarg.h>
#include <stdio.h>

int lock_fail(struct lock_error *err, enum lock_fault fault, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return LOCK_ERROR;
    err->fault = fault;
    err->code[0] = '\0';
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return LOCK_ERROR;
}

int lock_fault_is_io(enum lock_fault fault)
{
    return fault == LOCK_E_CONNECTION || fault == LOCK_E_CONNECT || fault == LOCK_E_TIMEOUT || fault == LOCK_E_LOADING ||
           fault == LOCK_E_READONLY;
}

int lock_fault_is_cluster(enum lock_fault fault)
{
    return fault == LOCK_E_MOVED || fault == LOCK_E_ASK || fault == LOCK_E_TRYAGAIN ||
           fault == LOCK_E_CLUSTERDOWN;
}

static const char *const names[] = {
    [LOCK_E_NONE] = "none",           [LOCK_E_CONNECTION] = "connection",
    [LOCK_E_CONNECT] = "connect",
    [LOCK_E_TIMEOUT] = "timeout",     [LOCK_E_AUTH] = "auth",
    [LOCK_E_LOADING] = "loading",     [LOCK_E_READONLY] = "readonly",
    [LOCK_E_NOSCRIPT] = "noscript",   [LOCK_E_BUSY] = "busy",
    [LOCK_E_NOREPLICAS] = "noreplicas", [LOCK_E_MOVED] = "moved",
    [LOCK_E_ASK] = "ask",             [LOCK_E_TRYAGAIN] = "tryagain",
    [LOCK_E_CLUSTERDOWN] = "clusterdown", [LOCK_E_REPLY] = "reply",
    [LOCK_E_PROTOCOL] = "protocol",   [LOCK_E_USAGE] = "usage",
    [LOCK_E_NOMEM] = "nomem",         [LOCK_E_QUORUM] = "quorum",
};

const char *lock_fault_name(enum lock_fault fault)
{
    return (unsigned)fault < sizeof(names) / sizeof(names[0]) ? names[fault] : "?";
}
