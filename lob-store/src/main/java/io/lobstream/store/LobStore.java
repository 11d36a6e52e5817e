package io.lobstream.store;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.impl.DefaultLobStore;
import io.lobstream.store.index.Attributes;
import io.lobstream.store.index.VersionEntry;
import io.micrometer.core.instrument.MeterRegistry;

import java.io.Closeable;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/**
 * One tablespace: a page file of LOB versions and the RocksDB index beside it, and the {@link CommandLedger} of the
 * commands applied to it. Thread-safe: many writers and readers at once; see {@link LobStoreConfig} for the latching modes.
 */
public interface LobStore extends CommandLedger, Closeable {
    /**
     * The longest lobId (and upload id): the index keeps ids in Java's modified UTF-8
     * ({@code DataOutput.writeUTF}), whose length field stops at 64 KiB. Every id the index could
     * ever hold passes, so a LOB written before this check was made stays writable and replayable.
     */
    int MAX_ID_BYTES = 65_535;

    /**
     * @throws IllegalArgumentException if {@code id} in modified UTF-8 is longer than {@link #MAX_ID_BYTES}, or holds a
     *         surrogate without its pair: the index's keys are the id in UTF-8, where every such char becomes {@code ?}, so
     *         {@code "a\uD800"} and {@code "a?"} would be one LOB (ids from Kafka or HTTP never hold one)
     */
    static void checkId(String what, String id) {
        long n = 0;
        for (int i = 0; i < id.length(); i++) {
            char c = id.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < id.length() && Character.isLowSurrogate(id.charAt(i + 1))) {
                i++;
                n += 6; // a surrogate takes three bytes, and so does its pair
            } else if (Character.isSurrogate(c)) {
                throw new IllegalArgumentException(what + " has a surrogate without its pair at char " + i);
            } else {
                n += c != 0 && c < 0x80 ? 1 : c < 0x800 ? 2 : 3; // NUL takes two bytes
            }
        }
        if (n > MAX_ID_BYTES) {
            throw new IllegalArgumentException(what + " of " + n + " bytes: at most " + MAX_ID_BYTES);
        }
    }

    /**
     * Opens the tablespace in {@code dir}, creating it if the directory holds none. An unclean end is recovered here:
     * free space and counts are derived again, and pages a power loss may have taken are checked (see
     * {@link LobStoreConfig#SYNC}).
     *
     * @param registry where the tablespace's meters go (none if null), tagged {@code tablespace=name}
     * @throws TablespaceSyncFailedException if an fsync of this tablespace once failed (its marker is on disk)
     * @throws TablespaceTornException       if the index names pages the disk lost
     */
    static LobStore open(Path dir, LobStoreConfig config, MeterRegistry registry, String name) throws IOException {
        return DefaultLobStore.open(dir, config, registry, name);
    }

    /**
     * The same, where the caller must not block for a whole-tablespace read (a Kafka Streams task's init): with
     * {@code fullCheck} false, a tablespace whose every page is due a check is not opened, and
     * {@link TablespaceCheckDueException} says so before any page is read; the caller opens it again elsewhere.
     */
    static LobStore open(Path dir, LobStoreConfig config, MeterRegistry registry, String name, boolean fullCheck) throws IOException {
        return DefaultLobStore.open(dir, config, registry, name, fullCheck);
    }

    /** The same with no meters, named after the directory: for tools and tests. */
    static LobStore open(Path dir, LobStoreConfig config) throws IOException {
        return DefaultLobStore.open(dir, config);
    }

    /**
     * Checks a tablespace no process has open, changing nothing ({@code lobstream fsck}): the index is opened read-only and
     * no recovery runs. A page problem of a version the end of the last run may have lost (written after the last flush
     * of a run that ended uncleanly) says so: an open finds it too, and has the copy rebuilt.
     */
    static FsckReport fsckClosed(Path dir, boolean readData) throws IOException {
        return DefaultLobStore.fsckClosed(dir, readData);
    }

    /**
     * Writes {@code length} bytes from {@code value} as a new version of {@code lobId} and publishes it.
     * The previous version, if any, becomes pending purge.
     *
     * @param expectedCrc32c if not null, the value's CRC32C: on mismatch nothing is published
     * @param attributes     the new version's content type and metadata (the previous version's are not kept)
     * @param source         if not null, recorded as applied in the same index batch
     * @throws ValueChecksumException if {@code expectedCrc32c} does not match
     * @throws ValueTooLargeException  if {@code length} is over {@link #layoutMaxBytes()}
     * @throws IllegalArgumentException if {@link Attributes#problem()} finds one
     */
    WriteResult put(String lobId, InputStream value, long length, Integer expectedCrc32c, Attributes attributes, Source source)
            throws IOException;

    /** {@link #put(String, InputStream, long, Integer, Attributes, Source)} without content type or metadata. */
    default WriteResult put(String lobId, InputStream value, long length, Integer expectedCrc32c, Source source) throws IOException {
        return put(lobId, value, length, expectedCrc32c, Attributes.NONE, source);
    }

    /**
     * Overwrites {@code length} bytes at {@code offset} (0 to the current length; a LOB that does not
     * exist has length 0) with bytes from {@code data}, extending the value if they run past its end.
     * The new version shares every unchanged full data page with the previous one. Exactly {@code length}
     * bytes are read from {@code data}; if it ends sooner the write fails ({@link java.io.EOFException}).
     *
     * @throws ValueTooLargeException if the value would grow past {@link #layoutMaxBytes()}
     */
    WriteResult write(String lobId, long offset, InputStream data, long length, Source source) throws IOException;

    /** Appends {@code length} bytes from {@code data}: a {@link #write} at the current length. */
    WriteResult append(String lobId, InputStream data, long length, Source source) throws IOException;

    /**
     * Cuts the value to {@code newLength} bytes (at most its length); full data pages before the cut are shared.
     *
     * @throws java.util.NoSuchElementException if the LOB does not exist (nothing is allocated or recorded)
     */
    WriteResult truncate(String lobId, long newLength, Source source) throws IOException;

    /**
     * Applies one chunk of a chunked PUT. The first chunk allocates all the value's pages; each
     * chunk is written straight into them; the last one checks the CRC and publishes the version.
     * A re-sent chunk is recognised and ignored.
     *
     * @throws ValueTooLargeException if the upload's total length is over {@link #layoutMaxBytes()} (the first chunk;
     *                                nothing is allocated or recorded)
     */
    ChunkResult putChunk(Chunk chunk, InputStream data, Source source) throws IOException;

    /**
     * Drops idle uploads, freeing their pages; returns their ids. Idle by two clocks: the last chunk
     * came ({@link Chunk#commandsTimeMillis()}, in the commands' time) more than {@code idleMillis} before
     * {@code asOfMillis} (the time of the commands applied since: their producer stopped, not the
     * writer), and it was applied more than {@code idleMillis} before {@code wallClockMillis} (the
     * applier's clock). {@code Long.MAX_VALUE} leaves a clock out: the commands' time alone is what a
     * replay of the same commands can decide by too.
     */
    List<String> expireUploads(long asOfMillis, long wallClockMillis, long idleMillis) throws IOException;

    /**
     * Drops the chunked upload {@code uploadId} of {@code lobId}, begun and not finished, and frees its pages, as its
     * expiry would, but at once: its producer said it will send no more (an ABORT command). Recorded as applied at
     * {@code source} either way.
     *
     * @return false if there is no such upload of that LOB (finished, expired, never begun): nothing changed
     */
    boolean abortUpload(String lobId, String uploadId, Source source) throws IOException;

    /** Chunked uploads in progress: begun, neither published nor expired. */
    int uploadsInProgress() throws IOException;

    /** {@link #expireUploads(long, long, long)} as of now by both clocks. */
    default List<String> expireUploads(long idleMillis) throws IOException {
        long now = System.currentTimeMillis();
        return expireUploads(now, now, idleMillis);
    }

    /** Deletes {@code lobId}; its current version, if any, becomes pending purge and is returned. */
    Optional<VersionEntry> delete(String lobId, Source source) throws IOException;

    /** The current version of {@code lobId}. */
    Optional<VersionEntry> current(String lobId) throws IOException;

    /** The versions of {@code lobId} pending purge, oldest first. */
    List<VersionEntry> pendingOf(String lobId) throws IOException;

    /** Pins and opens the current version of {@code lobId} for reading. */
    Optional<LobReadHandle> open(String lobId) throws IOException;

    /**
     * Frees the pages of a superseded version, as found by purge. Applied only if the version is still
     * pending and {@code extents} are exactly its pages; deferred while a reader pins it (within
     * {@code lob.read.pin.max.ms}: a pin older than that holds nothing back). With no {@code source} (a
     * reclaim no Kafka transaction would apply again after a crash), the pages go to writers only once the next
     * {@link #flush} has made it durable.
     */
    ReclaimOutcome reclaim(String lobId, long version, List<Extent> extents, Source source) throws IOException;

    /**
     * Every LOB's current version, in id order. The action runs under the tablespace latch (shared): it must not call
     * back into this store, not even to close a {@link LobReadHandle}, which can wait for that latch exclusively.
     */
    void forEachCurrent(Consumer<VersionEntry> action);

    /** Every version pending purge; the action runs under the tablespace latch, as for {@link #forEachCurrent}. */
    void forEachPending(Consumer<VersionEntry> action);

    /**
     * Up to {@code max} versions pending purge whose reclaim is not already waiting for a reader, in
     * index order (by lobId, shorter ids first, then version), after {@code after} (null: from the
     * first): a long history is read a page at a time.
     */
    List<VersionEntry> pendingToPurge(VersionEntry after, int max);

    /** The first {@code max} of {@link #pendingToPurge(VersionEntry, int)}. */
    default List<VersionEntry> pendingToPurge(int max) {
        return pendingToPurge(null, max);
    }

    /**
     * Frees the versions whose reclaim was deferred for a reader that has held its pin past
     * {@code lob.read.pin.max.ms} (at unpin they would be freed anyway); returns how many. The node
     * calls it with its housekeeping.
     */
    int reclaimPastPinLeases() throws IOException;

    StoreStats stats();

    /**
     * Checks every page and the index against each other; with {@code readData} also every data page and value CRC. Holds
     * writes, reads, purge and compaction back while it runs (the exclusive latch): with {@code readData}, as long as it
     * takes to read the whole tablespace. A store in use: {@link #fsckOnline}.
     */
    FsckReport fsck(boolean readData) throws IOException;

    /**
     * {@code fsck(true)} for a store in use: the index and every page's owner under the exclusive latch, as
     * {@code fsck(false)} (each version's root and index pages read); then every live value's data pages and CRC, each
     * value read under a reader's pin, while writes, purge and compaction go on. A value replaced since the first part is
     * checked as it is then, its data only; one deleted, not at all; one replaced while it is read, reported only if it
     * is still current (a pin held past {@code lob.read.pin.max.ms} no longer keeps a replaced version's pages). Versions
     * pending purge and uploads in progress get the first part only (an offline fsck, or {@link #fsck}, reads their data
     * too).
     */
    FsckReport fsckOnline() throws IOException;

    /**
     * Whether an fsck holds this tablespace's exclusive latch, or waits for it (the structure check of {@link #fsck} and
     * of {@link #fsckOnline}'s first part): a read begun now would wait until that ends. A server that answers reads of
     * many tablespaces on a bounded pool asks, so the reads of one tablespace under check do not take every thread.
     */
    boolean checking();

    /**
     * Makes every write so far durable (page file forced, index WAL synced; with {@code lob.sync}
     * false nothing is forced), then gives a long free run at the end of the page file back to the
     * file system ({@code lob.shrink.min.pages}).
     */
    void flush() throws IOException;

    /**
     * True when something was written since the last {@link #flush()} made the store durable; always false with
     * {@code lob.sync} false, where flush() forces nothing.
     */
    boolean needsSync();

    /**
     * Compaction ({@code lob.compact.*}): if nothing was written since the previous call and the
     * holes between used pages are worth it, moves the current versions that reach highest in the
     * page file into the lowest holes (same bytes, a new version), so that free space gathers at the
     * end where {@link #flush()} gives it back. Call it periodically; the node does.
     *
     * @return the pages moved
     */
    long compact() throws IOException;

    /**
     * Whether compaction is in the middle of a pass: its scan of a large index, or its moves, go on at the next
     * {@link #compact()} calls. A call that scans returns 0, and is no sign that there is nothing to move.
     */
    boolean compactionUnderWay();

    LobStoreConfig config();

    StoreMetrics metrics();

    /** The name in logs and metric tags ({@code p-3} for a node's partition 3). */
    String name();

    /**
     * This copy of the tablespace's data ({@link io.lobstream.store.tablespace.TablespaceDescriptor#copyId()}): version and
     * page numbers mean something only with it, so whoever keeps them elsewhere keeps the copy id too.
     */
    String copyId();

    /**
     * Gives this copy a new {@link #copyId()}, on disk before it returns. For a copy about to apply commands that a copy of
     * its id may have applied before: one restored from a backup, or an old copy of a partition that other nodes wrote
     * since. Its version numbers, issued again from where the copy stands, may then go to other values than they went to
     * the first time (compaction takes numbers too), and under a new id no {@code ETag} a client kept can match them.
     * Call it while nothing else uses the store (a catch-up, before the task opens it). Purge skips the undo records
     * produced under the old id as another copy's once its reader has seen the new one (before that, a reclaim still
     * frees only a pending version whose pages it names exactly), and the writer produces those of its pending versions
     * again when its task opens the tablespace.
     */
    void renewCopyId() throws IOException;

    /**
     * Records, for good, that this copy was built without commands it needed ({@code why}: which, and why): a copy that
     * misses commands cannot tell which values they wrote, so every fsck of it reports it from then on. Forced to disk
     * before it returns: call it before applying anything past the gap.
     */
    void markIncomplete(String why) throws IOException;

    /** What {@link #markIncomplete} recorded (each call's {@code why}, joined by "; "), if anything. */
    Optional<String> incompleteness();

    /** The tablespace directory (page file, index, descriptor). */
    Path directory();

    /**
     * The longest value this tablespace's page layout holds (it depends on the page size): {@link #put}, {@link #write},
     * {@link #append} and the first chunk of {@link #putChunk} refuse a longer one with {@link ValueTooLargeException}.
     * Not the writer's own limit, {@code lob.value.max.bytes}, which is lower unless raised.
     */
    default long layoutMaxBytes() {
        return config().layoutMaxBytes();
    }
}
