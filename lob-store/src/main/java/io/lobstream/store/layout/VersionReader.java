package io.lobstream.store.layout;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.page.CorruptPageException;
import io.lobstream.store.page.PageCodec;
import io.lobstream.store.page.PageHeader;
import io.lobstream.store.page.PageType;
import io.lobstream.store.tablespace.PageFile;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.function.LongUnaryOperator;

/**
 * Reads one version: its root page, its index pages, and then (on demand) its data as a stream.
 * Every page read is verified against the header the version wrote (type, LOB, version,
 * sequence) and its CRC, so a torn, stale or misdirected page is reported, never returned.
 * Pages of a written version are immutable until reclaimed, so reading takes no latch.
 */
public final class VersionReader {
    private final PageFile file;
    private final String lobId;
    private final long lobHash;
    private final long version;
    private final long rootPageNo;
    private final RootPage root;
    private final List<Extent> indexExtents;
    private final List<Extent> dataExtents;
    private final PageReadListener listener;
    /** how the value is laid out: the bytes each data page holds */
    private final VersionLayout layout;
    /** index of the first data page of each data extent, for random access by page index */
    private final int[] extentStarts;

    /** Told of every page read, by type: purge counts them. */
    public interface PageReadListener {
        PageReadListener NONE = type -> { };

        void pageRead(PageType type);
    }

    private VersionReader(PageFile file, String lobId, long version, long rootPageNo, RootPage root,
                          List<Extent> indexExtents, List<Extent> dataExtents, PageReadListener listener) {
        this.file = file;
        this.lobId = lobId;
        this.lobHash = PageCodec.lobIdHash(lobId);
        this.version = version;
        this.rootPageNo = rootPageNo;
        this.root = root;
        this.indexExtents = indexExtents;
        this.dataExtents = dataExtents;
        this.listener = listener;
        this.layout = VersionLayout.of(file.pageSize(), root);
        this.extentStarts = new int[dataExtents.size()];
        int start = 0;
        for (int i = 0; i < dataExtents.size(); i++) {
            extentStarts[i] = start;
            start += dataExtents.get(i).pageCount();
        }
    }

    /** Reads and verifies the root page and every index page of the version. */
    public static VersionReader open(PageFile file, String lobId, long version, long rootPageNo, PageReadListener listener)
            throws IOException {
        int pageSize = file.pageSize();
        long hash = PageCodec.lobIdHash(lobId);
        ByteBuffer page = ByteBuffer.allocate(pageSize);
        file.read(rootPageNo, page);
        listener.pageRead(PageType.ROOT);
        PageHeader h = PageCodec.verifyExpected(page, rootPageNo, PageType.ROOT, hash, version, 0);
        RootPage root = RootPage.decode(page, PageCodec.HEADER_SIZE, h.payloadLength(), rootPageNo);
        VersionLayout layout = VersionLayout.of(pageSize, root);
        if (layout.dataBytes() < 0 || (layout.dataBytes() + layout.dataCapacity() - 1) / layout.dataCapacity() != root.dataPages()) {
            throw new CorruptPageException(rootPageNo, "root says " + root.byteLength() + " bytes, " + root.tail().remaining()
                    + " of them inline, in " + root.dataPages() + " data pages");
        }
        List<Extent> indexExtents = List.of();
        List<Extent> dataExtents = root.extents();
        if (root.indexPages() > 0) {
            indexExtents = root.extents();
            dataExtents = new ArrayList<>();
            int seq = 1 + root.dataPages();
            for (Extent ie : indexExtents) {
                for (long p = ie.firstPage(); p < ie.endPage(); p++) {
                    file.read(p, page);
                    listener.pageRead(PageType.INDEX);
                    PageHeader ih = PageCodec.verifyExpected(page, p, PageType.INDEX, hash, version, seq++);
                    ByteBuffer payload = page.duplicate().position(PageCodec.HEADER_SIZE).limit(PageCodec.HEADER_SIZE + ih.payloadLength());
                    int count = payload.getInt();
                    if (count < 0 || (long) count * VersionLayout.EXTENT_SIZE != payload.remaining()) { // long: a count near 2^31 would wrap
                        throw new CorruptPageException(p, "index payload fields inconsistent");
                    }
                    dataExtents.addAll(RootPage.readExtents(payload, count, p));
                }
            }
        }
        if (Extent.totalPages(dataExtents) != root.dataPages()) {
            throw new CorruptPageException(rootPageNo, "root names " + root.dataPages() + " data pages but references "
                    + Extent.totalPages(dataExtents));
        }
        return new VersionReader(file, lobId, version, rootPageNo, root, indexExtents, List.copyOf(dataExtents), listener);
    }

    /**
     * This reader, if its root page says the value is {@code indexLength} bytes, as the index does. Read against the index's
     * length a short root would serve a clean 200 with the value cut, and a long one fail after the headers with no page named.
     */
    public VersionReader expectLength(long indexLength) throws CorruptPageException {
        if (byteLength() != indexLength) {
            throw new CorruptPageException(rootPageNo, "root says " + byteLength() + " bytes, index says " + indexLength);
        }
        return this;
    }

    public RootPage root() {
        return root;
    }

    public long byteLength() {
        return root.byteLength();
    }

    public List<Extent> dataExtents() {
        return dataExtents;
    }

    public List<Extent> indexExtents() {
        return indexExtents;
    }

    /** Every page the version owns, root, index and data, coalesced into runs. */
    public List<Extent> allPages() {
        List<Extent> all = new ArrayList<>(dataExtents.size() + indexExtents.size() + 1);
        all.add(new Extent(rootPageNo, 1));
        all.addAll(indexExtents);
        all.addAll(dataExtents);
        return Extent.coalesce(all);
    }

    /**
     * Reads every data page but those in {@code handedOver} and verifies its header and CRC without
     * keeping the bytes: what purge does with skip-load off, and fsck unless told not to read data. A pending version's
     * pages handed over to its successor (a partial update shares them) are the successor's to
     * check: once the successor is reclaimed they may hold anything.
     */
    public void verifyDataPages(List<Extent> handedOver) throws IOException {
        verifyDataPages(handedOver, pageNo -> 0);
    }

    /**
     * As {@link #verifyDataPages(List)}, where {@code writtenBy} names the version that wrote a page, when that is known
     * (0 when not): the page must carry exactly that version. A version that shares pages otherwise accepts any earlier
     * version of the LOB in a page, and so cannot tell a page it wrote from the older page a power loss left in its place.
     */
    public void verifyDataPages(List<Extent> handedOver, LongUnaryOperator writtenBy) throws IOException {
        ByteBuffer page = ByteBuffer.allocate(file.pageSize());
        List<Extent> skip = Extent.coalesce(handedOver);
        int index = 0;
        for (Extent e : dataExtents) {
            for (long p = e.firstPage(); p < e.endPage(); p++, index++) {
                if (contains(skip, p)) {
                    continue;
                }
                file.read(p, page);
                listener.pageRead(PageType.DATA);
                long writer = writtenBy.applyAsLong(p);
                PageCodec.verifyData(page, p, lobHash, writer > 0 ? writer : version, writer == 0 && !root.hasValueCrc(), index + 1,
                        layout.bytesInDataPage(index));
            }
        }
    }

    /**
     * Verifies the data pages a chunked upload in progress has written, those its first {@code bytesDone} bytes fill (the
     * page the last chunk left partial waits in the upload's entry), but those its first {@code bytesKnown} bytes filled
     * (known to be on disk): each of {@code version}, in its place. Returns how many it read.
     */
    public static int verifyUploadedPages(PageFile file, String lobId, long version, VersionLayout layout, List<Extent> dataExtents,
                                          long bytesKnown, long bytesDone) throws IOException {
        long hash = PageCodec.lobIdHash(lobId);
        int written = filledPages(layout, bytesDone);
        ByteBuffer page = ByteBuffer.allocate(file.pageSize());
        Extent.Cursor pages = new Extent.Cursor(dataExtents);
        int read = 0;
        for (int i = 0, known = filledPages(layout, bytesKnown); i < written; i++) {
            long p = pages.next();
            if (i >= known) {
                file.read(p, page);
                PageCodec.verifyData(page, p, hash, version, false, i + 1, layout.bytesInDataPage(i));
                read++;
            }
        }
        return read;
    }

    /** The data pages the value's first {@code bytes} bytes fill whole. */
    private static int filledPages(VersionLayout layout, long bytes) {
        return bytes >= layout.dataBytes() ? layout.dataPages() : (int) (bytes / layout.dataCapacity());
    }

    /**
     * Whether {@code pageNo} is in {@code runs}, sorted and apart (coalesced): a binary search, as a large value's old
     * version hands over tens of thousands of runs to a partial update, each data page asked about.
     */
    private static boolean contains(List<Extent> runs, long pageNo) {
        int lo = 0;
        int hi = runs.size() - 1;
        while (lo <= hi) {
            int mid = (lo + hi) >>> 1;
            Extent e = runs.get(mid);
            if (pageNo < e.firstPage()) {
                hi = mid - 1;
            } else if (pageNo >= e.endPage()) {
                lo = mid + 1;
            } else {
                return true;
            }
        }
        return false;
    }

    /** This reader, telling {@code other} instead of its listener of the pages it reads from now on. */
    public VersionReader withListener(PageReadListener other) {
        return new VersionReader(file, lobId, version, rootPageNo, root, indexExtents, dataExtents, other);
    }

    /** Streams bytes {@code [from, to)} of the value. */
    public InputStream stream(long from, long to) {
        if (from < 0 || to > root.byteLength() || from > to) {
            throw new IndexOutOfBoundsException("range " + from + "-" + to + " of a " + root.byteLength() + "-byte value");
        }
        return new ValueStream(from, to);
    }

    /** The value's bytes, page by page: a value is never buffered whole. */
    private final class ValueStream extends BulkInputStream {
        private final int dataCap = PageCodec.payloadCapacity(file.pageSize());
        private final long dataBytes = layout.dataBytes();
        private final ByteBuffer page = ByteBuffer.allocate(file.pageSize());
        private long pos;
        private final long end;
        /** bytes of the current page (or tail) still to hand out */
        private ByteBuffer window = ByteBuffer.allocate(0);

        ValueStream(long from, long to) {
            this.pos = from;
            this.end = to;
        }

        @Override
        protected int readSome(byte[] b, int off, int len) throws IOException {
            if (pos >= end) {
                return -1;
            }
            if (!window.hasRemaining()) {
                fill();
            }
            int n = (int) Math.min(Math.min(len, window.remaining()), end - pos);
            window.get(b, off, n);
            pos += n;
            return n;
        }

        private void fill() throws IOException {
            if (pos >= dataBytes) {
                ByteBuffer tail = root.tail().duplicate();
                tail.position((int) (pos - dataBytes));
                window = tail;
                return;
            }
            int index = (int) (pos / dataCap);
            long pageNo = dataPageNo(index);
            file.read(pageNo, page);
            listener.pageRead(PageType.DATA);
            PageHeader h = PageCodec.verifyData(page, pageNo, lobHash, version, !root.hasValueCrc(), index + 1, layout.bytesInDataPage(index));
            int inPage = (int) (pos - (long) index * dataCap);
            window = page.duplicate().position(PageCodec.HEADER_SIZE + inPage).limit(PageCodec.HEADER_SIZE + h.payloadLength());
            if (!window.hasRemaining()) {
                // cannot be after verifyData's length check; were it so, read() would return 0 forever
                throw new CorruptPageException(pageNo, "data page " + (index + 1) + " holds no byte at offset " + pos);
            }
        }

        @Override
        public long skip(long n) {
            long k = Math.max(0, Math.min(n, end - pos));
            pos += k;
            window = ByteBuffer.allocate(0);
            return k;
        }
    }

    /** The page number of data page {@code index} (0-based, in value order). */
    public long dataPageNo(int index) {
        if (index < 0 || index >= root.dataPages()) {
            throw new IndexOutOfBoundsException("data page " + index + " of " + root.dataPages());
        }
        int at = java.util.Arrays.binarySearch(extentStarts, index);
        int ext = at >= 0 ? at : -at - 2;
        return dataExtents.get(ext).firstPage() + (index - extentStarts[ext]);
    }

    public String lobId() {
        return lobId;
    }

    public long version() {
        return version;
    }
}
