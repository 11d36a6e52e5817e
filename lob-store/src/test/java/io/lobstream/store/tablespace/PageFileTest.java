package io.lobstream.store.tablespace;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

class PageFileTest {
    @TempDir
    Path dir;

    /** FileChannel.force by an interrupted thread closes the channel for every thread that uses the page file. */
    @Test
    void forcingThePageFileFromAnInterruptedThreadLeavesItOpen() throws Exception {
        try (PageFile file = PageFile.openReadWrite(dir.resolve("lob.pages"), 4096)) {
            file.write(0, ByteBuffer.allocate(4096));
            Thread.currentThread().interrupt();
            try {
                file.force();
            } finally {
                assertThat(Thread.interrupted()).isTrue();
            }
            file.write(1, ByteBuffer.allocate(4096));
            file.force();
            assertThat(file.sizeInPages()).isEqualTo(2);
        }
    }
}
