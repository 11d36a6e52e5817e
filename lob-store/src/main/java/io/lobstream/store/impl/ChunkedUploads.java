package io.lobstream.store.impl;

import io.lobstream.store.Chunk;
import io.lobstream.store.ChunkResult;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.Source;
import io.lobstream.store.ValueChecksumException;
import io.lobstream.store.ValueTooLargeException;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.allocator.PageAllocator;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.Rejection;
import io.lobstream.store.index.UploadEntry;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.layout.VersionLayout;
import io.lobstream.store.layout.VersionWriter;
import io.lobstream.store.page.Crc32c;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Predicate;

/**
 * Chunked uploads, one chunk at a time: a value sent as the chunks of one upload (same LOB, in
 * order) is written into pages allocated whole when its first chunk arrives (its length is
 * known from it), and its {@link UploadEntry} in the index records each chunk applied, in the
 * batch that records the chunk's offset. The last chunk writes the version's index and root
 * pages and checks the whole value's CRC32C; {@link DefaultLobStore#putChunk} then publishes it,
 * so the new version becomes visible only whole. A duplicate chunk is acknowledged and skipped;
 * a chunk that cannot continue its upload is refused with the reason, which the writer
 * dead-letters. An upload whose chunks stop coming expires: {@link #idle} says which, and
 * {@link DefaultLobStore#expireUploads} drops them and frees their pages.
 *
 * <p>The store holds the LOB's write latch and the tablespace latch around every call here;
 * this class takes none.
 */
final class ChunkedUploads {
    private final LobStoreConfig config;
    private final LobIndex index;
    private final PageAllocator allocator;
    private final VersionNumbers versions;
    private final ThreadLocal<VersionWriter> writers;
    private final PagesFirst pagesFirst;
    private final DurableFrees frees;
    /** The store's record of pages written but not yet named by the index (see {@link DefaultLobStore}). */
    private final Map<Long, List<Extent>> unpublished;
    private final TablespaceUsage usage;

    ChunkedUploads(LobStoreConfig config, LobIndex index, PageAllocator allocator, VersionNumbers versions,
                   ThreadLocal<VersionWriter> writers, PagesFirst pagesFirst, DurableFrees frees,
                   Map<Long, List<Extent>> unpublished, TablespaceUsage usage) {
        this.config = config;
        this.index = index;
        this.allocator = allocator;
        this.versions = versions;
        this.writers = writers;
        this.pagesFirst = pagesFirst;
        this.frees = frees;
        this.unpublished = unpublished;
        this.usage = usage;
    }

    /**
     * A chunk applied: what became of it, or, for the last chunk of an upload, the upload's version,
     * written and ready to publish (in place of the {@code replaced} version; deleting the upload's
     * entry unless it was never written).
     */
    record Step(ChunkResult result, VersionEntry written, Optional<VersionEntry> replaced, String finishedUpload) {
        static Step done(ChunkResult result) {
            return new Step(result, null, Optional.empty(), null);
        }
    }

    /** Checks {@code chunk} against its upload, then writes it. The caller holds the LOB's write latch and the tablespace latch. */
    Step apply(Chunk chunk, InputStream data, Source source) throws IOException {
        Optional<UploadEntry> existing = index.upload(chunk.uploadId());
        String problem;
        if (existing.isPresent()) {
            problem = mismatch(existing.get(), chunk);
        } else if (chunk.chunkIndex() != 0) {
            problem = "unknown upload " + chunk.uploadId() + ": chunk " + chunk.chunkIndex() + " arrived but chunk 0 never did "
                    + "(or it was refused: see its dead letter; or the upload expired, or finished)";
        } else {
            problem = mismatch(UploadEntry.begun(chunk.uploadId(), chunk.lobId(), 0, chunk.totalLength(), chunk.chunkCount(), 0,
                    List.of(), List.of(), 0), chunk);
        }
        if (existing.isPresent() && problem == null && chunk.chunkIndex() < existing.get().nextChunk()) {
            UploadEntry upload = existing.get();
            // (not an entry of format 1, which is read, never written: its next new chunk converts it)
            if (chunk.commandsTimeMillis() > upload.touchedAtMillis() && !upload.partialPageOnDisk()
                    && (source == null || source.offset() > index.applied(source.name()))) {
                // a retry resending what the writer has, before what it lacks: it keeps the upload from expiring, else a
                // long upload's retry begun near the timeout would lose it while resending (the offset in the same batch)
                try (LobIndex.Batch batch = index.newBatch()) {
                    SourceMarks.applied(index, batch, source);
                    batch.putUpload(upload.touched(chunk.commandsTimeMillis()));
                    index.write(batch);
                }
            } else {
                SourceMarks.recordApplied(index, source);
            }
            return Step.done(ChunkResult.of(ChunkResult.Status.DUPLICATE));
        }
        if (problem != null) {
            // the rejection with the offset, in one batch: were they apart, a crash between would leave a chunk that
            // comes again taken for applied, its dead letter lost
            try (LobIndex.Batch batch = index.newBatch()) {
                SourceMarks.rejected(index, batch, source, new Rejection(Rejection.UPLOAD, problem));
                index.write(batch);
            }
            return Step.done(ChunkResult.rejected(problem));
        }
        UploadEntry upload = existing.isPresent() ? existing.get() : begin(chunk);
        return write(upload, existing.isEmpty(), chunk, data, source);
    }

    /** Why {@code chunk} cannot continue {@code upload}, or null. */
    private static String mismatch(UploadEntry upload, Chunk chunk) {
        if (!upload.lobId().equals(chunk.lobId()) || upload.totalLength() != chunk.totalLength()
                || upload.chunkCount() != chunk.chunkCount()) {
            return "chunk " + chunk.chunkIndex() + " of upload " + chunk.uploadId() + " names " + chunk.lobId() + ", "
                    + chunk.totalLength() + " bytes in " + chunk.chunkCount() + " chunks; the upload is " + upload.lobId() + ", "
                    + upload.totalLength() + " bytes in " + upload.chunkCount() + " chunks";
        }
        if (chunk.chunkIndex() < upload.nextChunk()) {
            return null; // a duplicate
        }
        if (chunk.chunkIndex() > upload.nextChunk()) {
            return "chunk " + chunk.chunkIndex() + " of upload " + chunk.uploadId() + " arrived but chunk " + upload.nextChunk()
                    + " is next";
        }
        // a negative length would move bytesDone back, over pages already written
        if (chunk.length() < 0 || chunk.offset() != upload.bytesDone() || upload.bytesDone() + chunk.length() > upload.totalLength()
                || (chunk.last() && upload.bytesDone() + chunk.length() != upload.totalLength())) {
            return "chunk " + chunk.chunkIndex() + " of upload " + chunk.uploadId() + " covers bytes " + chunk.offset() + "+"
                    + chunk.length() + " but " + upload.bytesDone() + " of " + upload.totalLength() + " are written";
        }
        return null;
    }

    /** Allocates every page of the value (its length is known from the first chunk) and records the upload. */
    private UploadEntry begin(Chunk chunk) throws IOException {
        if (chunk.totalLength() < 0 || chunk.chunkCount() < 1) {
            throw new IllegalArgumentException("upload " + chunk.uploadId() + ": bad length " + chunk.totalLength()
                    + " or chunk count " + chunk.chunkCount());
        }
        ValueTooLargeException.check(config, chunk.lobId(), chunk.totalLength());
        VersionLayout layout = VersionLayout.planStreamed(config.pageSize(), chunk.totalLength());
        List<Extent> pages = allocator.allocate(1 + layout.dataPages());
        List<Extent> indexExtents = List.of();
        try {
            if (layout.indexed()) {
                indexExtents = allocator.allocate((int) VersionLayout.indexPagesFor(config.pageSize(), Extent.withoutFirstPage(pages).size()));
            }
            return UploadEntry.begun(chunk.uploadId(), chunk.lobId(), versions.next(), chunk.totalLength(), chunk.chunkCount(),
                    pages.get(0).firstPage(), Extent.withoutFirstPage(pages), indexExtents, chunk.commandsTimeMillis());
        } catch (IOException | RuntimeException e) {
            // nothing names these pages yet (the version number's reservation failed): give them back
            allocator.release(pages);
            allocator.release(indexExtents);
            throw e;
        }
    }

    /**
     * Writes the chunk's bytes to the upload's pages and records its progress; the last chunk also
     * writes the index and root pages. A page the chunk leaves partial is not written: its bytes go
     * into the upload's entry, in the batch that records the chunk applied, and onto the page with
     * the chunk that completes it (see {@link UploadEntry}).
     *
     * @param fresh the upload begins with this chunk: no index entry names its pages yet
     */
    private Step write(UploadEntry upload, boolean fresh, Chunk chunk, InputStream data, Source source) throws IOException {
        VersionLayout layout = VersionLayout.planStreamed(config.pageSize(), upload.totalLength());
        boolean named = false; // an index write that may name the pages was tried: refused, it may still have landed
        try {
            VersionWriter.ChunkWrite chunkWrite = writers.get().writeChunk(upload.lobId(), upload.version(), layout, upload.dataExtents(),
                    upload.bytesDone(), upload.partialPage(), data, chunk.length());
            UploadEntry next = upload.advanced(chunk.length(), Crc32c.combine(upload.crc32c(), chunkWrite.crc32c(), chunk.length()),
                    chunkWrite.partialPage(), chunk.commandsTimeMillis());
            if (!chunk.last()) {
                pagesFirst.beforeIndexNamesPages(); // the chunk's pages before the entry that counts them done, as a put's
                try (LobIndex.Batch batch = index.newBatch()) {
                    batch.putUpload(next);
                    SourceMarks.applied(index, batch, source);
                    named = true;
                    index.write(batch);
                }
                if (fresh) {
                    usage.uploading(Extent.totalPages(upload.pages())); // its entry names them now
                }
                return Step.done(ChunkResult.of(ChunkResult.Status.ACCEPTED));
            }
            if (chunk.crc32c() != null && chunk.crc32c() != next.crc32c()) {
                String reason = new ValueChecksumException(upload.lobId(), chunk.crc32c(), next.crc32c()).getMessage();
                try (LobIndex.Batch batch = index.newBatch()) {
                    if (!fresh) {
                        batch.deleteUpload(upload.uploadId());
                    }
                    SourceMarks.rejected(index, batch, source, new Rejection(Rejection.CRC_MISMATCH, reason));
                    index.write(batch);
                }
                if (!fresh) {
                    usage.uploading(-Extent.totalPages(upload.pages()));
                }
                if (fresh) {
                    frees.release(upload.pages()); // no entry ever named them
                } else {
                    // after the sync that makes the entry's removal durable: a power loss before it brings the entry back,
                    // and the open's torn-write check, which runs before Kafka applies the chunks again, would find another
                    // write's bytes on its pages and set the whole copy aside to be rebuilt
                    frees.releaseAfterSync(upload.pages());
                }
                versions.settled(upload.version());
                return Step.done(new ChunkResult(ChunkResult.Status.CHECKSUM_MISMATCH, Optional.empty(), reason));
            }
            writers.get().finishChunked(upload.lobId(), upload.version(), layout, upload.rootPage(), upload.dataExtents(),
                    upload.indexExtents(), next.crc32c());
            pagesFirst.beforeIndexNamesPages();
            VersionEntry written = VersionEntry.current(upload.lobId(), upload.version(), upload.rootPage(), upload.totalLength(),
                    next.crc32c(), upload.pages(), chunk.attributes());
            Optional<VersionEntry> replaced = index.current(upload.lobId());
            if (fresh) {
                unpublished.put(upload.version(), upload.pages()); // no upload entry names them: until publish() does
            }
            return new Step(null, written, replaced, fresh ? null : upload.uploadId());
        } catch (IOException | RuntimeException e) {
            if (fresh && !named) {
                allocator.release(upload.pages()); // nothing names them yet
                versions.settled(upload.version());
            }
            // else, as for a refused publish: whether the entry landed is for the next open's recovery to say (RocksDB
            // refuses every later write after such an error), so the pages are not granted again meanwhile
            throw e;
        }
    }

    /** Idle by both clocks, as {@link LobStore#expireUploads(long, long, long)} says. */
    static Predicate<UploadEntry> idle(long asOfMillis, long wallClockMillis, long idleMillis) {
        return u -> mayBeIdle(u.touchedAtMillis(), u.appliedAtMillis(), asOfMillis, wallClockMillis, idleMillis);
    }

    /** Whether an upload touched and applied at these times (or later) may be idle: with the least of every upload's, any. */
    static boolean mayBeIdle(long touchedAtMillis, long appliedAtMillis, long asOfMillis, long wallClockMillis, long idleMillis) {
        return touchedAtMillis < minus(asOfMillis, idleMillis) && appliedAtMillis < minus(wallClockMillis, idleMillis);
    }

    /** {@code t - d}, without wrapping around below Long.MIN_VALUE (a time not known yet) or above Long.MAX_VALUE. */
    private static long minus(long t, long d) {
        long r = t - d;
        return ((t ^ d) & (t ^ r)) < 0 ? (t < 0 ? Long.MIN_VALUE : Long.MAX_VALUE) : r;
    }
}
