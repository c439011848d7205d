/*
 * tz.c - civil dates and Windows time-zone rules. See tz.h.
 *
 * Dates use the proleptic Gregorian calendar by day count (the well-known
 * days-from-civil algorithm: years as eras of 400 years = 146097 days).
 */
#include "output/tz.h"

#define SECS_PER_DAY 86400
#define DAYS_PER_ERA 146097 /* 400 Gregorian years */

/* Days since 1970-01-01 of a civil date. */
static int64_t days_from_civil(int y, int m, int d)
{
    int64_t era, yoe, doy, doe;

    y -= m <= 2;
    era = (y >= 0 ? y : y - 399) / 400;
    yoe = y - era * 400;                                 /* [0, 399] */
    doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1; /* [0, 365] */
    doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;         /* [0, 146096] */
    return era * DAYS_PER_ERA + doe - 719468;            /* 719468: 0000-03-01 to 1970 */
}

static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    int64_t era, doe, yoe, doy, mp;

    z += 719468;
    era = (z >= 0 ? z : z - (DAYS_PER_ERA - 1)) / DAYS_PER_ERA;
    doe = z - era * DAYS_PER_ERA;
    yoe = (doe - doe / 1460 + doe / 36524 - doe / (DAYS_PER_ERA - 1)) / 365;
    doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

static int64_t floor_div(int64_t a, int64_t b)
{
    return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

void dm_civil_from_seconds(int64_t secs, struct dm_civil *c)
{
    int64_t days = floor_div(secs, SECS_PER_DAY);
    int64_t rem = secs - days * SECS_PER_DAY;

    civil_from_days(days, &c->year, &c->month, &c->day);
    c->hour = (int)(rem / 3600);
    c->minute = (int)(rem / 60 % 60);
    c->second = (int)(rem % 60);
}

static int days_in_month(int y, int m)
{
    return (int)(days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) -
                 days_from_civil(y, m, 1));
}

/* The local time (seconds since 1970, in the zone's clock of the moment) at
 * which a transition happens in year y, or 0 with *ok = 0 when it does not
 * happen that year. */
static int64_t transition_local(const struct dm_tz_date *t, int y, int *ok)
{
    int64_t first;
    int day, weekday_first;

    *ok = 0;
    if (t->month < 1 || t->month > 12)
        return 0;
    if (t->year != 0) {
        if (t->year != y || t->day < 1 || t->day > days_in_month(y, t->month))
            return 0;
        day = t->day;
    } else {
        if (t->day < 1 || t->day > 5 || t->day_of_week > 6)
            return 0;
        first = days_from_civil(y, t->month, 1);
        /* 1970-01-01 was a Thursday (day of week 4, Sunday = 0). */
        weekday_first = (int)((first % 7 + 7 + 4) % 7);
        day = 1 + (t->day_of_week - weekday_first + 7) % 7 + 7 * (t->day - 1);
        while (day > days_in_month(y, t->month)) /* wDay 5: the last one */
            day -= 7;
    }
    *ok = 1;
    return days_from_civil(y, t->month, day) * SECS_PER_DAY + t->hour * 3600 +
           t->minute * 60 + t->second;
}

int32_t dm_tz_bias_minutes(const struct dm_time_zone *tz, int64_t utc_secs)
{
    int32_t standard = tz->bias + tz->standard_bias;
    int32_t daylight = tz->bias + tz->daylight_bias;
    struct dm_civil c;
    int64_t start, end;
    int ok_start, ok_end;

    if (tz->standard_date.month == 0 || tz->daylight_date.month == 0)
        return standard;
    /* The year as the zone's standard clock reads it. */
    dm_civil_from_seconds(utc_secs - (int64_t)standard * 60, &c);
    /* In UTC: daylight time starts at a local standard time, ends at a
     * local daylight time. */
    start = transition_local(&tz->daylight_date, c.year, &ok_start) + (int64_t)standard * 60;
    end = transition_local(&tz->standard_date, c.year, &ok_end) + (int64_t)daylight * 60;
    if (!ok_start || !ok_end)
        return standard;
    if (start < end) /* northern: daylight time inside the year */
        return utc_secs >= start && utc_secs < end ? daylight : standard;
    /* southern: daylight time across the new year */
    return utc_secs >= end && utc_secs < start ? standard : daylight;
}
