/* clock.h - Time for the lock library and the service: monotonic milliseconds, sleeps. */
#ifndef LOCK_CLOCK_H
#define LOCK_CLOCK_H

#include <time.h>

/* Monotonic milliseconds. */
long long lock_now_ms(void);
/* Sleeps ms milliseconds (restarted after signals). */
void lock_sleep_ms(long ms);
/* The wall-clock time ms from now, for the pthread calls that take one. */
struct timespec lock_realtime_in(long ms);
/* The monotonic time until_ms as a timespec (for condition variables on CLOCK_MONOTONIC). */
struct timespec lock_monotonic_at(long long until_ms);

#endif
