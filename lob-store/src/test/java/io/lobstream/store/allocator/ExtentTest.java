package io.lobstream.store.allocator;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/** The run arithmetic agrees with the same sets of pages, page by page. */
class ExtentTest {
    @Property
    void intersectHoldsThePagesInBoth(@ForAll @Size(max = 40) List<@IntRange(max = 200) Integer> a,
                                      @ForAll @Size(max = 40) List<@IntRange(max = 200) Integer> b) {
        Set<Long> both = new TreeSet<>(pages(runs(a)));
        both.retainAll(pages(runs(b)));
        List<Extent> got = Extent.intersect(runs(a), runs(b));
        assertThat(pages(got)).containsExactlyElementsOf(both);
        assertThat(got).isEqualTo(Extent.coalesce(got));
    }

    /** A cursor set at a page gives, from there, what pageAt gives page by page, across the extents' ends. */
    @Property
    void aCursorAtAPageWalksAsPageAtCounts(@ForAll @Size(min = 1, max = 20) List<@IntRange(min = 1, max = 5) Integer> counts,
                                           @ForAll @IntRange(max = 99) int start) {
        List<Extent> extents = new ArrayList<>();
        long first = 1000;
        for (int n : counts) {
            extents.add(new Extent(first, n));
            first -= 10; // not adjacent, and in no order
        }
        long total = Extent.totalPages(extents);
        long from = start % total;
        Extent.Cursor cursor = Extent.Cursor.at(extents, from);
        for (long i = from; i < total; i++) {
            assertThat(cursor.next()).isEqualTo(Extent.pageAt(extents, i));
        }
    }

    /** The pages given as runs, in the value order a version lists them (runs of adjacent pages, not sorted). */
    private static List<Extent> runs(List<Integer> pages) {
        List<Extent> runs = new ArrayList<>();
        for (int p : new TreeSet<>(pages).descendingSet()) {
            runs.add(new Extent(p, 1));
        }
        return runs;
    }

    private static List<Long> pages(List<Extent> runs) {
        Set<Long> pages = new TreeSet<>();
        for (Extent e : runs) {
            for (long p = e.firstPage(); p < e.endPage(); p++) {
                pages.add(p);
            }
        }
        return new ArrayList<>(pages);
    }
}
