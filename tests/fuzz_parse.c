/* fuzz_parse.c - libFuzzer target for service/parse.c: every parser the service applies
 * to what it is sent (query numbers, item names, header tokens) or reads back (stock
 * integers, an idempotency key's first answer) gets the same bytes; each result is
 * checked against what its contract promises. A broken promise aborts (a finding).
 *
 *   make build/fuzz_parse && build/fuzz_parse -max_total_time=30 tests/fuzz_corpus
 */
#include "common/item.h"
#include "service/parse.h"
#include "service/store/request.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void promise(int ok, const char *what, const char *input)
{
    if (!ok) {
        fprintf(stderr, "fuzz_parse: %s broken for input '%s'\n", what, input);
        abort();
    }
}

/* 1 when every character of s is in set. */
static int only(const char *s, const char *set)
{
    return strspn(s, set) == strlen(s);
}

#define ALNUM "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char s[1024], back[64], instance[64];
    long v = -1;
    long long ll = 0, remaining, token;
    int status;

    if (size >= sizeof(s))
        size = sizeof(s) - 1;
    memcpy(s, data, size);
    s[size] = '\0';

    if (parse_bounded(s, 60000, &v) == 0) {
        promise(v >= 0 && v <= 60000, "parse_bounded: in range", s);
        promise(*s && only(s, "0123456789"), "parse_bounded: digits only", s);
    }
    if (parse_integer(s, &ll) == 0) {
        promise(*s && only(s + (s[0] == '-'), "0123456789") && s[s[0] == '-'] != '\0',
                "parse_integer: [-]digits only", s);
        snprintf(back, sizeof(back), "%lld", ll);
        promise(strtoll(back, NULL, 10) == ll, "parse_integer: round trip", s);
    }
    if (item_is_valid(s))
        promise(*s && strlen(s) <= ITEM_MAX && only(s, ALNUM "_.-"), "item_is_valid", s);
    if (token_is_valid(s, IDEM_KEY_MAX, "-_.:=+/"))
        promise(*s && strlen(s) <= IDEM_KEY_MAX && only(s, ALNUM "-_.:=+/"),
                "token_is_valid: idempotency key", s);
    if (token_is_valid(s, REQUEST_ID_MAX, "-_.:"))
        promise(*s && strlen(s) <= REQUEST_ID_MAX && only(s, ALNUM "-_.:"),
                "token_is_valid: request id", s);
    memset(instance, 'x', sizeof(instance));
    if (parse_record(s, &status, &remaining, &token, &instance) == 0)
        promise((status == 200 || status == 409) && memchr(instance, '\0', sizeof(instance)),
                "parse_record: status and instance", s);
    return 0;
}
