/* parse.h - What the service parses itself, from a request or back from a store: pure
 * functions, no allocation (fuzzed by tests/fuzz_parse.c). */
#ifndef SERVICE_PARSE_H
#define SERVICE_PARSE_H

#include <stddef.h>

/* A whole decimal 0..max (no sign, no space) into *out; 0, or -1 (out untouched). */
int parse_bounded(const char *s, long max, long *out);
/* A whole decimal integer, optional '-', as a store keeps stock; 0, or -1. */
int parse_integer(const char *s, long long *out);
/* 1 when s is 1 to max characters, each a letter, a digit or one of extra; else 0. */
int token_is_valid(const char *s, size_t max, const char *extra);
/* An idempotency key's first answer, "STATUS REMAINING TOKEN INSTANCE [REQUEST]", with
 * STATUS 200 or 409; 0, or -1. */
int parse_record(const char *s, int *status, long long *remaining, long long *token,
                 char (*instance)[64]);

#endif
