package io.lobstream.store.impl;

import io.lobstream.store.index.LobIndex;

import java.io.IOException;
import java.util.Collection;
import java.util.Set;
import java.util.TreeSet;

/**
 * Issues a tablespace's version numbers: unique forever, so that an undo record, a page header
 * or a reclaim names one version and never a later one. A block of numbers is reserved in the
 * index ahead of use, so issuing one costs no index write; after a crash the next open starts
 * past the reservation, never below a number already issued.
 *
 * <p>It also keeps which numbers are issued and not yet settled (their pages still being written: a version
 * not yet published, an upload with chunks to come), for a flush to record what its force covers
 * ({@link SyncedFrontier}). A number never settled (a store that failed mid-write) costs only a check after a crash.
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
    /** Guarded by this: a number is issued and marked unsettled in one step, which {@link #frontier()} sees whole. */
    private long next;
    private final Set<Long> unsettled = new TreeSet<>();
    private long reserved;

    /** Starts past both the reservation recorded in {@code index} and {@code highestSeen}. */
    VersionNumbers(LobIndex index, long highestSeen) throws IOException {
        this(index, highestSeen, java.util.List.of(), GroupSync.SyncAction::sync);
    }

    /**
     * @param unsettled    numbers issued before this open whose pages are still being written (uploads in progress)
     * @param syncedWrites how the reservation's synced write runs: its WAL sync makes every index write before it durable,
     *                     other writers' too
     */
    VersionNumbers(LobIndex index, long highestSeen, Collection<Long> unsettled, SyncedWrites syncedWrites) throws IOException {
        this.index = index;
        this.syncedWrites = syncedWrites;
        long from = Math.max(index.metaLong(META_RESERVED, 1), highestSeen + 1);
        next = from;
        this.unsettled.addAll(unsettled);
        reserve(from);
    }

    /**
     * A version number never issued before in this tablespace, unsettled until {@link #settled}. (A reservation's
     * synced write runs under the monitor, once in half a block of numbers.)
     */
    synchronized long next() throws IOException {
        long v = next;
        if (v >= reserved - RESERVE / 2) {
            reserve(v + 1);
        }
        next = v + 1;
        unsettled.add(v);
        return v;
    }

    /** Every page of version {@code v} is written (it is published), or none will be (it was given up). */
    synchronized void settled(long v) {
        unsettled.remove(v);
    }

    /** The next number to issue: it moves with every version written (compaction's sign of writes). */
    synchronized long issued() {
        return next;
    }

    /** Taken before a flush's force of the page file: what the force covers once it is done. */
    synchronized SyncedFrontier frontier() {
        return new SyncedFrontier(next, unsettled.stream().mapToLong(Long::longValue).toArray(), new long[0], new long[0]);
    }

    private void reserve(long from) throws IOException {
        long upTo = from + RESERVE;
        // the write, then the sync: only a failed sync fences the tablespace (a full disk refusing the write loses nothing)
        index.write(index.newBatch().putMeta(META_RESERVED, upTo));
        syncedWrites.run(index::syncWal);
        reserved = upTo;
    }
}
