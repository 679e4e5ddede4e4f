/* clock.h - Time for every layer: monotonic milliseconds and microseconds, sleeps, and
 * timed waits on the monotonic clock. */
#ifndef COMMON_CLOCK_H
#define COMMON_CLOCK_H

#include <pthread.h>
#include <time.h>

/* Monotonic milliseconds. */
long long clock_now_ms(void);
/* Monotonic microseconds. */
long long clock_now_us(void);
/* Wall-clock microseconds since the epoch (what a person or another host can compare). */
long long clock_wall_us(void);
/* Sleeps ms milliseconds (restarted after signals). */
void clock_sleep_ms(long ms);
/* The wall-clock time ms from now, for the pthread calls that take only that
 * (pthread_mutex_timedlock: v1 and v2's wait, which a wall clock step stretches or cuts). */
struct timespec clock_realtime_in(long ms);
/* The monotonic time until_ms as a timespec (for condition variables on CLOCK_MONOTONIC). */
struct timespec clock_monotonic_at(long long until_ms);
/* Waits on cv (made by clock_cond_init_monotonic) with mu held until the monotonic time
 * until_ms, or a signal; returns ETIMEDOUT once until_ms has passed. */
int clock_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long long until_ms);
/* Initializes cv to time its waits on CLOCK_MONOTONIC: a wall clock set back or ahead
 * does not stretch or cut them. Destroy it with pthread_cond_destroy. */
void clock_cond_init_monotonic(pthread_cond_t *cv);

#endif
