/* clockstep.c - A preload for the clock-jump scenarios: a wall clock step as the kernel
 * makes it, for one process.
 *
 * The scenarios move a process's clock with libfaketime (LD_PRELOAD="build/clockstep.so
 * libfaketime.so.1", FAKETIME_TIMESTAMP_FILE, FAKETIME_NO_CACHE=1). Two things it does not
 * do as a real step (clock_settime, an NTP step) does, which this preload adds:
 *   - Deadlines. libfaketime's pthread_cond_timedwait turns the deadline into a wait of
 *     fixed length when it is called (deadline minus the faked now, on the real clock):
 *     a jump during the wait does not move its end. The kernel measures an absolute
 *     CLOCK_REALTIME deadline against the clock as it is set: stepped back 10 s, the
 *     waiter sleeps 10 s longer. Here a wait runs in slices of at most SLICE_MS and ends
 *     when the clock its condition variable runs on, as the process reads it, has reached
 *     the deadline. On a CLOCK_MONOTONIC condition variable that clock is the monotonic
 *     one, which libfaketime leaves alone under FAKETIME_DONT_FAKE_MONOTONIC=1.
 *   - jemalloc. Debian's redis-server links jemalloc, which calls clock_gettime and
 *     pthread_cond_init while it holds its own lock; libfaketime's first use allocates:
 *     redis-server hangs at start (libfaketime issue #130, open). For such a process the
 *     preload makes the step itself, alone (LD_PRELOAD=build/clockstep.so): with
 *     CLOCKSTEP_FILE set, the wall clock (gettimeofday, time, clock_gettime of
 *     CLOCK_REALTIME) reads the real one plus the seconds in that file, read at each
 *     call ("+0", then "+10" or "-10": libfaketime's relative form, seconds only); the
 *     other clocks are the real ones.
 * Without CLOCKSTEP_FILE the clocks are whatever comes next (libfaketime, or the C
 * library). Built by make as build/clockstep.so; used by loadtest/scenarios/clock-jump.sh
 * and tests/test_clock.sh. Linux and glibc only: it reads a condition variable's clock
 * from glibc's __wrefs, and checks at load that it reads it right. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

enum { SLICE_MS = 20 };

typedef int (*timedwait_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);
typedef int (*gettimeofday_fn)(struct timeval *, void *);
typedef time_t (*time_fn)(time_t *);

/* Found on first use (a library's constructor may read the clock before ours runs);
 * finding one twice is harmless. */
static timedwait_fn next_timedwait;
static clock_gettime_fn next_clock_gettime;
static gettimeofday_fn next_gettimeofday;
static time_fn next_time;

/* --- the step, made here when CLOCKSTEP_FILE is set ---------------------------------- */

static const char *step_file(void)
{
    return getenv("CLOCKSTEP_FILE");
}

/* The step now, in ns: the seconds written in path; 0 when it cannot be read. No
 * allocation (jemalloc may be calling us). */
static long long step_ns(const char *path)
{
    char buf[32];
    ssize_t n;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtoll(buf, NULL, 10) * 1000000000LL;
}

/* The real clock clk, stepped when it is the wall clock. */
static int stepped_clock(const char *path, clockid_t clk, struct timespec *ts)
{
    long long ns;

    if (syscall(SYS_clock_gettime, clk, ts) != 0)
        return -1;
    if (clk != CLOCK_REALTIME && clk != CLOCK_REALTIME_COARSE)
        return 0;
    ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + step_ns(path);
    ts->tv_sec = ns / 1000000000LL;
    ts->tv_nsec = ns % 1000000000LL;
    return 0;
}

int clock_gettime(clockid_t clk, struct timespec *ts)
{
    const char *path = step_file();

    if (path)
        return stepped_clock(path, clk, ts);
    if (next_clock_gettime == NULL)
        next_clock_gettime = (clock_gettime_fn)dlsym(RTLD_NEXT, "clock_gettime");
    return next_clock_gettime(clk, ts);
}

int gettimeofday(struct timeval *tv, void *tz)
{
    const char *path = step_file();
    struct timespec ts;

    if (path == NULL) {
        if (next_gettimeofday == NULL)
            next_gettimeofday = (gettimeofday_fn)dlsym(RTLD_NEXT, "gettimeofday");
        return next_gettimeofday(tv, tz);
    }
    if (stepped_clock(path, CLOCK_REALTIME, &ts) != 0)
        return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t)
{
    const char *path = step_file();
    struct timespec ts;

    if (path == NULL) {
        if (next_time == NULL)
            next_time = (time_fn)dlsym(RTLD_NEXT, "time");
        return next_time(t);
    }
    if (stepped_clock(path, CLOCK_REALTIME, &ts) != 0)
        return (time_t)-1;
    if (t)
        *t = ts.tv_sec;
    return ts.tv_sec;
}

/* --- deadlines that follow the step --------------------------------------------------- */

/* The clock cond runs on: glibc keeps it in bit 1 of __wrefs (pthread_cond_init). */
static clockid_t cond_clock(const pthread_cond_t *cond)
{
    return (cond->__data.__wrefs & 2) ? CLOCK_MONOTONIC : CLOCK_REALTIME;
}

static long long ns_of(const struct timespec *ts)
{
    return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

__attribute__((constructor)) static void clockstep_init(void)
{
    pthread_condattr_t attr;
    pthread_cond_t mono, wall;

    next_timedwait = (timedwait_fn)dlvsym(RTLD_NEXT, "pthread_cond_timedwait", "GLIBC_2.3.2");
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&mono, &attr);
    pthread_cond_init(&wall, NULL);
    pthread_condattr_destroy(&attr);
    if (next_timedwait == NULL || cond_clock(&mono) != CLOCK_MONOTONIC ||
        cond_clock(&wall) != CLOCK_REALTIME) {
        fputs("clockstep.so: cannot tell a condition variable's clock here (glibc only)\n", stderr);
        abort();
    }
    pthread_cond_destroy(&mono);
    pthread_cond_destroy(&wall);
}

/* pthread_cond_timedwait as the kernel does it for a stepped clock: ETIMEDOUT once the
 * cond's clock reads abstime or later, 0 when woken (or spuriously), else the error.
 * Each slice's deadline is handed on in the time of what comes next: the process's
 * (libfaketime turns it into a wait of that length), or the real clock's when the step
 * is made here. */
int pthread_cond_timedwait(pthread_cond_t *cond, pthread_mutex_t *mutex, const struct timespec *abstime)
{
    clockid_t clk = cond_clock(cond);
    long long end = ns_of(abstime), now, slice, base;
    struct timespec ts;
    int rc;

    for (;;) {
        clock_gettime(clk, &ts);
        now = ns_of(&ts);
        if (now >= end)
            return ETIMEDOUT;
        slice = end - now < SLICE_MS * 1000000LL ? end - now : SLICE_MS * 1000000LL;
        base = now;
        if (step_file() && syscall(SYS_clock_gettime, clk, &ts) == 0)
            base = ns_of(&ts);
        ts.tv_sec = (base + slice) / 1000000000LL;
        ts.tv_nsec = (base + slice) % 1000000000LL;
        if ((rc = next_timedwait(cond, mutex, &ts)) != ETIMEDOUT)
            return rc;
    }
}
