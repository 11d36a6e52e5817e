package io.lobstream.app.cli;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Parses "250us", "500ms", "30s", "2m", "1h", or ISO-8601 ("PT30S"); formats the short way. */
final class Durations {
    private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(us|ms|s|m|h)?");

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

    static Duration parse(String s) {
        Matcher m = SIMPLE.matcher(s.trim().toLowerCase());
        if (m.matches()) {
            long n = Long.parseLong(m.group(1));
            String unit = m.group(2) == null ? "s" : m.group(2);
            return switch (unit) {
                case "us" -> Duration.ofNanos(n * 1000);
                case "ms" -> Duration.ofMillis(n);
                case "m" -> Duration.ofMinutes(n);
                case "h" -> Duration.ofHours(n);
                default -> Duration.ofSeconds(n);
            };
        }
        try {
            return Duration.parse(s);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException("not a duration: '" + s + "' (use e.g. 250us, 500ms, 30s, 2m)");
        }
    }
}
