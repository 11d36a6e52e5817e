package io.lobstream.store.impl;

import io.lobstream.store.Chunk;
import io.lobstream.store.ChunkResult;
import io.lobstream.store.LobReadHandle;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.Source;
import io.lobstream.store.StoreStats;
import io.lobstream.store.ValueChecksumException;
import io.lobstream.store.WriteResult;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.layout.VersionReader;
import io.lobstream.store.page.CorruptPageException;
import io.lobstream.store.page.PageCodec;
import io.lobstream.store.page.PageHeader;
import io.lobstream.store.purge.LocalPurger;
import io.lobstream.store.purge.PurgeReader;
import io.lobstream.store.tablespace.PageFile;
import io.lobstream.store.tablespace.TablespaceDescriptor;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.ByteArrayInputStream;
import java.io.FilterInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

class DefaultLobStoreTest {
    @TempDir
    Path dir;

    static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    static byte[] read(LobStore store, String id) throws IOException {
        try (LobReadHandle h = store.open(id).orElseThrow(); InputStream in = h.stream(0, h.length())) {
            return in.readAllBytes();
        }
    }

    /** Compares without printing megabytes of array on failure. */
    static void assertSameBytes(byte[] actual, byte[] expected) {
        assertThat(actual.length).as("length").isEqualTo(expected.length);
        assertThat(java.util.Arrays.mismatch(actual, expected)).as("first differing byte").isEqualTo(-1);
    }

    static WriteResult put(LobStore store, String id, byte[] value) throws IOException {
        return store.put(id, new ByteArrayInputStream(value), value.length, null, null);
    }

    private LobStoreConfig config(int pageSize, boolean switches) {
        return new LobStoreConfig(Map.of("lob.page.size", pageSize)).withSwitches(switches);
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 100, 4000, 4064, 4065, 16_000, 16_384, 100_000, 300_000, 2_000_000})
    void valuesOfEverySizeRoundTrip(int size) throws IOException {
        for (boolean on : new boolean[]{true, false}) {
            Path d = dir.resolve("s" + size + on);
            try (DefaultLobStore store = DefaultLobStore.open(d, config(4096, on))) {
                byte[] v = bytes(size, size);
                put(store, "lob", v);
                assertSameBytes(read(store, "lob"), v);
                try (LobReadHandle h = store.open("lob").orElseThrow()) {
                    int from = size / 3;
                    int to = Math.max(from, size - 7);
                    assertSameBytes(h.stream(from, to).readAllBytes(), java.util.Arrays.copyOfRange(v, from, to));
                }
                assertThat(store.fsck(true).ok()).isTrue();
            }
        }
    }

    /**
     * {@code v}, which says it is read ({@code reading}) at its first read, and waits for {@code go} there: a put of it holds
     * the tablespace latch shared, as a write's page phase does (latch downgrade), until then.
     */
    static InputStream stalled(byte[] v, CountDownLatch reading, CountDownLatch go) {
        return new FilterInputStream(new ByteArrayInputStream(v)) {
            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                reading.countDown();
                try {
                    go.await();
                } catch (InterruptedException e) {
                    throw new java.io.InterruptedIOException();
                }
                return super.read(b, off, len);
            }
        };
    }

    /**
     * An fsck says it is checking while it waits for the exclusive latch, as much as while it holds it: a read begun then
     * would wait behind it (the HTTP API answers such a read 503 rather than keep a thread on it).
     */
    @Test
    @Timeout(60)
    void anFsckWaitingForTheTablespaceOrCheckingItSaysSo() throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config(4096, true))) {
            put(store, "before", bytes(10_000, 1));
            assertThat(store.checking()).isFalse();
            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch go = new CountDownLatch(1);
            byte[] v = bytes(100_000, 2);
            InputStream stalled = stalled(v, reading, go);
            Future<WriteResult> put = threads.submit(() -> store.put("during", stalled, v.length, null, null));
            assertThat(reading.await(30, TimeUnit.SECONDS)).isTrue();
            Future<FsckReport> fsck = threads.submit(() -> store.fsck(false));
            await().atMost(Duration.ofSeconds(30)).until(store::checking);
            assertThat(fsck.isDone()).as("behind the put").isFalse();
            go.countDown();
            assertThat(fsck.get().ok()).isTrue();
            put.get();
            assertThat(store.checking()).isFalse();
            assertSameBytes(read(store, "during"), v);
        } finally {
            threads.shutdownNow();
        }
    }

    /**
     * With lob.optimistic.update off a publish takes the tablespace latch exclusively. A read that ends and frees nothing
     * does not take it: it waited behind the page phase of a write in progress, and every read begun after it too.
     */
    @Test
    @Timeout(60)
    void aReadEndsWhileAPessimisticWriteWritesItsPages() throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(2);
        LobStoreConfig pessimistic = new LobStoreConfig(Map.of("lob.page.size", 4096, "lob.optimistic.update", false));
        try (DefaultLobStore store = DefaultLobStore.open(dir, pessimistic)) {
            byte[] a = bytes(10_000, 1);
            put(store, "a", a);
            LobReadHandle reader = store.open("a").orElseThrow();
            CountDownLatch reading = new CountDownLatch(1);
            CountDownLatch go = new CountDownLatch(1);
            byte[] v = bytes(100_000, 2);
            InputStream stalled = stalled(v, reading, go);
            Future<WriteResult> put = threads.submit(() -> store.put("b", stalled, v.length, null, null));
            assertThat(reading.await(30, TimeUnit.SECONDS)).isTrue();
            try {
                assertSameBytes(reader.stream(0, reader.length()).readAllBytes(), a);
                threads.submit(reader::close).get(10, TimeUnit.SECONDS);
                assertSameBytes(read(store, "a"), a); // a read after it, too
            } finally {
                go.countDown();
            }
            put.get();
            assertSameBytes(read(store, "b"), v);
            assertThat(store.fsck(true).ok()).isTrue();
        } finally {
            threads.shutdownNow();
        }
    }

    @Test
    void aValueLargerThanRootReferencesUsesIndexPages() throws IOException {
        // 4 KiB pages, prealloc off and a fragmented file: many extents force index pages
        LobStoreConfig cfg = config(4096, false);
        try (DefaultLobStore store = DefaultLobStore.open(dir, cfg)) {
            for (int i = 0; i < 800; i++) {
                put(store, "filler" + i, bytes(5000, i)); // root + 1 data page each
            }
            for (int i = 0; i < 800; i += 2) {
                WriteResult r = store.delete("filler" + i, null).map(e -> new WriteResult(e, Optional.empty())).orElseThrow();
                store.reclaim(r.written().lobId(), r.written().version(), r.written().extents(), null);
            }
            store.flush(); // a reclaim with no source frees its pages at the next flush
            byte[] big = bytes(3_000_000, 1);
            WriteResult w = put(store, "big", big);
            assertThat(w.written().extents().size()).isGreaterThan(300);
            assertSameBytes(read(store, "big"), big);
            FsckReport report = store.fsck(true);
            assertThat(report.problems()).isEmpty();
        }
    }

    @Test
    void updateSupersedesAndReclaimFreesExactlyThePendingPages() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            WriteResult v1 = put(store, "a", bytes(100_000, 1));
            WriteResult v2 = put(store, "a", bytes(50_000, 2));
            assertThat(v2.superseded()).map(VersionEntry::version).contains(v1.written().version());
            assertThat(store.stats().historyLength()).isEqualTo(1);
            FsckReport before = store.fsck(true);
            assertThat(before.ok()).isTrue();
            assertThat(before.pagesHistory()).isEqualTo(v1.written().pageCount());

            // the purge path: pages found from the root page of the superseded version
            List<Extent> found = scan(store, v2.superseded().orElseThrow());
            assertThat(store.reclaim("a", v1.written().version(), found, new Source("reclaim-0", 5))).isEqualTo(ReclaimOutcome.APPLIED);
            assertThat(store.stats().historyLength()).isZero();
            assertThat(store.stats().pagesHistory()).isZero();
            assertThat(store.appliedOffset("reclaim-0")).isEqualTo(5);
            FsckReport after = store.fsck(true);
            assertThat(after.ok()).isTrue();
            assertThat(after.pagesFree()).isEqualTo(before.pagesFree() + v1.written().pageCount());
            assertSameBytes(read(store, "a"), bytes(50_000, 2));
        }
    }

    private List<Extent> scan(DefaultLobStore store, VersionEntry e) throws IOException {
        Path ts = dir;
        try (PageFile f = PageFile.openReadOnly(ts.resolve(TablespaceDirs.PAGES), TablespaceDescriptor.read(ts).pageSize())) {
            return VersionReader.open(f, e.lobId(), e.version(), e.rootPage(), VersionReader.PageReadListener.NONE).allPages();
        }
    }

    @Test
    void duplicateReclaimIsIgnoredAndReclaimOfLiveVersionFreesNothing() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            WriteResult v1 = put(store, "a", bytes(40_000, 1));
            put(store, "a", bytes(40_000, 2));
            VersionEntry live = store.current("a").orElseThrow();
            assertThat(store.reclaim("a", live.version(), live.extents(), null)).isEqualTo(ReclaimOutcome.IGNORED);
            assertThat(store.reclaim("a", v1.written().version(), live.extents(), null)).isEqualTo(ReclaimOutcome.REJECTED);
            assertThat(store.reclaim("a", v1.written().version(), v1.written().extents(), null)).isEqualTo(ReclaimOutcome.APPLIED);
            long free = store.stats().pagesFree();
            assertThat(store.reclaim("a", v1.written().version(), v1.written().extents(), null)).isEqualTo(ReclaimOutcome.IGNORED);
            assertThat(store.stats().pagesFree()).isEqualTo(free);
            assertThat(store.fsck(true).ok()).isTrue();
            assertSameBytes(read(store, "a"), bytes(40_000, 2));
        }
    }

    @Test
    void aPinnedVersionIsFreedWhenTheReaderLetsGo() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            byte[] v1 = bytes(200_000, 1);
            put(store, "a", v1);
            LobReadHandle reader = store.open("a").orElseThrow();
            WriteResult v2 = put(store, "a", bytes(10, 2));
            VersionEntry old = v2.superseded().orElseThrow();
            assertThat(store.reclaim("a", old.version(), old.extents(), null)).isEqualTo(ReclaimOutcome.DEFERRED);
            // the reader still sees its version, whole
            assertSameBytes(reader.stream(0, reader.length()).readAllBytes(), v1);
            assertThat(store.stats().historyLength()).isEqualTo(1);
            reader.close();
            assertThat(store.stats().historyLength()).isZero();
            assertThat(store.fsck(true).ok()).isTrue();
        }
    }

    @Test
    void aReaderPastItsPinLeaseNoLongerHoldsPurgeBackAndFailsRatherThanReadAnotherValue() throws Exception {
        // a lease far longer than the few writes before the reclaim takes; the lease's exact bounds are PinsTest's
        LobStoreConfig leased = new LobStoreConfig(Map.of(LobStoreConfig.READ_PIN_MAX_MS.name(), 2000));
        try (DefaultLobStore store = DefaultLobStore.open(dir, leased)) {
            byte[] v1 = bytes(200_000, 1);
            put(store, "a", v1);
            long pinned = System.nanoTime();
            LobReadHandle slow = store.open("a").orElseThrow();
            WriteResult v2 = put(store, "a", bytes(200_000, 2));
            VersionEntry old = v2.superseded().orElseThrow();
            ReclaimOutcome first = store.reclaim("a", old.version(), old.extents(), null);
            assumeTrue(System.nanoTime() - pinned < TimeUnit.MILLISECONDS.toNanos(1500),
                    "a write and a reclaim took most of the 2 s lease (a stalled machine): the lease may have ended already");
            assertThat(first).isEqualTo(ReclaimOutcome.DEFERRED);
            assertThat(store.reclaimPastPinLeases()).as("within it").isZero();
            Thread.sleep(2100); // past the lease whatever the machine's speed
            assertThat(store.reclaimPastPinLeases()).as("past it").isEqualTo(1);
            assertThat(store.stats().historyLength()).isZero();
            store.flush(); // the freed pages go to writers at a sync (the reclaim deferred under the reader had no source)
            java.util.Set<Long> reused = new java.util.HashSet<>();
            for (int i = 3; i < 6; i++) {
                put(store, "a", bytes(200_000, i)).written().extents() // takes the freed pages again (first fit)
                        .forEach(e -> java.util.stream.LongStream.range(e.firstPage(), e.firstPage() + e.pageCount()).forEach(reused::add));
            }
            assertThat(old.extents()).as("the reader's pages were written over: the read below meets them")
                    .anyMatch(e -> java.util.stream.LongStream.range(e.firstPage(), e.firstPage() + e.pageCount()).anyMatch(reused::contains));
            try (InputStream in = slow.stream(0, slow.length())) {
                byte[] got = in.readAllBytes();
                assertThat(got).as("if the reader gets bytes at all, they are its version's").isEqualTo(v1);
            } catch (IOException pageError) {
                assertThat(pageError).isInstanceOfAny(io.lobstream.store.page.StalePageException.class,
                        io.lobstream.store.page.CorruptPageException.class);
            }
            slow.close();
            assertThat(store.fsck(true).ok()).isTrue();
            // a scan found none waiting, and the next ones skip the index; a reclaim deferred after that is looked for again
            assertThat(store.reclaimPastPinLeases()).isZero();
            long pinnedAgain = System.nanoTime();
            LobReadHandle slower = store.open("a").orElseThrow();
            VersionEntry older = put(store, "a", bytes(1_000, 9)).superseded().orElseThrow();
            ReclaimOutcome deferred = store.reclaim("a", older.version(), older.extents(), null);
            assumeTrue(System.nanoTime() - pinnedAgain < TimeUnit.MILLISECONDS.toNanos(1500),
                    "a write and a reclaim took most of the 2 s lease (a stalled machine): the lease may have ended already");
            assertThat(deferred).isEqualTo(ReclaimOutcome.DEFERRED);
            Thread.sleep(2100);
            assertThat(store.reclaimPastPinLeases()).isEqualTo(1);
            slower.close();
            assertThat(store.fsck(true).ok()).isTrue();
        }
    }

    /** A long history read a page at a time (as the writer produces its undo records again) gives each version once. */
    @Test
    void pendingVersionsReadInPagesAreEachReadOnce() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            for (int round = 0; round < 4; round++) {
                for (int i = 0; i < 10; i++) {
                    put(store, "lob-" + i + (i == 3 ? "-longer" : ""), bytes(100, round * 10L + i)); // a longer id, which the index orders after the others
                }
            }
            List<VersionEntry> all = store.pendingToPurge(Integer.MAX_VALUE);
            assertThat(all).hasSize(30);
            List<VersionEntry> paged = new ArrayList<>();
            VersionEntry after = null;
            List<VersionEntry> page;
            do {
                page = store.pendingToPurge(after, 7);
                paged.addAll(page);
                after = page.isEmpty() ? after : page.get(page.size() - 1);
            } while (page.size() == 7);
            assertThat(paged).containsExactlyElementsOf(all);
        }
    }

    @Test
    void deleteMakesTheVersionPendingAndTheLobInvisible() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            put(store, "a", bytes(30_000, 1));
            Optional<VersionEntry> gone = store.delete("a", null);
            assertThat(gone).isPresent();
            assertThat(gone.get().cause()).isEqualTo(VersionEntry.Cause.DELETE);
            assertThat(store.open("a")).isEmpty();
            assertThat(store.delete("a", null)).isEmpty();
            assertThat(store.stats().lobs()).isZero();
            assertThat(store.stats().historyLength()).isEqualTo(1);
        }
    }

    @Test
    void aChecksumMismatchPublishesNothingAndLeaksNothing() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            byte[] v = bytes(70_000, 1);
            assertThatThrownBy(() -> store.put("a", new ByteArrayInputStream(v), v.length, 12345, null))
                    .isInstanceOf(ValueChecksumException.class);
            assertThat(store.current("a")).isEmpty();
            FsckReport r = store.fsck(true);
            assertThat(r.ok()).isTrue();
            assertThat(r.pagesLive()).isZero();
        }
    }

    @Test
    void stateSurvivesReopenCleanAndAfterACrash() throws IOException {
        byte[] a = bytes(123_456, 1);
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            put(store, "a", bytes(99, 0));
            put(store, "a", a);
            put(store, "b", bytes(5, 5));
            store.delete("b", new Source("cmd-0", 3));
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            assertSameBytes(read(store, "a"), a);
            assertThat(store.stats().historyLength()).isEqualTo(2);
            assertThat(store.appliedOffset("cmd-0")).isEqualTo(3);
            assertThat(store.fsck(true).ok()).isTrue();
        }
        // and after a crash, with writes no flush covered: the free space rebuilt from the index, the last run's
        // versions checked, nothing lost
        byte[] c = bytes(70_000, 7);
        DefaultLobStore crashed = DefaultLobStore.open(dir, LobStoreConfig.defaults());
        put(crashed, "c", c);
        crashed.delete("a", new Source("cmd-0", 4));
        crashed.crash();
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            assertThat(store.open("a")).isEmpty();
            assertSameBytes(read(store, "c"), c);
            assertThat(store.stats().historyLength()).isEqualTo(3);
            assertThat(store.appliedOffset("cmd-0")).isEqualTo(4);
            assertThat(store.fsck(true).ok()).isTrue();
        }
    }

    @Test
    void aCorruptDataPageIsReportedWithItsPageNumber() throws IOException {
        long dataPage;
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            WriteResult w = put(store, "a", bytes(100_000, 1));
            dataPage = w.written().rootPage() + 1;
        }
        try (FileChannel ch = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[]{(byte) 0xff}), dataPage * 16384 + 1000);
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            FsckReport r = store.fsck(true);
            assertThat(r.ok()).isFalse();
            assertThat(r.problems()).anyMatch(p -> p.contains("page " + dataPage));
            assertThatThrownBy(() -> read(store, "a")).hasMessageContaining("page " + dataPage);
            // the online check finds it in its data pass, not under the latch, where only root and index pages are read
            assertThat(store.fsck(false).ok()).isTrue();
            FsckReport online = store.fsckOnline();
            assertThat(online.ok()).isFalse();
            assertThat(online.problems()).singleElement().asString().startsWith("live a@").contains("page " + dataPage);
            assertThat(online.pagesChecked()).as("the first part's root and index pages, then the data pass's, each once")
                    .isEqualTo(r.pagesChecked());
        }
    }

    /** A root page that fails is reported once, by the online check's first part, and the check goes on to the others. */
    @Test
    void aCorruptRootPageIsReportedOnceByTheOnlineCheck() throws IOException {
        long rootPage;
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            rootPage = put(store, "a", bytes(100_000, 1)).written().rootPage();
            put(store, "b", bytes(50_000, 2));
        }
        try (FileChannel ch = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[]{(byte) 0xff}), rootPage * 16384 + 100);
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            FsckReport online = store.fsckOnline();
            assertThat(online.ok()).isFalse();
            assertThat(online.problems()).singleElement().asString().startsWith("live a@").contains("page " + rootPage);
            assertThat(online.lobs()).isEqualTo(2);
            assertThat(read(store, "b")).isEqualTo(bytes(50_000, 2));
        }
    }

    /** Used to read as an empty window: read() returned 0 forever and transferTo spun on an HTTP thread. */
    @Test
    void aStaleShorterDataPageIsReportedNotReadAsAnEmptyPage() throws IOException {
        byte[] v = bytes(5 * 4064 + 100, 1);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config(4096, true))) {
            VersionEntry e = put(store, "a", v).written();
            // the page as it could be left by an earlier write of the same place: right LOB, version, sequence and CRC; 10 bytes
            long pageNo = resealDataPage(e, 2, h -> new PageHeader(h.type(), h.lobIdHash(), h.version(), h.sequence(), 10));
            assertTimeoutPreemptively(Duration.ofSeconds(30), () -> {
                assertThatThrownBy(() -> read(store, "a")).isInstanceOf(CorruptPageException.class)
                        .hasMessageContaining("page " + pageNo);
                try (LobReadHandle h = store.open("a").orElseThrow(); InputStream in = h.stream(2 * 4064 + 500, v.length)) {
                    assertThatThrownBy(() -> in.read(new byte[100])).hasMessageContaining("page " + pageNo);
                }
            });
            assertThat(store.fsck(true).problems()).anyMatch(p -> p.contains("page " + pageNo));
        }
    }

    /**
     * A power loss took a data page's write, and the index entry that names it survived (its WAL written by the OS):
     * the page still holds what an older version of the same LOB wrote at that place before the allocator reused it.
     * The same LOB, sequence, length and a good CRC: only the version tells, and a whole value wrote every page itself.
     */
    @Test
    void aWholeValuesPageLeftAsAnOlderVersionWroteItIsReportedNotRead() throws IOException {
        byte[] v = bytes(5 * 4064, 1);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config(4096, true))) {
            VersionEntry e = put(store, "a", v).written();
            long pageNo = resealDataPage(e, 2, h -> new PageHeader(h.type(), h.lobIdHash(), h.version() - 1, h.sequence(), h.payloadLength()));
            assertThatThrownBy(() -> read(store, "a")).isInstanceOf(io.lobstream.store.page.StalePageException.class)
                    .hasMessageContaining("page " + pageNo);
            assertThat(store.fsck(true).problems()).anyMatch(p -> p.contains("page " + pageNo));
        }
    }

    /** Rewrites data page {@code index} of LOB "a"'s version {@code e} (4 KiB pages) under another header, sealed; returns its number. */
    private long resealDataPage(VersionEntry e, int index, java.util.function.UnaryOperator<PageHeader> header) throws IOException {
        long pageNo;
        try (PageFile file = PageFile.openReadOnly(dir.resolve(TablespaceDirs.PAGES), 4096)) {
            pageNo = VersionReader.open(file, "a", e.version(), e.rootPage(), VersionReader.PageReadListener.NONE).dataPageNo(index);
        }
        try (FileChannel ch = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            ByteBuffer page = ByteBuffer.allocate(4096);
            ch.read(page, pageNo * 4096);
            PageCodec.seal(page, pageNo, header.apply(PageCodec.verify(page, pageNo)));
            ch.write(page.rewind(), pageNo * 4096);
        }
        return pageNo;
    }

    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void partialWriteSharesUnchangedPagesAndReclaimFreesOnlyTheRest(boolean switches) throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, config(4096, switches))) {
            byte[] v = bytes(40 * 4064, 1);
            WriteResult first = put(store, "doc", v);
            long pagesBefore = first.written().pageCount();
            byte[] patch = bytes(100, 2);
            WriteResult second = store.write("doc", 10 * 4064 + 5, new ByteArrayInputStream(patch), patch.length, null);
            System.arraycopy(patch, 0, v, 10 * 4064 + 5, patch.length);
            assertSameBytes(read(store, "doc"), v);

            VersionEntry old = second.superseded().orElseThrow();
            // the old version keeps its root and the one data page the write touched; the rest moved to the new version
            assertThat(old.pageCount()).isEqualTo(2);
            assertThat(Extent.totalPages(old.retained())).isEqualTo(pagesBefore - 2);
            assertThat(second.written().pageCount()).isEqualTo(pagesBefore);

            long freeBefore = store.stats().pagesFree();
            try (var purger = new io.lobstream.store.purge.LocalPurger(store, 16)) {
                assertThat(purger.purgeOnce()).isEqualTo(1);
            }
            assertThat(store.stats().pagesFree() - freeBefore).isEqualTo(2);
            assertSameBytes(read(store, "doc"), v);

            WriteResult appended = store.append("doc", new ByteArrayInputStream(patch), patch.length, null);
            WriteResult truncated = store.truncate("doc", 5 * 4064, null);
            assertThat(truncated.written().byteLength()).isEqualTo(5 * 4064);
            assertSameBytes(read(store, "doc"), java.util.Arrays.copyOf(v, 5 * 4064));
            assertThat(appended.superseded().orElseThrow().pageCount()).isLessThan(4);
            assertThatThrownBy(() -> store.write("doc", 5 * 4064 + 1, new ByteArrayInputStream(patch), 1, null))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(store.fsck(true).problems()).isEmpty();
        }
    }

    private static ChunkResult chunk(LobStore store, String upload, byte[] v, int index, int count, Integer crc) throws IOException {
        int size = (v.length + count - 1) / count;
        int from = Math.min(v.length, index * size);
        int to = Math.min(v.length, from + size);
        return store.putChunk(new Chunk(upload, "big", v.length, index, count, from, to - from, crc),
                new ByteArrayInputStream(v, from, to - from), null);
    }

    private static int crc(byte[] v) {
        java.util.zip.CRC32C c = new java.util.zip.CRC32C();
        c.update(v);
        return (int) c.getValue();
    }

    @Test
    void chunkedPutStreamsIntoPreallocatedPagesAcrossARestart() throws IOException {
        byte[] v = bytes(3_000_001, 5);
        long uploading;
        LobStoreConfig cfg = config(4096, true);
        try (DefaultLobStore store = DefaultLobStore.open(dir, cfg)) {
            assertThat(chunk(store, "u1", v, 0, 7, null).status()).isEqualTo(ChunkResult.Status.ACCEPTED);
            assertThat(chunk(store, "u1", v, 1, 7, null).status()).isEqualTo(ChunkResult.Status.ACCEPTED);
            assertThat(chunk(store, "u1", v, 1, 7, null).status()).isEqualTo(ChunkResult.Status.DUPLICATE);
            assertThat(chunk(store, "u1", v, 3, 7, null).status()).isEqualTo(ChunkResult.Status.REJECTED);
            assertThat(store.current("big")).isEmpty();
            FsckReport mid = store.fsck(true);
            assertThat(mid.problems()).isEmpty();
            assertThat(mid.pagesUploading()).isGreaterThan(700);
            uploading = mid.pagesUploading();
            assertThat(store.stats().pagesUploading()).isEqualTo(uploading);
            assertThat(store.stats().pagesTotal()).as("every page the tablespace spans, the upload's too, as fsck counts them")
                    .isEqualTo(mid.pagesLive() + mid.pagesHistory() + mid.pagesFree() + mid.pagesUploading());
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, cfg)) {
            assertThat(store.stats().pagesUploading()).as("counted again at open").isEqualTo(uploading);
            for (int i = 2; i < 7; i++) {
                ChunkResult r = chunk(store, "u1", v, i, 7, i == 6 ? crc(v) : null);
                assertThat(r.status()).isEqualTo(i == 6 ? ChunkResult.Status.PUBLISHED : ChunkResult.Status.ACCEPTED);
            }
            assertSameBytes(read(store, "big"), v);
            FsckReport done = store.fsck(true);
            assertThat(done.problems()).isEmpty();
            assertThat(done.pagesUploading()).isZero();
            assertThat(store.stats().pagesUploading()).isZero();
            assertThat(store.stats().pagesTotal()).isEqualTo(done.pagesLive() + done.pagesHistory() + done.pagesFree());
            assertThat(chunk(store, "u1", v, 4, 7, null).status()).as("a chunk of a finished upload").isEqualTo(ChunkResult.Status.REJECTED);
        }
    }

    @Test
    void chunkedPutWithABadChecksumOrThatStopsLeavesNothingBehind() throws IOException {
        byte[] v = bytes(600_000, 6);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config(4096, true))) {
            long free0 = store.stats().pagesFree();
            chunk(store, "bad", v, 0, 2, null);
            assertThat(store.stats().pagesUploading()).isGreaterThan(140);
            assertThat(chunk(store, "bad", v, 1, 2, crc(v) + 1).status()).isEqualTo(ChunkResult.Status.CHECKSUM_MISMATCH);
            assertThat(store.stats().pagesUploading()).isZero();
            assertThat(store.current("big")).isEmpty();
            chunk(store, "stopped", v, 0, 3, null);
            assertThat(store.stats().pagesUploading()).isGreaterThan(140);
            long spanned = store.stats().pagesTotal();
            assertThat(store.expireUploads(60_000)).isEmpty();
            assertThat(store.expireUploads(-1)).containsExactly("stopped");
            assertThat(store.stats().pagesUploading()).isZero();
            assertThat(store.stats().pagesTotal()).as("the upload's pages, free now").isEqualTo(spanned);
            assertThat(chunk(store, "stopped", v, 1, 3, null).status()).isEqualTo(ChunkResult.Status.REJECTED);
            FsckReport fsck = store.fsck(true);
            assertThat(fsck.problems()).isEmpty();
            assertThat(fsck.pagesLive() + fsck.pagesHistory() + fsck.pagesUploading()).isZero();
            assertThat(store.stats().pagesFree()).isGreaterThanOrEqualTo(free0);
        }
    }

    // ---------------------------------------------------------------- tablespace shrink

    private static LobStoreConfig shrinkConfig(int minPages) {
        return new LobStoreConfig(Map.of(LobStoreConfig.PAGE_SIZE.name(), 4096, LobStoreConfig.SHRINK_MIN_PAGES.name(), minPages));
    }

    private long filePages() throws IOException {
        return Files.size(dir.resolve(TablespaceDirs.PAGES)) / 4096;
    }

    private static VersionEntry current(LobStore store, String lobId) {
        try {
            return store.current(lobId).orElseThrow();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /** The end of the last page a live or pending version owns. */
    static long usedEnd(LobStore store) {
        long[] end = {0};
        java.util.function.Consumer<VersionEntry> owner = e -> e.extents().forEach(x -> end[0] = Math.max(end[0], x.endPage()));
        store.forEachCurrent(owner);
        store.forEachPending(owner);
        return end[0];
    }

    /**
     * A burst: 40 values to keep, 300 more on top of them, then the 300 deleted and the 40 updated,
     * everything superseded reclaimed. The 40 new versions land in the lowest free pages, so most of
     * the file past them is a free tail. Returns the live values; {@code cut} gets the last deleted version.
     */
    private static Map<String, byte[]> burstThenPurge(DefaultLobStore store, List<VersionEntry> cut) throws IOException {
        for (int i = 0; i < 40; i++) {
            put(store, "keep" + i, bytes(10_000, i));
        }
        for (int i = 0; i < 300; i++) {
            put(store, "tmp" + i, bytes(20_000, 1000 + i));
        }
        for (int i = 0; i < 300; i++) {
            cut.add(store.delete("tmp" + i, null).orElseThrow());
        }
        drain(store);
        Map<String, byte[]> live = new HashMap<>();
        for (int i = 0; i < 40; i++) {
            byte[] v = bytes(12_000, 100 + i);
            put(store, "keep" + i, v);
            live.put("keep" + i, v);
        }
        drain(store);
        return live;
    }

    /** Reclaims every pending version as the pipeline does (each reclaim from lob.reclaim: its pages free at once). */
    private static void drain(DefaultLobStore store) throws IOException {
        List<VersionEntry> pending = new ArrayList<>();
        store.forEachPending(pending::add);
        long offset = 0;
        for (VersionEntry e : pending) {
            assertThat(store.reclaim(e.lobId(), e.version(), e.extents(), new Source("reclaim-0", offset++))).isEqualTo(ReclaimOutcome.APPLIED);
        }
        assertThat(store.stats().historyLength()).isZero();
    }

    private static void assertIntact(LobStore store, Map<String, byte[]> live) throws IOException {
        for (Map.Entry<String, byte[]> e : live.entrySet()) {
            assertSameBytes(read(store, e.getKey()), e.getValue());
        }
        assertThat(store.stats().lobs()).isEqualTo(live.size());
        assertThat(store.fsck(true).problems()).isEmpty();
    }

    private static double counter(SimpleMeterRegistry registry, String name) {
        return registry.get(name).counter().count();
    }

    @Test
    void flushGivesAFreeTailBackToTheFileSystemAndKeepsOneBatch() throws IOException {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        List<VersionEntry> deleted = new ArrayList<>();
        Map<String, byte[]> live;
        long end;
        try (DefaultLobStore store = DefaultLobStore.open(dir, shrinkConfig(32), registry, "ts")) {
            live = burstThenPurge(store, deleted);
            long pagesBefore = store.stats().pagesTotal();
            long fileBefore = filePages();
            end = usedEnd(store);
            assertThat(fileBefore - end).as("free tail before the flush").isGreaterThan(1000);

            store.flush();
            assertThat(filePages()).as("the last used page plus one preallocation batch").isEqualTo(end + 8);
            assertThat(store.stats().pagesTotal()).isEqualTo(end + 8);
            assertThat(counter(registry, "lob_tablespace_shrinks")).isEqualTo(1);
            assertThat(counter(registry, "lob_tablespace_shrunk_pages")).isEqualTo(pagesBefore - end - 8);
            assertIntact(store, live);

            // a version reclaimed long ago whose root page was cut away reads as stale to purge, as a reused one does
            VersionEntry gone = deleted.get(deleted.size() - 1);
            assertThat(gone.rootPage()).isGreaterThanOrEqualTo(end + 8);
            try (PurgeReader reader = new PurgeReader(dir, store.config(), 0)) {
                PurgeReader.Result r = reader.scan(List.of(LocalPurger.request(gone))).get(0);
                assertThat(r.ok()).isFalse();
                assertThat(r.stale()).isTrue();
                assertThat(r.failure()).hasMessageContaining("stale page");
            }

            store.flush();
            assertThat(counter(registry, "lob_tablespace_shrinks")).as("nothing more to give back").isEqualTo(1);
        }
        assertThat(filePages()).as("after close").isEqualTo(end + 8);
        try (DefaultLobStore store = DefaultLobStore.open(dir, shrinkConfig(32))) {
            assertIntact(store, live);
            assertThat(store.stats().pagesTotal()).isEqualTo(end + 8);
            // and the file grows again from where it was cut
            for (int i = 0; i < 20; i++) {
                byte[] v = bytes(30_000, 500 + i);
                put(store, "more" + i, v);
                live.put("more" + i, v);
            }
            assertThat(filePages()).isGreaterThan(end + 8);
            store.flush();
            assertIntact(store, live);
        }
    }

    /**
     * With the latch downgrade a write lets go of the tablespace latch between its pages and its
     * publish; an online fsck that comes in between counts that version's pages as in flight, not
     * as leaked.
     */
    @Test
    @Timeout(300) // a guard against a hang, not a measure
    void anOnlineFsckUnderWritesReportsNoLeak() throws Exception {
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            AtomicBoolean writing = new AtomicBoolean(true);
            AtomicLong writes = new AtomicLong();
            ExecutorService writers = Executors.newFixedThreadPool(2);
            List<Future<?>> done = new ArrayList<>();
            for (int w = 0; w < 2; w++) {
                int writer = w;
                done.add(writers.submit(() -> {
                    for (int i = 0; writing.get(); i++) {
                        put(store, "w" + writer + "-" + (i % 4), bytes(60_000, i));
                        store.write("w" + writer + "-" + (i % 4), 100, new ByteArrayInputStream(bytes(100, i)), 100, null);
                        writes.addAndGet(2);
                    }
                    return null;
                }));
            }
            List<String> problems = new ArrayList<>();
            long caughtInFlight = 0;
            try {
                // one check per write or so: a check takes the tablespace latch exclusively, and back to back would starve the writers;
                // a thousand writes at least, and on until a check has come between a write's pages and its publish (a race
                // that a fast machine can win a thousand times in a row), within a deadline
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                for (long seen = 0; (seen < 1000 || caughtInFlight == 0) && System.nanoTime() < deadline
                        && done.stream().noneMatch(Future::isDone); ) {
                    if (writes.get() > seen) {
                        seen = writes.get();
                        FsckReport report = store.fsck(false);
                        problems.addAll(report.problems());
                        caughtInFlight += report.pagesInFlight() > 0 ? 1 : 0;
                    } else {
                        LockSupport.parkNanos(100_000);
                    }
                }
            } finally {
                writing.set(false);
                writers.shutdown();
            }
            for (Future<?> f : done) {
                f.get();
            }
            assertThat(problems).isEmpty();
            // a publish that finds the check queued waits behind it (the latch is not fair), its pages in flight
            assertThat(caughtInFlight).as("checks that came between a write's pages and its publish").isPositive();
            FsckReport quiet = store.fsck(true);
            assertThat(quiet.problems()).isEmpty();
            assertThat(quiet.pagesInFlight()).isZero();
        }
    }

    /**
     * A write whose publish fails (here: the index batch refuses a source without a name) gives
     * its new version's pages back at once, not at the next open, and keeps the pages it would
     * have shared with the version it failed to replace.
     */
    @Test
    void aWriteWhosePublishFailsGivesItsPagesBack() throws Exception {
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            byte[] v1 = bytes(200_000, 1);
            put(store, "a", v1);
            StoreStats before = store.stats();
            assertThatThrownBy(() -> store.put("b", new ByteArrayInputStream(bytes(200_000, 2)), 200_000, null, new Source(null, 1)))
                    .isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> store.write("a", 0, new ByteArrayInputStream(bytes(100, 3)), 100, new Source(null, 2)))
                    .as("a partial update, sharing a's other pages").isInstanceOf(NullPointerException.class);
            assertThatThrownBy(() -> store.putChunk(new Chunk("u1", "d", 300_000, 0, 1, 0, 300_000, null),
                    new ByteArrayInputStream(bytes(300_000, 5)), new Source(null, 3))).as("an upload of one chunk")
                    .isInstanceOf(NullPointerException.class);
            StoreStats after = store.stats();
            assertThat(after.pagesLive()).as("a's current version keeps the pages the partial update would have shared")
                    .isEqualTo(before.pagesLive());
            assertThat(after.pagesFree()).as("the rest is free, the file having grown for the three")
                    .isEqualTo(after.pagesTotal() - after.pagesLive()).isGreaterThan(before.pagesFree());
            FsckReport failed = store.fsck(true);
            assertThat(failed.problems()).as("no leaked pages, none freed twice").isEmpty();
            assertThat(failed.pagesInFlight()).isZero();

            // the last chunk of a longer upload: its pages stay the upload's, whose entry the failed batch did not delete
            byte[] e = bytes(300_000, 6);
            assertThat(store.putChunk(new Chunk("u2", "e", e.length, 0, 2, 0, 150_000, null),
                    new ByteArrayInputStream(e, 0, 150_000), new Source("in", 4)).status()).isEqualTo(ChunkResult.Status.ACCEPTED);
            assertThatThrownBy(() -> store.putChunk(new Chunk("u2", "e", e.length, 1, 2, 150_000, 150_000, null),
                    new ByteArrayInputStream(e, 150_000, 150_000), new Source(null, 5))).isInstanceOf(NullPointerException.class);
            assertThat(store.fsck(true).problems()).isEmpty();
            assertThat(store.putChunk(new Chunk("u2", "e", e.length, 1, 2, 150_000, 150_000, null),
                    new ByteArrayInputStream(e, 150_000, 150_000), new Source("in", 5)).status()).isEqualTo(ChunkResult.Status.PUBLISHED);
            assertSameBytes(read(store, "e"), e);
            assertSameBytes(read(store, "a"), v1);
            put(store, "c", bytes(400_000, 4)); // takes the pages given back
            assertThat(store.fsck(true).problems()).isEmpty();
            assertSameBytes(read(store, "a"), v1);
        }
    }

    /**
     * Pages a pending version handed over to its successor (a partial update) may be reused once
     * the successor is reclaimed first: checking the pending version reads only its own pages.
     */
    @Test
    void aPendingVersionsHandedOverPagesAreNotItsToCheckOnceItsSuccessorIsGone() throws Exception {
        try (DefaultLobStore store = DefaultLobStore.open(dir, LobStoreConfig.defaults())) {
            put(store, "a", bytes(200_000, 1));
            WriteResult v2 = store.write("a", 0, new java.io.ByteArrayInputStream(bytes(100, 2)), 100, null); // shares the rest
            VersionEntry v1 = v2.superseded().orElseThrow();
            assertThat(v1.retained()).as("pages handed over to v2").isNotEmpty();
            WriteResult v3 = put(store, "a", bytes(200_000, 3));
            VersionEntry second = v3.superseded().orElseThrow();
            assertThat(store.reclaim("a", second.version(), second.extents(), null)).isEqualTo(ReclaimOutcome.APPLIED);
            for (int i = 0; i < 4; i++) {
                put(store, "other" + i, bytes(200_000, 10 + i)); // takes the freed pages again
            }
            assertThat(store.fsck(true).problems()).as("v1 still pending, its handed-over pages reused").isEmpty();
            assertThat(store.reclaim("a", v1.version(), v1.extents(), null)).isEqualTo(ReclaimOutcome.APPLIED);
            assertThat(store.fsck(true).ok()).isTrue();
        }
    }

    /**
     * A moved version's old copy waits for its reader past the pin lease too (a move adds no
     * history): another reader's unpin of the new copy must not free it meanwhile.
     */
    @Test
    void aMovedVersionsOldCopyOutlivesItsReadersLeaseWhenAnotherReaderLetsGo() throws Exception {
        LobStoreConfig config = shrinkConfig(32).with(LobStoreConfig.COMPACT_MAX_PAGES.name(), 100)
                .with(LobStoreConfig.READ_PIN_MAX_MS.name(), 2000);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            for (int i = 0; i < 200; i++) {
                put(store, "low" + i, bytes(10_000, i));
            }
            byte[] value = bytes(10_000, 7);
            put(store, "high", value);
            for (int i = 0; i < 200; i++) {
                store.delete("low" + i, null);
            }
            drain(store);
            store.flush();
            LobReadHandle slow = store.open("high").orElseThrow();
            store.compact(); // the first call after writes moves nothing
            while (store.compact() > 0) {
                // until everything is moved
            }
            assertThat(store.stats().pagesHistory()).as("the old copy waits for its reader").isEqualTo(slow.version().pageCount());
            Thread.sleep(2100); // past the lease whatever the machine's speed
            try (LobReadHandle other = store.open("high").orElseThrow()) {
                assertThat(other.version().version()).isGreaterThan(slow.version().version());
            }
            assertThat(store.stats().pagesHistory()).as("still kept after another reader let go").isEqualTo(slow.version().pageCount());
            assertSameBytes(slow.stream(0, slow.length()).readAllBytes(), value);
            slow.close();
            assertThat(store.stats().pagesHistory()).isZero();
            assertThat(store.fsck(true).ok()).isTrue();
        }
    }

    /** Ten values of 10,000 bytes written above 200 deleted ones, whose pages purge has freed: holes below them. */
    private static Map<String, byte[]> tenAboveHoles(DefaultLobStore store) throws IOException {
        Map<String, byte[]> above = new LinkedHashMap<>();
        for (int i = 0; i < 10; i++) {
            above.put("high" + i, bytes(10_000, 1000 + i));
        }
        return aboveHoles(store, above);
    }

    /**
     * Puts 200 values of 10,000 bytes, then {@code above} in its order, then deletes the 200 and lets purge free their
     * pages: holes below {@code above}, which it returns.
     */
    private static Map<String, byte[]> aboveHoles(DefaultLobStore store, Map<String, byte[]> above) throws IOException {
        for (int i = 0; i < 200; i++) {
            put(store, "low" + i, bytes(10_000, i));
        }
        for (Map.Entry<String, byte[]> e : above.entrySet()) {
            put(store, e.getKey(), e.getValue());
        }
        for (int i = 0; i < 200; i++) {
            store.delete("low" + i, null);
        }
        drain(store);
        return above;
    }

    /**
     * A run stops between moves once its time is up (each move syncs twice or three times, on the writer's stream thread),
     * after one move at least, and the next run goes on: with no time at all, one version per run until all are low.
     */
    @Test
    void aCompactionRunStopsBetweenMovesOnceItsTimeIsUp() throws IOException {
        LobStoreConfig config = shrinkConfig(32).with(LobStoreConfig.COMPACT_MAX_PAGES.name(), 100);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config, new SimpleMeterRegistry(), "ts")) {
            Map<String, byte[]> live = tenAboveHoles(store);
            long pagesEach = current(store, "high0").pageCount();
            Compactor noTime = new Compactor(store, config.compactMinFreeRatio(), config.shrinkMinPages(), config.compactMaxPages(), 0);
            assertThat(noTime.run()).as("the first run notes the writes").isZero();
            List<Long> runs = new ArrayList<>();
            for (long m; (m = noTime.run()) > 0; ) {
                runs.add(m);
            }
            assertThat(runs).hasSize(10).allSatisfy(m -> assertThat(m).isEqualTo(pagesEach));
            assertIntact(store, live);
        }
    }

    /**
     * A version of more pages than lob.compact.max.pages is never moved: one move copies it whole on the writer's stream
     * thread (a GiB value for seconds). The versions above it still go down into the holes; those below it stay, as
     * moving them would free nothing the file's end could give back.
     */
    @Test
    void compactionLeavesAVersionLargerThanARunWhereItIs() throws IOException {
        LobStoreConfig config = shrinkConfig(32).with(LobStoreConfig.COMPACT_MAX_PAGES.name(), 10);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config, new SimpleMeterRegistry(), "ts")) {
            Map<String, byte[]> live = new LinkedHashMap<>();
            live.put("below", bytes(10_000, 1000));
            live.put("big", bytes(100_000, 7));
            for (int i = 0; i < 40; i++) {
                live.put("above" + i, bytes(10_000, 2000 + i));
            }
            aboveHoles(store, live);
            store.flush();
            long peak = filePages();
            VersionEntry big = current(store, "big");
            VersionEntry below = current(store, "below");
            long above0 = current(store, "above0").version();
            assertThat(big.pageCount()).isGreaterThan(10);
            assertThat(store.compact()).as("the first call after writes moves nothing").isZero();
            while (store.compact() > 0) {
                // until nothing more moves
            }
            assertThat(current(store, "above0").version()).as("above it: moved down").isGreaterThan(above0);
            assertThat(current(store, "big")).as("the large one stays").isEqualTo(big);
            assertThat(current(store, "below")).as("below it: moving frees nothing at the end").isEqualTo(below);
            store.flush();
            assertThat(filePages()).as("cut down to the large one").isLessThan(peak)
                    .isGreaterThanOrEqualTo(big.extents().stream().mapToLong(Extent::endPage).max().orElseThrow());
            assertIntact(store, live);
            assertThat(store.fsck(true).ok()).isTrue();
        }
    }

    /**
     * A pass over more current versions than a run reads goes on at the next runs, in those with no write since the last
     * (a write does not start it again); the candidates a run left on its budget are moved by the next without a new pass.
     */
    @Test
    void aCompactionPassOverManyLobsSpansRuns() throws IOException {
        LobStoreConfig config = shrinkConfig(32).with(LobStoreConfig.COMPACT_MAX_PAGES.name(), 100);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config, new SimpleMeterRegistry(), "ts")) {
            Map<String, byte[]> live = tenAboveHoles(store);
            long pagesEach = current(store, "high0").pageCount();
            // 3 versions read a run, one move a run
            Compactor c = new Compactor(store, config.compactMinFreeRatio(), config.shrinkMinPages(), config.compactMaxPages(), 0, 3);
            assertThat(c.run()).as("the first run notes the writes").isZero();
            assertThat(c.run()).as("high0-2 read").isZero();
            assertThat(c.underWay()).as("a run of the pass, not one that found nothing to do (the writer slows those)").isTrue();
            live.put("w", bytes(100, 7));
            put(store, "w", live.get("w"));
            assertThat(c.run()).as("a write: the pass waits").isZero();
            assertThat(c.run()).as("high3-5 read").isZero();
            assertThat(c.run()).as("high6-8 read").isZero();
            assertThat(c.run()).as("high9 and w read: the pass's end, one move").isEqualTo(pagesEach);
            assertThat(c.run()).as("the next from what the last left").isEqualTo(pagesEach);
            while (c.run() > 0) {
                // the moves the pass found
            }
            assertThat(c.underWay()).as("done: nothing left to move").isFalse();
            assertIntact(store, live);
        }
    }

    /**
     * Holes a shrink cannot give back (the live versions sit above them) are gathered at the end by
     * compaction and then cut; a reader that pinned a moved version still reads it, and its old
     * pages are freed when it lets go, or by the next open if it never does.
     */
    @Test
    void compactionMovesTheHighestVersionsIntoHolesSoTheFileShrinks() throws IOException {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        Map<String, byte[]> live = new HashMap<>();
        LobStoreConfig config = shrinkConfig(32).with(LobStoreConfig.COMPACT_MAX_PAGES.name(), 100);
        try (DefaultLobStore store = DefaultLobStore.open(dir, config, registry, "ts")) {
            for (int i = 0; i < 200; i++) {
                put(store, "low" + i, bytes(10_000, i));
            }
            for (int i = 0; i < 60; i++) {
                byte[] v = bytes(10_000, 1000 + i);
                put(store, "high" + i, v);
                live.put("high" + i, v);
            }
            for (int i = 0; i < 200; i++) {
                store.delete("low" + i, null);
            }
            drain(store);
            store.flush();
            long peak = filePages();
            long livePages = store.stats().pagesLive();
            assertThat(store.holePages()).as("holes below the live versions").isGreaterThan(3 * livePages);

            Map<String, VersionEntry> before = new HashMap<>();
            live.keySet().forEach(id -> before.put(id, current(store, id)));
            String pinnedId = "high59";
            LobReadHandle pinned = store.open(pinnedId).orElseThrow();
            assertThat(store.compact()).as("nothing moves in a run that follows writes").isZero();
            long moved = 0;
            for (long m; (m = store.compact()) > 0; ) {
                assertThat(m).as("at most lob.compact.max.pages per call, give or take one version").isLessThan(100 + 10);
                moved += m;
            }
            assertThat(moved).isEqualTo(livePages);
            assertThat(counter(registry, "lob_compaction_relocated_pages")).isEqualTo(moved);
            assertThat(store.stats().historyLength()).as("moves are not history: nothing waits for purge").isZero();
            assertThat(store.stats().pagesHistory()).as("only the pinned version's old copy waits")
                    .isEqualTo(pinned.version().pageCount());
            assertSameBytes(pinned.stream(0, pinned.length()).readAllBytes(), live.get(pinnedId));
            pinned.close();
            assertThat(store.stats().pagesHistory()).isZero();

            store.flush();
            assertThat(usedEnd(store)).as("live versions packed at the front").isLessThanOrEqualTo(livePages + 8);
            assertThat(filePages()).isLessThanOrEqualTo(usedEnd(store) + 8).isLessThan(peak / 3);
            assertIntact(store, live);
            assertThat(store.compact()).as("nothing left to move").isZero();
            before.forEach((id, was) -> {
                VersionEntry now = current(store, id);
                assertThat(now.version()).as("moved: a new version").isGreaterThan(was.version());
                assertThat(now.originVersion()).as("the same bytes: the same origin, and ETag").isEqualTo(was.originVersion());
            });

            // a reader that never lets go: the moved version's old copy is freed by the next open
            for (int i = 0; i < 200; i++) {
                put(store, "low" + i, bytes(10_000, i));
            }
            live.put("top", bytes(10_000, 7));
            put(store, "top", live.get("top"));
            LobReadHandle forgotten = store.open("top").orElseThrow();
            for (int i = 0; i < 200; i++) {
                store.delete("low" + i, null);
            }
            drain(store);
            store.compact(); // notes the writes
            while (store.compact() > 0) {
                // until everything is low
            }
            assertThat(store.current("top").orElseThrow().version()).isGreaterThan(forgotten.version().version());
            assertThat(store.stats().pagesHistory()).isEqualTo(forgotten.version().pageCount());
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            assertThat(store.stats().pagesHistory()).isZero();
            assertIntact(store, live);
        }
    }

    /**
     * A value nobody writes with a data page gone bad, highest in the file: compaction leaves it where it is and moves
     * the others, where it used to fail every run (and, in a node, the writer's task with it).
     */
    @Test
    void compactionLeavesAValueWithADamagedPageWhereItIsAndMovesTheRest() throws IOException {
        LobStoreConfig config = shrinkConfig(32).with(LobStoreConfig.COMPACT_MAX_PAGES.name(), 100);
        byte[] mid = bytes(100_000, 5);
        long damaged;
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            for (int i = 0; i < 200; i++) {
                put(store, "low" + i, bytes(10_000, i));
            }
            put(store, "mid", mid);
            put(store, "high", bytes(100_000, 6));
            damaged = current(store, "high").extents().stream().mapToLong(Extent::endPage).max().orElseThrow() - 1; // a data page
            for (int i = 0; i < 200; i++) {
                store.delete("low" + i, null);
            }
            drain(store);
        }
        try (FileChannel ch = FileChannel.open(dir.resolve(TablespaceDirs.PAGES), StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[]{(byte) 0xff}), damaged * config.pageSize() + 1000);
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            assertThatThrownBy(() -> read(store, "high")).isInstanceOf(CorruptPageException.class);
            long high = current(store, "high").version();
            long midBefore = current(store, "mid").version();
            store.compact(); // the first call after the open notes the versions
            for (int run = 0; run < 3; run++) {
                store.compact(); // the damaged one again each time: skipped, not thrown
            }
            assertThat(current(store, "high").version()).as("left where it is").isEqualTo(high);
            assertThat(current(store, "mid").version()).as("moved below").isGreaterThan(midBefore);
            assertSameBytes(read(store, "mid"), mid);
        }
    }

    @Test
    void withShrinkOffTheFileKeepsItsPeakSize() throws IOException {
        long peak;
        try (DefaultLobStore store = DefaultLobStore.open(dir, shrinkConfig(0))) {
            burstThenPurge(store, new ArrayList<>());
            peak = store.stats().pagesTotal();
            store.flush();
            assertThat(store.stats().pagesTotal()).isEqualTo(peak);
        }
        assertThat(filePages()).isEqualTo(peak);
    }

    /**
     * No high-water mark is stored: open takes the larger of the file length and the last page the
     * index names. Both crash orders around the truncate must therefore open clean: a file that
     * was never cut (here even longer, with a torn last page) and a file that was cut with nothing
     * after it (here cut to the last used page, slack and all).
     */
    @Test
    void openAndFsckAreCleanWhetherACrashLeftTheFileUncutOrCut() throws IOException {
        Map<String, byte[]> live;
        long end;
        long peak;
        try (DefaultLobStore store = DefaultLobStore.open(dir, shrinkConfig(0))) {
            live = burstThenPurge(store, new ArrayList<>());
            end = usedEnd(store);
            peak = store.stats().pagesTotal();
        }
        Path pages = dir.resolve(TablespaceDirs.PAGES);
        try (FileChannel ch = FileChannel.open(pages, StandardOpenOption.WRITE)) {
            ch.write(ByteBuffer.wrap(new byte[]{1}), (peak + 100) * 4096 + 122);
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, shrinkConfig(32))) {
            assertThat(store.stats().pagesTotal()).as("the torn last page counts, as free").isEqualTo(peak + 101);
            assertIntact(store, live);
            store.flush();
            assertThat(filePages()).isEqualTo(end + 8);
            assertIntact(store, live);
        }

        try (FileChannel ch = FileChannel.open(pages, StandardOpenOption.WRITE)) {
            ch.truncate(end * 4096);
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, shrinkConfig(32))) {
            assertThat(store.stats().pagesTotal()).isEqualTo(end);
            assertIntact(store, live);
            for (int i = 0; i < 20; i++) {
                byte[] v = bytes(30_000, 700 + i);
                put(store, "more" + i, v);
                live.put("more" + i, v);
            }
            assertIntact(store, live);
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, shrinkConfig(32))) {
            assertIntact(store, live);
        }
    }

    /**
     * Backpressure through the store itself, not a stand-in for its history: versions superseded and never purged pass
     * lob.history.max, or lob.history.max.ratio of the live pages, and writes are delayed and counted; with both off none is.
     */
    @ParameterizedTest
    @ValueSource(strings = {"lob.history.max=2", "lob.history.max.ratio=0.5", "off"})
    void writesPastTheHistoryLimitAreDelayed(String limit) throws IOException {
        Map<String, Object> settings = new HashMap<>(Map.of("lob.page.size", 4096, "lob.history.max.delay.ms", 1,
                "lob.history.max", 0));
        if (!limit.equals("off")) {
            settings.put(limit.substring(0, limit.indexOf('=')), limit.substring(limit.indexOf('=') + 1));
        }
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (DefaultLobStore store = DefaultLobStore.open(dir, new LobStoreConfig(settings), registry, "ts")) {
            for (int i = 0; i < 8; i++) {
                put(store, "lob", bytes(10_000, i)); // 3 pages each; 7 superseded, none purged
            }
            long delays = registry.get("lob_backpressure_delay_seconds").timer().count();
            double excess = registry.get("lob_history_excess_ratio").gauge().value();
            if (limit.equals("off")) {
                assertThat(delays).isZero();
                assertThat(excess).isZero();
            } else {
                assertThat(excess).as("history past its limit").isPositive();
                assertThat(delays).as("the writes after history passed the limit").isGreaterThanOrEqualTo(4);
                assertThat(registry.get("lob_backpressure_delay_seconds").timer().totalTime(java.util.concurrent.TimeUnit.NANOSECONDS))
                        .as("how long they were held, not only how often").isPositive();
            }
        }
    }

    /** With nothing live (every LOB deleted), the ratio's limit was 0, read as none: history grew with no delay at all. */
    @Test
    void historyOfDeletedValuesIsPastTheRatioLimitToo() throws IOException {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (DefaultLobStore store = DefaultLobStore.open(dir, new LobStoreConfig(Map.of("lob.page.size", 4096,
                "lob.history.max.delay.ms", 1, "lob.history.max", 0, "lob.history.max.ratio", 1.0)), registry, "ts")) {
            for (int i = 0; i < 4; i++) {
                put(store, "lob" + i, bytes(10_000, i));
                store.delete("lob" + i, null); // nothing purged
            }
            assertThat(store.stats().pagesLive()).isZero();
            assertThat(registry.get("lob_history_excess_ratio").gauge().value()).as("history past a limit of one page").isPositive();
            assertThat(registry.get("lob_backpressure_delay_seconds").timer().count()).as("the writes after it").isPositive();
        }
    }

    /**
     * An index whose length for a value is not its root page's (damage fsck reports): read by the index's length, a short
     * one was served as a whole value cut short, and a write on it refused as a bad command. Both now fail on the root page.
     */
    @Test
    void aValueWhoseIndexLengthIsNotItsRootsIsDamageNamingTheRootPage() throws IOException {
        LobStoreConfig config = config(4096, true);
        VersionEntry e;
        try (LobStore store = LobStore.open(dir, config)) {
            e = put(store, "doc", bytes(20_000, 1)).written();
        }
        try (LobIndex index = LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) {
            index.writeSync(index.newBatch().putCurrent(VersionEntry.current("doc", e.version(), e.rootPage(), 10_000,
                    e.valueCrc32c(), e.extents(), e.attributes())));
        }
        try (LobStore store = LobStore.open(dir, config)) {
            String says = "page " + e.rootPage() + ": root says 20000 bytes, index says 10000";
            assertThatThrownBy(() -> store.open("doc")).isInstanceOf(CorruptPageException.class).hasMessage(says);
            assertThatThrownBy(() -> store.append("doc", new ByteArrayInputStream(new byte[10]), 10, null))
                    .isInstanceOf(CorruptPageException.class).hasMessage(says);
        }
    }
}
