package io.lobstream.store.allocator;

import io.lobstream.store.StoreMetrics;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongConsumer;

/**
 * First-fit allocator over a map of free extents, lowest page first so the file stays compact.
 *
 * <p>With preallocation on ({@code lob.prealloc}) each latch acquisition grants up to a batch of
 * pages: the lowest free run that holds them, else the holes below the file's end, lowest first,
 * and only when none is left the file's end, grown by a whole batch; with it off every page costs
 * one latch acquisition and the file grows a page at a time. The difference is the number of times
 * concurrent writers meet on the latch, which {@link StoreMetrics} records. When the end moves out,
 * the tablespace is told ({@code growth}) and grows the file there and then, a batch at once, not
 * page by page as the pages are written (in whatever order).
 */
public final class DefaultPageAllocator implements PageAllocator {
    private final int batchSize;
    private final StoreMetrics metrics;
    /** Told the new end, in pages, under the latch, each time a grant moves the end out. */
    private final LongConsumer growth;
    private final ReentrantLock latch = new ReentrantLock();
    /** firstPage → pageCount; never two adjacent or overlapping entries. */
    private final TreeMap<Long, Integer> free = new TreeMap<>();
    private long highWaterMark;
    /** Changed under the latch; read without it (metrics scrapes, stats), which must not wait behind a shrink's truncate. */
    private volatile long freePages;
    /**
     * While a shrink makes its frees durable (outside the latch): the first page it plans to cut, else {@link #NO_CUT}.
     * A grant that reaches it sets {@link #cutPlanSpoiled}, and the shrink gives up (the next flush tries again).
     */
    private long cutPlannedFrom = NO_CUT;
    private boolean cutPlanSpoiled;
    private static final long NO_CUT = Long.MAX_VALUE;

    public DefaultPageAllocator(boolean prealloc, int batchSize, long highWaterMark, Collection<Extent> freeExtents, StoreMetrics metrics) {
        this(prealloc, batchSize, highWaterMark, freeExtents, metrics, end -> { });
    }

    public DefaultPageAllocator(boolean prealloc, int batchSize, long highWaterMark, Collection<Extent> freeExtents, StoreMetrics metrics,
                                LongConsumer growth) {
        this.batchSize = prealloc ? batchSize : 1;
        this.metrics = metrics;
        this.growth = growth;
        this.highWaterMark = highWaterMark;
        for (Extent e : Extent.coalesce(freeExtents)) {
            if (e.endPage() > highWaterMark) {
                throw new IllegalArgumentException("free extent " + e + " past the high-water mark " + highWaterMark);
            }
            free.put(e.firstPage(), e.pageCount());
            freePages += e.pageCount();
        }
    }

    @Override
    public List<Extent> allocate(int pages) {
        List<Extent> granted = new ArrayList<>();
        int remaining = pages;
        int acquisitions = 0; // not granted.size(): one acquisition may fill several holes
        while (remaining > 0) {
            int want = Math.min(remaining, batchSize);
            lockLatch();
            try {
                remaining -= grant(want, granted);
                acquisitions++;
            } finally {
                latch.unlock();
            }
        }
        metrics.allocated(acquisitions, pages);
        return Extent.coalesce(granted);
    }

    @Override
    public List<Extent> allocateBelow(int pages, long limit) {
        if (batchSize > 1) {
            List<Extent> granted = takeBelow(pages, limit);
            if (!granted.isEmpty()) {
                metrics.allocated(1, pages); // one acquisition, however many holes it filled
            }
            return granted;
        }
        // lob.prealloc off: one page per latch acquisition, as allocate() takes them (the switch's baseline, compaction
        // included); a page another allocation took meanwhile may leave too few below the limit, and those taken go back
        List<Extent> granted = new ArrayList<>();
        for (int taken = 0; taken < pages; taken++) {
            List<Extent> page = takeBelow(1, limit);
            if (page.isEmpty()) {
                release(granted);
                return List.of();
            }
            granted.addAll(page);
        }
        metrics.allocated(pages, pages);
        return Extent.coalesce(granted);
    }

    /** {@code pages} pages below {@code limit} in one latch acquisition, or none if fewer are free there. */
    private List<Extent> takeBelow(int pages, long limit) {
        lockLatch();
        try {
            long below = 0;
            for (Map.Entry<Long, Integer> run : free.headMap(limit, false).entrySet()) {
                below += Math.min(run.getValue(), limit - run.getKey());
                if (below >= pages) {
                    break;
                }
            }
            if (below < pages) {
                return List.of();
            }
            List<Extent> granted = new ArrayList<>();
            for (int remaining = pages; remaining > 0; ) {
                Map.Entry<Long, Integer> run = free.firstEntry(); // below limit: there are enough pages there
                int take = (int) Math.min(remaining, Math.min(run.getValue(), limit - run.getKey()));
                free.remove(run.getKey());
                if (run.getValue() > take) {
                    free.put(run.getKey() + take, run.getValue() - take);
                }
                freePages -= take;
                remaining -= take;
                hand(granted, run.getKey(), take);
            }
            return Extent.coalesce(granted);
        } finally {
            latch.unlock();
        }
    }

    @Override
    public long holePages() {
        lockLatch();
        try {
            Map.Entry<Long, Integer> last = free.lastEntry();
            boolean tail = last != null && last.getKey() + last.getValue() == highWaterMark;
            return freePages - (tail ? last.getValue() : 0);
        } finally {
            latch.unlock();
        }
    }

    /**
     * Under the latch: {@code want} pages into {@code granted}, and how many. The lowest free run that holds them all,
     * contiguous; else the holes, lowest first (a file that grows while holes shorter than a batch stay free is the
     * bloat this store exists to prevent); and what they cannot hold, from the file's end, grown by a batch.
     */
    private int grant(int want, List<Extent> granted) {
        for (Map.Entry<Long, Integer> run : free.entrySet()) {
            if (run.getValue() >= want) {
                long first = run.getKey();
                int left = run.getValue() - want;
                free.remove(first);
                if (left > 0) {
                    free.put(first + want, left);
                }
                freePages -= want;
                hand(granted, first, want);
                return want;
            }
        }
        int got = 0;
        for (Map.Entry<Long, Integer> hole = free.firstEntry(); hole != null && got < want
                && hole.getKey() + hole.getValue() < highWaterMark; hole = free.firstEntry()) {
            int take = Math.min(hole.getValue(), want - got);
            free.remove(hole.getKey());
            if (hole.getValue() > take) {
                free.put(hole.getKey() + take, hole.getValue() - take);
            }
            freePages -= take;
            hand(granted, hole.getKey(), take);
            got += take;
        }
        if (got > 0) {
            return got; // the caller asks again for the rest, if any
        }
        // Only the end is left: take the pages there and grow the file by a batch. A free run that touches the end is
        // used first so growth does not leave holes.
        Map.Entry<Long, Integer> last = free.lastEntry();
        long first = highWaterMark;
        if (last != null && last.getKey() + last.getValue() == highWaterMark) {
            first = last.getKey();
            free.remove(first);
            freePages -= last.getValue();
        }
        long needEnd = first + want;
        long growBy = Math.max(needEnd - highWaterMark, 0);
        long grownEnd = highWaterMark + roundUp(growBy, batchSize);
        if (grownEnd > needEnd) {
            free.put(needEnd, (int) (grownEnd - needEnd));
            freePages += grownEnd - needEnd;
        }
        if (grownEnd > highWaterMark) {
            highWaterMark = grownEnd;
            growth.accept(grownEnd); // before the pages are handed out: no writer has one of them yet
        }
        hand(granted, first, want);
        return want;
    }

    /** Under the latch: adds a grant, and spoils a shrink's plan if the grant reaches into the pages it means to cut. */
    private void hand(List<Extent> granted, long first, int count) {
        if (first + count > cutPlannedFrom) {
            cutPlanSpoiled = true;
        }
        granted.add(new Extent(first, count));
    }

    private static long roundUp(long n, int unit) {
        return (n + unit - 1) / unit * unit;
    }

    @Override
    public void release(Collection<Extent> extents) {
        lockLatch();
        try {
            for (Extent e : extents) {
                insertFree(e.firstPage(), e.pageCount());
            }
        } finally {
            latch.unlock();
        }
    }

    private void insertFree(long first, int count) {
        long end = first + count;
        Map.Entry<Long, Integer> before = free.floorEntry(first);
        if (before != null && before.getKey() + before.getValue() > first) {
            throw new IllegalStateException("double free: pages " + first + "+" + count + " overlap free run " + before.getKey() + "+" + before.getValue());
        }
        Map.Entry<Long, Integer> after = free.ceilingEntry(first);
        if (after != null && after.getKey() < end) {
            throw new IllegalStateException("double free: pages " + first + "+" + count + " overlap free run " + after.getKey() + "+" + after.getValue());
        }
        freePages += count;
        long newFirst = first;
        long newEnd = end;
        if (before != null && before.getKey() + before.getValue() == first) {
            newFirst = before.getKey();
            free.remove(before.getKey());
        }
        if (after != null && after.getKey() == end) {
            newEnd = after.getKey() + after.getValue();
            free.remove(after.getKey());
        }
        // runs longer than an int are split; in practice runs are far shorter
        while (newEnd - newFirst > Integer.MAX_VALUE) {
            free.put(newFirst, Integer.MAX_VALUE);
            newFirst += Integer.MAX_VALUE;
        }
        free.put(newFirst, (int) (newEnd - newFirst));
    }

    @Override
    public long shrinkTail(long minPages, int slack, FreesDurable durable, TailCut cut) throws IOException {
        long cutFrom;
        lockLatch();
        try {
            if (cutPlannedFrom != NO_CUT) {
                return 0; // another shrink is under way
            }
            long tailStart = freeTailStart();
            cutFrom = tailStart + slack;
            if (highWaterMark - tailStart < minPages || cutFrom >= highWaterMark) {
                return 0;
            }
            cutPlannedFrom = cutFrom;
            cutPlanSpoiled = false;
        } finally {
            latch.unlock();
        }
        // Outside the latch: the fsync that makes the planned pages' frees durable would otherwise stall every
        // writer's grant behind it. Those pages were all free when planned, so their frees are covered.
        try {
            durable.run();
        } catch (Throwable t) {
            forgetPlan();
            throw t;
        }
        lockLatch();
        try {
            cutPlannedFrom = NO_CUT;
            if (cutPlanSpoiled) {
                return 0; // a grant reached the plan; the next flush plans again
            }
            // No grant since the plan: every page from it to the (unmoved) end has been free since before the sync.
            // Cut first, then forget the pages: if the cut fails they are still free here, and a file
            // shorter than the high-water mark is allowed (free pages may lie past its end).
            cut.cutTo(cutFrom);
            long given = highWaterMark - cutFrom;
            // the run that holds the cut's first page may have grown down since the plan (pages freed below it)
            Map.Entry<Long, Integer> straddling = free.lowerEntry(cutFrom);
            free.tailMap(cutFrom, true).clear();
            if (straddling != null && straddling.getKey() + straddling.getValue() > cutFrom) {
                free.put(straddling.getKey(), (int) (cutFrom - straddling.getKey()));
            }
            freePages -= given;
            highWaterMark = cutFrom;
            metrics.shrunk(given);
            return given;
        } finally {
            latch.unlock();
        }
    }

    private void forgetPlan() {
        lockLatch();
        try {
            cutPlannedFrom = NO_CUT;
        } finally {
            latch.unlock();
        }
    }

    /** Under the latch: the first page of the free run that ends at the high-water mark (one entry unless longer than an int). */
    private long freeTailStart() {
        long tailStart = highWaterMark;
        for (Map.Entry<Long, Integer> run = free.lastEntry(); run != null && run.getKey() + run.getValue() == tailStart;
             run = free.lowerEntry(run.getKey())) {
            tailStart = run.getKey();
        }
        return tailStart;
    }

    private void lockLatch() {
        if (latch.tryLock()) {
            metrics.latchAcquired("allocator", 0);
            return;
        }
        long start = System.nanoTime();
        latch.lock();
        metrics.latchAcquired("allocator", System.nanoTime() - start);
    }

    @Override
    public long highWaterMark() {
        lockLatch();
        try {
            return highWaterMark;
        } finally {
            latch.unlock();
        }
    }

    @Override
    public long freePages() {
        return freePages;
    }

    @Override
    public List<Extent> freeExtents() {
        lockLatch();
        try {
            List<Extent> out = new ArrayList<>(free.size());
            free.forEach((first, count) -> out.add(new Extent(first, count)));
            return out;
        } finally {
            latch.unlock();
        }
    }
}
