package io.lobstream.ingest.http;

import org.junit.jupiter.api.Test;

import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
