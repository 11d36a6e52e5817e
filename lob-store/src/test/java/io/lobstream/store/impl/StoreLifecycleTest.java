package io.lobstream.store.impl;

import io.lobstream.store.LobStore;
import io.lobstream.store.Chunk;
import io.lobstream.store.LobReadHandle;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.Source;
import io.lobstream.store.TablespaceSyncFailedException;
import io.lobstream.store.tablespace.TablespaceDescriptor;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.channels.ClosedByInterruptException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static io.lobstream.store.impl.DefaultLobStoreTest.assertSameBytes;
import static io.lobstream.store.impl.DefaultLobStoreTest.bytes;
import static io.lobstream.store.impl.DefaultLobStoreTest.put;
import static io.lobstream.store.impl.DefaultLobStoreTest.read;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Closing and reopening a store: what its entry points do once it is closed, and what close leaves behind. */
class StoreLifecycleTest {
    @TempDir
    Path dir;

    private final LobStoreConfig config = new LobStoreConfig(Map.of(LobStoreConfig.PAGE_SIZE.name(), 4096));

    @Test
    void everyEntryPointOfAClosedStoreSaysSo() throws IOException {
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        put(store, "a", bytes(10_000, 1));
        store.close();
        store.close(); // a second close does nothing

        List<ThrowingCall> calls = List.of(
                () -> store.open("a"), () -> store.current("a"), () -> store.appliedOffset("in"), () -> store.commandApplied("c", 0),
                () -> store.forgetCommandsBefore(0), () -> store.expireUploads(0), () -> store.delete("a", null),
                () -> put(store, "b", bytes(10, 2)), () -> store.reclaim("a", 1, List.of(), null), () -> store.fsck(false),
                () -> store.putChunk(new Chunk("u", "c", 10, 0, 2, 0, 5, null), new ByteArrayInputStream(new byte[5]), null));
        for (ThrowingCall call : calls) {
            assertThatThrownBy(call::run).isInstanceOf(IOException.class).hasMessageContaining("closed");
        }
        assertThatThrownBy(() -> store.forEachCurrent(e -> { })).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> store.forEachPending(e -> { })).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> store.pendingToPurge(1)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    @FunctionalInterface
    private interface ThrowingCall {
        void run() throws Exception;
    }

    /**
     * Reads and housekeeping used to reach RocksDB with no latch that close excludes: one racing close
     * called into a closed RocksDB, which crashes the JVM (and this test's fork with it).
     */
    @Test
    void readsAndHousekeepingRacingCloseFailCleanly() throws Exception {
        for (int round = 0; round < 5; round++) {
            DefaultLobStore store = DefaultLobStore.open(dir.resolve("r" + round), config);
            for (int i = 0; i < 20; i++) {
                put(store, "lob" + i, bytes(20_000, i));
            }
            AtomicBoolean stop = new AtomicBoolean();
            AtomicBoolean closing = new AtomicBoolean();
            List<Throwable> unexpected = new CopyOnWriteArrayList<>();
            List<Thread> threads = new ArrayList<>();
            CountDownLatch reading = new CountDownLatch(4); // each thread has read once: the close races reads, not thread starts
            for (int t = 0; t < 4; t++) {
                int seed = t;
                threads.add(new Thread(() -> {
                    for (int i = seed; !stop.get(); i++) {
                        try {
                            String id = "lob" + (i % 20);
                            store.current(id);
                            try (LobReadHandle h = store.open(id).orElseThrow(); InputStream in = h.stream(0, h.length())) {
                                in.readAllBytes();
                            } finally {
                                if (i == seed) {
                                    reading.countDown(); // (a first read that failed is in unexpected)
                                }
                            }
                            store.expireUploads(60_000);
                            store.forgetCommandsBefore(0);
                            store.forEachPending(e -> { });
                        } catch (IOException | IllegalStateException closed) {
                            // "tablespace ... is closed", or a page read on the closed page file: only once the close began
                            if (!closing.get()) {
                                unexpected.add(closed);
                            }
                        } catch (Throwable e) {
                            unexpected.add(e);
                        }
                    }
                }));
            }
            threads.forEach(Thread::start);
            try {
                assertThat(reading.await(60, TimeUnit.SECONDS)).as("every thread read before the close").isTrue();
                closing.set(true);
                store.close();
                Thread.sleep(20);
            } finally {
                stop.set(true);
            }
            for (Thread t : threads) {
                t.join(10_000);
                assertThat(t.isAlive()).isFalse();
            }
            assertThat(unexpected).isEmpty();
        }
    }

    /** close() used to leave the index open (its LOCK held) when anything before it failed: no reopen in this process. */
    @Test
    void aCloseThatFailsStillLetsGoOfTheIndexAndTheFile() throws IOException {
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        byte[] v = bytes(100, 1);
        put(store, "a", v); // one page written, a batch of them preallocated: close extends the file to the batch
        Thread.currentThread().interrupt(); // the page file's channel then closes at its next write, and the write throws
        try {
            assertThatThrownBy(store::close).isInstanceOf(ClosedByInterruptException.class);
        } finally {
            Thread.interrupted();
        }
        try (DefaultLobStore again = DefaultLobStore.open(dir, config)) {
            assertSameBytes(read(again, "a"), v);
            assertThat(again.fsck(true).problems()).isEmpty();
        }
    }

    /**
     * A directory restored without its descriptor, opened under another page size: it used to get a new descriptor with
     * the configured size, and free space counted in those units handed live pages out again. Without its page file, an
     * empty one was made, and every value the index names was gone while its commands counted as applied; without its
     * index, the converse.
     */
    @Test
    void aTablespaceThatLostItsDescriptorPageFileOrIndexIsRefusedNotMadeAnew() throws IOException {
        Path ts = this.dir.resolve("t"); // what is moved out of it stays in the test's directory
        try (DefaultLobStore store = DefaultLobStore.open(ts, config)) {
            put(store, "a", bytes(10_000, 1));
        }
        Path descriptor = ts.resolve(TablespaceDirs.DESCRIPTOR);
        Path kept = ts.resolveSibling("kept-descriptor");
        java.nio.file.Files.move(descriptor, kept);
        LobStoreConfig other = config.with(LobStoreConfig.PAGE_SIZE.name(), 8192);
        assertThatThrownBy(() -> DefaultLobStore.open(ts, other).close()).isInstanceOf(IOException.class)
                .hasMessageContaining("no " + TablespaceDirs.DESCRIPTOR);
        assertThat(descriptor).doesNotExist();
        java.nio.file.Files.move(kept, descriptor);

        java.nio.file.Files.move(ts.resolve(TablespaceDirs.PAGES), ts.resolveSibling("kept-pages"));
        assertThatThrownBy(() -> DefaultLobStore.open(ts, config).close()).isInstanceOf(IOException.class)
                .hasMessageContaining("no " + TablespaceDirs.PAGES);
        java.nio.file.Files.move(ts.resolveSibling("kept-pages"), ts.resolve(TablespaceDirs.PAGES));
        // and the converse: RocksDB made a new empty index, every page counted as free, and the next put overwrote "a"
        java.nio.file.Files.move(ts.resolve(TablespaceDirs.INDEX), ts.resolveSibling("kept-index"));
        assertThatThrownBy(() -> DefaultLobStore.open(ts, config).close()).isInstanceOf(IOException.class)
                .hasMessageContaining("has pages but no index");
        assertThat(ts.resolve(TablespaceDirs.INDEX).resolve("CURRENT")).doesNotExist();
        java.nio.file.Files.move(ts.resolveSibling("kept-index"), ts.resolve(TablespaceDirs.INDEX));
        try (DefaultLobStore store = DefaultLobStore.open(ts, other)) {
            assertThat(store.current("a")).isPresent();
        }
    }

    /**
     * With lob.sync.each.write, a write waiting on the group commit when the store closes without its checkpoint's WAL
     * sync (a full disk; a crash, here) was told it was durable, and then, once refused, had the copy marked SYNC-FAILED
     * and rebuilt: no sync failed, none was tried. Refused as closed, and the tablespace opens again.
     */
    @Test
    void aWriteWaitingOnAGroupCommitThatCloseNeverSyncedFailsAsClosedNotAsAFailedSync() throws Exception {
        Path ts = this.dir.resolve("g");
        LobStoreConfig each = config.with(LobStoreConfig.SYNC_EACH_WRITE.name(), true)
                .with(LobStoreConfig.GROUP_COMMIT_INTERVAL_MS.name(), 1000); // the leader gathers for a second
        DefaultLobStore store = DefaultLobStore.open(ts, each);
        java.util.concurrent.CompletableFuture<Throwable> failed = new java.util.concurrent.CompletableFuture<>();
        Thread writer = new Thread(() -> {
            try {
                put(store, "a", bytes(10_000, 1));
                failed.complete(null);
            } catch (Throwable t) {
                failed.complete(t);
            }
        }, "writer");
        long notYet = System.nanoTime(); // when a sample last found the writer not waiting: it began its second after this
        writer.start();
        long until = notYet + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            long sampled = System.nanoTime();
            if (java.util.Arrays.stream(writer.getStackTrace()).anyMatch(f -> f.getMethodName().equals("awaitDurable"))) {
                break;
            }
            notYet = sampled;
            assertThat(notYet).as("the writer reaches the WAL's group commit").isLessThan(until);
            if (failed.isDone()) { // a machine stalled for the whole second between two samples: synced unseen
                assertThat(failed.join()).isNull();
                store.close();
                org.junit.jupiter.api.Assumptions.abort("the write's group commit ran before a sample found it waiting");
            }
            Thread.sleep(5);
        }
        store.crash(); // closed, no checkpoint
        // the leader gathers for 1 s from when it began, somewhere after notYet: a machine stalled for half of that
        // second (in the sleep or the sample above, or in the close) may have synced already
        org.junit.jupiter.api.Assumptions.assumeTrue(System.nanoTime() - notYet < TimeUnit.MILLISECONDS.toNanos(500),
                "closing took most of the group commit's second (a stalled machine): the sync may have run before it");
        assertThat(failed.get(60, TimeUnit.SECONDS)).isInstanceOf(io.lobstream.store.TablespaceClosedException.class);
        assertThat(TablespaceDirs.syncFailure(ts)).isEmpty();
        try (DefaultLobStore reopened = DefaultLobStore.open(ts, each)) {
            assertThat(reopened.fsck(true).ok()).isTrue();
        }
    }

    /** Gauges registered again under the same id used to stay bound to the first store: frozen, and it never collected. */
    @Test
    void aReopenedStoreReportsThroughItsOwnMeters() throws IOException {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        try (DefaultLobStore store = DefaultLobStore.open(dir, config, registry, "p-0")) {
            put(store, "a", bytes(100, 1));
            assertThat(registry.get("lob_lobs").tag("tablespace", "p-0").gauge().value()).isEqualTo(1);
        }
        assertThat(registry.getMeters()).as("a closed store's meters are gone").isEmpty();
        try (DefaultLobStore store = DefaultLobStore.open(dir, config, registry, "p-0")) {
            put(store, "b", bytes(100, 2));
            put(store, "c", bytes(100, 3));
            assertThat(registry.get("lob_lobs").tag("tablespace", "p-0").gauges()).hasSize(1);
            assertThat(registry.get("lob_lobs").tag("tablespace", "p-0").gauge().value()).isEqualTo(3);
            assertThat(registry.get("lob_tablespace_pages").tag("state", "live").gauge().value())
                    .isEqualTo(store.stats().pagesLive());
        }
        assertThat(registry.getMeters()).isEmpty();
    }

    /** An empty batch counted as a write: an idle store's every housekeeping tick made the next commit sync. */
    @Test
    void forgettingNoCommandsLeavesNothingToSync() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            store.put("a", new ByteArrayInputStream(new byte[10]), 10, null, new Source("in", 1, "cmd-1"));
            store.flush();
            assertThat(store.needsSync()).isFalse();
            assertThat(store.forgetCommandsBefore(0)).isZero();
            assertThat(store.needsSync()).isFalse();
            assertThat(store.forgetCommandsBefore(Long.MAX_VALUE)).isEqualTo(1);
            assertThat(store.needsSync()).isTrue();
        }
    }

    /**
     * After a failed fsync nothing is synced or trusted again (the kernel may have dropped the pages and
     * report the next fsync a success): every later commit fails, close writes nothing, and the
     * tablespace's directory says so, so that no later open takes it as it is.
     */
    @Test
    void aFailedSyncFailsTheStoreForGood() throws IOException {
        DefaultLobStore store = DefaultLobStore.open(dir, config);
        put(store, "a", bytes(9000, 1));
        store.flush();
        put(store, "b", bytes(9000, 2));
        store.syncFailed(new IOException("Input/output error (simulated)"));
        assertThatThrownBy(store::flush).isInstanceOf(TablespaceSyncFailedException.class)
                .hasMessageContaining("a sync failed earlier").hasMessageContaining("Input/output error (simulated)");
        store.close();
        assertThat(dir.resolve(TablespaceDirs.SYNC_FAILED)).content().contains("Input/output error (simulated)");
        assertThatThrownBy(() -> DefaultLobStore.open(dir, config)).isInstanceOf(TablespaceSyncFailedException.class)
                .hasMessageContaining("not opened again");
        assertThat(LobStore.fsckClosed(dir, true).problems()).anyMatch(p -> p.contains("a sync failed"));
    }

    /**
     * A renewed copy id is the store's and its descriptor's at once, and the next open's; the values and the version
     * numbers go on as they were. A failed copy keeps its id: it is rebuilt, not renamed.
     */
    @Test
    void aRenewedCopyIdIsOnDiskAndTheValuesStay() throws IOException {
        String renewed;
        long version;
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            version = put(store, "a", bytes(9000, 1)).written().version();
            String was = store.copyId();
            store.renewCopyId();
            renewed = store.copyId();
            assertThat(renewed).isNotEqualTo(was);
            assertThat(TablespaceDescriptor.read(dir)).isEqualTo(new TablespaceDescriptor(config.pageSize(), renewed));
            assertThat(put(store, "a", bytes(9000, 2)).written().version()).isGreaterThan(version);
        }
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            assertThat(store.copyId()).isEqualTo(renewed);
            assertSameBytes(read(store, "a"), bytes(9000, 2));
            store.syncFailed(new IOException("Input/output error (simulated)"));
            assertThatThrownBy(store::renewCopyId).isInstanceOf(TablespaceSyncFailedException.class);
            assertThat(store.copyId()).isEqualTo(renewed);
        }
    }

    /** A sync that fails after a rename is recorded under the new id, which the next open of the directory reads. */
    @Test
    void aSyncFailureAfterARenameIsRecordedUnderTheNewId() throws IOException {
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            String was = store.copyId();
            store.renewCopyId();
            store.syncFailed(new IOException("Input/output error (simulated)"));
            assertThat(SyncGuard.failedHere(store.copyId())).isTrue();
            assertThat(SyncGuard.failedHere(was)).isFalse();
        }
    }

    /**
     * A tablespace a later release wrote (a page format or an index format above this one's) is refused by every reader,
     * with both numbers, where reading it on would misread it.
     */
    @Test
    void aTablespaceOfALaterFormatIsRefusedNotMisread() throws Exception {
        try (DefaultLobStore store = DefaultLobStore.open(dir, config)) {
            put(store, "a", bytes(10_000, 1));
        }
        try (io.lobstream.store.index.LobIndex index = io.lobstream.store.index.LobIndex.openReadOnly(dir.resolve(TablespaceDirs.INDEX))) {
            assertThat(index.metaLong("format.version", -1)).as("written at open").isEqualTo(io.lobstream.store.index.LobIndex.FORMAT_VERSION);
        }
        // an earlier format's index is raised to this one's: a release that reads only the earlier refuses it then
        try (io.lobstream.store.index.LobIndex index = io.lobstream.store.index.LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) {
            index.writeSync(index.newBatch().putMeta("format.version", 1));
        }
        try (io.lobstream.store.index.LobIndex index = io.lobstream.store.index.LobIndex.open(dir.resolve(TablespaceDirs.INDEX))) {
            assertThat(index.metaLong("format.version", -1)).isEqualTo(io.lobstream.store.index.LobIndex.FORMAT_VERSION);
            index.writeSync(index.newBatch().putMeta("format.version", io.lobstream.store.index.LobIndex.FORMAT_VERSION + 1));
        }
        String later = "of format " + (io.lobstream.store.index.LobIndex.FORMAT_VERSION + 1);
        assertThatThrownBy(() -> DefaultLobStore.open(dir, config).close()).isInstanceOf(IOException.class).hasMessageContaining(later);
        // a later release's column family too: refused by its format, not RocksDB's "Column families not opened"
        try (org.rocksdb.Options options = new org.rocksdb.Options();
             org.rocksdb.ColumnFamilyOptions cf = new org.rocksdb.ColumnFamilyOptions()) {
            java.util.List<org.rocksdb.ColumnFamilyDescriptor> all = new java.util.ArrayList<>();
            for (byte[] name : org.rocksdb.RocksDB.listColumnFamilies(options, dir.resolve(TablespaceDirs.INDEX).toString())) {
                all.add(new org.rocksdb.ColumnFamilyDescriptor(name, cf));
            }
            java.util.List<org.rocksdb.ColumnFamilyHandle> handles = new java.util.ArrayList<>();
            try (org.rocksdb.DBOptions db = new org.rocksdb.DBOptions();
                 org.rocksdb.RocksDB rocks = org.rocksdb.RocksDB.open(db, dir.resolve(TablespaceDirs.INDEX).toString(), all, handles)) {
                handles.add(rocks.createColumnFamily(new org.rocksdb.ColumnFamilyDescriptor("later".getBytes(), cf)));
                handles.forEach(org.rocksdb.ColumnFamilyHandle::close);
            }
        }
        assertThatThrownBy(() -> DefaultLobStore.open(dir, config).close()).isInstanceOf(io.lobstream.store.LaterFormatException.class)
                .hasMessageContaining(later);
        assertThatThrownBy(() -> LobStore.fsckClosed(dir, true)).isInstanceOf(io.lobstream.store.LaterFormatException.class).hasMessageContaining(later);
        try (io.lobstream.store.index.LobIndex index = io.lobstream.store.index.LobIndex.open(dir.resolve(TablespaceDirs.INDEX).resolveSibling("fresh"))) {
            assertThat(index.metaLong("format.version", -1)).isEqualTo(io.lobstream.store.index.LobIndex.FORMAT_VERSION);
        }

        Path pages = dir.resolve("later");
        TablespaceDescriptor.createOrRead(pages, 4096);
        Path descriptor = pages.resolve(TablespaceDirs.DESCRIPTOR);
        java.nio.file.Files.writeString(descriptor, java.nio.file.Files.readString(descriptor)
                .replace("format.version=" + TablespaceDescriptor.FORMAT_VERSION, "format.version=" + (TablespaceDescriptor.FORMAT_VERSION + 1)));
        assertThatThrownBy(() -> TablespaceDescriptor.read(pages)).isInstanceOf(io.lobstream.store.LaterFormatException.class)
                .hasMessageContaining("of format " + (TablespaceDescriptor.FORMAT_VERSION + 1));
        assertThatThrownBy(() -> DefaultLobStore.open(pages, config).close()).isInstanceOf(IOException.class);
    }
}
