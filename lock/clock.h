/* clock.h - Time for the lock library and the service: monotonic milliseconds, sleeps. */
#ifndef LOCK_CLOCK_H
#define LOCK_CLOCK_H

#include <pthread.h>
#include <time.h>

/* Monotonic milliseconds. */
long long lock_now_ms(void);
/* Monotonic microseconds. */
long long lock_now_us(void);
/* Sleeps ms milliseconds (restarted after signals). */
void lock_sleep_ms(long ms);
/* The wall-clock time ms from now, for the pthread calls that take only that
 * (pthread_mutex_timedlock: v1 and v2's wait, which a wall clock step stretches or cuts). */
struct timespec lock_realtime_in(long ms);
/* The monotonic time until_ms as a timespec (for condition variables on CLOCK_MONOTONIC). */
struct timespec lock_monotonic_at(long long until_ms);
/* Initializes cv to time its waits on CLOCK_MONOTONIC: a wall clock set back or ahead
 * does not stretch or cut them. Destroy it with pthread_cond_destroy. */
void lock_cond_init_monotonic(pthread_cond_t *cv);

#endif
