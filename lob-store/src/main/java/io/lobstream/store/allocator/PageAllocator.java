package io.lobstream.store.allocator;

import java.util.Collection;
import java.util.List;

/**
 * Hands out and takes back tablespace pages. Free space is kept in memory, guarded by the
 * allocator latch; the index persists it (see {@link io.lobstream.store.index.LobIndex}).
 */
public interface PageAllocator {

    /** Grants {@code pages} pages, as few extents as free space allows. */
    List<Extent> allocate(int pages);

    /** Returns pages to free space. */
    void release(Collection<Extent> extents);

    /** Number of pages the tablespace file spans (free pages included). */
    long highWaterMark();

    long freePages();

    /** A snapshot of free space, sorted and coalesced. */
    List<Extent> freeExtents();
}
