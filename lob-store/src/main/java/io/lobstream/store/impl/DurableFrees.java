package io.lobstream.store.impl;

import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.allocator.PageAllocator;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * The index before the pages, when pages are freed: with {@code lob.sync.each.write}, pages an index write stopped naming (a
 * reclaim, an expired or refused upload) go back to the allocator only once a WAL sync has made that write durable. Given
 * back at once, a writer could take them, force its own bytes onto them and lose power before its WAL sync: the index
 * would come back naming the old version, or upload, on pages that now hold another's bytes, and purge would take it
 * for stale and keep its pages as history for good. Writes under that setting sync the WAL all the time, so freed pages
 * wait one group commit. Without it (the pipeline), such a loss takes a reclaim with the Kafka transaction it was part
 * of, and it is applied again: its pages go back at once (the version it frees was flushed before its undo record was
 * sent). A reclaim no Kafka transaction would apply again (one with no source: {@code LocalPurger}'s, in a catch-up or a
 * replay; one done at an unpin, an open or past a pin's lease, whose request may have had none) waits for the next WAL
 * sync either way ({@link #releaseAfterSync}); so do an expired upload's pages and a refused one's, whose last chunks
 * may not be flushed yet: the open's torn-write check, which runs before Kafka applies anything again, would find
 * another write's bytes on them and set the whole copy aside. The mirror rule, pages before the index that names them,
 * is {@link PagesFirst}'s.
 */
final class DurableFrees {
    private final boolean deferred;
    /** {@code lob.sync}: without it nothing is synced, and pages made to wait for a sync would wait for good. */
    private final boolean syncs;
    private final PageAllocator allocator;
    private final List<Extent> waiting = new ArrayList<>();
    private volatile long waitingPages;

    DurableFrees(LobStoreConfig config, PageAllocator allocator) {
        this.deferred = config.syncEachWrite();
        this.syncs = config.sync();
        this.allocator = allocator;
    }

    /** Pages whose index write is done: to the allocator now, or after the next WAL sync. */
    void release(Collection<Extent> extents) {
        release(extents, deferred);
    }

    /**
     * Pages whose index write nothing would make again after a crash: to the allocator after the next WAL sync (a
     * {@code flush()} without {@code lob.sync.each.write}). Given at once, a writer could take them and its bytes reach
     * the disk before the index write does: a crash would bring the version back, pending on pages another's bytes
     * now hold, which purge takes for stale, so they would never be freed.
     */
    void releaseAfterSync(Collection<Extent> extents) {
        release(extents, syncs);
    }

    private void release(Collection<Extent> extents, boolean afterSync) {
        if (!afterSync) {
            allocator.release(extents);
            return;
        }
        synchronized (this) {
            waiting.addAll(extents);
            waitingPages += Extent.totalPages(extents);
        }
    }

    /**
     * Runs a WAL sync, then gives the allocator the pages freed before it began (after a failed sync, none). They stay in
     * {@link #waitingPages()} until the allocator has them, so free space never reads low meanwhile.
     */
    void syncThenRelease(GroupSync.SyncAction syncWal) throws IOException {
        List<Extent> covered;
        synchronized (this) {
            covered = List.copyOf(waiting);
            waiting.clear();
        }
        boolean synced = false;
        try {
            syncWal.sync();
            synced = true;
        } finally {
            if (synced) {
                allocator.release(covered);
                synchronized (this) {
                    waitingPages -= Extent.totalPages(covered);
                }
            } else {
                synchronized (this) {
                    waiting.addAll(covered);
                }
            }
        }
    }

    /** The pages waiting for a sync, taken (at close: the caller makes their index writes durable before anyone reuses them). */
    synchronized List<Extent> takeAll() {
        List<Extent> all = List.copyOf(waiting);
        waiting.clear();
        waitingPages = 0;
        return all;
    }

    /** Pages freed and waiting for a sync: free to fsck and statistics, not yet to writers. */
    synchronized List<Extent> waiting() {
        return List.copyOf(waiting);
    }

    long waitingPages() {
        return waitingPages;
    }
}
