package io.lobstream.store.impl;

import io.lobstream.store.Chunk;
import io.lobstream.store.ChunkResult;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.UploadEntry;
import io.lobstream.store.page.PageCodec;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static io.lobstream.store.impl.DefaultLobStoreTest.assertSameBytes;
import static io.lobstream.store.impl.DefaultLobStoreTest.bytes;
import static io.lobstream.store.impl.DefaultLobStoreTest.read;
import static org.assertj.core.api.Assertions.assertThat;

/** Chunked uploads whose chunks end inside pages: no page the upload's entry counts as done is ever written again. */
class ChunkedUploadTest {
    private static final int PAGE = 4096;
    private static final int CAP = PageCodec.payloadCapacity(PAGE);
    /** 7 chunks of 4286 bytes: every boundary falls inside a page */
    private static final int CHUNKS = 7;

    @TempDir
    Path dir;

    private final byte[] value = bytes(30_000, 11);
    private final LobStoreConfig config = new LobStoreConfig(Map.of(LobStoreConfig.PAGE_SIZE.name(), PAGE));

    private ChunkResult chunk(LobStore store, int index) throws IOException {
        int size = (value.length + CHUNKS - 1) / CHUNKS;
        int from = index * size;
        int to = Math.min(value.length, from + size);
        Integer crc = null;
        if (index == CHUNKS - 1) {
            java.util.zip.CRC32C c = new java.util.zip.CRC32C();
            c.update(value);
            crc = (int) c.getValue();
        }
        return store.putChunk(new Chunk("u", "big", value.length, index, CHUNKS, from, to - from, crc),
                new ByteArrayInputStream(value, from, to - from), null);
    }

    private UploadEntry uploadEntry() throws IOException {
        try (LobIndex index = LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) {
            return index.upload("u").orElseThrow();
        }
    }

    private byte[] readPage(long pageNo) throws IOException {
        try (FileChannel ch = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.READ)) {
            ByteBuffer b = ByteBuffer.allocate(PAGE);
            ch.read(b, pageNo * PAGE);
            return b.array();
        }
    }

    private void writePage(long pageNo, byte[] page) throws IOException {
        try (FileChannel ch = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(page), pageNo * PAGE);
        }
    }

    @Test
    void anUploadResumedAfterARestartAtAMidPageBoundaryHoldsTheRightBytes() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            assertThat(chunk(store, 0).status()).isEqualTo(ChunkResult.Status.ACCEPTED);
            assertThat(chunk(store, 1).status()).isEqualTo(ChunkResult.Status.ACCEPTED);
        }
        UploadEntry u = uploadEntry();
        assertThat(u.bytesDone() % CAP).as("the last chunk ended inside a page").isNotZero();
        assertThat(u.partialPage()).as("that page's bytes are in the entry")
                .isEqualTo(Arrays.copyOfRange(value, (int) (u.bytesDone() - u.bytesDone() % CAP), (int) u.bytesDone()));
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            assertThat(chunk(store, 1).status()).isEqualTo(ChunkResult.Status.DUPLICATE);
            for (int i = 2; i < CHUNKS; i++) {
                assertThat(chunk(store, i).status()).isEqualTo(i == CHUNKS - 1 ? ChunkResult.Status.PUBLISHED : ChunkResult.Status.ACCEPTED);
            }
            assertSameBytes(read(store, "big"), value);
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }

    /**
     * A torn write of the page a chunk left partial (power loss, SIGKILL mid-write) used to leave the
     * upload unable to finish: the next chunk read the page back to complete it and failed its CRC, on
     * every redelivery. That page is no longer written before it is complete, and no page the entry
     * counts as done is written again.
     */
    @Test
    void aTornPartialPageDoesNotStopTheUploadAndDonePagesAreNeverRewritten() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            chunk(store, 0);
            chunk(store, 1);
        }
        UploadEntry u = uploadEntry();
        int partialIndex = (int) (u.bytesDone() / CAP);
        List<byte[]> done = new ArrayList<>();
        for (int i = 0; i < partialIndex; i++) {
            done.add(readPage(Extent.pageAt(u.dataExtents(), i)));
        }
        byte[] torn = new byte[PAGE];
        Arrays.fill(torn, (byte) 0xA5);
        writePage(Extent.pageAt(u.dataExtents(), partialIndex), torn);

        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            for (int i = 2; i < CHUNKS; i++) {
                chunk(store, i);
            }
            assertSameBytes(read(store, "big"), value);
            assertThat(store.fsck(true).problems()).isEmpty();
        }
        for (int i = 0; i < partialIndex; i++) {
            assertThat(readPage(Extent.pageAt(u.dataExtents(), i))).as("data page %d, done before the restart", i).isEqualTo(done.get(i));
        }
    }

    /** Its CRC is of the chunks as they came: a written page gone bad is found by fsck, or only at the first read. */
    @Test
    void fsckReadsTheDataPagesAnUploadInProgressHasWritten() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            chunk(store, 0);
            chunk(store, 1);
        }
        long page = Extent.pageAt(uploadEntry().dataExtents(), 0);
        byte[] bad = readPage(page);
        bad[PAGE - 1] ^= 1;
        writePage(page, bad);

        assertThat(LobStore.fsckClosed(dir, false).problems()).as("structure only").isEmpty();
        assertThat(LobStore.fsckClosed(dir, true).problems()).singleElement().asString()
                .contains("upload u of big").contains("page " + page);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            assertThat(store.fsck(true).problems()).singleElement().asString().contains("page " + page);
        }
    }

    @Test
    void chunksThatEndOnAndInsidePagesOfEverySizeRoundTrip() throws IOException {
        // chunk lengths around the page capacity: shorter than a page, exactly one, spanning several
        int[] lengths = {1, CAP - 1, 1, CAP, CAP + 1, 3 * CAP - 2, 2, 5000};
        byte[] v = bytes(Arrays.stream(lengths).sum(), 3);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            int at = 0;
            for (int i = 0; i < lengths.length; i++) {
                ChunkResult r = store.putChunk(new Chunk("v", "odd", v.length, i, lengths.length, at, lengths[i], null),
                        new ByteArrayInputStream(v, at, lengths[i]), null);
                assertThat(r.status()).isEqualTo(i == lengths.length - 1 ? ChunkResult.Status.PUBLISHED : ChunkResult.Status.ACCEPTED);
                at += lengths[i];
            }
            assertSameBytes(read(store, "odd"), v);
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }
    /** Found by LobStoreModelTest: a last chunk of no bytes after one that completed the value's last, shorter page. */
    @Test
    void anEmptyLastChunkAfterTheValuesLastPageIsComplete() throws IOException {
        for (int size : new int[]{1, CAP, CAP + 1, 2 * CAP}) {
            byte[] v = bytes(size, size);
            java.util.zip.CRC32C c = new java.util.zip.CRC32C();
            c.update(v);
            String id = "v" + size;
            try (LobStore store = DefaultLobStore.open(dir.resolve(id), config)) {
                assertThat(store.putChunk(new Chunk(id, id, size, 0, 2, 0, size, null), new ByteArrayInputStream(v), null).status())
                        .isEqualTo(ChunkResult.Status.ACCEPTED);
                assertThat(store.putChunk(new Chunk(id, id, size, 1, 2, size, 0, (int) c.getValue()), new ByteArrayInputStream(new byte[0]),
                        null).status()).as("size %d", size).isEqualTo(ChunkResult.Status.PUBLISHED);
                assertSameBytes(read(store, id), v);
            }
        }
    }
    /** A chunk of negative length is refused: it would move what the upload counts as written back over written pages. */
    @Test
    void aChunkOfNegativeLengthIsRejected() throws IOException {
        try (LobStore store = DefaultLobStore.open(dir, config)) {
            assertThat(chunk(store, 0).status()).isEqualTo(ChunkResult.Status.ACCEPTED);
            int size = (value.length + CHUNKS - 1) / CHUNKS;
            ChunkResult back = store.putChunk(new Chunk("u", "big", value.length, 1, CHUNKS, size, -size, null),
                    new ByteArrayInputStream(new byte[0]), null);
            assertThat(back.status()).isEqualTo(ChunkResult.Status.REJECTED);
            for (int i = 1; i < CHUNKS; i++) {
                assertThat(chunk(store, i).status()).as("chunk %d", i).isNotEqualTo(ChunkResult.Status.REJECTED);
            }
            assertSameBytes(read(store, "big"), value);
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }

    /**
     * A chunk the upload has, sent again (a retry under an idempotency key resends those before the ones the writer
     * lacks), is activity: a long upload's retry begun near the timeout used to lose it while resending.
     */
    @Test
    void aChunkSentAgainKeepsItsUploadFromExpiring() throws Exception {
        try (LobStore store = DefaultLobStore.open(dir.resolve("t"), config)) {
            store.putChunk(new Chunk("u2", "x", 3000, 0, 3, 0, 1000, null, 1_000_000), new ByteArrayInputStream(bytes(1000, 1)), null);
            assertThat(store.putChunk(new Chunk("u2", "x", 3000, 0, 3, 0, 1000, null, 1_500_000), new ByteArrayInputStream(bytes(1000, 1)),
                    null).status()).isEqualTo(ChunkResult.Status.DUPLICATE);
            assertThat(store.expireUploads(1_000_000 + 600_001, Long.MAX_VALUE, 600_000)).as("idle since the chunk came again").isEmpty();
            assertThat(store.expireUploads(1_500_000 + 600_001, Long.MAX_VALUE, 600_000)).containsExactly("u2");
        }
    }

    /** Idle by the time the chunks were sent and by the writer's clock, both. */
    @Test
    void anUploadIsIdleOnlyByBothTheTimeOfTheCommandsAndTheWritersClock() throws Exception {
        try (LobStore store = DefaultLobStore.open(dir.resolve("t"), config)) {
            store.putChunk(new Chunk("old", "old", 3000, 0, 3, 0, 1000, null, 1_000_000), new ByteArrayInputStream(bytes(1000, 1)), null);
            long now = System.currentTimeMillis();
            // a writer back after a long stop, the next chunk in its backlog: the commands' time has not moved on
            assertThat(store.expireUploads(1_000_000 + 600_000, Long.MAX_VALUE, 600_000)).isEmpty();
            // a producer whose clock runs an hour ahead: the commands' time has, this writer's clock has not
            assertThat(store.expireUploads(now + 3_600_000, now, 600_000)).isEmpty();
            Thread.sleep(5);
            // both clocks past the timeout (0 here): gone
            assertThat(store.expireUploads(1_000_001, System.currentTimeMillis(), 0)).containsExactly("old");
            assertThat(store.expireUploads(Long.MIN_VALUE, Long.MIN_VALUE, 600_000)).as("no time yet: nothing wraps around").isEmpty();
        }
    }
}
