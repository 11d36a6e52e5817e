package io.lobstream.store.layout;

import io.lobstream.store.page.PageCodec;

/**
 * How a value of a given length is laid out in pages of a given size:
 * {@code n} DATA pages hold the first bytes (each full but the last, which may be partial), the
 * root page holds the rest inline (the tail) after its page references. Small values live wholly
 * in the root. References are extents (first page, count), so a value allocated in contiguous
 * batches needs very few; when they do not fit in the root, INDEX pages hold them and the root
 * references the index pages.
 *
 * <p>The tail is sized for the worst case of one extent per page, so the plan never depends on
 * how fragmented free space turns out to be.
 */
public record VersionLayout(int pageSize, long byteLength, int dataPages, int tailLength, boolean indexed) {
    /** Root payload before its extents: length, crc, flags, data pages, index pages, extents in root, tail length. */
    public static final int ROOT_META = 8 + 4 + 4 + 4 + 4 + 4 + 4;
    public static final int EXTENT_SIZE = 12;
    /** Index payload before its extents: extent count. */
    public static final int INDEX_META = 4;

    public static VersionLayout plan(int pageSize, long byteLength) {
        int rootRoom = PageCodec.payloadCapacity(pageSize) - ROOT_META;
        int dataCap = PageCodec.payloadCapacity(pageSize);
        if (byteLength <= rootRoom) {
            return new VersionLayout(pageSize, byteLength, 0, (int) byteLength, false);
        }
        long full = byteLength / dataCap;
        long tail = byteLength - full * dataCap;
        long refs = worstCaseRootExtents(pageSize, full);
        if (tail > rootRoom - refs * EXTENT_SIZE) {
            // the tail does not fit beside the references: it becomes a partial last data page
            full += 1;
            tail = 0;
            refs = worstCaseRootExtents(pageSize, full);
        }
        if (refs * EXTENT_SIZE > rootRoom || full > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a value of " + byteLength + " bytes does not fit the page layout of "
                    + pageSize + "-byte pages; use a larger lob.page.size");
        }
        boolean indexed = full > rootRoom / EXTENT_SIZE;
        return new VersionLayout(pageSize, byteLength, (int) full, (int) tail, indexed);
    }

    /**
     * The layout of a value written in chunks: every byte in DATA pages (the last one partial), none
     * inline, so each chunk goes straight to its pages and nothing waits in memory for the root.
     */
    public static VersionLayout planStreamed(int pageSize, long byteLength) {
        int dataCap = PageCodec.payloadCapacity(pageSize);
        long pages = (byteLength + dataCap - 1) / dataCap;
        int rootRoom = PageCodec.payloadCapacity(pageSize) - ROOT_META;
        if (worstCaseRootExtents(pageSize, pages) * EXTENT_SIZE > rootRoom || pages > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("a value of " + byteLength + " bytes does not fit the page layout of "
                    + pageSize + "-byte pages; use a larger lob.page.size");
        }
        return new VersionLayout(pageSize, byteLength, (int) pages, 0, pages > rootRoom / EXTENT_SIZE);
    }

    /**
     * The longest value a tablespace of {@code pageSize}-byte pages holds: as many full data pages as
     * the root can reference through index pages when each page is an extent of its own (the worst
     * case the plans are sized for). {@link #plan} and {@link #planStreamed} lay out every value up to
     * this length; {@link #planStreamed} no longer one.
     */
    public static long layoutMaxBytes(int pageSize) {
        int rootRoom = PageCodec.payloadCapacity(pageSize) - ROOT_META;
        long pages = Math.min((long) (rootRoom / EXTENT_SIZE) * extentsPerIndexPage(pageSize), Integer.MAX_VALUE);
        return pages * PageCodec.payloadCapacity(pageSize);
    }

    /** The layout a written version has, from its root page. */
    public static VersionLayout of(int pageSize, RootPage root) {
        return new VersionLayout(pageSize, root.byteLength(), root.dataPages(), root.tail().remaining(), root.indexPages() > 0);
    }

    private static long worstCaseRootExtents(int pageSize, long dataPages) {
        int rootRoom = PageCodec.payloadCapacity(pageSize) - ROOT_META;
        if (dataPages <= rootRoom / EXTENT_SIZE) {
            return dataPages;
        }
        return indexPagesFor(pageSize, dataPages);
    }

    /** Index pages needed to hold {@code extents} extents. */
    public static long indexPagesFor(int pageSize, long extents) {
        long perPage = extentsPerIndexPage(pageSize);
        return (extents + perPage - 1) / perPage;
    }

    public static int extentsPerIndexPage(int pageSize) {
        return (PageCodec.payloadCapacity(pageSize) - INDEX_META) / EXTENT_SIZE;
    }

    public int dataCapacity() {
        return PageCodec.payloadCapacity(pageSize);
    }

    /** Bytes in data page {@code i} (0-based): all full but possibly the last. */
    public int bytesInDataPage(int i) {
        return (int) Math.min(dataCapacity(), dataBytes() - (long) i * dataCapacity());
    }

    /** Bytes held in DATA pages (everything but the root's tail). */
    public long dataBytes() {
        return byteLength - tailLength;
    }
}
