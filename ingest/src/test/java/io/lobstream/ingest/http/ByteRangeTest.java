package io.lobstream.ingest.http;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/** RFC 9110 §14.1.2 single byte ranges against a 100-byte value. */
class ByteRangeTest {
    private static Optional<ByteRange> parse(String h) throws ByteRange.Unsatisfiable {
        return ByteRange.parse(h, 100);
    }

    @Test
    void closedOpenAndSuffixRanges() throws Exception {
        assertThat(parse("bytes=0-0")).contains(new ByteRange(0, 0));
        assertThat(parse("bytes=10-19")).contains(new ByteRange(10, 19));
        assertThat(parse("bytes=90-")).contains(new ByteRange(90, 99));
        assertThat(parse("bytes=-10")).contains(new ByteRange(90, 99));
        assertThat(parse("bytes=-500")).contains(new ByteRange(0, 99));
        assertThat(parse("bytes=50-500")).contains(new ByteRange(50, 99));
        assertThat(parse("Bytes=10-19")).as("the unit is case-insensitive").contains(new ByteRange(10, 19));
    }

    /**
     * A value of many spaces that does not match: with greedy quantifiers its parse took time quadratic in its length,
     * minutes of a thread for one request of 400 KB. The timeout only stops a test that would hang.
     */
    @Test
    void aLongHostileValueIsRefusedWithoutBacktracking() {
        String spaces = " ".repeat(400_000);
        assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
            assertThat(parse("bytes=" + spaces + "x")).isEmpty();
            assertThat(parse("bytes=-" + spaces + "x")).isEmpty();
            assertThat(parse("bytes=1" + spaces + "-" + spaces + "2")).contains(new ByteRange(1, 2));
        });
    }

    /** Positions past a long are past the end of any value, not a header to ignore. */
    @Test
    void positionsPastALongAreClampedNotIgnored() throws Exception {
        assertThat(parse("bytes=0-99999999999999999999")).contains(new ByteRange(0, 99));
        assertThat(parse("bytes=-99999999999999999999")).contains(new ByteRange(0, 99));
        assertThatThrownBy(() -> parse("bytes=99999999999999999999-")).isInstanceOf(ByteRange.Unsatisfiable.class);
        assertThat(parse("bytes=00000000000000000000010-")).as("leading zeros count for nothing").contains(new ByteRange(10, 99));
        assertThat(parse("bytes=20000000000000000001-20000000000000000000")).as("reversed, though both clamp alike: ignored").isEmpty();
        assertThat(parse("bytes=000000000000000000005-9")).contains(new ByteRange(5, 9));
        assertThat(parse("bytes=" + "9".repeat(100_000) + "-" + "9".repeat(99_999))).as("compared as written, however long").isEmpty();
    }

    /** RFC 9110 §14.1.2: on an empty value only a non-zero suffix is satisfiable, and it is the whole (empty) value. */
    @Test
    void anEmptyValueSatisfiesOnlyANonZeroSuffix() throws Exception {
        assertThat(ByteRange.parse("bytes=-5", 0)).isEmpty();
        assertThatThrownBy(() -> ByteRange.parse("bytes=0-0", 0)).isInstanceOf(ByteRange.Unsatisfiable.class);
        assertThatThrownBy(() -> ByteRange.parse("bytes=-0", 0)).isInstanceOf(ByteRange.Unsatisfiable.class);
    }

    @Test
    void absentMalformedOrMultipleRangesMeanTheWholeValue() throws Exception {
        assertThat(parse(null)).isEmpty();
        assertThat(parse("bytes=5-1")).isEmpty();
        assertThat(parse("items=0-1")).isEmpty();
        assertThat(parse("bytes=0-1,5-6")).isEmpty();
    }

    @Test
    void rangesPastTheEndAreUnsatisfiable() {
        assertThatThrownBy(() -> parse("bytes=100-")).isInstanceOf(ByteRange.Unsatisfiable.class);
        assertThatThrownBy(() -> parse("bytes=-0")).isInstanceOf(ByteRange.Unsatisfiable.class);
        assertThatThrownBy(() -> ByteRange.parse("bytes=0-0", 0)).isInstanceOf(ByteRange.Unsatisfiable.class);
    }
}
