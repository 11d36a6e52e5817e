package io.lobstream.store.impl;

import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.ReclaimOutcome;
import io.lobstream.store.Source;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.VersionEntry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Frees the pages of versions pending purge, and orders that with readers: the store's garbage collector. A reclaim
 * (a purge worker's, through {@code lob.reclaim}) of a version no reader pins frees it at once; one a reader pins is
 * recorded as requested in the index and done at the last unpin ({@link #unpin}), or once the pin outlasts
 * {@code lob.read.pin.max.ms} ({@link #reclaimPastPinLeases}). A version's pages go back to the allocator only once
 * no index entry names them, durably ({@link DurableFrees}).
 */
final class Reclaimer {
    private static final Logger log = LoggerFactory.getLogger(Reclaimer.class);

    private final String name;
    private final boolean sync;
    private final LobIndex index;
    private final Latches latches;
    private final OpenLatches open;
    private final Pins pins;
    private final DurableFrees frees;
    private final TablespaceUsage usage;
    /** The index WAL's sync, ordered after the pages written before it ({@link PagesFirst}). */
    private final GroupSync.SyncAction syncWal;
    /** Reclaims deferred for readers since the store opened ({@link #reclaim}). */
    private final AtomicLong deferred = new AtomicLong();
    /** {@link #deferred} when a scan past pin leases last found none waiting: equal, there is none to look for. */
    private volatile long deferredSettled;

    Reclaimer(String name, LobStoreConfig config, LobIndex index, Latches latches, OpenLatches open, Pins pins, DurableFrees frees,
              TablespaceUsage usage, GroupSync.SyncAction syncWal) {
        this.name = name;
        this.sync = config.sync();
        this.index = index;
        this.latches = latches;
        this.open = open;
        this.pins = pins;
        this.frees = frees;
        this.usage = usage;
        this.syncWal = syncWal;
    }

    /** Extents to log: the first few and how many (a fragmented value of GiBs has thousands, a reclaim record up to 16 MiB of them). */
    private static String brief(List<Extent> extents) {
        return extents.size() <= 8 ? extents.toString()
                : extents.subList(0, 8).toString().replaceFirst("]$", ", ... (" + extents.size() + " extents)]");
    }

    /** See {@link io.lobstream.store.LobStore#reclaim}. */
    ReclaimOutcome reclaim(String lobId, long version, List<Extent> extents, Source source) throws IOException {
        try (Latches.Held latch = open.publishing(lobId)) {
            // a reclaim below the applied offset (a lob.reclaim made anew starts again under it) applies, but never takes
            // the offset back: the offset only moves forward (see SourceMarks)
            Source mark = source != null && source.offset() <= index.applied(source.name()) ? null : source;
            Optional<VersionEntry> pending = index.pending(lobId, version);
            if (pending.isEmpty() || pending.get().reclaimRequested()) {
                SourceMarks.recordApplied(index, source);
                return ReclaimOutcome.IGNORED;
            }
            VersionEntry e = pending.get();
            if (!Extent.coalesce(extents).equals(Extent.coalesce(e.extents()))) {
                log.warn("{}: reclaim of {}@{} names pages {} but the version owns {}: rejected", name, lobId, version, brief(extents),
                        brief(e.extents()));
                SourceMarks.recordApplied(index, source);
                return ReclaimOutcome.REJECTED;
            }
            if (pins.holds(e)) {
                try (LobIndex.Batch batch = index.newBatch()) {
                    batch.putPending(e.withReclaimRequested());
                    SourceMarks.applied(index, batch, mark);
                    index.write(batch);
                }
                deferred.incrementAndGet();
                return ReclaimOutcome.DEFERRED;
            }
            freePending(e, mark, source == null);
            return ReclaimOutcome.APPLIED;
        }
    }

    /**
     * Drops a pending version from the index, then hands its pages to the allocator. The caller holds the version's
     * publish latch, or is the store's open.
     *
     * @param afterSync the drop may be made again by nothing after a crash (a reclaim with no source, or one deferred
     *                  while a reader pinned the version, whose request may have had none): the pages wait for the next
     *                  WAL sync ({@link DurableFrees#releaseAfterSync})
     */
    void freePending(VersionEntry e, Source source, boolean afterSync) throws IOException {
        try (LobIndex.Batch batch = index.newBatch()) {
            batch.deletePending(e.lobId(), e.version());
            SourceMarks.applied(index, batch, source);
            index.write(batch);
        }
        // Only once no index entry names them (durably, with lob.sync.each.write) may the pages be granted again.
        if (afterSync) {
            frees.releaseAfterSync(e.extents());
        } else {
            frees.release(e.extents());
        }
        usage.freed(e);
    }

    /** Frees {@code old}, a relocation's old copy made durable, if it is still pending and no reader pins it (else the last unpin does). */
    void freeMovedUnlessPinned(VersionEntry old) throws IOException {
        try (Latches.Held latch = open.publishing(old.lobId())) {
            if (!pins.holds(old) && index.pending(old.lobId(), old.version()).isPresent()) {
                freePending(old, null, false); // the WAL synced before: the move is durable
            }
        }
    }

    /**
     * Pins {@code lobId}'s current version, if there is one: no purge frees its pages until {@link #unpin}, or for
     * lob.read.pin.max.ms if the version is replaced meanwhile ({@link #reclaimPastPinLeases}); a compaction move's old
     * copy waits for the last unpin however long. The index is read under the
     * tablespace latch, which close excludes. The pages are read after it: once the store is closed that fails with
     * ClosedChannelException, and the pin is released.
     */
    Optional<Pins.Pin> pinCurrent(String lobId) throws IOException {
        try (Latches.Held ts = open.shared(); Latches.Held latch = latches.lob(lobId)) {
            return index.current(lobId).map(pins::pin);
        }
    }

    /** Releases a pin; the last one out frees the versions whose reclaim was deferred for it. Never throws: a reader's close. */
    void unpin(Pins.Pin pin) {
        VersionEntry entry = pin.entry();
        try {
            // first the LOB's latch and the tablespace latch shared (close excludes it, and the index is read): a read that
            // ends mostly frees nothing, and with lob.optimistic.update off the publish latch is the tablespace latch
            // exclusive, which would queue it, and every read after it, behind the page phase of a write in progress. Two
            // holds, not one: a read latch held cannot be upgraded to that exclusive one.
            try (Latches.Held ts = latches.tablespaceShared(); Latches.Held latch = latches.lob(entry.lobId())) {
                if (!pins.unpin(pin) || open.closed() || dueAfterUnpin(entry.lobId()).isEmpty()) {
                    return;
                }
            }
            // the publish latch: a deferred reclaim writes the index, which fsck and close exclude
            try (Latches.Held latch = latches.publish(entry.lobId())) {
                if (open.closed()) {
                    return;
                }
                List<VersionEntry> due = dueAfterUnpin(entry.lobId()); // again: a pin, or a reclaim, may have come between
                if (sync && due.stream().anyMatch(p -> p.cause() == VersionEntry.Cause.RELOCATE)) {
                    // as a relocation does before it frees: the move's publish must be on disk before the old copy's pages
                    // can be written again, or a power loss would bring back the old copy as current over another's bytes
                    syncWal.sync();
                }
                for (VersionEntry pending : due) {
                    freePending(pending, null, true);
                }
            }
        } catch (IOException | UncheckedIOException e) { // (a scan of the index that failed: unchecked)
            // the deferred reclaim stays recorded in the index and is done at the next open
            log.warn("{}: deferred reclaim after unpinning {}@{} failed: {}", name, entry.lobId(), entry.version(), e.toString());
        }
    }

    /** {@code lobId}'s versions whose reclaim was deferred for readers, and that no pin holds now. */
    private List<VersionEntry> dueAfterUnpin(String lobId) throws IOException {
        List<VersionEntry> due = new ArrayList<>();
        for (VersionEntry pending : index.pendingOf(lobId)) {
            if (pending.reclaimRequested() && !pins.holds(pending)) {
                due.add(pending);
            }
        }
        return due;
    }

    /** See {@link io.lobstream.store.LobStore#reclaimPastPinLeases}. */
    int reclaimPastPinLeases() throws IOException {
        long seen = deferred.get();
        if (seen == deferredSettled) {
            // no reclaim deferred since a scan found none waiting (a store opens with none: recovery frees them): the scan
            // reads every pending version, which with purge away (history growing at the slowed rate) is millions
            return 0;
        }
        List<VersionEntry> requested = new ArrayList<>();
        try (Latches.Held latch = open.sharedUnchecked()) {
            index.forEachPending(e -> {
                if (e.reclaimRequested()) {
                    requested.add(e);
                }
            });
        }
        int freed = 0;
        int waiting = 0;
        for (VersionEntry e : requested) {
            try (Latches.Held latch = open.publishing(e.lobId())) {
                Optional<VersionEntry> still = index.pending(e.lobId(), e.version());
                // a relocation's old copy is freed by its last reader's unpin, never under a reader
                boolean due = still.isPresent() && still.get().reclaimRequested() && still.get().cause() != VersionEntry.Cause.RELOCATE;
                if (due && !pins.holds(still.get())) {
                    if (pins.pinned(e.lobId(), e.version())) {
                        log.warn("{}: a reader of {} has held its pin past lob.read.pin.max.ms; version {} is reclaimed under it "
                                + "(the reader fails if it reads a reused page)", name, e.lobId(), e.version());
                    } else { // no pin at all: the last reader's unpin failed to free it (logged then), and nobody is blamed
                        log.info("{}: the reclaim of {}@{} deferred for its readers, which have all let go, is done now",
                                name, e.lobId(), e.version());
                    }
                    freePending(still.get(), null, true);
                    freed++;
                } else if (due) {
                    waiting++; // pinned within its lease still
                }
            }
        }
        if (waiting == 0) {
            deferredSettled = seen;
        }
        return freed;
    }
}
