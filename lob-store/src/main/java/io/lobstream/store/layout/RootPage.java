package io.lobstream.store.layout;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.page.CorruptPageException;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The decoded payload of a ROOT page.
 *
 * @param extents   DATA page extents when {@code indexPages == 0}, else the INDEX page extents
 * @param tail      the value's last {@code tail.remaining()} bytes, stored inline
 * @param flags     {@link #VALUE_CRC}: {@code valueCrc32c} covers the whole value. A partial update does not
 *                  read the data pages it shares with the previous version, so it cannot compute one; its
 *                  pages are still each covered by their own CRC.
 */
public record RootPage(long byteLength, int valueCrc32c, int flags, int dataPages, int indexPages, List<Extent> extents,
                       ByteBuffer tail) {
    public static final int VALUE_CRC = 1;

    public boolean hasValueCrc() {
        return (flags & VALUE_CRC) != 0;
    }

    /** Writes the payload at the buffer's position. */
    public void encodeTo(ByteBuffer payload) {
        payload.putLong(byteLength).putInt(valueCrc32c).putInt(flags).putInt(dataPages).putInt(indexPages)
                .putInt(extents.size()).putInt(tail.remaining());
        for (Extent e : extents) {
            payload.putLong(e.firstPage()).putInt(e.pageCount());
        }
        payload.put(tail.duplicate());
    }

    public int encodedLength() {
        return VersionLayout.ROOT_META + extents.size() * VersionLayout.EXTENT_SIZE + tail.remaining();
    }

    /** Parses the payload of a verified ROOT page; {@code page} holds the whole page. */
    public static RootPage decode(ByteBuffer page, int payloadOffset, int payloadLength, long pageNo) throws CorruptPageException {
        ByteBuffer p = page.duplicate();
        p.position(payloadOffset).limit(payloadOffset + payloadLength);
        if (p.remaining() < VersionLayout.ROOT_META) {
            throw new CorruptPageException(pageNo, "root payload too short");
        }
        long length = p.getLong();
        int crc = p.getInt();
        int flags = p.getInt();
        int dataPages = p.getInt();
        int indexPages = p.getInt();
        int extentCount = p.getInt();
        int tailLength = p.getInt();
        if (length < 0 || dataPages < 0 || indexPages < 0 || extentCount < 0 || tailLength < 0
                || (long) extentCount * VersionLayout.EXTENT_SIZE + tailLength != p.remaining()) {
            throw new CorruptPageException(pageNo, "root payload fields inconsistent");
        }
        List<Extent> extents = readExtents(p, extentCount, pageNo);
        // copied: the caller reuses its page buffer
        ByteBuffer tail = ByteBuffer.allocate(tailLength).put(p).flip();
        return new RootPage(length, crc, flags, dataPages, indexPages, extents, tail);
    }

    static List<Extent> readExtents(ByteBuffer p, int count, long pageNo) throws CorruptPageException {
        List<Extent> extents = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            long first = p.getLong();
            int n = p.getInt();
            if (first < 0 || n <= 0) {
                throw new CorruptPageException(pageNo, "bad page reference " + first + "+" + n);
            }
            extents.add(new Extent(first, n));
        }
        return extents;
    }
}
