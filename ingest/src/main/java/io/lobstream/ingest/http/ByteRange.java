package io.lobstream.ingest.http;

import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One byte range of a {@code Range: bytes=...} header (RFC 9110 §14.1.2), resolved against a
 * representation length: {@code a-b}, {@code a-} (open-ended) and {@code -n} (suffix).
 * Multiple ranges are not supported; the whole value is sent instead, as the RFC allows.
 */
public record ByteRange(long first, long last) {
    /**
     * The unit is case-insensitive (§14.1). Possessive quantifiers: with greedy ones, a value of many spaces that does
     * not match took time quadratic in its length (the JDK's server takes header values of hundreds of KiB).
     */
    private static final Pattern SINGLE = Pattern.compile("bytes=\\s*+(\\d*+)\\s*+-\\s*+(\\d*+)\\s*+", Pattern.CASE_INSENSITIVE);

    /** Thrown for a syntactically valid range that selects nothing: 416. */
    public static final class Unsatisfiable extends Exception {
        public Unsatisfiable(String header) {
            super(header);
        }
    }

    public long length() {
        return last - first + 1;
    }

    /**
     * @return empty when the header is absent, malformed or asks for several ranges (serve 200 in full)
     * @throws Unsatisfiable when the range selects no byte of a {@code length}-byte value (serve 416)
     */
    public static Optional<ByteRange> parse(String header, long length) throws Unsatisfiable {
        if (header == null) {
            return Optional.empty();
        }
        Matcher m = SINGLE.matcher(header);
        if (!m.matches()) {
            return Optional.empty();
        }
        String a = m.group(1);
        String b = m.group(2);
        if (a.isEmpty() && b.isEmpty()) {
            return Optional.empty();
        }
        if (a.isEmpty()) {
            long suffix = number(b);
            if (suffix == 0) {
                throw new Unsatisfiable(header);
            }
            // §14.1.2: on an empty value a non-zero suffix is satisfiable, and selects all of nothing: a 206 cannot say
            // so (Content-Range has no empty range), so the answer is 200 with the whole, empty, value
            return length == 0 ? Optional.empty() : Optional.of(new ByteRange(Math.max(0, length - suffix), length - 1));
        }
        long first = number(a);
        if (!b.isEmpty() && compareDigits(b, a) < 0) { // as written: both may be past a long
            return Optional.empty(); // invalid: ignore the header
        }
        if (first >= length) {
            throw new Unsatisfiable(header);
        }
        return Optional.of(new ByteRange(first, b.isEmpty() ? length - 1 : Math.min(number(b), length - 1)));
    }

    /**
     * Compares two runs of digits as the numbers they write, in time linear in their length (a header may be hundreds of KiB
     * long: BigInteger's parse is quadratic in it).
     */
    private static int compareDigits(String x, String y) {
        String a = x.substring(firstSignificant(x));
        String b = y.substring(firstSignificant(y));
        return a.length() != b.length() ? Integer.compare(a.length(), b.length()) : a.compareTo(b);
    }

    private static int firstSignificant(String digits) {
        int i = 0;
        while (i < digits.length() - 1 && digits.charAt(i) == '0') {
            i++;
        }
        return i;
    }

    /** A position past what a long holds is past the end of any value: as large as a long goes. Leading zeros count for nothing. */
    private static long number(String digits) {
        String significant = digits.substring(firstSignificant(digits));
        return significant.length() > 18 ? Long.MAX_VALUE : Long.parseLong(significant);
    }
}
