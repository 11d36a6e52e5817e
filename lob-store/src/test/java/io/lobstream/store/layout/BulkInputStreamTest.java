package io.lobstream.store.layout;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BulkInputStreamTest {
    /** Breaks readSome's contract: 0 bytes, not at its end. */
    private static final class ReadsNothing extends BulkInputStream {
        @Override
        protected int readSome(byte[] b, int off, int len) {
            return 0;
        }
    }

    /** Taken for a byte, its 0 put a byte into a value that was never in the stream; retried, it spun under a latch. */
    @Test
    void aSubclassThatReadsNothingFailsEveryRead() {
        byte[] scratch = new byte[16];
        assertThatThrownBy(() -> BulkInputStream.readAtLeastOne(new ReadsNothing(), ByteBuffer.allocate(8), 0, 8, scratch))
                .isInstanceOf(IOException.class).hasMessageContaining("readSome returned 0 bytes");
        assertThatThrownBy(() -> BulkInputStream.readAtLeastOne(new ReadsNothing(), new byte[8], 0, 8))
                .isInstanceOf(IOException.class).hasMessageContaining("readSome returned 0 bytes");
        assertThatThrownBy(() -> new ReadsNothing().read()).isInstanceOf(IOException.class);
    }
}
