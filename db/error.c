/* error.c - The database layer's errors: a server's or the client library's error number
 * as an enum db_fault, filling a struct db_error, and the map to common/error.h. */
#include "db/internal.h"

#include <errmsg.h>
#include <mysqld_error.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int db_fail(struct db_error *err, enum db_fault fault, int code, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL)
        return DB_FAIL;
    err->fault = fault;
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    va_end(ap);
    return DB_FAIL;
}

/* The server's answers, by number (MariaDB's, and MySQL's where they differ). */
static const struct {
    unsigned code;
    enum db_fault fault;
} answers[] = {
    { ER_DBACCESS_DENIED_ERROR, DB_E_AUTH },          /* 1044 */
    { ER_ACCESS_DENIED_ERROR, DB_E_AUTH },            /* 1045 */
    { ER_TABLEACCESS_DENIED_ERROR, DB_E_AUTH },       /* 1142 */
    { ER_COLUMNACCESS_DENIED_ERROR, DB_E_AUTH },      /* 1143 */
    { ER_SPECIFIC_ACCESS_DENIED_ERROR, DB_E_AUTH },   /* 1227 */
    { ER_PROCACCESS_DENIED_ERROR, DB_E_AUTH },        /* 1370 */
    { ER_ACCESS_DENIED_NO_PASSWORD_ERROR, DB_E_AUTH }, /* 1698 */
    { ER_HOST_NOT_PRIVILEGED, DB_E_AUTH },            /* 1130 */
    { ER_BAD_DB_ERROR, DB_E_NO_DB },                  /* 1049 */
    { ER_NO_SUCH_TABLE, DB_E_NO_TABLE },              /* 1146 */
    { ER_LOCK_WAIT_TIMEOUT, DB_E_LOCK_WAIT },         /* 1205; MariaDB's NOWAIT and WAIT n */
    { 3572, DB_E_LOCK_WAIT },                         /* MySQL's NOWAIT */
    { ER_STATEMENT_TIMEOUT, DB_E_LOCK_WAIT },         /* 1969: max_statement_time ran out;
                                                         as 1205: the statement did not
                                                         run, the transaction is open */
    { ER_LOCK_DEADLOCK, DB_E_DEADLOCK },              /* 1213; Galera's certification */
    { ER_DUP_ENTRY, DB_E_DUP },                       /* 1062 */
    { ER_DUP_ENTRY_WITH_KEY_NAME, DB_E_DUP },         /* 1586 */
    { ER_UNKNOWN_COM_ERROR, DB_E_NOT_READY },         /* 1047: a Galera node not primary */
    { ER_SERVER_SHUTDOWN, DB_E_NOT_READY },           /* 1053 */
    { ER_OPTION_PREVENTS_STATEMENT, DB_E_NOT_READY }, /* 1290: --read-only */
    { ER_READ_ONLY_MODE, DB_E_NOT_READY },            /* 1836 */
    { ER_CONNECTION_KILLED, DB_E_LOST },              /* 1927: KILL of this connection */
    { ER_ERROR_DURING_COMMIT, DB_E_LOST },            /* 1180: a Galera node left the
                                                         majority with the COMMIT out: the
                                                         others may have committed it */
    { ER_CON_COUNT_ERROR, DB_E_CONNECT },             /* 1040: max_connections reached */
    { ER_TOO_MANY_USER_CONNECTIONS, DB_E_CONNECT },   /* 1203 */
    { ER_HOST_IS_BLOCKED, DB_E_CONNECT },             /* 1129 */
};

/* The client library's own errors (2000..2999, 5000..): what became of the link. */
static enum db_fault client_fault(unsigned code, int connecting)
{
    switch (code) {
    case CR_CONNECTION_ERROR:       /* 2002 */
    case CR_CONN_HOST_ERROR:        /* 2003 */
    case CR_IPSOCK_ERROR:           /* 2004 */
    case CR_UNKNOWN_HOST:           /* 2005 */
    case CR_SOCKET_CREATE_ERROR:    /* 2001 */
        return DB_E_CONNECT;
    case CR_SERVER_GONE_ERROR:      /* 2006 */
    case CR_SERVER_LOST:            /* 2013: also a read or write timeout */
    case CR_SERVER_LOST_EXTENDED:   /* 2055 */
    case CR_ERR_NET_READ:           /* 5013 */
    case CR_ERR_NET_WRITE:          /* 5014 */
        return connecting ? DB_E_CONNECT : DB_E_LOST;
    case CR_AUTH_PLUGIN_CANNOT_LOAD: /* 2059 */
    case CR_AUTH_PLUGIN_ERR:        /* 2061 */
        return DB_E_AUTH;
    case CR_OUT_OF_MEMORY:          /* 2008 */
        return DB_E_NOMEM;
    default:
        return connecting ? DB_E_CONNECT : DB_E_OTHER;
    }
}

int db_code_is_client(unsigned code)
{
    return (code >= CR_MIN_ERROR && code <= CR_MAX_ERROR) || code >= CR_EVENT_CREATE_FAILED;
}

enum db_fault db_fault_of(unsigned code, int connecting)
{
    size_t i;

    if (db_code_is_client(code))
        return client_fault(code, connecting);
    for (i = 0; i < sizeof(answers) / sizeof(answers[0]); i++)
        if (answers[i].code == code)
            return answers[i].fault;
    return DB_E_OTHER;
}

void db_count_failure(struct db_client *dc, enum db_fault fault)
{
    if (dc != NULL && (unsigned)fault <= DB_E_OTHER)
        atomic_fetch_add(&dc->failed[fault], 1);
}

int db_fail_mysql(struct db_client *dc, MYSQL *my, int connecting, const char *what,
                  struct db_error *err)
{
    unsigned code = mysql_errno(my);
    enum db_fault fault = db_fault_of(code, connecting);

    db_count_failure(dc, fault);
    /* mysql_error: the server's message (it names the user, never the password). */
    return db_fail(err, fault, (int)code, "%s%s (%u)", what, mysql_error(my), code);
}

/* Each kind's name (its code above), and what the layers above see of it. */
static const struct {
    const char *name;
    enum fault up;
} kinds[] = {
    [DB_E_NONE] = { "none", FAULT_NONE },
    [DB_E_CONNECT] = { "connect", FAULT_CONNECT },
    [DB_E_LOST] = { "lost", FAULT_CONNECTION },
    [DB_E_AUTH] = { "auth", FAULT_AUTH },
    [DB_E_NO_DB] = { "no_database", FAULT_REPLY },
    [DB_E_NO_TABLE] = { "no_table", FAULT_REPLY },
    [DB_E_LOCK_WAIT] = { "lock_wait", FAULT_REPLY },
    [DB_E_DEADLOCK] = { "deadlock", FAULT_REPLY },
    [DB_E_DUP] = { "duplicate", FAULT_REPLY },
    [DB_E_NOT_READY] = { "not_ready", FAULT_READONLY },
    [DB_E_USAGE] = { "usage", FAULT_USAGE },
    [DB_E_NOMEM] = { "nomem", FAULT_NOMEM },
    [DB_E_OTHER] = { "other", FAULT_REPLY },
};
enum { KINDS = sizeof(kinds) / sizeof(kinds[0]) };

const char *db_fault_name(enum db_fault fault)
{
    return (unsigned)fault < KINDS ? kinds[fault].name : "?";
}

void db_error_map(const struct db_error *from, struct error *to)
{
    if (to == NULL)
        return;
    to->fault = (unsigned)from->fault < KINDS ? kinds[from->fault].up : FAULT_REPLY;
    snprintf(to->code, sizeof(to->code), "%s",
             to->fault == FAULT_REPLY ? db_fault_name(from->fault) : "");
    snprintf(to->msg, sizeof(to->msg), "%.*s", (int)sizeof(to->msg) - 1, from->msg);
}
