package io.lobstream.store.allocator;

import java.io.IOException;
import java.util.Collection;
import java.util.List;

/**
 * Hands out and takes back tablespace pages. Free space is kept in memory, guarded by the
 * allocator latch, and derived again at each open from the pages the index names (a clean close's
 * checkpoint of it is only compared with that: {@code Recovery}).
 */
public interface PageAllocator {

    /** Grants {@code pages} pages: from free runs, lowest first (a run long enough for a batch, else a hole whole), and from the file's end only when no free run is left below it. */
    List<Extent> allocate(int pages);

    /**
     * Grants {@code pages} pages all below page {@code limit}, lowest first, in as many extents as
     * the free runs there need; never grows the file. Compaction uses it to move a version down.
     *
     * @return the pages, or an empty list (nothing granted) if fewer than {@code pages} are free below {@code limit}
     */
    List<Extent> allocateBelow(int pages, long limit);

    /** Free pages that are not part of the free run at the end of the file (holes between used pages). */
    long holePages();

    /** Returns pages to free space. */
    void release(Collection<Extent> extents);

    /** Number of pages the tablespace file spans (free pages included). */
    long highWaterMark();

    long freePages();

    /** A snapshot of free space, sorted and coalesced. */
    List<Extent> freeExtents();

    /**
     * Gives back the free run at the end of the tablespace, if it is at least {@code minPages}
     * long: all of it but {@code slack} pages, which stay free so that the next growth does not
     * re-extend the file at once.
     *
     * <p>The cut is planned under the allocator latch; then {@code durable} runs without it (an fsync
     * that makes the frees of the planned pages durable must not stall every grant); then, under the
     * latch again, {@code cut} is called with the new length in pages, before the allocator lowers its
     * high-water mark, so no grant can land in the pages being cut. A grant that reached the planned
     * pages meanwhile (they may have been granted and freed again since the sync) abandons the cut. If
     * either call throws, the allocator is left as it was. One shrink at a time: another one returns 0.
     *
     * @return the pages given back (0 if the free tail was too short, or a grant reached it meanwhile)
     */
    long shrinkTail(long minPages, int slack, FreesDurable durable, TailCut cut) throws IOException;

    /** Makes durable every free that reached the allocator before the call; see {@link #shrinkTail}. */
    @FunctionalInterface
    interface FreesDurable {
        void run() throws IOException;
    }

    /** Cuts the tablespace file to {@code pages} pages; see {@link #shrinkTail}. */
    @FunctionalInterface
    interface TailCut {
        void cutTo(long pages) throws IOException;
    }
}
