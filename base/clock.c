/* clock.c - see clock.h. */
#include "clock.h"

#include <errno.h>
#include <time.h>

double clock_mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void clock_sleep_ms(long ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};
    for (int i = 0; i < 100 && nanosleep(&ts, &ts) != 0 && errno == EINTR; i++)
        ;
}
