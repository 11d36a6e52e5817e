package io.lobstream.store.impl;

import io.lobstream.store.Chunk;
import io.lobstream.store.ChunkResult;
import io.lobstream.store.LobReadHandle;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.LogOncePerMinute;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.Source;
import io.lobstream.store.StoreMetrics;
import io.lobstream.store.StoreStats;
import io.lobstream.store.TablespaceCheckDueException;
import io.lobstream.store.TablespaceClosedException;
import io.lobstream.store.TablespaceTornException;
import io.lobstream.store.ValueTooLargeException;
import io.lobstream.store.WriteResult;
import io.lobstream.store.allocator.DefaultPageAllocator;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.allocator.PageAllocator;
import io.lobstream.store.fsck.Fsck;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.impl.VersionPages.Base;
import io.lobstream.store.index.Attributes;
import io.lobstream.store.index.IndexWriteRefusedException;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.Rejection;
import io.lobstream.store.index.UploadEntry;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.layout.VersionReader;
import io.lobstream.store.layout.VersionWriter;
import io.lobstream.store.tablespace.PageFile;
import io.lobstream.store.tablespace.TablespaceDescriptor;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.channels.ClosedChannelException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * The engine. A write allocates pages, streams the value into them, then publishes the new
 * version in one index batch. How much of that runs under which latch is what the switches
 * choose:
 * <ul>
 *   <li>{@code lob.latch.downgrade} on: pages are written under the tablespace latch in shared
 *       mode; only the publish is exclusive (per LOB or tablespace-wide). Off: the tablespace
 *       latch is held exclusively from allocation to publish.</li>
 *   <li>{@code lob.optimistic.update} on: publish takes a per-LOB latch (and the tablespace latch shared), trusting the LOB's
 *       write latch to have kept its index entry as the write found it (a mismatch is counted, and
 *       refused if the new version shares pages). Off: publish takes the tablespace latch
 *       exclusively.</li>
 *   <li>{@code lob.prealloc}: see {@link DefaultPageAllocator}.</li>
 * </ul>
 * Readers pin the version they read; a reclaim of a pinned version waits for its unpin, up to
 * {@code lob.read.pin.max.ms} (a relocation's old copy, for the last unpin however long).
 *
 * <p>Its parts: {@link TablespaceFiles} checks and opens its files, {@link Recovery} derives free space and
 * counts on open (and {@link TornWrites} checks what the last flush did not cover), {@link VersionNumbers}
 * issues version numbers, {@link ChunkedUploads} applies the chunks of an upload, {@link Latches} and
 * {@link Pins} order writers and readers, {@link Reclaimer} frees the versions purge reclaims (after their readers), {@link PagesFirst} keeps pages on disk before the index entries
 * that name them, {@link DurableFrees} keeps the pages an index write stopped naming from reuse until that
 * write is durable, {@link SyncGuard} stops every write once a sync failed, {@link SourceMarks} records
 * what each command did, {@link Compactor} moves versions down to shrink the file, {@link OnlineFsck} checks it open,
 * {@link TablespaceUsage} counts what the statistics read, and {@link Backpressure} slows writes while the
 * history it counts is past its limit. This class is the transaction around them: allocate, write, publish
 * in one index batch, release.
 */
public final class DefaultLobStore implements LobStore {
    private static final Logger log = LoggerFactory.getLogger(DefaultLobStore.class);
    /** The index meta key of a source's {@link #logId}, after this prefix. */
    private static final String LOG_ID_PREFIX = "log.id.";
    private static final String SETTING_PREFIX = "setting.";

    private final String name;
    private final Path dir;
    private final LobStoreConfig config;
    private final PageFile file;
    private final LobIndex index;
    private final PageAllocator allocator;
    /** Where a command's new versions go (compaction places its own, {@link Placement#below}). */
    private final Placement anywhere;
    private final StoreMetrics metrics;
    private final LogOncePerMinute dropsSaid = new LogOncePerMinute();
    private final ThreadLocal<VersionWriter> writers;
    /** The index write count the last flush made durable (see {@link #needsSync()}). */
    private volatile long syncedWrites;
    /**
     * Group commits of the page file's force and the index WAL's sync: for lob.sync.each.write, for a flush's pages
     * before its index entries ({@link PagesFirst}), and for a relocation's pages before its publish.
     */
    private final GroupSync pageSync;
    private final GroupSync walSync;
    private final PagesFirst pagesFirst;
    private final DurableFrees frees;
    /** What {@link TablespaceDirs#INCOMPLETE} says, null if there is none. */
    private volatile String incomplete;

    private final Latches latches;
    private final Pins pins;
    /** This store's latches for its parts: each refuses once the store is closed (see {@link #openShared()}). */
    private final OpenLatches openLatches = new OpenLatches() {
        @Override
        public Latches.Held shared() throws IOException {
            return openShared();
        }

        @Override
        public Latches.Held sharedUnchecked() {
            return openSharedUnchecked();
        }

        @Override
        public Latches.Held exclusive() throws IOException {
            return openExclusive();
        }

        @Override
        public Latches.Held publishing(String lobId) throws IOException {
            return openPublishing(lobId);
        }

        @Override
        public boolean closed() {
            return closed;
        }

        @Override
        public IOException closedException() {
            return DefaultLobStore.this.closedException();
        }
    };
    private final Reclaimer reclaimer;
    private final Compactor compactor;
    private final TablespaceUsage usage;
    private final Backpressure backpressure;

    private final VersionNumbers versions;
    private final ChunkedUploads uploads;
    private final VersionPages pages;
    /**
     * The own pages of versions written but not yet published, by version. With the latch downgrade a
     * write lets go of the tablespace latch between its pages and its publish, and fsck (which takes it
     * exclusively) may come in between: these pages are in flight there, not leaked.
     */
    private final Map<Long, List<Extent>> unpublished = new ConcurrentHashMap<>();
    private volatile boolean closed;
    /** Whether close's checkpoint synced the WAL: what a write still waiting for the group commit may count on then. */
    private volatile boolean walSyncedByClose;
    private final OnlineFsck onlineFsck;
    /**
     * Once a sync failed, no version is written and nothing is synced, and every write and commit fails. The index may
     * still take bookkeeping (a reclaim, an expired upload, a forgotten command id) until the store closes: this copy
     * is never synced again, and is set aside and rebuilt on reopen.
     */
    private final SyncGuard syncGuard;

    private DefaultLobStore(String name, Path dir, String copyId, LobStoreConfig config, PageFile file, LobIndex index, StoreMetrics metrics,
                            Recovery recovered) throws IOException {
        this.name = name;
        this.syncGuard = new SyncGuard(name, dir, copyId);
        this.usage = recovered.usage();
        this.dir = dir;
        this.config = config;
        this.file = file;
        this.index = index;
        this.metrics = metrics;
        this.allocator = new DefaultPageAllocator(config.prealloc(), config.preallocBatch(), recovered.highWaterMark(), recovered.free(),
                metrics, config.prealloc() ? this::growFile : end -> { }); // off: each page write grows the file by itself
        this.anywhere = Placement.anywhere(allocator);
        this.writers = ThreadLocal.withInitial(() -> new VersionWriter(file));
        // the wait for more writers only where writers wait for their syncs (lob.sync.each.write), as its doc says: the
        // writers during a flush park for none; compaction's moves never do (await(false) in writeVersion, VersionPages.write)
        int groupWaitMs = config.syncEachWrite() ? config.groupCommitIntervalMs() : 0;
        // with lob.latch.downgrade off a writer forces its pages under the exclusive latch, which every other writer waits
        // for: a leader waiting for them to join would wait the whole interval alone at every write
        this.pageSync = new GroupSync(() -> syncGuard.run(file::force), config.latchDowngrade() ? groupWaitMs : 0,
                metrics::pageSync);
        this.walSync = new GroupSync(() -> syncGuard.run(this::syncWalIfOpen), groupWaitMs, metrics::walSync);
        this.compactor = new Compactor(this, config.compactMinFreeRatio(), config.shrinkMinPages(), config.compactMaxPages());
        this.latches = new Latches(config.optimisticUpdate(), metrics);
        this.pagesFirst = new PagesFirst(config, pageSync);
        this.versions = new VersionNumbers(index, recovered.highestVersion(), recovered.uploads().keySet(),
                this::syncWalCounted);
        this.frees = new DurableFrees(config, allocator);
        this.uploads = new ChunkedUploads(config, index, allocator, versions, writers, pagesFirst, frees, unpublished, usage);
        this.pages = new VersionPages(config, allocator, versions, writers, pagesFirst, pageSync, unpublished);
        this.backpressure = new Backpressure(() -> usage.historyExcess(config.historyMax(), config.historyMaxRatio()),
                config.historyMaxDelayMs(), metrics::backpressure);
        this.pins = new Pins(config.readPinMaxMs(), () -> System.nanoTime() / 1_000_000); // not the wall clock: a step would lapse them all
        this.reclaimer = new Reclaimer(name, config, index, latches, openLatches, pins, frees, usage, this::syncWalNow);
        this.onlineFsck = new OnlineFsck(dir, file, index, allocator, frees, unpublished, openLatches, reclaimer);
    }

    /** Opens (creating if needed) the tablespace in {@code dir}. */
    public static DefaultLobStore open(Path dir, LobStoreConfig config, MeterRegistry registry, String name) throws IOException {
        return open(dir, config, registry, name, true);
    }

    /** {@link LobStore#fsckClosed}. */
    public static FsckReport fsckClosed(Path dir, boolean readData) throws IOException {
        return Fsck.offline(dir, readData, (file, index) -> Recovery.tornWrites(dir.toString(), file, index, readData));
    }

    /**
     * The same; with {@code fullCheck} false, a tablespace whose pages must all be checked first (no flush covered them,
     * and the machine may have restarted since: {@link Recovery}) is not opened, and {@link TablespaceCheckDueException}
     * says so before any page is read. A caller on a thread that must not block for long (a Kafka Streams task's init)
     * opens it again elsewhere.
     */
    public static DefaultLobStore open(Path dir, LobStoreConfig config, MeterRegistry registry, String name, boolean fullCheck)
            throws IOException {
        TablespaceFiles files = TablespaceFiles.open(dir, config);
        StoreMetrics metrics = null;
        try {
            metrics = registry == null ? StoreMetrics.unregistered(name) : new StoreMetrics(registry, name);
            return recover(name, files, metrics, fullCheck);
        } catch (IOException | RuntimeException e) {
            try (files; StoreMetrics registered = metrics) { // closed as the failure leaves, the meters first
                throw e;
            }
        }
    }

    public static DefaultLobStore open(Path dir, LobStoreConfig config) throws IOException {
        return open(dir, config, null, dir.getFileName().toString());
    }

    private static DefaultLobStore recover(String name, TablespaceFiles files, StoreMetrics metrics, boolean fullCheck) throws IOException {
        Path dir = files.dir();
        LobStoreConfig config = files.config();
        PageFile file = files.pages();
        LobIndex index = files.index();
        Recovery recovered = Recovery.scan(name, dir, file, index, fullCheck);
        if (!recovered.tornWrites().isEmpty()) {
            throw new TablespaceTornException(dir, recovered.tornWrites());
        }
        DefaultLobStore store = new DefaultLobStore(name, dir, files.copyId(), config, file, index, metrics, recovered);
        // From here on the free-space checkpoint is stale until the next clean close. And every version the index names
        // now is on disk (checked, if the last run ended uncleanly) once the page file is forced: the frontier this open
        // records covers them all, so that one made or upgraded now is checked after a crash before its first flush too.
        // Without lob.sync nothing is forced, and no frontier is kept: the boot recorded here tells the next open after a
        // crash whether the machine restarted meanwhile (Recovery).
        try (LobIndex.Batch opened = index.newBatch().deleteMeta(Recovery.META_CLEAN)) { // (closed once written: nothing)
            Optional<String> boot = BootId.current();
            if (boot.isPresent()) {
                opened.putMeta(BootId.META_KEY, boot.get().getBytes(StandardCharsets.UTF_8));
            } else {
                opened.deleteMeta(BootId.META_KEY);
            }
            if (config.sync()) {
                SyncedFrontier frontier = store.versions.frontier().withUploads(recovered.uploads()); // the scan read the uploads
                // guarded as every later sync is: an fsync that fails here and succeeds on a retried open would record
                // pages the kernel dropped as covered (a run crashed in this boot left them unforced)
                store.syncGuard.run(file::force);
                store.syncGuard.run(() -> index.writeSync(frontier.put(opened)));
            } else {
                store.syncGuard.run(() -> index.writeSync(opened.deleteMeta(SyncedFrontier.META_KEY)));
            }
        }
        for (VersionEntry e : recovered.deferredReclaims()) {
            store.reclaimer.freePending(e, null, true);
        }
        recovered.usage().registerGauges(metrics, store::freePages);
        recovered.usage().registerLimitGauges(metrics, store::freePages, config.pageSize(), config.historyMax(),
                config.historyMaxRatio());
        store.incomplete = TablespaceDirs.incompleteness(dir).orElse(null);
        metrics.gauge("lob_tablespace_incomplete", "1 if this copy was built without commands it needed (deleted by retention or "
                + "compaction) or without the dead letters that said which the writer refused (INCOMPLETE; fsck reports it), else 0", null, () -> store.incomplete != null ? 1 : 0);
        metrics.gauge("lob_tablespace_sync_failed", "1 once an fsync of this tablespace failed (SYNC-FAILED): it takes no more "
                + "writes, and a node rebuilds its partition", null, () -> store.syncGuard.failed() ? 1 : 0);
        return store;
    }

    // ---------------------------------------------------------------- writes

    @Override
    public WriteResult put(String lobId, InputStream value, long length, Integer expectedCrc32c, Attributes attributes, Source source)
            throws IOException {
        if (length < 0) {
            throw new IllegalArgumentException("negative length " + length);
        }
        String problem = attributes.problem();
        if (problem != null) {
            throw new IllegalArgumentException("lob " + lobId + ": " + problem);
        }
        return writeVersion(lobId, false, base -> NewValue.whole(length, value), expectedCrc32c, attributes, source, anywhere);
    }

    @Override
    public WriteResult write(String lobId, long offset, InputStream data, long length, Source source) throws IOException {
        return writeVersion(lobId, true, base -> NewValue.overwrite(lobId, base.map(Base::reader), offset, data, length), null, null, source,
                anywhere);
    }

    @Override
    public WriteResult append(String lobId, InputStream data, long length, Source source) throws IOException {
        return writeVersion(lobId, true, base -> NewValue.overwrite(lobId, base.map(Base::reader), base.map(b -> b.reader().byteLength()).orElse(0L), data, length),
                null, null, source, anywhere);
    }

    @Override
    public WriteResult truncate(String lobId, long newLength, Source source) throws IOException {
        return writeVersion(lobId, true, base -> NewValue.truncate(lobId,
                base.orElseThrow(() -> new NoSuchElementException("no LOB " + lobId + " to truncate")).reader(), newLength),
                null, null, source, anywhere);
    }

    @FunctionalInterface
    private interface Edit {
        NewValue apply(Optional<Base> base) throws IOException;
    }

    /** Thrown by a relocation's edit that finds the LOB changed, or with history: nothing to move. */
    private static final class NotMovable extends RuntimeException {
        NotMovable() {
            super(null, null, false, false);
        }
    }

    /**
     * Writes a new version of {@code lobId} and publishes it. Writes to one LOB are ordered by its
     * write latch (held throughout, like a row lock), so the base a partial update builds on is
     * still current when it publishes; writes to different LOBs proceed in parallel as far as the
     * switches allow.
     *
     * @param readsBase  the edit reads the current version (a partial update keeps its bytes and shares its unchanged
     *                   pages; a relocation copies them): open it
     * @param attributes the new version's; null: the current version's (a partial update, a move)
     */
    private WriteResult writeVersion(String lobId, boolean readsBase, Edit edit, Integer expectedCrc32c, Attributes attributes, Source source,
                                     Placement placement) throws IOException {
        checkOpen();
        LobStore.checkId("lobId", lobId);
        if (!placement.relocation()) {
            backpressure.await();
        }
        long start = System.nanoTime(); // after the backpressure wait, which lob_backpressure_delay_seconds times
        VersionEntry written;
        Optional<VersionEntry> superseded;
        try (Latches.Held row = latches.write(lobId);
             Latches.Held whole = config.latchDowngrade() ? null : openExclusive()) {
            Optional<VersionEntry> baseEntry;
            List<Extent> shared = new ArrayList<>();
            // latch downgrade: the base is read and the pages written under the tablespace latch shared; only the publish excludes
            try (Latches.Held downgraded = config.latchDowngrade() ? openShared() : null) {
                baseEntry = index.current(lobId);
                // a whole-value PUT neither reads nor shares anything of the version it replaces
                Optional<Base> base = baseEntry.isEmpty() || !readsBase ? Optional.empty()
                        : Optional.of(new Base(baseEntry.get(), reader(baseEntry.get())));
                NewValue value = edit.apply(base);
                ValueTooLargeException.check(config, lobId, value.length());
                Attributes kept = attributes != null ? attributes : baseEntry.map(VersionEntry::attributes).orElse(Attributes.NONE);
                written = pages.write(lobId, base, value, expectedCrc32c, kept, placement, shared);
            }
            superseded = publish(written, baseEntry, shared, source, null, placement.relocation());
        }
        awaitDurable(!placement.relocation()); // a move waits for no writers to join
        if (!placement.relocation()) { // a compaction move is no write of the LOB's
            metrics.writeLatency().record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
        return new WriteResult(written, superseded);
    }

    /** With lob.sync.each.write, waits for the index WAL sync (shared with concurrent writers) that covers this write. */
    private void awaitDurable() throws IOException {
        awaitDurable(true);
    }

    /** @param gather whether a leader waits lob.group.commit.interval.ms for more writers ({@link GroupSync#await(boolean)}) */
    private void awaitDurable(boolean gather) throws IOException {
        if (config.syncEachWrite()) {
            walSync.await(gather);
        }
    }

    /**
     * The group commit's index WAL sync, under the tablespace latch so that it never reaches a closed
     * index. Once the store is closed there is nothing to do if close's checkpoint synced the WAL; a close
     * that returned before it (a full disk) did not, and a write waiting here was never made durable: it
     * fails, as it would have had the store been open to refuse it.
     */
    private void syncWalIfOpen() throws IOException {
        try (Latches.Held latch = latches.tablespaceShared()) {
            if (!closed) {
                frees.syncThenRelease(index::syncWal);
            } else if (!walSyncedByClose) {
                throw closedException();
            }
        }
    }

    /**
     * Makes {@code written} the current version; the one it replaces becomes pending purge, minus
     * the {@code shared} pages it hands over to {@code written}.
     *
     * @param finishedUpload if not null, the upload whose pages {@code written} takes over, deleted in the same batch
     * @param relocation     the replaced version is recorded with its reclaim already requested: the engine frees it
     *                       (or, after a crash, the next open does), no undo record is due
     */
    private Optional<VersionEntry> publish(VersionEntry written, Optional<VersionEntry> expected, List<Extent> shared, Source source,
                                           String finishedUpload, boolean relocation) throws IOException {
        Latches.Held latch;
        try {
            latch = openPublishing(written.lobId());
        } catch (Throwable e) {
            unpublish(written.version(), e);
            throw e;
        }
        try (latch) {
            Optional<VersionEntry> old;
            Optional<VersionEntry> superseded;
            boolean writing = false;
            try {
                old = index.current(written.lobId());
                if (config.optimisticUpdate() && versionOf(old) != versionOf(expected)) {
                    // the compare-and-set's refusal: published anyway, this version would replace one its writer never read
                    // (a lost update), or keep pages a newer one no longer has. Cannot happen while writes to one LOB hold
                    // its write latch: counted, as the invariant check an alert watches
                    metrics.casConflict();
                    throw new IllegalStateException(written.lobId() + " changed under an update: version " + versionOf(expected)
                            + " was read, " + versionOf(old) + " is current");
                }
                try (LobIndex.Batch batch = index.newBatch()) {
                    batch.putCurrent(written);
                    if (finishedUpload != null) {
                        batch.deleteUpload(finishedUpload);
                    }
                    superseded = relocation
                            ? old.map(o -> o.superseded(VersionEntry.Cause.RELOCATE, SourceMarks.offsetOf(source), shared).withReclaimRequested())
                            : old.map(o -> o.superseded(VersionEntry.Cause.UPDATE, SourceMarks.offsetOf(source), shared));
                    if (superseded.isPresent()) {
                        batch.putPending(superseded.get());
                    }
                    SourceMarks.applied(index, batch, source);
                    writing = true;
                    index.write(batch);
                }
            } catch (Throwable e) {
                if (writing) {
                    // the index refused the batch: whether it wrote nothing is for the next open's recovery to say
                    // (RocksDB refuses every later write after such an error), so the pages are not reused meanwhile
                    unpublished.remove(written.version());
                } else {
                    unpublish(written.version(), e);
                }
                throw e;
            }
            unpublished.remove(written.version()); // the index names them now (under the latch, which fsck excludes)
            versions.settled(written.version());
            usage.published(written, old);
            superseded.ifPresent(usage::pending);
            if (finishedUpload != null) {
                usage.uploading(-written.pageCount()); // the upload's pages, now the version's
            }
            return superseded;
        }
    }

    /**
     * A written version that will not be published, its index batch never sent: nothing names its
     * own pages, so they are given back now, not at the next open's recovery. The map is the record
     * of what is its own: not the pages it shared with the current version, nor those of an
     * upload's entry (never in the map), which stays as it was.
     */
    private void unpublish(long version, Throwable cause) {
        List<Extent> own = unpublished.remove(version); // (an upload with an entry is not in it: it stays as it was, unsettled)
        if (own != null) {
            versions.settled(version);
            try {
                allocator.release(own);
            } catch (RuntimeException e) {
                cause.addSuppressed(e);
            }
        }
    }

    // ---------------------------------------------------------------- chunked uploads

    @Override
    public ChunkResult putChunk(Chunk chunk, InputStream data, Source source) throws IOException {
        checkOpen();
        LobStore.checkId("lobId", chunk.lobId());
        LobStore.checkId("upload id", chunk.uploadId());
        String problem = chunk.attributes().problem();
        if (problem != null) {
            throw new IllegalArgumentException("upload " + chunk.uploadId() + ": " + problem);
        }
        if (chunk.chunkIndex() == 0) {
            backpressure.await(); // the chunk that begins an upload waits as a write does: before any latch
        }
        long start = System.nanoTime();
        ChunkResult result;
        // as writeVersion: without latch downgrade the tablespace latch is held exclusively through the publish too
        try (Latches.Held row = latches.write(chunk.lobId());
             Latches.Held whole = config.latchDowngrade() ? null : openExclusive()) {
            ChunkedUploads.Step step;
            try (Latches.Held downgraded = config.latchDowngrade() ? openShared() : null) {
                step = uploads.apply(chunk, data, source);
            }
            if (step.written() == null) {
                result = step.result();
            } else {
                Optional<VersionEntry> superseded = publish(step.written(), step.replaced(), List.of(), source, step.finishedUpload(),
                        false);
                result = new ChunkResult(ChunkResult.Status.PUBLISHED, Optional.of(new WriteResult(step.written(), superseded)), null);
            }
        }
        if (result.status() == ChunkResult.Status.ACCEPTED) {
            awaitDurable(); // its progress, as a write's publish: a resumed upload must not count on a chunk the WAL lost
        } else if (result.status() == ChunkResult.Status.PUBLISHED) {
            awaitDurable();
            metrics.writeLatency().record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
        return result;
    }

    @Override
    public List<String> expireUploads(long asOfMillis, long wallClockMillis, long idleMillis) throws IOException {
        Predicate<UploadEntry> idle = ChunkedUploads.idle(asOfMillis, wallClockMillis, idleMillis);
        checkOpen();
        long[] least = index.uploadTimesAtLeast();
        if (!ChunkedUploads.mayBeIdle(least[0], least[1], asOfMillis, wallClockMillis, idleMillis)) {
            return List.of(); // none can be idle yet (before each upload command: a scan of every upload, each with its unfinished page)
        }
        List<UploadEntry> stale = new ArrayList<>();
        try (Latches.Held latch = openShared()) {
            index.forEachUpload(u -> {
                if (idle.test(u)) {
                    stale.add(u);
                }
            });
        }
        List<String> expired = new ArrayList<>();
        for (UploadEntry u : stale) {
            // the tablespace latch after the LOB's write latch, as writers take them; fsck and close exclude it
            try (Latches.Held row = latches.write(u.lobId()); Latches.Held latch = openShared()) {
                Optional<UploadEntry> now = index.upload(u.uploadId());
                // the same upload still (an id that finished meanwhile and began again names other pages), still idle
                if (now.isPresent() && now.get().version() == u.version() && idle.test(now.get())) {
                    try (LobIndex.Batch batch = index.newBatch()) {
                        dropUpload(u, batch, "expired");
                    }
                    expired.add(u.uploadId());
                }
            }
        }
        return expired;
    }

    @Override
    public boolean abortUpload(String lobId, String uploadId, Source source) throws IOException {
        checkOpen();
        try (Latches.Held row = latches.write(lobId); Latches.Held latch = openShared(); LobIndex.Batch batch = index.newBatch()) {
            // another LOB's upload under the same id is not this command's to drop
            Optional<UploadEntry> upload = index.upload(uploadId).filter(u -> u.lobId().equals(lobId));
            SourceMarks.applied(index, batch, source);
            if (upload.isEmpty()) {
                index.write(batch);
                return false;
            }
            dropUpload(upload.get(), batch, "aborted by its producer");
        }
        awaitDurable();
        return true;
    }

    /** Drops upload {@code u} in {@code batch} (with what else it holds) and frees its pages; the LOB's write latch held. */
    private void dropUpload(UploadEntry u, LobIndex.Batch batch, String why) throws IOException {
        index.write(batch.deleteUpload(u.uploadId()));
        usage.uploading(-Extent.totalPages(u.pages()));
        frees.releaseAfterSync(u.pages()); // its last chunk may not be flushed yet: DurableFrees
        versions.settled(u.version());
        // once a minute per kind: clients giving up in a burst, and a rebuild replaying every abort and expiry of a
        // partition's history, would write a line each (lob_uploads_expired_total counts the expired)
        long notSaid = dropsSaid.sayNow(why);
        if (notSaid >= 0) {
            log.info("{}: upload {} of {} {} after {} of {} bytes; its {} pages are free again{}", name, u.uploadId(), u.lobId(), why,
                    u.bytesDone(), u.totalLength(), Extent.totalPages(u.pages()),
                    notSaid == 0 ? "" : " (and " + notSaid + " other uploads " + why + " since this was last said)");
        }
    }

    @Override
    public int uploadsInProgress() throws IOException {
        int[] n = {0};
        try (Latches.Held latch = openShared()) {
            index.forEachUpload(u -> n[0]++);
        }
        return n[0];
    }

    @Override
    public Optional<VersionEntry> delete(String lobId, Source source) throws IOException {
        checkOpen();
        LobStore.checkId("lobId", lobId);
        backpressure.await();
        Optional<VersionEntry> superseded;
        try (Latches.Held row = latches.write(lobId); Latches.Held latch = openPublishing(lobId)) {
            Optional<VersionEntry> old = index.current(lobId);
            try (LobIndex.Batch batch = index.newBatch()) {
                superseded = old.map(o -> o.superseded(VersionEntry.Cause.DELETE, SourceMarks.offsetOf(source)));
                if (superseded.isPresent()) {
                    batch.deleteCurrent(lobId).putPending(superseded.get());
                }
                SourceMarks.applied(index, batch, source);
                index.write(batch);
            }
            superseded.ifPresent(s -> {
                usage.deleted(s);
                usage.pending(s);
            });
        }
        awaitDurable();
        return superseded;
    }

    private static long versionOf(Optional<VersionEntry> e) {
        return e.map(VersionEntry::version).orElse(-1L);
    }

    // ---------------------------------------------------------------- reclaim

    @Override
    public ReclaimOutcome reclaim(String lobId, long version, List<Extent> extents, Source source) throws IOException {
        return reclaimer.reclaim(lobId, version, extents, source);
    }

    // ---------------------------------------------------------------- compaction

    @Override
    public long compact() throws IOException {
        checkOpen();
        return compactor.run();
    }

    @Override
    public boolean compactionUnderWay() {
        return compactor.underWay();
    }

    /** The next version number to issue: it moves with every write, upload and relocation (compaction's sign of writes). */
    long nextVersion() {
        return versions.issued();
    }

    /** Free pages between used ones: what compaction can gather at the end of the file. */
    long holePages() {
        return allocator.holePages();
    }

    /**
     * Moves {@code entry}, if it is still its LOB's current version, into free pages below its last
     * page: a new version with the same bytes. (Its pages may be scattered; the move still lowers its
     * last page, and as every move lowers one, repeated runs converge.) The new pages are forced
     * before it is published, the index WAL is synced after, and only then is the old version freed
     * (its pages may be granted again at once), unless a reader pins it, in which case the last
     * unpin frees it. The publishing batch records the old version's reclaim as requested, so after
     * a crash the next open frees it:
     * no undo record is involved, since no value changed. A LOB with versions pending purge is left
     * where it is: those may name pages the current version owns (shared by a partial update).
     *
     * @return the pages moved; 0 if the LOB changed or has history; -1 if there is no room below it
     */
    long relocate(VersionEntry entry) throws IOException {
        long end = Compactor.endPage(entry);
        WriteResult moved;
        try {
            moved = writeVersion(entry.lobId(), true, base -> {
                if (base.isEmpty() || base.get().entry().version() != entry.version() || !index.pendingOf(entry.lobId()).isEmpty()) {
                    throw new NotMovable();
                }
                long length = base.get().reader().byteLength();
                return NewValue.whole(length, base.get().reader().stream(0, length));
            // the moved copy is checked against the value's CRC32C (0: shared pages, none kept), not given a new one: a
            // page gone bad that its own check missed would otherwise become the value, checked from then on
            }, entry.valueCrc32c() != 0 ? Integer.valueOf(entry.valueCrc32c()) : null, null, null, Placement.below(allocator, end));
        } catch (NotMovable changed) {
            return 0;
        } catch (Placement.NoRoom noRoom) {
            return -1;
        }
        VersionEntry old = moved.superseded().orElseThrow();
        if (config.sync()) {
            try (Latches.Held latch = openShared()) {
                syncWalNow();
            }
        }
        reclaimer.freeMovedUnlessPinned(old);
        metrics.relocated(moved.written().pageCount());
        return moved.written().pageCount();
    }

    // ---------------------------------------------------------------- reads

    @Override
    public Optional<VersionEntry> current(String lobId) throws IOException {
        try (Latches.Held latch = openShared()) {
            return index.current(lobId);
        }
    }

    @Override
    public List<VersionEntry> pendingOf(String lobId) throws IOException {
        try (Latches.Held latch = openShared()) {
            return index.pendingOf(lobId);
        }
    }

    @Override
    public Optional<LobReadHandle> open(String lobId) throws IOException {
        long start = System.nanoTime();
        Optional<Pins.Pin> pinned = reclaimer.pinCurrent(lobId);
        if (pinned.isEmpty()) {
            return Optional.empty();
        }
        Pins.Pin pin = pinned.get();
        try {
            VersionReader reader = reader(pin.entry());
            metrics.readLatency().record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
            return Optional.of(new PinnedHandle(pin, reader));
        } catch (IOException | RuntimeException e) {
            reclaimer.unpin(pin);
            throw e;
        }
    }

    /** A reader of version {@code e}'s pages, its pages read counted; its root's length checked against the index's. */
    private VersionReader reader(VersionEntry e) throws IOException {
        return VersionReader.open(file, e.lobId(), e.version(), e.rootPage(), metrics::pageRead).expectLength(e.byteLength());
    }

    private final class PinnedHandle implements LobReadHandle {
        private final Pins.Pin pin;
        private final VersionEntry entry;
        private final VersionReader reader;
        private boolean released;

        PinnedHandle(Pins.Pin pin, VersionReader reader) {
            this.pin = pin;
            this.entry = pin.entry();
            this.reader = reader;
        }

        @Override
        public VersionEntry version() {
            return entry;
        }

        @Override
        public long length() {
            return entry.byteLength();
        }

        @Override
        public InputStream stream(long from, long to) {
            return reader.stream(from, to);
        }

        @Override
        public synchronized void close() {
            if (!released) {
                released = true;
                reclaimer.unpin(pin);
            }
        }
    }

    @Override
    public int reclaimPastPinLeases() throws IOException {
        return reclaimer.reclaimPastPinLeases();
    }

    // ---------------------------------------------------------------- the command ledger: what was applied or refused

    @Override
    public long appliedOffset(String source) throws IOException {
        try (Latches.Held latch = openShared()) {
            return index.applied(source);
        }
    }

    @Override
    public long latestTime(String source) throws IOException {
        try (Latches.Held latch = openShared()) {
            return index.latestTime(source, Source.UNKNOWN_TIME);
        }
    }

    @Override
    public Optional<String> logId(String source) throws IOException {
        try (Latches.Held latch = openShared()) {
            return index.metaBytes(LOG_ID_PREFIX + source).map(b -> new String(b, StandardCharsets.UTF_8));
        }
    }

    @Override
    public void recordLogId(String source, String logId) throws IOException {
        try (Latches.Held latch = openShared()) {
            index.write(index.newBatch().putMeta(LOG_ID_PREFIX + source, logId.getBytes(StandardCharsets.UTF_8)));
        }
    }

    @Override
    public OptionalLong setting(String key) throws IOException {
        try (Latches.Held latch = openShared()) {
            long absent = Long.MIN_VALUE;
            long v = index.metaLong(SETTING_PREFIX + key, absent);
            return v == absent ? OptionalLong.empty() : OptionalLong.of(v);
        }
    }

    @Override
    public void recordSetting(String key, long value) throws IOException {
        try (Latches.Held latch = openShared()) {
            index.write(index.newBatch().putMeta(SETTING_PREFIX + key, value));
        }
    }

    @Override
    public Set<String> sourcesWithLogIds() throws IOException {
        try (Latches.Held latch = openShared()) {
            return Set.copyOf(index.metaWithPrefix(LOG_ID_PREFIX).keySet());
        }
    }

    @Override
    public OptionalLong commandApplied(String commandId, long sinceMillis) throws IOException {
        try (Latches.Held latch = openShared()) {
            return index.commandApplied(commandId).filter(c -> c.atMillis() >= sinceMillis)
                    .map(c -> OptionalLong.of(c.fingerprint())).orElse(OptionalLong.empty());
        }
    }

    @Override
    public int forgetCommandsBefore(long idsBeforeMillis, long rejectionsBeforeMillis) throws IOException {
        try (Latches.Held latch = openShared()) {
            return index.forgetCommandsBefore(idsBeforeMillis, rejectionsBeforeMillis);
        }
    }

    @Override
    public void recordSkipped(Source source) throws IOException {
        try (Latches.Held latch = openShared()) {
            SourceMarks.recordApplied(index, source);
        }
    }

    @Override
    public void recordRejected(Source source, Rejection why) throws IOException {
        try (Latches.Held latch = openShared(); LobIndex.Batch batch = index.newBatch()) {
            SourceMarks.rejected(index, batch, source, why);
            index.write(batch);
        }
    }

    @Override
    public Optional<Rejection> rejection(Source source) throws IOException {
        try (Latches.Held latch = openShared()) {
            return index.rejection(source.name(), source.offset());
        }
    }

    // ---------------------------------------------------------------- listing, stats, fsck, sync

    @Override
    public void forEachCurrent(Consumer<VersionEntry> action) {
        try (Latches.Held latch = openSharedUnchecked()) {
            index.forEachCurrent(action);
        }
    }

    /** As {@link LobIndex#forEachCurrentAfter}, under the tablespace latch: compaction's scan, a part at a time. */
    String forEachCurrentAfter(String after, int max, Consumer<VersionEntry> action) {
        try (Latches.Held latch = openSharedUnchecked()) {
            return index.forEachCurrentAfter(after, max, action);
        }
    }

    @Override
    public void forEachPending(Consumer<VersionEntry> action) {
        try (Latches.Held latch = openSharedUnchecked()) {
            index.forEachPending(action);
        }
    }

    @Override
    public List<VersionEntry> pendingToPurge(VersionEntry after, int max) {
        try (Latches.Held latch = openSharedUnchecked()) {
            return index.pendingPage(after, max, e -> !e.reclaimRequested());
        }
    }

    @Override
    public StoreStats stats() {
        return usage.stats(freePages(), config.pageSize());
    }

    /** Free pages, those waiting for a WAL sync before writers may have them ({@link DurableFrees}) counted. */
    private long freePages() {
        return allocator.freePages() + frees.waitingPages();
    }

    @Override
    public FsckReport fsck(boolean readData) throws IOException {
        return onlineFsck.fsck(readData);
    }

    @Override
    public boolean checking() {
        return onlineFsck.checking();
    }

    @Override
    public FsckReport fsckOnline() throws IOException {
        return onlineFsck.fsckOnline();
    }

    @Override
    public boolean needsSync() {
        return config.sync() && index.writeCount() != syncedWrites;
    }

    @Override
    public void flush() throws IOException {
        // shared: close and fsck (exclusive) wait, so the file and index stay open throughout; writers go on.
        // A commit may flush a store from another thread (TablespaceRegistry) while its task is being closed.
        try (Latches.Held latch = latches.tablespaceShared()) {
            if (closed) {
                return;
            }
            long writes = index.writeCount(); // read first: what is written after this is left for the next flush
            // pages waiting for a sync too: a free whose index write this count took in, made after the last flush's sync
            // took its list of waiting pages, would wait for the next write otherwise
            if (config.sync() && (writes != syncedWrites || frees.waitingPages() > 0)) {
                // before the force: what it covers, recorded by the sync after it (an upload's entry counts bytes once their
                // pages are written: what it counts now is forced next)
                SyncedFrontier frontier;
                try {
                    frontier = versions.frontier().withUploadsOf(index);
                } catch (UncheckedIOException e) { // a scan of the index that failed: the commit's IOException, as a sync's
                    throw e.getCause();
                }
                pagesFirst.flush(() -> {
                    // pages first: the index entries synced next name them (and a writer's meanwhile, see PagesFirst)
                    syncGuard.run(file::force);
                    metrics.pageSync();
                    frees.syncThenRelease(() -> syncGuard.run(() -> index.syncWalWith(frontier.put(index.newBatch()))));
                    metrics.walSync();
                });
                syncedWrites = writes;
            }
            shrinkTail();
        }
    }

    /** A WAL sync of its own (not a flush's, not the group commit's), ordered after other writers' pages ({@link PagesFirst}). */
    private void syncWalNow() throws IOException {
        syncWalCounted(index::syncWal);
    }

    /** {@code walSync} ordered after other writers' pages, as {@link #syncWalNow}; each fsync counted in lob_syncs_total. */
    private void syncWalCounted(GroupSync.SyncAction walSync) throws IOException {
        pagesFirst.syncWal(() -> {
            syncGuard.run(file::force);
            metrics.pageSync();
        }, () -> {
            syncGuard.run(walSync);
            metrics.walSync();
        });
    }

    /**
     * lob.prealloc: the file grows a batch at once when the allocator's end moves out (sparsely, as a file system grows
     * a file written past its end). Best effort: a write to a page there reports a full disk or a failing one itself.
     */
    private void growFile(long pages) {
        try {
            file.extendTo(pages);
        } catch (IOException e) {
            log.warn("{}: cannot grow the page file to {} pages ahead of its writes: {}", name, pages, e.toString());
        }
    }

    /**
     * Gives a long free run at the end of the page file back to the file system (lob.shrink.min.pages).
     * The allocator latch is held from the last check of the plan to the truncate, so no page in the cut can be
     * granted meanwhile; the WAL sync before it runs outside the latch. No high-water mark is stored: open derives
     * it from the file length and the pages the index names, so a crash on either side of the truncate opens clean
     * (an uncut file's tail is free space again, and the next flush cuts it).
     */
    private void shrinkTail() throws IOException {
        if (config.shrinkMinPages() <= 0) {
            return;
        }
        // The cut cannot be undone: the index writes that freed these pages must be durable before it, or a
        // crash could bring back a pending version whose pages no longer exist. Frees write the index before
        // they reach the allocator, so this sync covers every page the allocator held free when it planned the cut.
        long given = allocator.shrinkTail(config.shrinkMinPages(), config.preallocBatch(), this::syncWalNow, file::truncate);
        if (given > 0) {
            log.debug("{}: gave {} free pages at the end of the page file back to the file system", name, given);
        }
    }

    @Override
    public LobStoreConfig config() {
        return config;
    }

    @Override
    public StoreMetrics metrics() {
        return metrics;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public String copyId() {
        return syncGuard.copyId();
    }

    @Override
    public void renewCopyId() throws IOException {
        try (Latches.Held latch = openExclusive()) {
            syncGuard.renameCopy(() -> TablespaceDescriptor.renewCopyId(dir).copyId());
        }
    }

    @Override
    public void markIncomplete(String why) throws IOException {
        TablespaceDirs.markIncomplete(dir, why);
        incomplete = TablespaceDirs.incompleteness(dir).orElse(why);
    }

    @Override
    public Optional<String> incompleteness() {
        return Optional.ofNullable(incomplete);
    }

    @Override
    public Path directory() {
        return dir;
    }

    /** Marks the store failed by {@code e}, as a failed sync does (tests stand in for a failing disk with it). */
    void syncFailed(IOException e) {
        syncGuard.fail(e);
    }

    /** A quick check before a write waits for anything; what counts is the check under the latch (see {@link #openShared()}). */
    private void checkOpen() throws IOException {
        if (closed) {
            throw closedException();
        }
        syncGuard.refuseIfFailed();
    }

    private IOException closedException() {
        return new TablespaceClosedException(name);
    }

    /**
     * The tablespace latch, shared, of an open store. Every entry point holds it, or it exclusively,
     * or a publish latch (taken through these methods, or directly and then checking {@link #closed}),
     * while it uses the index: close takes it
     * exclusively and sets {@link #closed} under it, so nothing reaches RocksDB once it is closed
     * (which would crash the JVM), and fsck, exclusive too, sees no change while it runs.
     *
     * @throws IOException "tablespace ... is closed" if it is
     */
    private Latches.Held openShared() throws IOException {
        return ifOpen(latches.tablespaceShared());
    }

    /** {@link #openShared()} for the entry points that declare no IOException: throws IllegalStateException instead. */
    private Latches.Held openSharedUnchecked() {
        try {
            return openShared();
        } catch (IOException closedNow) {
            throw new IllegalStateException(closedNow.getMessage(), closedNow);
        }
    }

    /** The tablespace latch, exclusively, of an open store (see {@link #openShared()}). */
    private Latches.Held openExclusive() throws IOException {
        return ifOpen(latches.tablespaceExclusive());
    }

    /** The latches of a publish to {@code lobId} ({@link Latches#publish}), of an open store (see {@link #openShared()}). */
    private Latches.Held openPublishing(String lobId) throws IOException {
        return ifOpen(latches.publish(lobId));
    }

    /** {@code held}, if the store is open now that it is held; else it is let go and the store's closing reported. */
    private Latches.Held ifOpen(Latches.Held held) throws IOException {
        if (closed) {
            held.close();
            throw closedException();
        }
        return held;
    }

    @Override
    public void close() throws IOException {
        try (Latches.Held latch = latches.tablespaceExclusive()) {
            if (closed) {
                return;
            }
            closed = true;
            try {
                if (syncGuard.failed()) {
                    return; // nothing more is written or synced: the tablespace is rebuilt, not trusted
                }
                allocator.release(frees.takeAll()); // their index writes are synced before a cut (shrinkTail) and by the checkpoint
                shrinkTail();
                // the allocator's end is the file's but where growing it failed (and always with lob.prealloc off, the
                // file as long as its last write): the file spans it, so the next open derives the checkpoint's free space
                try {
                    file.extendTo(allocator.highWaterMark());
                } catch (ClosedChannelException e) {
                    throw e; // an interrupt closed it: said as such
                } catch (IOException full) {
                    // a full disk: no clean checkpoint then, and the next open recovers the tablespace as after a crash
                    log.warn("{}: cannot extend the page file to {} pages at close ({}); closed without a checkpoint", name,
                            allocator.highWaterMark(), full.toString());
                    return;
                }
                syncGuard.run(file::force);
                // guarded as every sync is: the clean flag of a checkpoint whose sync failed must not be trusted
                syncGuard.run(() -> index.checkpointFree(allocator.freeExtents(), Recovery.META_CLEAN));
                walSyncedByClose = true; // a synced write: every index write before it is on disk too
            } catch (IndexWriteRefusedException refused) {
                // said where the disk refused it; no sync is tried after that, and the next open recovers as after a crash
                log.warn("{}: closed without a checkpoint ({})", name, refused.getMessage());
            } finally {
                // Whatever failed above, the index lets go of its lock and the file of its descriptor, or the
                // tablespace could not be opened again in this process; and a reopen registers its own meters.
                release();
            }
        }
    }

    private void release() throws IOException {
        try {
            metrics.close();
        } finally { // whatever the meters' removal threw: an index left open keeps RocksDB's LOCK, refusing the next open here
            try {
                index.close();
            } finally {
                file.close();
            }
        }
    }

    /** Closes as a crash of the process would: nothing forced, no clean flag (tests stand in for a SIGKILL with it). */
    void crash() throws IOException {
        try (Latches.Held latch = latches.tablespaceExclusive()) {
            if (!closed) {
                closed = true;
                release();
            }
        }
    }
}
