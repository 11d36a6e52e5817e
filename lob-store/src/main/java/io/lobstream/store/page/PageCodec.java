package io.lobstream.store.page;

import java.nio.ByteBuffer;
import java.util.zip.CRC32C;

/**
 * The on-disk page format.
 *
 * <pre>
 * offset size field
 *  0      2   magic 0x4C42 ("LB")
 *  2      1   page type
 *  3      1   format version (1)
 *  4      4   payload length
 *  8      8   lobId hash
 * 16      8   version
 * 24      4   sequence within the version
 * 28      4   CRC32C of (page number, bytes 0..27, payload)
 * 32      …   payload
 * </pre>
 *
 * The page number is not stored but is part of the checksum, so a page written to the wrong
 * place (a misdirected write) fails its CRC just as a torn page does. Bytes after the payload
 * are not covered: they are zero when written and never read.
 */
public final class PageCodec {
    public static final int HEADER_SIZE = 32;
    private static final short MAGIC = 0x4C42;
    private static final byte FORMAT = 1;
    private static final int CRC_OFFSET = 28;
    /** Source of the zeroed tail of a page: any length works, the tail is written in pieces of it. */
    private static final byte[] ZEROS = new byte[4096];

    private PageCodec() {
    }

    /** Bytes of payload a page of {@code pageSize} holds. */
    public static int payloadCapacity(int pageSize) {
        return pageSize - HEADER_SIZE;
    }

    /**
     * Writes the header into {@code page} (positions 0..31) for a payload already placed at
     * {@code HEADER_SIZE ..}, zeroes the unused tail and seals the page with its checksum.
     * {@code page}'s position and limit are left at 0 and its capacity.
     */
    public static void seal(ByteBuffer page, long pageNo, PageHeader header) {
        writeHeader(page, header);
        page.putInt(CRC_OFFSET, checksum(page, pageNo, header.payloadLength()));
    }

    /**
     * {@link #seal(ByteBuffer, long, PageHeader)} for a payload whose CRC32C the caller has: the writer computes it as it
     * reads the bytes in, for the value's CRC too, and the page's checksum is combined from it without reading them again.
     */
    public static void seal(ByteBuffer page, long pageNo, PageHeader header, int payloadCrc32c) {
        writeHeader(page, header);
        page.putInt(CRC_OFFSET, Crc32c.combine(headerChecksum(page, pageNo), payloadCrc32c, header.payloadLength()));
    }

    private static void writeHeader(ByteBuffer page, PageHeader header) {
        int pageSize = page.capacity();
        if (header.payloadLength() < 0 || header.payloadLength() > payloadCapacity(pageSize)) {
            throw new IllegalArgumentException("payload " + header.payloadLength() + " does not fit a page of " + pageSize);
        }
        page.clear();
        page.putShort(0, MAGIC);
        page.put(2, (byte) header.type().code());
        page.put(3, FORMAT);
        page.putInt(4, header.payloadLength());
        page.putLong(8, header.lobIdHash());
        page.putLong(16, header.version());
        page.putInt(24, header.sequence());
        int end = HEADER_SIZE + header.payloadLength();
        for (int i = end; i < pageSize; i += ZEROS.length) { // in bulk: a root page is mostly tail, one per write
            page.put(i, ZEROS, 0, Math.min(ZEROS.length, pageSize - i));
        }
    }

    /**
     * Checks the page's magic, format and CRC and returns its header.
     *
     * @throws CorruptPageException naming {@code pageNo} when any check fails
     */
    public static PageHeader verify(ByteBuffer page, long pageNo) throws CorruptPageException {
        if (page.getShort(0) != MAGIC) {
            throw allZero(page) ? new UnwrittenPageException(pageNo) : new CorruptPageException(pageNo, "bad magic");
        }
        if (page.get(3) != FORMAT) {
            throw new CorruptPageException(pageNo, "unknown page format " + page.get(3));
        }
        PageType type = PageType.of(page.get(2));
        if (type == null) {
            throw new CorruptPageException(pageNo, "unknown page type " + page.get(2));
        }
        int payloadLength = page.getInt(4);
        if (payloadLength < 0 || payloadLength > payloadCapacity(page.capacity())) {
            throw new CorruptPageException(pageNo, "payload length " + payloadLength + " out of range");
        }
        int stored = page.getInt(CRC_OFFSET);
        int actual = checksum(page, pageNo, payloadLength);
        if (stored != actual) {
            throw new CorruptPageException(pageNo, String.format("CRC32C mismatch (stored %08x, computed %08x): torn or misdirected write", stored, actual));
        }
        return new PageHeader(type, page.getLong(8), page.getLong(16), page.getInt(24), payloadLength);
    }

    /**
     * {@link #verify} plus the checks that the page belongs where the caller expects it:
     * the right type, LOB, version and sequence.
     */
    public static PageHeader verifyExpected(ByteBuffer page, long pageNo, PageType type, long lobIdHash, long version, int sequence)
            throws CorruptPageException {
        PageHeader h = verify(page, pageNo);
        if (h.type() != type) {
            throw new StalePageException(pageNo, "stale page: expected a " + type + " page, found " + h.type());
        }
        if (h.lobIdHash() != lobIdHash || h.version() != version) {
            throw new StalePageException(pageNo, "stale page: belongs to lob hash " + Long.toHexString(h.lobIdHash())
                    + " version " + h.version() + ", expected " + Long.toHexString(lobIdHash) + " version " + version);
        }
        if (h.sequence() != sequence) {
            throw new CorruptPageException(pageNo, "misplaced page: sequence " + h.sequence() + ", expected " + sequence);
        }
        return h;
    }

    /**
     * Verifies a DATA page read for version {@code version}. A version that shares pages (a partial
     * update) may find a page written by an earlier version of the same LOB, never by a later one; a
     * version that shares none (a whole value: the root's {@code VALUE_CRC} says so) wrote every one
     * of its pages itself, so only its own version will do. That exact check is what tells a page
     * whose write a power loss took from the same LOB's older page at that place, which it would
     * otherwise pass for (the same LOB, sequence and length: the allocator had reused the place).
     * Its payload must be exactly the {@code payloadLength} bytes the version's layout puts in it: a
     * stale page that passes the other checks but holds fewer would end the value early.
     */
    public static PageHeader verifyData(ByteBuffer page, long pageNo, long lobIdHash, long version, boolean sharesPages, int sequence,
                                        int payloadLength) throws CorruptPageException {
        PageHeader h = verify(page, pageNo);
        if (h.type() != PageType.DATA) {
            throw new StalePageException(pageNo, "stale page: expected a DATA page, found " + h.type());
        }
        if (h.lobIdHash() != lobIdHash || h.version() > version || !sharesPages && h.version() != version) {
            throw new StalePageException(pageNo, "stale page: belongs to lob hash " + Long.toHexString(h.lobIdHash())
                    + " version " + h.version() + ", expected " + Long.toHexString(lobIdHash) + " version " + (sharesPages ? "<= " : "")
                    + version);
        }
        if (h.sequence() != sequence) {
            throw new CorruptPageException(pageNo, "misplaced page: sequence " + h.sequence() + ", expected " + sequence);
        }
        if (h.payloadLength() != payloadLength) {
            throw new CorruptPageException(pageNo, "data page " + sequence + " holds " + h.payloadLength() + " bytes, the version's layout "
                    + payloadLength);
        }
        return h;
    }

    private static int checksum(ByteBuffer page, long pageNo, int payloadLength) {
        CRC32C crc = headerCrc(page, pageNo);
        crc.update(page.duplicate().clear().slice(HEADER_SIZE, payloadLength)); // whatever page's limit: its capacity is the page
        return (int) crc.getValue();
    }

    private static int headerChecksum(ByteBuffer page, long pageNo) {
        return (int) headerCrc(page, pageNo).getValue();
    }

    /** A CRC32C over what a page's checksum covers before its payload: the page number, then the header but its CRC. */
    private static CRC32C headerCrc(ByteBuffer page, long pageNo) {
        CRC32C crc = new CRC32C();
        crc.update(ByteBuffer.allocate(8).putLong(0, pageNo));
        crc.update(page.duplicate().clear().slice(0, CRC_OFFSET));
        return crc;
    }

    private static boolean allZero(ByteBuffer page) {
        for (int i = 0; i < page.capacity(); i++) {
            if (page.get(i) != 0) {
                return false;
            }
        }
        return true;
    }

    /** 64-bit FNV-1a of the LOB id, stored in every page of the LOB. */
    public static long lobIdHash(String lobId) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0; i < lobId.length(); i++) {
            char c = lobId.charAt(i);
            h ^= (c & 0xff);
            h *= 0x100000001b3L;
            h ^= (c >>> 8);
            h *= 0x100000001b3L;
        }
        return h;
    }
}
