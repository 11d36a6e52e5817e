package io.lobstream.store;

import io.lobstream.store.index.LobIndex;
import io.lobstream.store.tablespace.GroupSync;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issues a tablespace's version numbers: unique forever, so that an undo record, a page header
 * or a reclaim names one version and never a later one. A block of numbers is reserved in the
 * index ahead of use, so issuing one costs no index write; after a crash the next open starts
 * past the reservation, never below a number already issued.
 */
final class VersionNumbers {
    static final String META_RESERVED = "version.reserved";
    private static final long RESERVE = 1 << 16;

    /** Runs a sync of the index WAL as the store's other WAL syncs run (see {@link PagesFirst#syncWal}). */
    @FunctionalInterface
    interface SyncedWrites {
        void run(GroupSync.SyncAction walSync) throws IOException;
    }

    private final LobIndex index;
    private final SyncedWrites syncedWrites;
    private final AtomicLong next = new AtomicLong();
    private volatile long reserved;

    /** Starts past both the reservation recorded in {@code index} and {@code highestSeen}. */
    VersionNumbers(LobIndex index, long highestSeen) throws IOException {
        this(index, highestSeen, GroupSync.SyncAction::sync);
    }

    /**
     * @param syncedWrites how the reservation's synced write runs: its WAL sync makes every index write before it durable,
     *                     other writers' too
     */
    VersionNumbers(LobIndex index, long highestSeen, SyncedWrites syncedWrites) throws IOException {
        this.index = index;
        this.syncedWrites = syncedWrites;
        long from = Math.max(index.metaLong(META_RESERVED, 1), highestSeen + 1);
        next.set(from);
        reserve(from);
    }

    /** A version number never issued before in this tablespace. */
    long next() throws IOException {
        long v = next.getAndIncrement();
        if (v >= reserved - RESERVE / 2) {
            synchronized (this) {
                if (v >= reserved - RESERVE / 2) {
                    reserve(v + 1);
                }
            }
        }
        return v;
    }

    /** The next number to issue: it moves with every version written (compaction's sign of writes). */
    long issued() {
        return next.get();
    }

    private synchronized void reserve(long from) throws IOException {
        long upTo = from + RESERVE;
        // the write, then the sync: only a failed sync fences the tablespace (a full disk refusing the write loses nothing)
        index.write(index.newBatch().putMeta(META_RESERVED, upTo));
        syncedWrites.run(index::syncWal);
        reserved = upTo;
    }
}
