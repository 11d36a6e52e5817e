package io.lobstream.store.impl;

import io.lobstream.store.index.LobIndex;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.ByteBuffer;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** The frontier's record in the index: what this release writes, what the release before wrote, and what does not decode. */
class SyncedFrontierTest {
    @TempDir
    Path dir;

    @Test
    void theUploadsBytesCoveredRoundTrip() throws Exception {
        try (LobIndex index = LobIndex.open(dir)) {
            SyncedFrontier written = new SyncedFrontier(10, new long[] {3, 7}, new long[] {3, 7}, new long[] {4096, 0});
            index.syncWalWith(written.put(index.newBatch()));
            SyncedFrontier read = SyncedFrontier.read(index, "t").orElseThrow();
            assertThat(read.issuedBelow()).isEqualTo(10);
            assertThat(read.unsettled()).containsExactly(3, 7);
            assertThat(read.uploadBytesCovered(3)).isEqualTo(4096);
            assertThat(read.uploadBytesCovered(7)).isZero();
            assertThat(read.uploadBytesCovered(5)).as("not an upload").isZero();
        }
    }

    /** The release before wrote no uploads' bytes: its frontier reads as covering none of them. */
    @Test
    void aFrontierOfTheReleaseBeforeReadsWithoutUploads() throws Exception {
        try (LobIndex index = LobIndex.open(dir)) {
            index.syncWalWith(index.newBatch().putMeta(SyncedFrontier.META_KEY,
                    ByteBuffer.allocate(20).putLong(10).putInt(1).putLong(7).array()));
            SyncedFrontier read = SyncedFrontier.read(index, "t").orElseThrow();
            assertThat(read.unsettled()).containsExactly(7);
            assertThat(read.uncovered(7)).isTrue();
            assertThat(read.uncovered(6)).isFalse();
            assertThat(read.uploadBytesCovered(7)).isZero();
        }
    }

    @Test
    void oneThatDoesNotDecodeCoversNothing() throws Exception {
        try (LobIndex index = LobIndex.open(dir)) {
            index.syncWalWith(index.newBatch().putMeta(SyncedFrontier.META_KEY,
                    ByteBuffer.allocate(25).putLong(10).putInt(1).putLong(7).putInt(0).array())); // a byte past its end
            SyncedFrontier read = SyncedFrontier.read(index, "t").orElseThrow();
            assertThat(read.uncovered(0)).isTrue();
            index.syncWalWith(index.newBatch().putMeta(SyncedFrontier.META_KEY,
                    ByteBuffer.allocate(28).putLong(10).putInt(2).putLong(7).putLong(3).array())); // not ascending
            assertThat(SyncedFrontier.read(index, "t").orElseThrow().uncovered(0)).isTrue();
            index.syncWalWith(index.newBatch().putMeta(SyncedFrontier.META_KEY, ByteBuffer.allocate(12).putLong(10).putInt(-1).array()));
            assertThat(SyncedFrontier.read(index, "t").orElseThrow().uncovered(0)).isTrue();
        }
    }
}
