package io.lobstream.store.config;

import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * One configuration key: its name, default, documentation and parser, declared once.
 * Every key of LobStream is a constant of this type in a {@code *Config} class, and README's
 * configuration table is printed from those constants ({@code ./lobstream config}).
 */
public final class ConfigKey<T> {
    /** What Kafka takes in a topic name or a group.instance.id ({@code org.apache.kafka.common.internals.Topic}). */
    private static final Pattern KAFKA_NAME = Pattern.compile("[a-zA-Z0-9._-]*");

    private final String name;
    private final T defaultValue;
    private final String doc;
    private final Function<String, T> parser;
    private final Function<T, String> validator;
    private final String allowed;

    private ConfigKey(String name, T defaultValue, String doc, Function<String, T> parser, Function<T, String> validator,
                      String allowed) {
        this.name = name;
        this.defaultValue = defaultValue;
        this.doc = doc;
        this.parser = parser;
        this.validator = validator;
        this.allowed = allowed;
    }

    public static ConfigKey<Boolean> bool(String name, boolean defaultValue, String doc) {
        return new ConfigKey<>(name, defaultValue, doc, ConfigKey::parseBoolean, v -> null, "true, false");
    }

    public static ConfigKey<Integer> integer(String name, int defaultValue, int min, int max, String doc) {
        return new ConfigKey<>(name, defaultValue, doc, numeric(Integer::parseInt, "a whole number up to " + Integer.MAX_VALUE),
                v -> v < min || v > max ? "must be between " + min + " and " + max : null, range(min, max, Integer.MAX_VALUE));
    }

    public static ConfigKey<Long> longValue(String name, long defaultValue, long min, long max, String doc) {
        return new ConfigKey<>(name, defaultValue, doc, numeric(Long::parseLong, "a whole number up to " + Long.MAX_VALUE),
                v -> v < min || v > max ? "must be between " + min + " and " + max : null, range(min, max, Long.MAX_VALUE));
    }

    public static ConfigKey<Double> decimal(String name, double defaultValue, double min, double max, String doc) {
        return new ConfigKey<>(name, defaultValue, doc, numeric(Double::parseDouble, "a number"),
                v -> v.isNaN() || v < min || v > max ? "must be between " + min + " and " + max : null,
                range(min, max, Double.MAX_VALUE));
    }

    public static ConfigKey<String> string(String name, String defaultValue, String doc) {
        return new ConfigKey<>(name, defaultValue, doc, s -> s, v -> null, "");
    }

    /**
     * A string Kafka takes as a name (a topic's, a group member's): ASCII letters, digits, '.', '_' and '-', up to
     * {@code maxLength} of them. Refused here, before anything starts, where the broker or a client would refuse it after.
     */
    public static ConfigKey<String> kafkaName(String name, String defaultValue, int maxLength, String doc) {
        return new ConfigKey<>(name, defaultValue, doc, s -> s, v -> v.length() > maxLength || !KAFKA_NAME.matcher(v).matches()
                ? "must be ASCII letters, digits, '.', '_' or '-', at most " + maxLength + " of them (as Kafka takes in a name)"
                : null, "letters, digits, . _ -; up to " + maxLength);
    }

    /** {@code parse}, saying what it takes where Java's text would not ('For input string: "10m"'). */
    private static <N> Function<String, N> numeric(Function<String, N> parse, String what) {
        return s -> {
            try {
                return parse.apply(s);
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("not " + what + " (plain digits, no unit)");
            }
        };
    }

    /** {@code min to max}, or {@code at least min} where the type's largest value is the only bound (ASCII: any terminal). */
    private static String range(Number min, Number max, Number unbounded) {
        return max.equals(unbounded) ? "at least " + plain(min) : plain(min) + " to " + plain(max);
    }

    private static String plain(Number n) {
        return n instanceof Double d && d == Math.rint(d) ? Long.toString(d.longValue()) : n.toString();
    }

    private static Boolean parseBoolean(String s) {
        switch (s.trim().toLowerCase(Locale.ROOT)) {
            case "true": case "on": case "yes": case "1": return Boolean.TRUE;
            case "false": case "off": case "no": case "0": return Boolean.FALSE;
            default: throw new IllegalArgumentException("not a boolean (true/false, on/off)");
        }
    }

    public String name() { return name; }
    public T defaultValue() { return defaultValue; }
    public String doc() { return doc; }
    /** The values the key takes, as the configuration table shows them (empty for a string). */
    public String allowed() { return allowed; }

    /** What is wrong with {@code value} for this key (as "must be between 1 and 8"), or null: for an option that sets the key. */
    public String problem(T value) {
        return validator.apply(value);
    }

    /** The value of this key in {@code props}, or its default; throws {@link ConfigException} when invalid. */
    public T from(Map<String, ?> props) {
        Object raw = props.get(name);
        if (raw == null) {
            return defaultValue;
        }
        T value;
        try {
            value = parser.apply(raw.toString().trim());
        } catch (RuntimeException e) {
            throw new ConfigException(name + "=" + raw + ": " + Objects.toString(e.getMessage(), "invalid value"));
        }
        String problem = validator.apply(value);
        if (problem != null) {
            throw new ConfigException(name + "=" + raw + ": " + problem);
        }
        return value;
    }

    @Override
    public String toString() { return name; }
}
