/* test.h - A tiny test harness: test_cond() per check, test_report() prints the total. */
#ifndef TEST_H
#define TEST_H

#include <stdio.h>

static int test_passed, test_failed;

/* Records one check; prints a line only when it fails, with where. */
#define test_cond(descr, cond) do {                                              \
        if (cond) { test_passed++; printf("ok     %s\n", descr); }               \
        else { test_failed++; printf("FAIL   %s (%s:%d)\n", descr, __FILE__, __LINE__); } \
        fflush(stdout);                                                          \
    } while (0)

/* Prints "N passed, N failed"; returns the process exit code. */
static inline int test_report(void)
{
    printf("%d passed, %d failed\n", test_passed, test_failed);
    return test_failed ? 1 : 0;
}

#endif
