/* parse.c - Everything the service parses itself: query numbers, header tokens, the
 * integers a store keeps and an idempotency key's first answer. Pure functions, no
 * allocation: tests/fuzz_parse.c feeds them anything. */
#include "service/parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int parse_bounded(const char *s, long max, long *out)
{
    char *end;
    long v;

    if (s == NULL || *s < '0' || *s > '9')
        return -1;
    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end != '\0' || v > max)
        return -1;
    *out = v;
    return 0;
}

int parse_integer(const char *s, long long *out)
{
    char *end;

    if (s == NULL || *s == '\0' || (s[0] != '-' && (s[0] < '0' || s[0] > '9')))
        return -1;
    errno = 0;
    *out = strtoll(s, &end, 10);
    return errno || *end != '\0' || end == s ? -1 : 0;
}

int token_is_valid(const char *s, size_t max, const char *extra)
{
    size_t n = strlen(s);

    if (n == 0 || n > max)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || strchr(extra, s[i]) != NULL))
            return 0;
    return 1;
}

int parse_record(const char *s, int *status, long long *remaining, long long *token,
                 char (*instance)[64])
{
    char rest[2];

    if (sscanf(s, "%d %lld %lld %63s %1s", status, remaining, token, *instance, rest) < 4)
        return -1;
    return *status == 200 || *status == 409 ? 0 : -1;
}
