/* hash.h - One string hash (FNV-1a) for the tables keyed by an item or a key: the lock's
 * queues per key, the combined engine's lines, the live page's events per item. */
#ifndef COMMON_HASH_H
#define COMMON_HASH_H

#include <stddef.h>

/* The hash of s's first len bytes. */
static inline unsigned hash_bytes(const char *s, size_t len)
{
    unsigned h = 2166136261u;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

#endif
