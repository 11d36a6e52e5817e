package io.lobstream.store.index;

import io.lobstream.store.allocator.Extent;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The least times of the uploads in progress, which let the writer skip its look for idle uploads (before each upload
 * command) and for their progress (at every commit): a scan of every upload, each with its unfinished page.
 */
class LobIndexUploadTimesTest {
    @TempDir
    Path dir;

    @Test
    void theUploadsLeastTimesAreLowerBoundsLearntByAWholeScan() throws Exception {
        try (LobIndex index = LobIndex.open(dir)) {
            assertThat(index.uploadTimesAtLeast()).as("not known before a scan").containsExactly(Long.MIN_VALUE, Long.MIN_VALUE);
            index.forEachUpload(u -> { });
            assertThat(index.uploadTimesAtLeast()).as("none").containsExactly(Long.MAX_VALUE, Long.MAX_VALUE);
            UploadEntry a = UploadEntry.begun("ua", "a", 1, 100, 2, 10, List.of(new Extent(11, 1)), List.of(), 5_000);
            UploadEntry b = UploadEntry.begun("ub", "b", 2, 100, 2, 20, List.of(new Extent(21, 1)), List.of(), 7_000);
            try (LobIndex.Batch batch = index.newBatch()) {
                index.write(batch.putUpload(a).putUpload(b));
            }
            assertThat(index.uploadTimesAtLeast()[0]).as("lowered when put").isEqualTo(5_000);
            assertThat(index.uploadTimesAtLeast()[1]).isLessThanOrEqualTo(a.appliedAtMillis());
            try (LobIndex.Batch batch = index.newBatch()) {
                index.write(batch.deleteUpload("ua"));
            }
            assertThat(index.uploadTimesAtLeast()[0]).as("a drop leaves the bound where it was").isEqualTo(5_000);
            index.forEachUpload(u -> { });
            assertThat(index.uploadTimesAtLeast()).as("a scan learns it").containsExactly(7_000, b.appliedAtMillis());
            // an upload put in a batch still open when a scan begins may be missing from it: the bounds do not rise past it
            UploadEntry c = UploadEntry.begun("uc", "c", 3, 100, 2, 30, List.of(new Extent(31, 1)), List.of(), 3_000);
            try (LobIndex.Batch batch = index.newBatch()) {
                batch.putUpload(c);
                index.forEachUpload(u -> { });
                assertThat(index.uploadTimesAtLeast()[0]).as("a scan before the write").isEqualTo(3_000);
                index.write(batch);
            }
            index.forEachUpload(u -> { });
            assertThat(index.uploadTimesAtLeast()).as("whole again").containsExactly(3_000L, Math.min(b.appliedAtMillis(), c.appliedAtMillis()));
        }
    }
}
