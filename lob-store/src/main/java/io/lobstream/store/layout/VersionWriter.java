package io.lobstream.store.layout;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.page.CorruptPageException;
import io.lobstream.store.page.Crc32c;
import io.lobstream.store.page.PageCodec;
import io.lobstream.store.page.PageHeader;
import io.lobstream.store.page.PageType;
import io.lobstream.store.tablespace.PageFile;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.BitSet;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Writes one version's pages: DATA pages (but those shared with the previous version) streamed from the caller's input in I/O runs of up to
 * {@value #MAX_IO_PAGES} contiguous pages, then INDEX pages, then the ROOT page last. Nothing
 * refers to these pages until the index entry is published, so a crash part-way leaves only
 * unreferenced pages, which recovery returns to free space.
 */
public final class VersionWriter {
    public static final int MAX_IO_PAGES = 16;
    private static final byte[] NO_BYTES = new byte[0];

    private final PageFile file;
    private final int pageSize;
    private final ByteBuffer io;
    private final byte[] scratch = new byte[8192];

    /**
     * Each thread's I/O buffer, which the writers it makes share: a store keeps a writer per thread, and a stream thread
     * that wrote to a tablespace closed since (a task moved, restarted, rebuilt) kept that writer's 256 KiB outside the
     * heap until the JDK happened to clear the stale thread-local. A thread writes one version at a time, and a write
     * leaves the buffer clear (IoRun.flush), so one buffer (per page size) serves every tablespace the thread writes to.
     */
    private static final ThreadLocal<java.util.Map<Integer, ByteBuffer>> THREAD_IO = ThreadLocal.withInitial(java.util.HashMap::new);

    /** Made on the thread that uses it (as a store's ThreadLocal makes it), and used on that thread only. */
    public VersionWriter(PageFile file) {
        this.file = file;
        this.pageSize = file.pageSize();
        this.io = threadIo(pageSize * MAX_IO_PAGES);
    }

    /** One per page size: a node holds tablespaces of two sizes after lob.page.size changed. */
    private static ByteBuffer threadIo(int capacity) {
        return THREAD_IO.get().computeIfAbsent(capacity, ByteBuffer::allocateDirect);
    }

    /**
     * @param dataExtents  exactly {@code layout.dataPages()} pages, in value order
     * @param shared       data pages (by 0-based index) that already hold the right bytes, written by an earlier
     *                     version and shared with it: not written, and their bytes are skipped in {@code value}
     * @param indexExtents pages for INDEX pages when {@code layout.indexed()}, else empty
     * @return the CRC32C of the whole value, or 0 when pages are shared (their bytes are never read)
     */
    public int write(String lobId, long version, VersionLayout layout, long rootPage, List<Extent> dataExtents, BitSet shared,
                     List<Extent> indexExtents, InputStream value) throws IOException {
        long hash = PageCodec.lobIdHash(lobId);
        int crc = 0; // the value's, combined from its pages' payload CRCs: each byte is read once
        int index = 0;
        IoRun run = new IoRun();
        for (Extent e : dataExtents) {
            for (long page = e.firstPage(); page < e.endPage(); page++, index++) {
                int n = layout.bytesInDataPage(index);
                if (shared.get(index)) {
                    run.flush();
                    value.skipNBytes(n);
                    continue;
                }
                if (!run.continuesWith(page)) {
                    run.flush();
                    run.start(page);
                }
                ByteBuffer p = io.slice(run.pages * pageSize, pageSize);
                int payloadCrc = readFully(value, p, PageCodec.HEADER_SIZE, n);
                PageCodec.seal(p, page, new PageHeader(PageType.DATA, hash, version, index + 1, n), payloadCrc);
                crc = Crc32c.combine(crc, payloadCrc, n);
                run.pages++;
            }
        }
        run.flush();
        if (index != layout.dataPages()) {
            throw new IllegalStateException(index + " data pages given for " + layout.dataPages());
        }
        byte[] tail = new byte[layout.tailLength()];
        int got = readUpTo(value, tail);
        if (got != tail.length) {
            throw new EOFException("value ended after " + (layout.dataBytes() + got) + " of " + layout.byteLength() + " bytes");
        }
        crc = Crc32c.combine(crc, crc32c(ByteBuffer.wrap(tail)), tail.length);
        boolean whole = shared.isEmpty();
        int valueCrc = whole ? crc : 0;

        List<Extent> rootRefs = dataExtents;
        if (layout.indexed()) {
            writeIndexPages(hash, version, layout.dataPages(), dataExtents, indexExtents);
            rootRefs = indexExtents;
        }
        RootPage root = new RootPage(layout.byteLength(), valueCrc, whole ? RootPage.VALUE_CRC : 0, layout.dataPages(),
                (int) Extent.totalPages(indexExtents), rootRefs, ByteBuffer.wrap(tail));
        writeRoot(hash, version, rootPage, root);
        return valueCrc;
    }

    /**
     * What writing a chunk came to.
     *
     * @param crc32c      the CRC32C of the chunk's bytes
     * @param partialPage the bytes of the data page the chunk leaves partial (from the page's start), not written:
     *                    the caller keeps them for the chunk that completes the page; empty at a page boundary
     */
    public record ChunkWrite(int crc32c, byte[] partialPage) {
    }

    /**
     * Writes bytes {@code [at, at + n)} of a chunked value into its data pages, each page once, when
     * all its bytes are known: a page is never rewritten, so a torn write can only hit a page no
     * upload entry yet counts as done. The bytes of the page the previous chunk left partial come
     * from {@code carried}; those of the page this chunk leaves partial are returned, not written.
     *
     * @param carried bytes {@code [at - at % capacity, at)} (empty at a page boundary), or {@code null} if the previous
     *                chunk wrote them to the page (an upload entry of format 1): they are read back from it, and that
     *                page, once complete, is written again
     */
    public ChunkWrite writeChunk(String lobId, long version, VersionLayout layout, List<Extent> dataExtents, long at, byte[] carried,
                                 InputStream data, long n) throws IOException {
        long hash = PageCodec.lobIdHash(lobId);
        int cap = layout.dataCapacity();
        byte[] head = carried != null ? carried : partialPageOnDisk(hash, version, layout, dataExtents, at);
        if (head.length != partialBytesAt(layout, at)) {
            throw new IllegalStateException("upload of " + lobId + " carries " + head.length + " bytes of a partial page at byte " + at
                    + ", expected " + partialBytesAt(layout, at));
        }
        int crc = 0; // the chunk's bytes', combined from each page's share of them
        IoRun run = new IoRun();
        long pos = at;
        long end = at + n;
        Extent.Cursor pages = null; // from the first page this chunk completes, which it then writes one after another
        while (pos < end) {
            int index = (int) (pos / cap);
            int from = head.length; // only the first page has bytes already
            int pageBytes = layout.bytesInDataPage(index);
            int take = (int) Math.min(pageBytes - from, end - pos);
            if (from + take < pageBytes) {
                // the chunk ends inside this page: its bytes wait for the chunk that completes it
                byte[] partial = Arrays.copyOf(head, from + take);
                crc = Crc32c.combine(crc, readFully(data, ByteBuffer.wrap(partial), from, take), take);
                run.flush();
                return new ChunkWrite(crc, partial);
            }
            if (pages == null) {
                pages = Extent.Cursor.at(dataExtents, index);
            }
            long page = pages.next();
            if (!run.continuesWith(page)) {
                run.flush();
                run.start(page);
            }
            ByteBuffer p = io.slice(run.pages * pageSize, pageSize);
            p.put(PageCodec.HEADER_SIZE, head, 0, from);
            int takenCrc = readFully(data, p, PageCodec.HEADER_SIZE + from, take);
            PageHeader header = new PageHeader(PageType.DATA, hash, version, index + 1, pageBytes);
            if (from == 0) {
                PageCodec.seal(p, page, header, takenCrc);
            } else {
                PageCodec.seal(p, page, header); // the carried bytes are not in takenCrc: this one page is read again
            }
            crc = Crc32c.combine(crc, takenCrc, take);
            run.pages++;
            pos += take;
            head = NO_BYTES;
        }
        run.flush();
        return new ChunkWrite(crc, head);
    }

    /**
     * How many bytes of the page at byte {@code at} were received but not written: {@code at} within
     * its page, but none at the value's end, where the last page, shorter or not, was complete.
     */
    private static int partialBytesAt(VersionLayout layout, long at) {
        return at >= layout.byteLength() ? 0 : (int) (at % layout.dataCapacity());
    }

    /** The bytes of the partial page at byte {@code at}, as a chunk of an upload entry of format 1 left it on disk. */
    private byte[] partialPageOnDisk(long hash, long version, VersionLayout layout, List<Extent> dataExtents, long at) throws IOException {
        int index = (int) (at / layout.dataCapacity());
        int inPage = partialBytesAt(layout, at);
        if (inPage == 0) {
            return NO_BYTES;
        }
        long page = Extent.pageAt(dataExtents, index);
        ByteBuffer p = ByteBuffer.allocate(pageSize);
        file.read(page, p);
        PageHeader h = PageCodec.verifyExpected(p, page, PageType.DATA, hash, version, index + 1);
        if (h.payloadLength() != inPage) {
            throw new CorruptPageException(page, "partial page holds " + h.payloadLength() + " bytes, the upload names " + inPage);
        }
        byte[] bytes = new byte[inPage];
        p.get(PageCodec.HEADER_SIZE, bytes);
        return bytes;
    }

    /** Completes a chunked value: its index pages, then its root. */
    public void finishChunked(String lobId, long version, VersionLayout layout, long rootPage, List<Extent> dataExtents,
                              List<Extent> indexExtents, int valueCrc) throws IOException {
        long hash = PageCodec.lobIdHash(lobId);
        List<Extent> rootRefs = dataExtents;
        if (layout.indexed()) {
            writeIndexPages(hash, version, layout.dataPages(), dataExtents, indexExtents);
            rootRefs = indexExtents;
        }
        writeRoot(hash, version, rootPage, new RootPage(layout.byteLength(), valueCrc, RootPage.VALUE_CRC, layout.dataPages(),
                (int) Extent.totalPages(indexExtents), rootRefs, ByteBuffer.allocate(0)));
    }

    /** Contiguous fresh data pages gathered in {@link #io} and written with one call. */
    private final class IoRun {
        long first = -1;
        int pages;

        boolean continuesWith(long page) {
            return pages > 0 && page == first + pages && pages < MAX_IO_PAGES;
        }

        void start(long page) {
            first = page;
            pages = 0;
        }

        void flush() throws IOException {
            if (pages > 0) {
                io.position(0).limit(pages * pageSize);
                try {
                    file.write(first, io);
                } finally {
                    // also when the write failed (a full disk): slices of io are bounded by its limit, and the store
                    // stays open for the next command, which must not fail on a limit left from this one
                    io.clear();
                    pages = 0;
                }
            }
        }
    }

    private void writeIndexPages(long hash, long version, int dataPages, List<Extent> dataExtents, List<Extent> indexExtents)
            throws IOException {
        int perPage = VersionLayout.extentsPerIndexPage(pageSize);
        int next = 0;
        int seq = 1 + dataPages;
        for (Extent ie : indexExtents) {
            for (long pageNo = ie.firstPage(); pageNo < ie.endPage(); pageNo++) {
                int count = Math.min(perPage, dataExtents.size() - next);
                ByteBuffer p = io.slice(0, pageSize);
                p.position(PageCodec.HEADER_SIZE);
                p.putInt(count);
                for (int i = 0; i < count; i++) {
                    Extent d = dataExtents.get(next++);
                    p.putLong(d.firstPage()).putInt(d.pageCount());
                }
                int payload = p.position() - PageCodec.HEADER_SIZE;
                PageCodec.seal(p, pageNo, new PageHeader(PageType.INDEX, hash, version, seq++, payload));
                file.write(pageNo, p);
            }
        }
        if (next != dataExtents.size()) {
            throw new IllegalStateException("index pages hold " + next + " of " + dataExtents.size() + " extents");
        }
    }

    private void writeRoot(long hash, long version, long rootPage, RootPage root) throws IOException {
        ByteBuffer p = io.slice(0, pageSize);
        p.position(PageCodec.HEADER_SIZE);
        root.encodeTo(p);
        PageCodec.seal(p, rootPage, new PageHeader(PageType.ROOT, hash, version, 0, root.encodedLength()));
        file.write(rootPage, p);
    }

    // Both reads below go through readAtLeastOne: a caller's stream that returns 0 at its end
    // (not -1) would otherwise spin here for ever, holding the LOB's write latch, as
    // InputStream.readNBytes does on one.
    private static int readUpTo(InputStream in, byte[] b) throws IOException {
        int done = 0;
        for (int got; done < b.length && (got = BulkInputStream.readAtLeastOne(in, b, done, b.length - done)) >= 0; ) {
            done += got;
        }
        return done;
    }

    /**
     * Reads exactly {@code n} bytes of {@code in} into {@code page} at {@code off}, straight from a stream over a buffer
     * (a command's data), and returns their CRC32C: computed once, from the page, for both the page's checksum and the
     * value's CRC.
     */
    private int readFully(InputStream in, ByteBuffer page, int off, int n) throws IOException {
        int done = 0;
        while (done < n) {
            int got = BulkInputStream.readAtLeastOne(in, page, off + done, n - done, scratch);
            if (got < 0) {
                throw new EOFException("value ended early");
            }
            done += got;
        }
        return crc32c(page.slice(off, n));
    }

    private static int crc32c(ByteBuffer bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes);
        return (int) crc.getValue();
    }
}
