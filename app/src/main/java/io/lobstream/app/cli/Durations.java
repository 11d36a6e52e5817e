package io.lobstream.app.cli;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses "250us", "500ms", "30s", "2m", "1h", "1h30m" (what {@link #format} prints), a bare number as seconds, or
 * ISO-8601 ("PT30S"); formats the short way. A negative duration, or one
 * over {@link #MAX} (which a nanosecond count holds with room to spare), is not a duration any option takes: refused,
 * where it used to overflow into a negative one, or fail later as an error that was not a usage error.
 */
final class Durations {
    static final Duration MAX = Duration.ofDays(365);
    private static final Pattern SECONDS = Pattern.compile("\\d{1,18}");
    private static final Pattern PART = Pattern.compile("(\\d{1,18})\\s*(us|ms|s|m|h)\\s*");
    private static final Pattern PARTS = Pattern.compile("(?:" + PART.pattern() + ")+");

    private Durations() {
    }

    /** As a person writes it: "500ms", "30s", "2m", "1h30m". */
    static String format(Duration d) {
        if (d.toMillis() % 1000 != 0) {
            return d.toMillis() + "ms";
        }
        long s = d.toSeconds();
        String out = (s / 3600 > 0 ? s / 3600 + "h" : "") + (s % 3600 / 60 > 0 ? s % 3600 / 60 + "m" : "") + (s % 60 > 0 ? s % 60 + "s" : "");
        return out.isEmpty() ? "0s" : out;
    }

    /** {@link #parse}, for picocli: a value refused is said as it is ("Invalid value for option '--timeout': ..."). */
    static Duration converted(String s) {
        try {
            return parse(s);
        } catch (IllegalArgumentException e) {
            throw new picocli.CommandLine.TypeConversionException(e.getMessage());
        }
    }

    static Duration parse(String s) {
        try {
            Duration d = parseAny(s);
            if (!d.isNegative() && d.compareTo(MAX) <= 0) {
                return d;
            }
        } catch (ArithmeticException pastWhatADurationHolds) {
            // out of range, as below
        }
        throw new IllegalArgumentException("not a duration from 0 to 365 days: '" + s + "'");
    }

    private static Duration parseAny(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        if (SECONDS.matcher(t).matches()) {
            return Duration.ofSeconds(Long.parseLong(t));
        }
        if (PARTS.matcher(t).matches()) {
            Duration d = Duration.ZERO;
            for (Matcher m = PART.matcher(t); m.find(); ) {
                d = d.plus(part(Long.parseLong(m.group(1)), m.group(2)));
            }
            return d;
        }
        try {
            return Duration.parse(s);
        } catch (RuntimeException e) { // ArithmeticException too: past what a Duration holds
            throw new IllegalArgumentException("not a duration: '" + s + "' (use e.g. 250us, 500ms, 30s, 2m, 1h30m; a bare number "
                    + "is seconds)");
        }
    }

    private static Duration part(long n, String unit) {
        return switch (unit) {
            case "us" -> Duration.ofMillis(n / 1000).plusNanos(n % 1000 * 1000);
            case "ms" -> Duration.ofMillis(n);
            case "m" -> Duration.ofMinutes(n);
            case "h" -> Duration.ofHours(n);
            default -> Duration.ofSeconds(n);
        };
    }
}
