package io.lobstream.store.impl;

import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.ValueChecksumException;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.allocator.PageAllocator;
import io.lobstream.store.index.Attributes;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.layout.VersionLayout;
import io.lobstream.store.layout.VersionReader;
import io.lobstream.store.layout.VersionWriter;

import java.io.IOException;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The pages of a new version, written before the index names it: its root, the data pages it does not share with the
 * version it is made from, and its index pages. It allocates them, writes them, has them reach the disk first as far as
 * the mode asks ({@link PagesFirst}; a relocation's always), and holds them as unpublished until
 * {@link DefaultLobStore}'s publish names them or gives them back. A whole value written in chunks takes the same steps
 * one chunk at a time ({@link ChunkedUploads}).
 *
 * <p>The store holds the LOB's write latch and the tablespace latch around every call here; this class takes none.
 */
final class VersionPages {
    /** The current version a write starts from, open for reading its unchanged bytes. */
    record Base(VersionEntry entry, VersionReader reader) {
    }

    private final LobStoreConfig config;
    private final PageAllocator allocator;
    private final VersionNumbers versions;
    private final ThreadLocal<VersionWriter> writers;
    private final PagesFirst pagesFirst;
    private final GroupSync pageSync;
    /** the own pages of versions written but not yet published, by version: the store's, which fsck counts as in flight */
    private final Map<Long, List<Extent>> unpublished;

    VersionPages(LobStoreConfig config, PageAllocator allocator, VersionNumbers versions, ThreadLocal<VersionWriter> writers,
                 PagesFirst pagesFirst, GroupSync pageSync, Map<Long, List<Extent>> unpublished) {
        this.config = config;
        this.allocator = allocator;
        this.versions = versions;
        this.writers = writers;
        this.pagesFirst = pagesFirst;
        this.pageSync = pageSync;
        this.unpublished = unpublished;
    }

    /**
     * Allocates the pages of a new version of {@code lobId} but those it shares with the base, writes
     * them and returns the version's index entry (not yet published); {@code shared} receives the
     * base's pages it shares. On failure the pages it allocated, and only those, are released.
     */
    VersionEntry write(String lobId, Optional<Base> base, NewValue value, Integer expectedCrc32c, Attributes attributes,
                       Placement placement, List<Extent> shared) throws IOException {
        VersionLayout layout = VersionLayout.plan(config.pageSize(), value.length());
        List<Extent> allocated = List.of();
        long issued = -1;
        try {
            BitSet sharedPages = value.sharedPages(layout, base.map(Base::reader));
            int fresh = layout.dataPages() - sharedPages.cardinality();
            List<Extent> pages = placement.allocate(1 + fresh);
            allocated = pages;
            List<Extent> freshData = Extent.withoutFirstPage(pages);
            List<Extent> dataExtents = new ArrayList<>();
            Extent.Cursor next = new Extent.Cursor(freshData);
            for (int i = 0; i < layout.dataPages(); i++) {
                long pageNo = sharedPages.get(i) ? base.get().reader().dataPageNo(i) : next.next();
                Extent.appendInOrder(dataExtents, pageNo);
                if (sharedPages.get(i)) {
                    Extent.appendInOrder(shared, pageNo);
                }
            }
            List<Extent> indexExtents = layout.indexed()
                    ? placement.allocate((int) VersionLayout.indexPagesFor(config.pageSize(), dataExtents.size()))
                    : List.of();
            List<Extent> owned = new ArrayList<>(pages);
            owned.addAll(indexExtents);
            allocated = List.copyOf(owned); // never the shared pages: they stay the base's if this fails
            long version = versions.next();
            issued = version;
            long rootPage = pages.get(0).firstPage();
            int crc = writers.get().write(lobId, version, layout, rootPage, dataExtents, sharedPages, indexExtents, value.bytes());
            if (expectedCrc32c != null && expectedCrc32c != crc) {
                throw new ValueChecksumException(lobId, expectedCrc32c, crc);
            }
            if (placement.relocation() && config.sync()) {
                // a relocation's pages are on disk before its entry, in every mode: the version it replaces holds the
                // same bytes and is freed as soon as this one is durable
                pageSync.await(false); // a punctuation's moves, up to lob.compact.max.pages: none waits for writers
            } else {
                pagesFirst.beforeIndexNamesPages();
            }
            List<Extent> own = Extent.coalesce(owned);
            owned.addAll(shared);
            VersionEntry written = VersionEntry.current(lobId, version, rootPage, value.length(), crc, Extent.coalesce(owned), attributes);
            if (!shared.isEmpty()) {
                written = written.madeFrom(base.get().entry().version()); // which of its pages it wrote itself, for TornWrites
            }
            if (placement.relocation()) {
                written = written.movedFrom(base.get().entry()); // the same bytes: the same ETag
            }
            unpublished.put(version, own); // until publish() names them, or gives them back
            return written;
        } catch (IOException | RuntimeException e) {
            if (!allocated.isEmpty()) {
                allocator.release(allocated);
            }
            if (issued >= 0) {
                versions.settled(issued); // nothing names its pages: none is left to check after a crash
            }
            throw e;
        }
    }
}
