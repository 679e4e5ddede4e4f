/* zk_paths.c - Every path of the stock in ZooKeeper, formatted here and nowhere else (the
 * lock's, /inventory/I/lock and its nodes, are the lock library's: lock/v11_zookeeper.c).
 * A key or a request id may hold any character a node's name cannot ('/'): in a name it
 * is hex. */
#include "service/store/zk.h"

#include <stdio.h>
#include <string.h>

#include "common/hash.h"

static const char *const names[] = {
    [ZS_ITEM] = "", [ZS_STOCK] = "/stock", [ZS_SOLD] = "/sold", [ZS_ORDERS] = "/orders",
};

const char *zs_path(char (*buf)[ZK_PATH_MAX], enum zs_path kind, const char *item)
{
    snprintf(*buf, sizeof(*buf), "/inventory/%.*s%s", ITEM_MAX, item, names[kind]);
    return *buf;
}

/* s's bytes as hex into out (2 * len + 1 at least). */
static void hex(char *out, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        sprintf(out + 2 * i, "%02x", (unsigned char)s[i]);
    out[2 * len] = '\0';
}

const char *zs_bucket(char (*buf)[ZK_PATH_MAX], const char *item, int b)
{
    snprintf(*buf, sizeof(*buf), "/inventory/%.*s/orders/b%02x", ITEM_MAX, item, b & 0xff);
    return *buf;
}

int zs_id_prefix(char (*buf)[ZK_PATH_MAX], const char *id)
{
    char h[2 * REQUEST_ID_MAX + 1];
    size_t n = strnlen(id, REQUEST_ID_MAX);

    hex(h, id, n);
    snprintf(*buf, sizeof(*buf), "r%s-", h);
    return (int)(hash_bytes(id, n) % ZS_BUCKETS);
}

const char *zs_entry(char (*buf)[ZK_PATH_MAX], char (*bucket)[ZK_PATH_MAX], const char *item,
                     const char *key, const char *id, const char *instance, long long n)
{
    char h[2 * IDEM_KEY_MAX + 1], prefix[ZK_PATH_MAX];
    int b;

    if (key) {
        size_t len = strnlen(key, IDEM_KEY_MAX);
        hex(h, key, len);
        b = (int)(hash_bytes(key, len) % ZS_BUCKETS);
        snprintf(prefix, sizeof(prefix), "k%s", h);
    } else {
        b = zs_id_prefix(&prefix, id);
        snprintf(prefix + strlen(prefix), sizeof(prefix) - strlen(prefix), "%.15s%lld", instance, n);
    }
    zs_bucket(bucket, item, b);
    snprintf(*buf, sizeof(*buf), "%.*s/%.*s", ZK_PATH_MAX / 2, *bucket, ZK_PATH_MAX / 2 - 2, prefix);
    return *buf;
}

const char *zs_key(char (*buf)[ZK_PATH_MAX], const char *key)
{
    char h[2 * IDEM_KEY_MAX + 1];

    hex(h, key, strnlen(key, IDEM_KEY_MAX));
    snprintf(*buf, sizeof(*buf), "/inventory-keys/%s", h);
    return *buf;
}

int zs_make_path(struct zk_session *s, const char *path, struct zk_error *err)
{
    char part[ZK_PATH_MAX];

    for (const char *slash = strchr(path + 1, '/');; slash = strchr(slash + 1, '/')) {
        size_t n = slash ? (size_t)(slash - path) : strlen(path);
        snprintf(part, sizeof(part), "%.*s", (int)n, path);
        if (zk_create(s, part, NULL, 0, ZK_PERSISTENT, NULL, err) != ZK_OK &&
            err->fault != ZK_E_EXISTS)
            return ZK_FAIL;
        if (slash == NULL)
            return ZK_OK;
    }
}
