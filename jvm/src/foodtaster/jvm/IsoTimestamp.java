package foodtaster.jvm;

import org.apache.spark.sql.api.java.UDF1;

import java.time.LocalDate;
import java.time.Month;
import java.time.Year;

/**
 * {@code iso_timestamp_micros(text STRING) -> BIGINT} for {@code spark.udf.registerJavaFunction}:
 * the instant an ISO-8601 date-time with a zone names, in microseconds since the epoch, or null
 * where the text is not one.
 *
 * <p>One scan of the characters does what a pattern match and Spark's string-to-timestamp cast
 * did as two: the shape is {@code YYYY-MM-DDTHH:MM:SS}, an optional fraction of 1 to 6 digits,
 * then {@code Z} or an offset {@code +HH:MM} / {@code -HH:MM} up to 18:00 (as java.time's), and
 * nothing after; the date must be on the proleptic Gregorian calendar (year 0001 to 9999, a day
 * its month has) and the clock time real (seconds 00 to 59), as Python's {@code strptime} reads
 * it ({@code foodtaster.checks.is_iso_timestamp}).
 */
public final class IsoTimestamp implements UDF1<String, Long> {
    private static final long serialVersionUID = 1L;
    private static final long MICROS_PER_SECOND = 1_000_000L;

    @Override
    public Long call(String text) {
        return micros(text);
    }

    /** The instant {@code text} names in microseconds since 1970-01-01T00:00Z, or null. */
    public static Long micros(String text) {
        if (text == null) return null;
        int n = text.length();
        if (n < 20) return null;
        int year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
        int hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
        if ((year | month | day | hour | minute | second) < 0) return null;
        if (text.charAt(4) != '-' || text.charAt(7) != '-' || text.charAt(10) != 'T'
                || text.charAt(13) != ':' || text.charAt(16) != ':') return null;
        int at = 19;
        long fraction = 0;
        if (text.charAt(at) == '.') {
            int start = ++at;
            while (at < n && at - start < 7 && isDigit(text.charAt(at))) {
                fraction = fraction * 10 + (text.charAt(at) - '0');
                at++;
            }
            int count = at - start;
            if (count == 0 || count > 6) return null;
            for (int i = count; i < 6; i++) fraction *= 10;
        }
        if (at >= n) return null;
        int offsetSeconds;
        char zone = text.charAt(at);
        if (zone == 'Z') {
            offsetSeconds = 0;
            at += 1;
        } else if (zone == '+' || zone == '-') {
            if (n - at != 6 || text.charAt(at + 3) != ':') return null;
            int offsetHours = digits(text, at + 1, 2), offsetMinutes = digits(text, at + 4, 2);
            if (offsetHours < 0 || offsetMinutes < 0 || offsetMinutes > 59) return null;
            if (offsetHours > 18 || (offsetHours == 18 && offsetMinutes != 0)) return null;
            offsetSeconds = (offsetHours * 3600 + offsetMinutes * 60) * (zone == '-' ? -1 : 1);
            at += 6;
        } else {
            return null;
        }
        if (at != n) return null;
        if (year == 0 || month < 1 || month > 12 || day < 1) return null;
        if (day > Month.of(month).length(Year.isLeap(year))) return null;
        if (hour > 23 || minute > 59 || second > 59) return null;
        long seconds = LocalDate.of(year, month, day).toEpochDay() * 86_400L + hour * 3600L + minute * 60L + second - offsetSeconds;
        return seconds * MICROS_PER_SECOND + fraction;
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    /** The number the ASCII digits at {@code from} spell, or -1 where one is not a digit. */
    private static int digits(String text, int from, int count) {
        int value = 0;
        for (int i = from; i < from + count; i++) {
            char c = text.charAt(i);
            if (!isDigit(c)) return -1;
            value = value * 10 + (c - '0');
        }
        return value;
    }
}
