/* hash.h - One string hash (FNV-1a) for the tables keyed by an item or a key: the notify
 * queues (lock/wait.c), the combine lines (service/workers.c), the live page's events
 * (service/events.c). */
#ifndef LOCK_HASH_H
#define LOCK_HASH_H

#include <stddef.h>

/* The hash of s's first len bytes. */
static inline unsigned lock_hash(const char *s, size_t len)
{
    unsigned h = 2166136261u;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

#endif
