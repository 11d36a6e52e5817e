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
