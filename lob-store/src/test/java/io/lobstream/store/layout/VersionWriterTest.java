package io.lobstream.store.layout;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.tablespace.PageFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.Random;
import java.util.function.Function;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class VersionWriterTest {
    private static final int PAGE = 4096;

    @TempDir
    Path dir;

    /** A writer whose page write failed (a full disk, here a file open read-only) stays fit for the next write. */
    @Test
    void aFailedWriteLeavesTheWriterFitForTheNext() throws IOException {
        Path path = dir.resolve("lobs.pages");
        PageFile.openReadWrite(path, PAGE).close();
        try (PageFile readOnly = PageFile.openReadOnly(path, PAGE)) {
            VersionWriter writer = new VersionWriter(readOnly);
            // the first write fails with the limit of its I/O buffer set to one page; the second gathers several pages
            // in that buffer, which failed on the limit left behind (IndexOutOfBoundsException), not on the file
            for (long length : new long[]{PAGE, 5L * PAGE}) {
                VersionLayout layout = VersionLayout.plan(PAGE, length);
                assertThatThrownBy(() -> writer.write("doc", 1, layout, 0, List.of(new Extent(1, layout.dataPages())), new BitSet(),
                        List.of(), new ByteArrayInputStream(new byte[(int) length])))
                        .isInstanceOf(IOException.class)
                        .hasMessageContaining("open read-only");
            }
        }
    }

    /**
     * The writer reads a stream over a buffer straight into its pages, any other through a byte[], and derives the
     * pages' checksums and the value's CRC from one pass: every way gives the same pages, and the CRC of the value.
     */
    @Test
    void aValueFromABufferIsWrittenAsFromAnyStream() throws IOException {
        byte[] value = new byte[5 * PAGE + 1234]; // a tail in the root, data pages in two extents, one run each
        new Random(11).nextBytes(value);
        int cut = 3 * PAGE + 17;
        List<Function<byte[], InputStream>> streams = List.of(
                ByteArrayInputStream::new,
                v -> new ByteBufferInputStream(ByteBuffer.wrap(v)),
                v -> new ByteBufferInputStream(ByteBuffer.allocateDirect(v.length).put(v).flip()),
                v -> new ConcatStream(List.of(new ByteBufferInputStream(ByteBuffer.wrap(v, 0, cut)),
                        new StutteringStream(Arrays.copyOfRange(v, cut, v.length)))));
        CRC32C whole = new CRC32C();
        whole.update(value);
        byte[] first = null;
        for (int i = 0; i < streams.size(); i++) {
            Path path = dir.resolve("lobs" + i + ".pages");
            VersionLayout layout = VersionLayout.plan(PAGE, value.length);
            try (PageFile file = PageFile.openReadWrite(path, PAGE)) {
                int crc = new VersionWriter(file).write("doc", 1, layout, 0, List.of(new Extent(1, 2), new Extent(10, layout.dataPages() - 2)),
                        new BitSet(), List.of(), streams.get(i).apply(value));
                assertThat(crc).as("stream %d", i).isEqualTo((int) whole.getValue());
            }
            byte[] pages = Files.readAllBytes(path);
            if (first == null) {
                first = pages;
            }
            assertThat(pages).as("stream %d", i).isEqualTo(first);
        }
    }
}
