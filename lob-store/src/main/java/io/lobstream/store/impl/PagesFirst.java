package io.lobstream.store.impl;

import io.lobstream.store.LobStoreConfig;

import java.io.IOException;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Pages before the index entries that name them, in every sync mode: no durable index entry may name a page a power loss
 * can take. With {@code lob.sync.each.write} a writer forces its pages itself before its index write. Without it,
 * {@link DefaultLobStore#flush()} forces the page file and then syncs the index WAL, and a writer on another thread
 * could write its pages after that force and its index entry before that sync: the sync would make the entry durable
 * and not its pages. So while a flush is between the two, a writer about to name its pages in the index forces them
 * first (sharing the force with other writers). One that looks before the flush begins wrote its pages before the
 * flush's force, which covers them; one that looks after the flush ends is left to the next flush, which forces first.
 * A store written by one thread at a time (a writer task's) never sees a flush under way and pays nothing.
 */
final class PagesFirst {
    private final boolean eachWrite;
    private final boolean sync;
    private final GroupSync pageSync;
    private final AtomicInteger flushesUnderWay = new AtomicInteger();

    PagesFirst(LobStoreConfig config, GroupSync pageSync) {
        this.eachWrite = config.syncEachWrite();
        this.sync = config.sync();
        this.pageSync = pageSync;
    }

    /** Call after writing pages and before the index write that names them. */
    void beforeIndexNamesPages() throws IOException {
        if (eachWrite || (sync && flushesUnderWay.get() > 0)) {
            pageSync.await();
        }
    }

    /**
     * A WAL sync that is not a flush's (a relocation's, a version-number reservation's, a tail cut's): where writers name
     * pages they have not forced, the page file is forced first, as a flush does, and the two run as a flush, so this sync
     * makes no other writer's entry durable before its pages.
     */
    void syncWal(GroupSync.SyncAction forcePages, GroupSync.SyncAction syncWal) throws IOException {
        if (sync && !eachWrite) {
            flush(() -> {
                forcePages.sync();
                syncWal.sync();
            });
        } else {
            syncWal.sync();
        }
    }

    /** Runs a flush's force of the page file and sync of the index WAL, {@code forceThenSync}, as a flush under way. */
    void flush(GroupSync.SyncAction forceThenSync) throws IOException {
        flushesUnderWay.incrementAndGet(); // before the force: a writer that looks later forces its own pages
        try {
            forceThenSync.sync();
        } finally {
            flushesUnderWay.decrementAndGet();
        }
    }
}
