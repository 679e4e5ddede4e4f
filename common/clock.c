/* clock.c - Monotonic milliseconds and microseconds, sleeps, and condition variables on the monotonic clock. */
#include "common/clock.h"

#include <errno.h>

long long clock_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

long long clock_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long long clock_wall_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void clock_sleep_ms(long ms)
{
    struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L };

    while (ms > 0 && nanosleep(&ts, &ts) == -1 && errno == EINTR)
        ;
}

struct timespec clock_realtime_in(long ms)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

struct timespec clock_monotonic_at(long long until_ms)
{
    return (struct timespec){ .tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000L };
}

void clock_cond_init_monotonic(pthread_cond_t *cv)
{
    pthread_condattr_t attr;

    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
}

int clock_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long long until_ms)
{
    struct timespec ts = clock_monotonic_at(until_ms);

    return pthread_cond_timedwait(cv, mu, &ts);
}
