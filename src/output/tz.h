/*
 * tz.h - civil time without the C library's time zone: UTC from nanoseconds
 * since 1970, and the local time a Windows time-zone rule (struct
 * dm_time_zone, from a trace header) gives for an instant.
 *
 * Why not localtime(): replay's --clock must show the local time of the
 * machine the trace was recorded on, not of the machine replaying it, and
 * the output must be the same bytes on every OS. Pure functions.
 */
#ifndef DM_TZ_H
#define DM_TZ_H

#include <stdint.h>

#include "diskmon.h"

struct dm_civil {
    int year, month, day;        /* month 1-12, day 1-31 */
    int hour, minute, second;
};

/* Seconds since 1970-01-01 00:00:00 (may be negative) as a civil date. */
void dm_civil_from_seconds(int64_t secs, struct dm_civil *c);

/*
 * The offset, in minutes, to subtract from UTC to get the local time of tz at
 * the instant utc_secs (UTC = local + bias, so local = UTC - bias):
 * Bias + DaylightBias inside daylight time, else Bias + StandardBias.
 *
 * The rule, as TIME_ZONE_INFORMATION documents it: StandardDate.wMonth == 0
 * means no daylight time. A transition date with wYear == 0 is "the wDay-th
 * wDayOfWeek of wMonth" (wDay 5 = the last one) at wHour:wMinute, every
 * year; with wYear != 0 it is that one absolute date, and other years have
 * no daylight time. DaylightDate is given in local standard time,
 * StandardDate in local daylight time. Southern zones (daylight time across
 * the new year) are handled by the order of the two transitions.
 */
int32_t dm_tz_bias_minutes(const struct dm_time_zone *tz, int64_t utc_secs);

#endif /* DM_TZ_H */
