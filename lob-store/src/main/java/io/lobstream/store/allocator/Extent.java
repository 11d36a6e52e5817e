package io.lobstream.store.allocator;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/** A run of contiguous pages: {@code [firstPage, firstPage + pageCount)}. */
public record Extent(long firstPage, int pageCount) {
    public Extent {
        if (firstPage < 0 || pageCount <= 0) {
            throw new IllegalArgumentException("bad extent " + firstPage + "+" + pageCount);
        }
    }

    public long endPage() {
        return firstPage + pageCount;
    }

    public boolean contains(long pageNo) {
        return pageNo >= firstPage && pageNo < endPage();
    }

    /** Sorts and merges adjacent runs; fails if two runs overlap (a page counted twice). */
    public static List<Extent> coalesce(Collection<Extent> extents) {
        List<Extent> sorted = new ArrayList<>(extents);
        sorted.sort(Comparator.comparingLong(Extent::firstPage));
        List<Extent> out = new ArrayList<>();
        Extent cur = null;
        for (Extent e : sorted) {
            if (cur == null) {
                cur = e;
            } else if (e.firstPage() < cur.endPage()) {
                throw new IllegalArgumentException("extents overlap: " + cur + " and " + e);
            } else if (e.firstPage() == cur.endPage() && (long) cur.pageCount() + e.pageCount() <= Integer.MAX_VALUE) {
                cur = new Extent(cur.firstPage(), cur.pageCount() + e.pageCount());
            } else {
                out.add(cur);
                cur = e;
            }
        }
        if (cur != null) {
            out.add(cur);
        }
        return out;
    }

    /** The runs of {@code [0, end)} not covered by {@code used} (which must not overlap). */
    public static List<Extent> gaps(Collection<Extent> used, long end) {
        List<Extent> out = new ArrayList<>();
        long at = 0;
        for (Extent e : coalesce(used)) {
            if (e.firstPage() > at) {
                addRun(out, at, Math.min(e.firstPage(), end));
            }
            at = Math.max(at, e.endPage());
        }
        if (at < end) {
            addRun(out, at, end);
        }
        return out;
    }

    /** Adds the pages {@code [from, to)} to {@code out}, in extents of at most {@link Integer#MAX_VALUE} pages. */
    public static void addRun(List<Extent> out, long from, long to) {
        while (to - from > Integer.MAX_VALUE) {
            out.add(new Extent(from, Integer.MAX_VALUE));
            from += Integer.MAX_VALUE;
        }
        if (to > from) {
            out.add(new Extent(from, (int) (to - from)));
        }
    }

    /** The pages of {@code from} not in {@code remove}, coalesced; {@code remove} must lie within {@code from}. */
    public static List<Extent> subtract(Collection<Extent> from, Collection<Extent> remove) {
        List<Extent> out = new ArrayList<>();
        List<Extent> cut = coalesce(remove);
        int j = 0;
        for (Extent e : coalesce(from)) {
            long at = e.firstPage();
            while (j < cut.size() && cut.get(j).firstPage() < e.endPage()) {
                Extent c = cut.get(j);
                if (c.firstPage() < at || c.endPage() > e.endPage()) {
                    throw new IllegalArgumentException("pages " + c + " are not within " + e);
                }
                addRun(out, at, c.firstPage());
                at = c.endPage();
                j++;
            }
            addRun(out, at, e.endPage());
        }
        if (j != cut.size()) {
            throw new IllegalArgumentException("pages " + cut.get(j) + " are not within " + from);
        }
        return coalesce(out);
    }

    /** The pages in both {@code a} and {@code b}, coalesced. */
    public static List<Extent> intersect(Collection<Extent> a, Collection<Extent> b) {
        List<Extent> out = new ArrayList<>();
        List<Extent> x = coalesce(a);
        List<Extent> y = coalesce(b);
        for (int i = 0, j = 0; i < x.size() && j < y.size(); ) {
            addRun(out, Math.max(x.get(i).firstPage(), y.get(j).firstPage()), Math.min(x.get(i).endPage(), y.get(j).endPage()));
            if (x.get(i).endPage() < y.get(j).endPage()) {
                i++;
            } else {
                j++;
            }
        }
        return out;
    }

    /**
     * Appends page {@code pageNo} to {@code runs} in value order (not sorted): it extends the last
     * run if it directly follows it.
     */
    public static void appendInOrder(List<Extent> runs, long pageNo) {
        int last = runs.size() - 1;
        if (last >= 0 && runs.get(last).endPage() == pageNo && runs.get(last).pageCount() < Integer.MAX_VALUE) {
            runs.set(last, new Extent(runs.get(last).firstPage(), runs.get(last).pageCount() + 1));
        } else {
            runs.add(new Extent(pageNo, 1));
        }
    }

    /** The pages of {@code pages} after its first one (a version's root; the rest are its data pages). */
    public static List<Extent> withoutFirstPage(List<Extent> pages) {
        List<Extent> out = new ArrayList<>(pages.size());
        Extent first = pages.get(0);
        if (first.pageCount() > 1) {
            out.add(new Extent(first.firstPage() + 1, first.pageCount() - 1));
        }
        out.addAll(pages.subList(1, pages.size()));
        return out;
    }

    /** Hands out the pages of a list of extents one at a time, in list order. */
    public static final class Cursor {
        private final List<Extent> extents;
        private int extent;
        private long page = -1;

        public Cursor(List<Extent> extents) {
            this.extents = extents;
        }

        /**
         * A cursor whose first {@link #next()} is the {@code index}-th page of {@code extents}: found once, where
         * {@link #pageAt} per page walks the extents from the start every time (a fragmented GiB value has tens of
         * thousands of them, and as many pages per extent walked).
         */
        public static Cursor at(List<Extent> extents, long index) {
            Cursor c = new Cursor(extents);
            long left = index;
            for (int i = 0; i < extents.size(); i++) {
                Extent e = extents.get(i);
                if (left < e.pageCount()) {
                    c.extent = i;
                    c.page = e.firstPage() + left;
                    return c;
                }
                left -= e.pageCount();
            }
            throw new IndexOutOfBoundsException("page " + index + " of " + totalPages(extents));
        }

        /** The next page; past the last one, {@link IndexOutOfBoundsException}. */
        public long next() {
            if (page < 0 || page >= extents.get(extent).endPage()) {
                if (page >= 0) {
                    extent++;
                }
                page = extents.get(extent).firstPage();
            }
            return page++;
        }
    }

    /** The page number of the {@code index}-th page of {@code extents}, counted across them in order. */
    public static long pageAt(List<Extent> extents, long index) {
        long left = index;
        for (Extent e : extents) {
            if (left < e.pageCount()) {
                return e.firstPage() + left;
            }
            left -= e.pageCount();
        }
        throw new IndexOutOfBoundsException("page " + index + " of " + totalPages(extents));
    }

    public static long totalPages(Collection<Extent> extents) {
        long n = 0;
        for (Extent e : extents) {
            n += e.pageCount();
        }
        return n;
    }

    @Override
    public String toString() {
        return firstPage + "+" + pageCount;
    }
}
