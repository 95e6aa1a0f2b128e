/*
 * clock.h - the monotonic clock and sleeping, in seconds and milliseconds,
 * for stage timings, polling and backoff (one copy instead of one per file).
 */
#ifndef KILN_CLOCK_H
#define KILN_CLOCK_H

/* Seconds on CLOCK_MONOTONIC: differences only, never a date. */
double clock_mono_s(void);

/* Sleeps `ms` milliseconds, resuming after signals (a bounded number of
 * times, so a signal storm cannot keep it asleep forever). */
void clock_sleep_ms(long ms);

#endif
