/* item.c - The rule for an item's name. Pure, no allocation: fuzzed with the service's
 * parsers (tests/fuzz_parse.c). */
#include "common/item.h"

#include <string.h>

int item_is_valid(const char *s)
{
    size_t n = s ? strlen(s) : 0;

    if (n == 0 || n > ITEM_MAX)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
              (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.' || s[i] == '-'))
            return 0;
    return 1;
}
