package io.lobstream.store.impl;

import io.lobstream.store.index.LobIndex;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * Which versions a flush's force of the page file covered, recorded in the index by the WAL sync that follows the force
 * (and by each open, which forces the page file too: a tablespace made or upgraded is covered before its first flush).
 *
 * <p>Between two flushes the index WAL is written, not synced, and the kernel may write it back before the pages its
 * entries name: a power loss can then keep an entry and lose its pages (a crash of the process alone loses neither,
 * the kernel holds both). The versions a flush covered need no check after that: every one numbered below
 * {@code issuedBelow} whose pages were all written before the force, which is each one not {@code unsettled} then
 * (not yet published, or an upload with chunks to come). Any other may have an entry without its pages, and an
 * unclean open checks its pages ({@link TornWrites}). Of an upload in progress, the flush covered the data pages its
 * entry counted as written when the flush began: those are not read again, however large the upload.
 *
 * @param issuedBelow the next version number to issue when the flush began
 * @param unsettled   the versions issued then whose pages were still being written, ascending
 * @param uploads     the versions of the uploads in progress then, ascending, and (at the same index in
 *                    {@code uploadBytes}) how many of their bytes their entries counted as written
 */
record SyncedFrontier(long issuedBelow, long[] unsettled, long[] uploads, long[] uploadBytes) {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(SyncedFrontier.class);
    static final String META_KEY = "synced.frontier";

    /** Whether the flush this frontier records may have missed pages of {@code version}. */
    boolean uncovered(long version) {
        return version >= issuedBelow || Arrays.binarySearch(unsettled, version) >= 0;
    }

    /** How many bytes of the upload of {@code version} the flush covered: its data pages they fill are on disk. */
    long uploadBytesCovered(long version) {
        int at = Arrays.binarySearch(uploads, version);
        return at >= 0 ? uploadBytes[at] : 0;
    }

    /** This frontier, covering also the bytes written so far of the uploads in progress in {@code index}. */
    SyncedFrontier withUploadsOf(LobIndex index) {
        TreeMap<Long, Long> progress = new TreeMap<>();
        if (index.uploadTimesAtLeast()[0] == Long.MAX_VALUE) {
            return withUploads(progress); // a scan found none, and none was put since: every commit of a store without uploads
        }
        index.forEachUpload(u -> progress.put(u.version(), u.bytesDone()));
        return withUploads(progress);
    }

    /** This frontier, covering also the bytes written so far of the uploads in progress: bytes done, by version. */
    SyncedFrontier withUploads(SortedMap<Long, Long> progress) {
        return new SyncedFrontier(issuedBelow, unsettled, progress.keySet().stream().mapToLong(Long::longValue).toArray(),
                progress.values().stream().mapToLong(Long::longValue).toArray());
    }

    /** One that covers no version. */
    static final SyncedFrontier NONE = new SyncedFrontier(0, new long[0], new long[0], new long[0]);

    /**
     * The frontier the index records, if an open or a flush recorded one (none: a tablespace of an earlier release that
     * was never opened by this one, or lob.sync off). One that does not decode covers nothing: every version is checked.
     */
    static Optional<SyncedFrontier> read(LobIndex index, String name) throws IOException {
        Optional<byte[]> bytes = index.metaBytes(META_KEY);
        if (bytes.isEmpty()) {
            return Optional.empty();
        }
        ByteBuffer b = ByteBuffer.wrap(bytes.get());
        try {
            long issuedBelow = b.getLong();
            long[] unsettled = longs(b, b.getInt(), 1)[0];
            // the uploads' bytes trail what the release before wrote (and it took a frontier with them for undecodable)
            long[][] uploads = b.hasRemaining() ? longs(b, b.getInt(), 2) : new long[][] {new long[0], new long[0]};
            if (b.hasRemaining()) {
                throw new IllegalArgumentException(b.remaining() + " bytes past its end");
            }
            return Optional.of(new SyncedFrontier(issuedBelow, unsettled, uploads[0], uploads[1]));
        } catch (RuntimeException e) {
            log.warn("{}: index meta {} does not decode ({} bytes: {}): checking the pages of every version", name, META_KEY,
                    bytes.get().length, e.toString());
            return Optional.of(NONE);
        }
    }

    /** {@code count} rows of {@code width} longs from {@code b}, as {@code width} columns. */
    private static long[][] longs(ByteBuffer b, int count, int width) {
        if (count < 0 || (long) count * width * Long.BYTES > b.remaining()) {
            throw new IllegalArgumentException("a count of " + count);
        }
        long[][] columns = new long[width][count];
        for (int i = 0; i < count; i++) {
            for (int c = 0; c < width; c++) {
                columns[c][i] = b.getLong();
            }
            if (i > 0 && columns[0][i] <= columns[0][i - 1]) { // looked up by binary search: out of order, one would be missed
                throw new IllegalArgumentException("versions not ascending at " + i);
            }
        }
        return columns;
    }

    /** Adds this frontier to {@code batch}, which the WAL sync after the force writes. */
    LobIndex.Batch put(LobIndex.Batch batch) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(16 + 8 * unsettled.length + 16 * uploads.length).putLong(issuedBelow).putInt(unsettled.length);
        for (long v : unsettled) {
            b.putLong(v);
        }
        b.putInt(uploads.length);
        for (int i = 0; i < uploads.length; i++) {
            b.putLong(uploads[i]).putLong(uploadBytes[i]);
        }
        return batch.putMeta(META_KEY, b.array());
    }
}
