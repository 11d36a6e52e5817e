package io.lobstream.store.impl;

import io.lobstream.store.Chunk;
import io.lobstream.store.ChunkResult;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.TablespaceCheckDueException;
import io.lobstream.store.TablespaceTornException;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.UploadEntry;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.page.PageCodec;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.lobstream.store.impl.DefaultLobStoreTest.assertSameBytes;
import static io.lobstream.store.impl.DefaultLobStoreTest.bytes;
import static io.lobstream.store.impl.DefaultLobStoreTest.put;
import static io.lobstream.store.impl.DefaultLobStoreTest.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * A power loss between two flushes, stood in for by a crash and a page put back to zeros: the kernel wrote the index's
 * WAL back and not the page. An unclean open checks the pages of the versions the last flush did not cover, and refuses
 * the tablespace when one is missing; it does not read the versions the flush covered.
 */
class TornWritesTest {
    private static final int PAGE = 4096;
    private static final int CAPACITY = PageCodec.payloadCapacity(PAGE);

    @TempDir
    Path dir;

    private final LobStoreConfig config = new LobStoreConfig(Map.of(LobStoreConfig.PAGE_SIZE.name(), PAGE));

    @Test
    void aVersionWrittenSinceTheLastFlushWithoutItsPagesIsRefused() throws IOException {
        aFlushedThenBWritten().crash();

        DefaultLobStore.open(dir, config).close(); // a crash alone: the pages are there, the open checks them and goes on

        long lost;
        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) {
            put(again, "c", bytes(5 * CAPACITY, 3));
            again.flush();
            put(again, "b", bytes(5 * CAPACITY, 4)); // b's next version, after the flush
            lost = dataPage(again, "b");
            again.crash();
        }
        assertLosingRefuses(lost, "b@");
    }

    /**
     * fsck of the closed copy, which runs no recovery, tells the two apart as the open would: a lost page of a version the
     * last flush did not cover may be the power loss (the open finds it too, and the copy is rebuilt), one of a version it
     * covered is damage.
     */
    @Test
    void fsckTellsAPageTheLastFlushDidNotCoverFromDamage() throws IOException {
        DefaultLobStore store = aFlushedThenBWritten();
        long covered = dataPage(store, "a");
        long uncovered = dataPage(store, "b");
        store.crash();
        zero(covered);
        zero(uncovered);

        List<String> problems = LobStore.fsckClosed(dir, true).problems();
        assertThat(problems).filteredOn(p -> p.contains("b@")).singleElement().asString()
                .contains("page " + uncovered).contains("a power loss may have taken it");
        assertThat(problems).filteredOn(p -> p.contains("a@")).singleElement().asString()
                .contains("page " + covered).doesNotContain("power loss");
        // without reading data pages fsck cannot see a's damage, but it reports what the open will refuse the copy for
        assertThat(LobStore.fsckClosed(dir, false).problems()).singleElement().asString()
                .contains("b@").contains("page " + uncovered).contains("a power loss may have taken it");
    }

    /** The open records a frontier too: a tablespace made (or upgraded) is covered before its first flush. */
    @Test
    void aVersionWrittenBeforeTheFirstFlushIsChecked() throws IOException {
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        put(store, "a", bytes(5 * CAPACITY, 1));
        long lost = dataPage(store, "a");
        store.crash();
        assertLosingRefuses(lost, "a@");
    }

    /**
     * Without lob.sync nothing is forced, and an open drops the frontier an earlier run recorded. After a crash of the
     * process alone (the same boot of the machine) the kernel still holds every page it wrote: nothing is checked. (A
     * page put back to zeros then is not what such a crash does: a failing disk, which reads and fsck report.)
     */
    @Test
    void withoutSyncACrashOfTheProcessAloneIsTrusted() throws IOException {
        assumeTrue(BootId.current().isPresent(), "this system does not say which boot it runs in");
        DefaultLobStore.open(dir, config).close(); // a frontier recorded with lob.sync on
        LobStoreConfig unsynced = config.with(LobStoreConfig.SYNC.name(), false);
        DefaultLobStore store = DefaultLobStore.open(dir, unsynced);
        put(store, "a", bytes(5 * CAPACITY, 1));
        long lost = dataPage(store, "a");
        store.crash();
        zero(lost);
        try (DefaultLobStore again = DefaultLobStore.open(dir, unsynced)) {
            assertThatThrownBy(() -> read(again, "a")).hasMessageContaining("page " + lost);
        }
    }

    /**
     * Without lob.sync, after a restart of the machine any page may be lost while the index, which RocksDB syncs on its
     * own, names it: every version is checked, those written before a flush too, whichever lob.sync the open has.
     */
    @Test
    void withoutSyncAnOpenAfterARestartOfTheMachineChecksEveryVersion() throws IOException {
        LobStoreConfig unsynced = config.with(LobStoreConfig.SYNC.name(), false);
        DefaultLobStore store = DefaultLobStore.open(dir, unsynced);
        byte[] b = bytes(5 * CAPACITY, 2);
        put(store, "a", bytes(5 * CAPACITY, 1));
        store.flush();
        put(store, "b", b);
        long lost = dataPage(store, "a");
        store.crash();
        restartTheMachine();

        // a caller that must not block for long (a task's init) is told before any page is read
        assertThatThrownBy(() -> DefaultLobStore.open(dir, unsynced, null, "t", false)).isInstanceOf(TablespaceCheckDueException.class);
        try (DefaultLobStore again = DefaultLobStore.open(dir, unsynced)) { // every page on disk: it opens
            assertSameBytes(read(again, "b"), b);
            again.crash();
        }
        restartTheMachine();
        zero(lost);
        assertThatThrownBy(() -> DefaultLobStore.open(dir, unsynced)).isInstanceOf(TablespaceTornException.class)
                .hasMessageContaining("a@").hasMessageContaining("page " + lost);
        assertLosingRefuses(lost, "a@"); // lob.sync on now changes nothing: the run that wrote a did not force it
    }

    /** A frontier that does not decode covers nothing: every page is to be read, and a caller that may not wait is told first. */
    @Test
    void aFrontierThatDoesNotDecodeChecksEveryVersionNotOnATaskInit() throws IOException {
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        byte[] a = bytes(5 * CAPACITY, 1);
        put(store, "a", a);
        store.flush();
        store.crash();
        try (LobIndex index = LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) {
            index.writeSync(index.newBatch().putMeta(SyncedFrontier.META_KEY, new byte[] {1, 2, 3}));
        }
        assertThatThrownBy(() -> DefaultLobStore.open(dir, config, null, "t", false)).isInstanceOf(TablespaceCheckDueException.class);
        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) {
            assertSameBytes(read(again, "a"), a);
        }
    }

    @Test
    void versionsTheLastFlushCoveredAreNotReadAgain() throws IOException {
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        put(store, "a", bytes(5 * CAPACITY, 1));
        store.flush();
        long page = dataPage(store, "a");
        store.crash();
        zero(page); // not what a power loss does to a flushed page: a failing disk, which reads and fsck report

        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) {
            assertThatThrownBy(() -> read(again, "a")).hasMessageContaining("page " + page);
        }
    }

    @Test
    void anUploadsChunksSinceTheLastFlushAreChecked() throws IOException {
        byte[] value = twoChunksAcrossAFlushThenACrash();

        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) { // the chunks' pages are there: the upload goes on
            chunk(again, value, 2, 6 * CAPACITY, value.length);
            assertSameBytes(read(again, "big"), value);
            put(again, "other", bytes(100, 6));
            again.flush(); // the upload's version is settled now: the flush covers it
            again.crash();
        }
        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) {
            assertSameBytes(read(again, "big"), value);
            chunk(again, "u2", value, 0, 0, 3 * CAPACITY); // the value again, as another upload
            again.flush();
            chunk(again, "u2", value, 1, 3 * CAPACITY, 6 * CAPACITY);
            again.crash();
        }
        assertLosingRefuses(uploadDataPage("u2", 4), "upload u2"); // written by the chunk after the flush
    }

    /** The pages an upload's chunks filled before the flush are on disk: an unclean open reads only those written after. */
    @Test
    void anUploadsPagesTheLastFlushCoveredAreNotReadAgain() throws IOException {
        byte[] value = twoChunksAcrossAFlushThenACrash();
        long covered = uploadDataPage("u", 1); // filled by the chunk before the flush
        zero(covered); // not what a power loss does to a flushed page: a failing disk, which the value's reads report

        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) {
            chunk(again, value, 2, 6 * CAPACITY, value.length);
            assertThatThrownBy(() -> read(again, "big")).hasMessageContaining("page " + covered);
        }
    }

    /** A chunk that ended mid-page before the flush: that page, filled after it, is read. */
    @Test
    void anUploadsPageLeftPartialAtTheFlushIsChecked() throws IOException {
        byte[] value = bytes(8 * CAPACITY + 100, 6);
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        chunk(store, value, 0, 0, 5 * CAPACITY / 2);
        store.flush();
        chunk(store, value, 1, 5 * CAPACITY / 2, 6 * CAPACITY);
        store.crash();
        assertLosingRefuses(uploadDataPage("u", 2), "upload u");
    }

    /** An upload begun before an open is still unsettled after it: a flush then does not cover its later chunks. */
    @Test
    void anUploadInProgressAcrossAnOpenIsCheckedAfterTheNextCrash() throws IOException {
        byte[] value = bytes(8 * CAPACITY + 100, 7);
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        chunk(store, value, 0, 0, 3 * CAPACITY);
        store.flush();
        store.crash();
        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) {
            put(again, "other", bytes(100, 8)); // a later version: the next flush's frontier is past the upload's
            again.flush();
            chunk(again, value, 1, 3 * CAPACITY, 6 * CAPACITY); // after the flush
            again.crash();
        }
        assertLosingRefuses(uploadDataPage("u", 4), "upload u");
    }

    /**
     * The place a partial update's page was written to held the same LOB's page at that position of the value: the
     * older version's, with its version, sequence and length. A version that shares pages accepts older pages in the
     * ones it shares; the pages it wrote itself must carry its own version.
     */
    @Test
    void aPartialUpdatesPageLeftHoldingTheLobsOlderPageIsRefused() throws IOException {
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        Patched patched = patchThirdPage(store);
        VersionEntry made = store.current("a").orElseThrow();
        store.crash();
        assertRefusedHoldingTheBasesPage(patched, made.version());
    }

    /** A page a version made since the flush wrote, and shares with the version made from it, is held to its writer too. */
    @Test
    void aPageWrittenByAnIntermediateVersionIsHeldToItsWriter() throws IOException {
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        Patched patched = patchThirdPage(store);
        byte[] patch = bytes(CAPACITY, 3);
        store.write("a", 4L * CAPACITY, new ByteArrayInputStream(patch), patch.length, null); // shares the third
        VersionEntry last = store.current("a").orElseThrow();
        store.crash();
        assertRefusedHoldingTheBasesPage(patched, last.version());
    }

    /**
     * Without lob.sync an open checks nothing, and a read passes the LOB's older page in a shared version's page: fsck
     * holds each page to the version that wrote it, and reports it.
     */
    @Test
    void fsckFindsAPartialUpdatesPageHoldingTheLobsOlderPage() throws IOException {
        LobStoreConfig unsynced = config.with(LobStoreConfig.SYNC.name(), false);
        Patched patched;
        try (DefaultLobStore store = DefaultLobStore.open(dir, unsynced)) {
            patched = patchThirdPage(store);
            store.crash();
        }
        rewriteAt(patched.basePage(), patched.madePage());
        try (DefaultLobStore store = DefaultLobStore.open(dir, unsynced)) {
            assertThat(read(store, "a")).as("a read cannot tell").hasSize(5 * CAPACITY);
            assertThat(store.fsck(true).problems()).anyMatch(p -> p.contains("page " + patched.madePage()) && p.contains("stale"));
            assertThat(store.fsckOnline().problems()).anyMatch(p -> p.contains("page " + patched.madePage()) && p.contains("stale"));
        }
    }

    /** A base gone from the index (reclaimed before the crash): its successor's pages are held to what is known only. */
    @Test
    void aVersionWhoseBaseWasReclaimedOpensClean() throws IOException {
        byte[] value = bytes(5 * CAPACITY, 1);
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        put(store, "a", value);
        store.flush();
        byte[] patch = bytes(CAPACITY, 2);
        store.write("a", 2L * CAPACITY, new ByteArrayInputStream(patch), patch.length, null);
        System.arraycopy(patch, 0, value, 2 * CAPACITY, patch.length);
        VersionEntry base = pendingOf(store, "a");
        assertThat(store.reclaim("a", base.version(), base.extents(), null)).isEqualTo(ReclaimOutcome.APPLIED);
        store.crash();

        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) {
            assertSameBytes(read(again, "a"), value);
        }
    }

    /** Versions made from versions made since the flush: each page is checked against the version that wrote it. */
    @Test
    void aChainOfPartialUpdatesSinceTheLastFlushOpensClean() throws IOException {
        byte[] value = bytes(6 * CAPACITY + 10, 1);
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        put(store, "a", bytes(100, 9));
        store.flush();
        put(store, "a", value);
        byte[] patch = bytes(CAPACITY + 20, 2);
        store.write("a", CAPACITY - 10L, new ByteArrayInputStream(patch), patch.length, null);
        System.arraycopy(patch, 0, value, CAPACITY - 10, patch.length);
        byte[] tail = bytes(2 * CAPACITY, 3);
        store.append("a", new ByteArrayInputStream(tail), tail.length, null);
        value = java.util.Arrays.copyOf(value, value.length + tail.length);
        System.arraycopy(tail, 0, value, value.length - tail.length, tail.length);
        store.truncate("a", value.length - CAPACITY / 2, null);
        value = java.util.Arrays.copyOf(value, value.length - CAPACITY / 2);
        store.write("a", 4L * CAPACITY, new ByteArrayInputStream(patch), patch.length, null);
        System.arraycopy(patch, 0, value, 4 * CAPACITY, patch.length);
        assertThat(store.current("a").orElseThrow().baseVersion()).isPositive();
        store.crash();

        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) {
            assertSameBytes(read(again, "a"), value);
        }
    }

    @Test
    void aCleanCloseLeavesNothingToCheck() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            put(store, "a", bytes(5 * CAPACITY, 1));
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            long page = dataPage(store, "a");
            store.close();
            zero(page);
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            assertThat(store.current("a")).isPresent();
        }
    }

    /** {@code page} lost, as a power loss loses it: the next open refuses the tablespace, naming {@code what} and the page. */
    private void assertLosingRefuses(long page, String what) throws IOException {
        zero(page);
        assertThatThrownBy(() -> DefaultLobStore.open(dir, config)).isInstanceOf(TablespaceTornException.class)
                .hasMessageContaining(what).hasMessageContaining("page " + page);
    }

    private static void chunk(LobStore store, byte[] value, int index, int from, int to) throws IOException {
        chunk(store, "u", value, index, from, to);
    }

    private static void chunk(LobStore store, String uploadId, byte[] value, int index, int from, int to) throws IOException {
        ChunkResult r = store.putChunk(new Chunk(uploadId, "big", value.length, index, 3, from, to - from, null),
                new ByteArrayInputStream(value, from, to - from), null);
        assertThat(r.status()).isIn(ChunkResult.Status.ACCEPTED, ChunkResult.Status.PUBLISHED);
    }

    /** A store where "a" was written and flushed, then "b" written: b's pages the last flush did not cover. */
    private DefaultLobStore aFlushedThenBWritten() throws IOException {
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        put(store, "a", bytes(5 * CAPACITY, 1));
        store.flush();
        put(store, "b", bytes(5 * CAPACITY, 2));
        return store;
    }

    /** A data page of {@code lobId}'s current version: one past its root. */
    private static long dataPage(LobStore store, String lobId) throws IOException {
        Extent first = store.current(lobId).orElseThrow().extents().get(0);
        assertThat(first.pageCount()).isGreaterThan(2);
        return first.firstPage() + 2;
    }

    /** Upload "u" of "big": its first chunk, a flush, its second chunk, a crash. Returns the whole value. */
    private byte[] twoChunksAcrossAFlushThenACrash() throws IOException {
        byte[] value = bytes(8 * CAPACITY + 100, 5);
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        chunk(store, value, 0, 0, 3 * CAPACITY);
        store.flush();
        chunk(store, value, 1, 3 * CAPACITY, 6 * CAPACITY);
        store.crash();
        return value;
    }

    /** A partial update's page, and the page its base had at that place in the value. */
    private record Patched(long basePage, long madePage) {
    }

    /** The patched page left holding its base's page, as a power loss leaves it: the next open refuses, naming {@code reader}. */
    private void assertRefusedHoldingTheBasesPage(Patched patched, long reader) throws IOException {
        rewriteAt(patched.basePage(), patched.madePage());
        assertThatThrownBy(() -> DefaultLobStore.open(dir, config)).isInstanceOf(TablespaceTornException.class)
                .hasMessageContaining("a@" + reader).hasMessageContaining("page " + patched.madePage());
    }

    /** Puts a five-page "a", flushes, and overwrites its third data page: a partial update that shares the other four. */
    private static Patched patchThirdPage(DefaultLobStore store) throws IOException {
        put(store, "a", bytes(5 * CAPACITY, 1));
        store.flush();
        byte[] patch = bytes(CAPACITY, 2);
        store.write("a", 2L * CAPACITY, new ByteArrayInputStream(patch), patch.length, null);
        VersionEntry base = pendingOf(store, "a");
        long made = Extent.subtract(ownDataPages(store.current("a").orElseThrow()), base.retained()).get(0).firstPage();
        return new Patched(ownDataPage(base), made);
    }

    private static VersionEntry pendingOf(LobStore store, String lobId) {
        List<VersionEntry> pending = new ArrayList<>();
        store.forEachPending(e -> {
            if (e.lobId().equals(lobId)) {
                pending.add(e);
            }
        });
        assertThat(pending).hasSize(1);
        return pending.get(0);
    }

    /** The data pages {@code e} owns: its extents without its root page. */
    private static List<Extent> ownDataPages(VersionEntry e) {
        return Extent.subtract(e.extents(), List.of(new Extent(e.rootPage(), 1)));
    }

    private static long ownDataPage(VersionEntry e) {
        List<Extent> pages = ownDataPages(e);
        assertThat(Extent.totalPages(pages)).isEqualTo(1);
        return pages.get(0).firstPage();
    }

    private long uploadDataPage(String uploadId, int dataPage) throws IOException {
        try (LobIndex index = LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) {
            UploadEntry u = index.upload(uploadId).orElseThrow();
            return Extent.pageAt(u.dataExtents(), dataPage);
        }
    }

    /** The page at {@code from} as it would be had it been written at {@code to}: its CRC covers its place. */
    private void rewriteAt(long from, long to) throws IOException {
        try (FileChannel f = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer page = ByteBuffer.allocate(PAGE);
            f.read(page, from * PAGE);
            PageCodec.seal(page, to, PageCodec.verify(page, from));
            f.write(page, to * PAGE); // (seal leaves the whole page to write)
        }
    }

    /** Without lob.sync, after a restart of the machine an upload in progress has every page it wrote checked. */
    @Test
    void withoutSyncAnUploadsPagesAreCheckedAfterARestartOfTheMachine() throws IOException {
        LobStoreConfig unsynced = config.with(LobStoreConfig.SYNC.name(), false);
        byte[] value = bytes(8 * CAPACITY + 100, 5);
        DefaultLobStore store = DefaultLobStore.open(dir, unsynced);
        chunk(store, value, 0, 0, 3 * CAPACITY);
        store.flush(); // forces nothing without lob.sync
        chunk(store, value, 1, 3 * CAPACITY, 6 * CAPACITY);
        store.crash();
        long lost = uploadDataPage("u", 1); // written by the first chunk
        restartTheMachine();
        zero(lost);
        assertThatThrownBy(() -> DefaultLobStore.open(dir, unsynced)).isInstanceOf(TablespaceTornException.class)
                .hasMessageContaining("upload u").hasMessageContaining("page " + lost);
    }

    /**
     * A check cut short by an interrupt (a node stopping while its catch-up thread checks) closes the page file under it:
     * that says nothing of the pages, and the tablespace is not taken for one that lost some (a node would move it aside).
     */
    @Test
    void aCheckCutShortByAnInterruptIsNoLoss() throws IOException {
        LobStoreConfig unsynced = config.with(LobStoreConfig.SYNC.name(), false);
        DefaultLobStore store = DefaultLobStore.open(dir, unsynced);
        put(store, "a", bytes(5 * CAPACITY, 1));
        store.crash();
        restartTheMachine();
        Thread.currentThread().interrupt();
        try {
            assertThatThrownBy(() -> DefaultLobStore.open(dir, unsynced)).isInstanceOf(ClosedChannelException.class);
        } finally {
            Thread.interrupted();
        }
        try (DefaultLobStore again = DefaultLobStore.open(dir, unsynced)) { // checked in full, this time to the end
            assertThat(again.current("a")).isPresent();
        }
    }

    /** A new tablespace names no page: there is nothing to check, whatever boot it was made in. */
    @Test
    void aNewTablespaceIsNotCheckedWithoutSync() throws IOException {
        LobStoreConfig unsynced = config.with(LobStoreConfig.SYNC.name(), false);
        DefaultLobStore.open(dir, unsynced).crash();
        restartTheMachine();
        DefaultLobStore.open(dir, unsynced, null, "t", false).close();
    }

    /** Stands in for a restart of the machine between a crash and the next open: the boot the last open recorded is another. */
    private void restartTheMachine() throws IOException {
        try (LobIndex index = LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) {
            index.writeSync(index.newBatch().putMeta(BootId.META_KEY, "a boot before this one".getBytes(StandardCharsets.UTF_8)));
        }
    }

    private void zero(long page) throws IOException {
        try (FileChannel f = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.WRITE)) {
            f.write(ByteBuffer.wrap(new byte[PAGE]), page * PAGE);
        }
    }
}
