/* slot.c - Which of Redis Cluster's 16384 slots a key, or a command, belongs to: CRC16
 * (XMODEM) of the key's hash tag (the part between the first '{' and the next '}', when
 * not empty) or of the whole key, mod 16384, as Redis's keyHashSlot does. A command's
 * keys are found from its formatted RESP, by a small table of the commands this project
 * sends (a cluster client needs the key positions: redis-cli and ioredis keep the same
 * kind of table). */
#include "redis/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* CRC16 CCITT (XMODEM: polynomial 0x1021, initial 0), bit by bit: keys are short. */
static unsigned crc16(const char *buf, size_t len)
{
    unsigned crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (int bit = 0; bit < 8; bit++)
            crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
    }
    return crc & 0xffff;
}

unsigned rd_key_slot(const char *key, size_t len)
{
    const char *open = memchr(key, '{', len), *close;

    if (open && (close = memchr(open + 1, '}', len - (size_t)(open + 1 - key))) != NULL &&
        close > open + 1)
        return crc16(open + 1, (size_t)(close - open - 1)) & (RD_SLOTS - 1);
    return crc16(key, len) & (RD_SLOTS - 1);
}

/* Where a command's keys are. */
enum keys_at {
    KEYS_FIRST,      /* its first argument (GET, SET, INCR, PUBLISH's channel, ...) */
    KEYS_ALL,        /* every argument (MGET, DEL, EXISTS) */
    KEYS_EVAL,       /* EVAL/EVALSHA script numkeys key...: the numkeys after the third */
    KEYS_NONE        /* none (WAIT, PING, SCRIPT, ...): it goes where the last one went */
};

static const struct {
    const char *name;
    enum keys_at at;
} commands[] = {
    { "EVALSHA", KEYS_EVAL }, { "EVAL", KEYS_EVAL },   { "MGET", KEYS_ALL },
    { "DEL", KEYS_ALL },      { "EXISTS", KEYS_ALL },  { "UNLINK", KEYS_ALL },
    { "WAIT", KEYS_NONE },    { "PING", KEYS_NONE },   { "SCRIPT", KEYS_NONE },
    { "INFO", KEYS_NONE },    { "ROLE", KEYS_NONE },   { "AUTH", KEYS_NONE },
    { "CLUSTER", KEYS_NONE }, { "ASKING", KEYS_NONE }, { "CLIENT", KEYS_NONE },
    { "CONFIG", KEYS_NONE },  { "DBSIZE", KEYS_NONE }, { "FLUSHALL", KEYS_NONE },
    { "SELECT", KEYS_NONE },  { "DEBUG", KEYS_NONE },  { "MEMORY", KEYS_NONE },
};

/* Reads one RESP bulk string at *p (before end): its start and length; *p moves past
 * it. -1 when the text is not one. */
static int bulk(const char **p, const char *end, const char **s, size_t *len)
{
    char *stop;
    long n;

    if (*p >= end || **p != '$')
        return -1;
    n = strtol(*p + 1, &stop, 10);
    if (n < 0 || stop + 2 + n + 2 > end)
        return -1;
    *s = stop + 2;
    *len = (size_t)n;
    *p = stop + 2 + n + 2;
    return 0;
}

int rd_command_slot(const char *cmd, size_t cmd_len)
{
    const char *p = cmd, *end = cmd + cmd_len, *arg, *name;
    size_t len, name_len;
    long argc, nkeys = 1, first = 1;
    enum keys_at at = KEYS_FIRST;
    char *stop;
    int slot = RD_SLOT_NONE;

    if (cmd_len < 4 || *p != '*')
        return RD_SLOT_NONE;
    argc = strtol(p + 1, &stop, 10);
    p = stop + 2;
    if (argc < 1 || bulk(&p, end, &name, &name_len) != 0)
        return RD_SLOT_NONE;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strlen(commands[i].name) == name_len &&
            strncasecmp(commands[i].name, name, name_len) == 0)
            at = commands[i].at;
    if (at == KEYS_NONE)
        return RD_SLOT_NONE;
    if (at == KEYS_ALL)
        nkeys = argc - 1;
    for (long i = 1; i < argc; i++) {
        if (bulk(&p, end, &arg, &len) != 0)
            return RD_SLOT_NONE;
        if (at == KEYS_EVAL && i == 2) {
            nkeys = strtol(arg, NULL, 10);
            first = 3;
        }
        if (at == KEYS_EVAL && i < 3)
            continue;
        if (i >= first + nkeys)
            break;
        unsigned s = rd_key_slot(arg, len);
        if (slot != RD_SLOT_NONE && (unsigned)slot != s)
            return RD_SLOT_CROSS;
        slot = (int)s;
    }
    return slot;
}
