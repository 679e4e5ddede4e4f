/* error.c - Filling a struct error, and the names of its faults. */
#include "common/error.h"

#include <stdarg.h>
#include <stdio.h>

int error_set(struct error *err, enum fault fault, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return RESULT_ERROR;
    err->fault = fault;
    err->code[0] = '\0';
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return RESULT_ERROR;
}

int fault_is_io(enum fault fault)
{
    return fault == FAULT_CONNECTION || fault == FAULT_CONNECT || fault == FAULT_TIMEOUT ||
           fault == FAULT_LOADING || fault == FAULT_READONLY;
}

static const char *const names[] = {
    [FAULT_NONE] = "none",             [FAULT_CONNECT] = "connect",
    [FAULT_CONNECTION] = "connection", [FAULT_TIMEOUT] = "timeout",
    [FAULT_AUTH] = "auth",             [FAULT_LOADING] = "loading",
    [FAULT_READONLY] = "readonly",     [FAULT_NOREPLICAS] = "noreplicas",
    [FAULT_MOVING] = "moving",         [FAULT_REPLY] = "reply",
    [FAULT_PROTOCOL] = "protocol",     [FAULT_USAGE] = "usage",
    [FAULT_NOMEM] = "nomem",           [FAULT_QUORUM] = "quorum",
};

const char *fault_name(enum fault fault)
{
    return (unsigned)fault < sizeof(names) / sizeof(names[0]) ? names[fault] : "?";
}
