package io.lobstream.store.layout;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.tablespace.PageFile;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.file.Path;
import java.util.BitSet;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** A writer whose page write failed (a full disk, here a file open read-only) stays fit for the next write. */
class VersionWriterTest {
    private static final int PAGE = 4096;

    @TempDir
    Path dir;

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
}
