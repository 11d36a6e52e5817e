package io.lobstream.store.allocator;

import io.lobstream.store.StoreMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.Deque;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/** Shrinking the free tail, alone and against concurrent grants; grants below a page for compaction. */
class DefaultPageAllocatorTest {

    private static DefaultPageAllocator allocator(long highWaterMark, List<Extent> free) {
        return new DefaultPageAllocator(true, 8, highWaterMark, free, StoreMetrics.unregistered("test"));
    }

    @Test
    void theFileGrowsABatchAtOnceWhenTheEndMovesOut() {
        List<Long> ends = new ArrayList<>();
        // pages 0-9 used, 10-11 free (a hole), 12-15 used
        DefaultPageAllocator a = new DefaultPageAllocator(true, 8, 16, List.of(new Extent(10, 2)), StoreMetrics.unregistered("test"),
                ends::add);
        assertThat(a.allocate(2)).containsExactly(new Extent(10, 2));
        assertThat(ends).as("a hole: the end stays").isEmpty();
        assertThat(a.allocate(3)).containsExactly(new Extent(16, 3));
        assertThat(ends).as("grown by a whole batch, once").containsExactly(24L);
        assertThat(a.allocate(5)).containsExactly(new Extent(19, 5));
        assertThat(ends).as("the rest of the batch: no growth").containsExactly(24L);
        assertThat(a.allocate(9)).containsExactly(new Extent(24, 9));
        assertThat(ends).as("a batch per latch acquisition").containsExactly(24L, 32L, 40L);

        List<Long> pageByPage = new ArrayList<>();
        DefaultPageAllocator off = new DefaultPageAllocator(false, 8, 0, List.of(), StoreMetrics.unregistered("test"), pageByPage::add);
        off.allocate(3);
        assertThat(pageByPage).containsExactly(1L, 2L, 3L);
    }

    @Test
    void latchAcquisitionsAreCountedNotTheHolesTheyFill() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        // pages 0-9 used, 10 free, 11-19 used, 20 free, 21-99 used
        DefaultPageAllocator a = new DefaultPageAllocator(true, 8, 100, List.of(new Extent(10, 1), new Extent(20, 1)),
                new StoreMetrics(registry, "t"));
        assertThat(a.allocate(2)).containsExactly(new Extent(10, 1), new Extent(20, 1));
        assertThat(registry.get("lob_allocator_latch_acquisitions").counter().count()).as("one acquisition, two holes").isEqualTo(1);
        assertThat(a.allocate(9)).containsExactly(new Extent(100, 9));
        assertThat(registry.get("lob_allocator_latch_acquisitions").counter().count()).as("a batch of 8, then 1").isEqualTo(3);
        assertThat(registry.get("lob_allocator_pages").counter().count()).isEqualTo(11);
    }

    /** With lob.prealloc off, a compaction's move takes its pages one per latch acquisition too, as every other grant. */
    @Test
    void allocateBelowWithPreallocOffTakesAPagePerAcquisition() {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        DefaultPageAllocator off = new DefaultPageAllocator(false, 8, 40, List.of(new Extent(10, 3), new Extent(20, 5), new Extent(30, 10)),
                new StoreMetrics(registry, "t"));
        assertThat(off.allocateBelow(9, 25)).as("only 8 pages free below 25: nothing granted").isEmpty();
        assertThat(off.freeExtents()).as("what was taken on the way went back")
                .containsExactly(new Extent(10, 3), new Extent(20, 5), new Extent(30, 10));
        assertThat(off.allocateBelow(6, 25)).containsExactly(new Extent(10, 3), new Extent(20, 3));
        assertThat(registry.get("lob_allocator_latch_acquisitions").counter().count()).as("one per page").isEqualTo(6);
        assertThat(registry.get("lob_allocator_pages").counter().count()).isEqualTo(6);
        assertThat(off.highWaterMark()).isEqualTo(40);
    }

    @Test
    void allocateBelowTakesTheLowestHolesAndNeverGrowsTheFile() {
        // pages 0-9 used, 10-12 free, 13-19 used, 20-24 free, 25-29 used, 30-39 free (the tail)
        DefaultPageAllocator a = allocator(40, List.of(new Extent(10, 3), new Extent(20, 5), new Extent(30, 10)));
        assertThat(a.holePages()).as("the free tail is not a hole").isEqualTo(8);
        assertThat(a.allocateBelow(9, 25)).as("only 8 pages free below 25: nothing granted").isEmpty();
        assertThat(a.freePages()).isEqualTo(18);
        assertThat(a.allocateBelow(6, 25)).containsExactly(new Extent(10, 3), new Extent(20, 3));
        assertThat(a.freeExtents()).containsExactly(new Extent(23, 2), new Extent(30, 10));
        assertThat(a.allocateBelow(3, 31)).as("a run that crosses the limit is cut at it")
                .containsExactly(new Extent(23, 2), new Extent(30, 1));
        assertThat(a.highWaterMark()).isEqualTo(40);
        assertThat(a.holePages()).isZero();
        assertThat(a.freePages()).isEqualTo(9);
    }

    @Test
    void shrinkTailGivesBackTheFreeRunAtTheEndButTheSlack() throws IOException {
        // pages 0-9 used, 10-19 free, 20-29 used, 30-99 free
        DefaultPageAllocator a = allocator(100, List.of(new Extent(10, 10), new Extent(30, 70)));
        List<Long> cuts = new ArrayList<>();
        assertThat(a.shrinkTail(71, 8, () -> { }, cuts::add)).as("free tail shorter than minPages").isZero();
        assertThat(a.shrinkTail(70, 8, () -> { }, cuts::add)).isEqualTo(62);
        assertThat(cuts).containsExactly(38L);
        assertThat(a.highWaterMark()).isEqualTo(38);
        assertThat(a.freeExtents()).containsExactly(new Extent(10, 10), new Extent(30, 8));
        assertThat(a.freePages()).isEqualTo(18);
        assertThat(a.shrinkTail(1, 8, () -> { }, cuts::add)).as("only the slack is left").isZero();
        assertThat(cuts).hasSize(1);

        // the slack serves the next grant at the end; then the hole left below, then the file grows from the cut
        assertThat(a.allocate(8)).containsExactly(new Extent(10, 8));
        assertThat(a.allocate(8)).containsExactly(new Extent(30, 8));
        assertThat(a.allocate(8)).containsExactly(new Extent(18, 2), new Extent(38, 6));
        assertThat(a.highWaterMark()).isEqualTo(46);
    }

    /** Holes shorter than a batch (roots and tails freed by purge) are filled before the file grows, lowest first. */
    @Test
    void holesShorterThanABatchAreFilledBeforeTheFileGrows() {
        // pages 0-39 used but holes 5-7, 12-13 and 30; the file ends at 40
        DefaultPageAllocator a = allocator(40, List.of(new Extent(5, 3), new Extent(12, 2), new Extent(30, 1)));
        assertThat(a.allocate(20)).containsExactly(new Extent(5, 3), new Extent(12, 2), new Extent(30, 1), new Extent(40, 14));
        assertThat(a.holePages()).isZero();
        assertThat(a.highWaterMark()).isEqualTo(56);
        assertThat(a.freeExtents()).containsExactly(new Extent(54, 2));

        // a hole longer than what is still wanted gives only that: the rest of it stays free
        DefaultPageAllocator b = allocator(40, List.of(new Extent(5, 5), new Extent(12, 5)));
        assertThat(b.allocate(8)).containsExactly(new Extent(5, 5), new Extent(12, 3));
        assertThat(b.freeExtents()).containsExactly(new Extent(15, 2));
        assertThat(b.freePages()).isEqualTo(2);
        assertThat(b.highWaterMark()).isEqualTo(40);
    }

    @Test
    void aWhollyFreeTablespaceShrinksToItsSlackOrToNothing() throws IOException {
        DefaultPageAllocator a = allocator(100, List.of(new Extent(0, 100)));
        assertThat(a.shrinkTail(16, 8, () -> { }, pages -> { })).isEqualTo(92);
        assertThat(a.freeExtents()).containsExactly(new Extent(0, 8));
        assertThat(a.shrinkTail(1, 0, () -> { }, pages -> { })).isEqualTo(8);
        assertThat(a.highWaterMark()).isZero();
        assertThat(a.freeExtents()).isEmpty();
        assertThat(a.freePages()).isZero();
    }

    @Test
    void aFailedCutLeavesTheAllocatorAsItWas() {
        DefaultPageAllocator a = allocator(100, List.of(new Extent(50, 50)));
        assertThatThrownBy(() -> a.shrinkTail(1, 8, () -> { }, pages -> {
            throw new IOException("disk gone");
        })).hasMessage("disk gone");
        assertThat(a.highWaterMark()).isEqualTo(100);
        assertThat(a.freeExtents()).containsExactly(new Extent(50, 50));
        assertThat(a.freePages()).isEqualTo(50);
    }

    /**
     * The sync before a cut runs outside the latch (a grant from another thread gets through it). A grant that reaches
     * the planned pages meanwhile abandons the cut, even if they are free again by the time the latch is back (their frees
     * were not covered by the sync); a grant of the slack alone does not; a failed sync leaves nothing planned.
     */
    @Test
    void aGrantIntoThePlannedPagesDuringTheSyncAbandonsTheCut() throws IOException {
        DefaultPageAllocator a = allocator(100, List.of(new Extent(36, 64)));
        List<Long> cuts = new ArrayList<>();
        assertThat(a.shrinkTail(1, 4, elsewhere(() -> a.release(a.allocate(8))), cuts::add))
                .as("pages 36-43 granted across the planned cut at 40, and freed again, during the sync").isZero();
        assertThat(cuts).isEmpty();
        assertThat(a.highWaterMark()).isEqualTo(100);
        assertThat(a.freeExtents()).containsExactly(new Extent(36, 64));

        assertThat(a.shrinkTail(1, 8, elsewhere(() -> a.allocate(8)), cuts::add)).as("a grant of the slack, 36-43").isEqualTo(56);
        assertThat(cuts).containsExactly(44L);
        assertThat(a.freeExtents()).isEmpty();
        assertThat(a.highWaterMark()).isEqualTo(44);

        a.release(List.of(new Extent(40, 4)));
        assertThatThrownBy(() -> a.shrinkTail(1, 0, () -> {
            throw new IOException("sync failed");
        }, cuts::add)).hasMessage("sync failed");
        assertThat(a.freeExtents()).containsExactly(new Extent(40, 4));
        assertThat(a.shrinkTail(1, 0, () -> { }, cuts::add)).as("no plan left behind: the next shrink cuts").isEqualTo(4);
        assertThat(cuts).containsExactly(44L, 40L);
    }

    /** Pages freed just below the free tail during the sync join its run: the cut shortens that run, the rest stays free. */
    @Test
    void pagesFreedBelowTheTailDuringTheSyncStayFree() throws IOException {
        // pages 0-9 used, 10-19 free, 20-29 used, 30-99 free
        DefaultPageAllocator a = allocator(100, List.of(new Extent(10, 10), new Extent(30, 70)));
        List<Long> cuts = new ArrayList<>();
        assertThat(a.shrinkTail(1, 8, elsewhere(() -> a.release(List.of(new Extent(25, 5)))), cuts::add)).isEqualTo(62);
        assertThat(cuts).containsExactly(38L);
        assertThat(a.freeExtents()).containsExactly(new Extent(10, 10), new Extent(25, 13));
        assertThat(a.freePages()).isEqualTo(23);
        assertThat(a.highWaterMark()).isEqualTo(38);
    }

    /** The sync step run on another thread, as a concurrent writer's grant would be: it waits if the latch is held. */
    private static PageAllocator.FreesDurable elsewhere(Runnable grants) {
        return () -> {
            try {
                java.util.concurrent.CompletableFuture.runAsync(grants).get(10, java.util.concurrent.TimeUnit.SECONDS);
            } catch (java.util.concurrent.TimeoutException e) {
                throw new AssertionError("the allocator latch is held through the sync", e);
            } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
                throw new AssertionError(e);
            }
        };
    }

    /**
     * Writers allocate and release while another thread shrinks as often as it can. No page may
     * be granted twice, and no granted page may ever lie at or past a cut: the cut is checked,
     * under the allocator latch, against every grant its holder has registered, and every holder
     * checks its grants against the high-water mark.
     */
    @Test
    void noGrantEverLiesInACutRegion() throws Exception {
        DefaultPageAllocator a = allocator(0, List.of());
        BitSet granted = new BitSet();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong cuts = new AtomicLong();
        ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            long seed = t;
            threads.add(new Thread(() -> {
                SplittableRandom rnd = new SplittableRandom(seed);
                Deque<Extent> mine = new ArrayDeque<>();
                while (!stop.get()) {
                    for (Extent e : a.allocate(1 + rnd.nextInt(40))) {
                        synchronized (granted) {
                            if (granted.nextSetBit((int) e.firstPage()) != -1
                                    && granted.nextSetBit((int) e.firstPage()) < e.endPage()) {
                                failures.add("granted twice: " + e);
                            }
                            granted.set((int) e.firstPage(), (int) e.endPage());
                        }
                        mine.add(e);
                    }
                    long hwm = a.highWaterMark();
                    mine.stream().filter(e -> e.endPage() > hwm).forEach(e -> failures.add(e + " past the high-water mark " + hwm));
                    // release the oldest grants, now and then all of them, so the end of the space empties
                    int keep = rnd.nextInt(10) == 0 ? 0 : rnd.nextInt(20);
                    List<Extent> out = new ArrayList<>();
                    while (mine.size() > keep) {
                        out.add(mine.poll());
                    }
                    giveBack(a, granted, out);
                }
                giveBack(a, granted, mine);
            }, "writer-" + t));
        }
        threads.add(new Thread(() -> {
            while (!stop.get()) {
                try {
                    a.shrinkTail(1, 8, () -> { }, pages -> {
                        synchronized (granted) {
                            if (granted.length() > pages) {
                                failures.add("cut to " + pages + " pages but page " + (granted.length() - 1) + " is granted");
                            }
                        }
                        cuts.incrementAndGet();
                    });
                } catch (IOException e) {
                    failures.add(e.toString());
                }
            }
        }, "shrinker"));
        threads.forEach(Thread::start);
        // 1.5 s of contention, and on a slow machine until the shrinker has cut at least once
        await().pollDelay(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(60)).until(() -> cuts.get() > 0);
        stop.set(true);
        for (Thread t : threads) {
            t.join(30_000);
        }
        assertThat(failures).isEmpty();
        assertThat(cuts.get()).isPositive();
        // everything released: the whole space is one free run, and it can all be given back
        long hwm = a.highWaterMark();
        assertThat(a.freePages()).isEqualTo(hwm);
        assertThat(a.shrinkTail(1, 0, () -> { }, pages -> { })).isEqualTo(hwm);
        assertThat(a.highWaterMark()).isZero();
    }

    /** Unmarks the pages, then releases them: once released they may be granted to another thread at once. */
    private static void giveBack(DefaultPageAllocator a, BitSet granted, java.util.Collection<Extent> extents) {
        synchronized (granted) {
            extents.forEach(e -> granted.clear((int) e.firstPage(), (int) e.endPage()));
        }
        a.release(extents);
    }
}
