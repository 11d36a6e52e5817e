package io.lobstream.store.layout;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class ConcatStreamTest {
    @Test
    void readsEveryPartWholeInOrder() throws IOException {
        byte[] expected = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
        InputStream concat = new ConcatStream(List.of(new ByteArrayInputStream(expected, 0, 4), new ByteArrayInputStream(new byte[0]),
                new ByteArrayInputStream(expected, 4, 6)));
        assertThat(concat.readAllBytes()).containsExactly(expected);
        assertThat(concat.read()).isEqualTo(-1);
    }

    @Test
    void aPartThatReturnsNoBytesForABulkReadIsNotTakenAsEnded() throws IOException {
        byte[] first = {1, 2, 3, 4, 5, 6, 7};
        InputStream concat = new ConcatStream(List.of(new StutteringStream(first), new ByteArrayInputStream(new byte[] {8, 9})));
        assertThat(concat.readAllBytes()).containsExactly(1, 2, 3, 4, 5, 6, 7, 8, 9);
        // one byte at a time too: no byte made up from a read of none
        InputStream again = new ConcatStream(List.of(new StutteringStream(first), new ByteArrayInputStream(new byte[] {8, 9})));
        for (int i = 1; i <= 9; i++) {
            assertThat(again.read()).isEqualTo(i);
        }
        assertThat(again.read()).isEqualTo(-1);
    }
}
