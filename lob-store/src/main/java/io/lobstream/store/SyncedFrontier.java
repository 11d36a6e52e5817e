package io.lobstream.store;

import io.lobstream.store.index.LobIndex;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Optional;

/**
 * Which versions a flush's force of the page file covered, recorded in the index by the WAL sync that follows the force
 * (and by each open, which forces the page file too: a tablespace made or upgraded is covered before its first flush).
 *
 * <p>Between two flushes the index WAL is written, not synced, and the kernel may write it back before the pages its
 * entries name: a power loss can then keep an entry and lose its pages (a crash of the process alone loses neither,
 * the kernel holds both). The versions a flush covered need no check after that: every one numbered below
 * {@code issuedBelow} whose pages were all written before the force, which is each one not {@code unsettled} then
 * (not yet published, or an upload with chunks to come). Any other may have an entry without its pages, and an
 * unclean open checks its pages ({@link TornWrites}).
 *
 * @param issuedBelow the next version number to issue when the flush began
 * @param unsettled   the versions issued then whose pages were still being written, ascending
 */
record SyncedFrontier(long issuedBelow, long[] unsettled) {
    private static final org.slf4j.Logger log = org.slf4j.LoggerFactory.getLogger(SyncedFrontier.class);
    static final String META_KEY = "synced.frontier";

    /** Whether the flush this frontier records may have missed pages of {@code version}. */
    boolean uncovered(long version) {
        return version >= issuedBelow || Arrays.binarySearch(unsettled, version) >= 0;
    }

    /** One that covers no version. */
    static final SyncedFrontier NONE = new SyncedFrontier(0, new long[0]);

    /**
     * The frontier the index records, if an open or a flush recorded one (none: a tablespace of an earlier release that
     * was never opened by this one, or lob.sync off). One that does not decode covers nothing: every version is checked.
     */
    static Optional<SyncedFrontier> read(LobIndex index) throws IOException {
        Optional<byte[]> bytes = index.metaBytes(META_KEY);
        if (bytes.isEmpty()) {
            return Optional.empty();
        }
        ByteBuffer b = ByteBuffer.wrap(bytes.get());
        if (b.remaining() < 12 || (b.remaining() - 12) % 8 != 0 || b.getInt(8) != (b.remaining() - 12) / 8) {
            log.warn("index meta {} does not decode ({} bytes): checking the pages of every version", META_KEY, bytes.get().length);
            return Optional.of(NONE);
        }
        long issuedBelow = b.getLong();
        long[] unsettled = new long[b.getInt()];
        for (int i = 0; i < unsettled.length; i++) {
            unsettled[i] = b.getLong();
        }
        return Optional.of(new SyncedFrontier(issuedBelow, unsettled));
    }

    /** Adds this frontier to {@code batch}, which the WAL sync after the force writes. */
    LobIndex.Batch put(LobIndex.Batch batch) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(12 + 8 * unsettled.length).putLong(issuedBelow).putInt(unsettled.length);
        for (long v : unsettled) {
            b.putLong(v);
        }
        return batch.putMeta(META_KEY, b.array());
    }
}
