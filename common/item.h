/* item.h - What an item's name may be: the one rule the service, the lock and the load
 * client share (an item names keys and paths, and travels in a query unescaped). */
#ifndef COMMON_ITEM_H
#define COMMON_ITEM_H

/* Characters of an item's name, at most. */
#define ITEM_MAX 64
/* The item a request that names none is about. */
#define ITEM_DEFAULT "inventory001"

/* 1 when s is an item's name: 1 to ITEM_MAX characters, each of A-Z a-z 0-9 _ . -;
 * else 0 (NULL too). */
int item_is_valid(const char *s);

#endif
