/* versions.c - The registry: every version, found by its name or its alias, in order. */
#include "lock/internal.h"

#include <string.h>

extern const struct lock_ops lock_v1, lock_v2, lock_v3, lock_v4, lock_v5, lock_v6, lock_v7,
    lock_v8, lock_v9, lock_v10, lock_v11, lock_v12, lock_v13, lock_v14, lock_v15, lock_none;

static const struct lock_ops *const versions[] = {
    &lock_v1, &lock_v2, &lock_v3, &lock_v4, &lock_v5, &lock_v6, &lock_v7, &lock_v8,
    &lock_v9, &lock_v10, &lock_v11, &lock_v12, &lock_v13, &lock_v14, &lock_v15, &lock_none,
    NULL,
};

const struct lock_ops *const *lock_versions(void)
{
    return versions;
}

/* By name first, so that "mutex" (the alias of v1 and v2) finds v1. */
const struct lock_ops *lock_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (int i = 0; versions[i]; i++)
        if (strcmp(versions[i]->name, name) == 0)
            return versions[i];
    for (int i = 0; versions[i]; i++)
        if (versions[i]->alias && strcmp(versions[i]->alias, name) == 0)
            return versions[i];
    return NULL;
}
