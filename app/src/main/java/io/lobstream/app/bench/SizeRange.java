package io.lobstream.app.bench;

import picocli.CommandLine;

import java.util.Locale;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A value size or a range of them: {@code 16k}, {@code 256k}, {@code 1m}, {@code 300000},
 * {@code 10k-300k} (a new uniformly random size for each write). k and m are binary (1024).
 */
public record SizeRange(int min, int max) {

    public SizeRange {
        if (min < 0 || max < min) {
            throw new IllegalArgumentException("need 0 <= min <= max, got " + min + "-" + max);
        }
    }

    public static SizeRange parse(String s) {
        String[] parts = s.trim().toLowerCase(Locale.ROOT).split("-", -1);
        if (parts.length == 1) {
            int n = bytes(parts[0]);
            return new SizeRange(n, n);
        }
        if (parts.length == 2) {
            return new SizeRange(bytes(parts[0]), bytes(parts[1]));
        }
        throw new IllegalArgumentException("not a size or size range: '" + s + "' (use e.g. 16k, 1m, 10k-300k)");
    }

    /** Bytes of "16k", "1m", "300000"; k and m are powers of 1024. */
    public static int bytes(String s) {
        String t = s.trim().toLowerCase(Locale.ROOT);
        long unit = 1;
        if (t.endsWith("k")) {
            unit = 1024;
        } else if (t.endsWith("m")) {
            unit = 1024 * 1024;
        }
        String digits = unit == 1 ? t : t.substring(0, t.length() - 1);
        try {
            long n = Math.multiplyExact(Long.parseLong(digits), unit); // not wrapped round into a small size
            if (n < 0 || n > Integer.MAX_VALUE) {
                throw new NumberFormatException();
            }
            return (int) n;
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("not a size: '" + s + "' (use e.g. 16k, 1m, 300000)");
        }
    }

    public int next() {
        return min == max ? min : ThreadLocalRandom.current().nextInt(min, max + 1);
    }

    public double mean() {
        return (min + (double) max) / 2;
    }

    @Override
    public String toString() {
        return min == max ? label(min) : label(min) + "-" + label(max);
    }

    private static String label(int n) {
        if (n % (1024 * 1024) == 0 && n > 0) {
            return n / (1024 * 1024) + "m";
        }
        return n % 1024 == 0 && n > 0 ? n / 1024 + "k" : Integer.toString(n);
    }

    /** picocli converter, so that an {@code int} option of bytes takes {@code 16k} and {@code 1m} too. */
    public static final class BytesConverter implements CommandLine.ITypeConverter<Integer> {
        @Override
        public Integer convert(String value) {
            return bytes(value);
        }
    }

    /** picocli converter, so options can be declared as {@code SizeRange}. */
    public static final class Converter implements CommandLine.ITypeConverter<SizeRange> {
        @Override
        public SizeRange convert(String value) {
            return parse(value);
        }
    }
}
