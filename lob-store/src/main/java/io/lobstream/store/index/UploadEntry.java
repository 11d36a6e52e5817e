package io.lobstream.store.index;

import io.lobstream.store.allocator.Extent;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;

/**
 * A chunked PUT in progress. Its pages were all allocated when the first chunk arrived (the
 * value's length is known then) and are filled chunk by chunk; the entry records how far, so
 * a restart continues where the last applied chunk ended. The pages are referenced here, so
 * recovery neither frees them nor leaks them; an upload that stops is expired and its pages
 * freed.
 *
 * <p>A data page is written once, when all its bytes are known: the bytes of the page a chunk
 * leaves partial (less than a page) are kept here, in {@code partialPage}, and written by the
 * chunk that completes the page. Were the partial page written and then completed in place, a
 * torn rewrite would destroy bytes this entry already records as done, and the upload could
 * never finish.
 *
 * @param dataExtents data pages in value order; every byte of the value goes to data pages
 * @param crc32c      CRC32C of the first {@code bytesDone} bytes
 * @param touchedAtMillis when the last chunk came ({@link io.lobstream.store.Chunk#commandsTimeMillis()}: record timestamps,
 *                        the broker's clock on a lob.commands with LogAppendTime, as LobStream makes it; the producers'
 *                        on one with CreateTime)
 * @param partialPage the bytes of the data page the last chunk left partial ({@code bytesDone % page capacity} of
 *                    them), not on disk yet; {@code null} in an entry of format 1, whose partial page was written
 *                    (see {@link #partialPageOnDisk()})
 * @param appliedAtMillis when the last chunk was applied (this writer's clock)
 */
public record UploadEntry(String uploadId, String lobId, long version, long totalLength, int chunkCount, int nextChunk,
                          long bytesDone, int crc32c, long rootPage, List<Extent> dataExtents, List<Extent> indexExtents,
                          long startedAtMillis, long touchedAtMillis, byte[] partialPage, long appliedAtMillis) {

    /** 1: partial pages on disk; 2: partial pages in the entry. Both are read. */
    private static final byte FORMAT = 2;

    public UploadEntry {
        dataExtents = List.copyOf(dataExtents);
        indexExtents = List.copyOf(indexExtents);
    }

    /** An upload whose first chunk, sent at {@code sentAt}, has yet to be written. */
    public static UploadEntry begun(String uploadId, String lobId, long version, long totalLength, int chunkCount, long rootPage,
                                    List<Extent> dataExtents, List<Extent> indexExtents, long sentAt) {
        return new UploadEntry(uploadId, lobId, version, totalLength, chunkCount, 0, 0, 0, rootPage, dataExtents, indexExtents, sentAt,
                sentAt, new byte[0], System.currentTimeMillis());
    }

    /**
     * Written by a version of the engine that wrote partial pages (format 1): the bytes of the page
     * the last chunk left partial are on disk, not in this entry.
     */
    public boolean partialPageOnDisk() {
        return partialPage == null;
    }

    /** Every page the upload holds: root, index and data. */
    public List<Extent> pages() {
        List<Extent> all = new ArrayList<>(dataExtents);
        all.add(new Extent(rootPage, 1));
        all.addAll(indexExtents);
        return Extent.coalesce(all);
    }

    /** @param partial the bytes of the page the chunk left partial, not written (see {@link #partialPage}) */
    public UploadEntry advanced(long bytes, int newCrc, byte[] partial, long sentAt) {
        return new UploadEntry(uploadId, lobId, version, totalLength, chunkCount, nextChunk + 1, bytesDone + bytes, newCrc, rootPage,
                dataExtents, indexExtents, startedAtMillis, Math.max(touchedAtMillis, sentAt), partial, System.currentTimeMillis());
    }

    /**
     * The same upload, with a chunk it already had sent again at {@code sentAt} (a retry under an idempotency key, which
     * sends the chunks the writer has before those it lacks): activity, so that the upload does not expire under it.
     */
    public UploadEntry touched(long sentAt) {
        return new UploadEntry(uploadId, lobId, version, totalLength, chunkCount, nextChunk, bytesDone, crc32c, rootPage,
                dataExtents, indexExtents, startedAtMillis, Math.max(touchedAtMillis, sentAt), partialPage, System.currentTimeMillis());
    }

    public byte[] encode() {
        if (partialPage == null) {
            throw new IllegalStateException("upload " + uploadId + ": an entry of format 1 is read, never written");
        }
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(128 + 12 * dataExtents.size() + partialPage.length);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeByte(FORMAT);
            out.writeUTF(uploadId);
            out.writeUTF(lobId);
            out.writeLong(version);
            out.writeLong(totalLength);
            out.writeInt(chunkCount);
            out.writeInt(nextChunk);
            out.writeLong(bytesDone);
            out.writeInt(crc32c);
            out.writeLong(rootPage);
            ExtentCodec.write(out, dataExtents);
            ExtentCodec.write(out, indexExtents);
            out.writeLong(startedAtMillis);
            out.writeLong(touchedAtMillis);
            out.writeInt(partialPage.length);
            out.write(partialPage);
            out.writeLong(appliedAtMillis);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    public static UploadEntry decode(byte[] value) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(value))) {
            byte format = in.readByte();
            if (format != 1 && format != FORMAT) {
                throw new IllegalStateException("unknown upload entry format " + format);
            }
            String uploadId = in.readUTF();
            String lobId = in.readUTF();
            long version = in.readLong();
            long totalLength = in.readLong();
            int chunkCount = in.readInt();
            int nextChunk = in.readInt();
            long bytesDone = in.readLong();
            int crc = in.readInt();
            long rootPage = in.readLong();
            List<Extent> data = ExtentCodec.read(in);
            List<Extent> index = ExtentCodec.read(in);
            long started = in.readLong();
            long touched = in.readLong();
            if (format == 1) { // its times were the writer's clock
                return new UploadEntry(uploadId, lobId, version, totalLength, chunkCount, nextChunk, bytesDone, crc, rootPage, data, index,
                        started, touched, null, touched);
            }
            byte[] partial = in.readNBytes(ExtentCodec.count(in, in.readInt(), 1));
            return new UploadEntry(uploadId, lobId, version, totalLength, chunkCount, nextChunk, bytesDone, crc, rootPage, data, index,
                    started, touched, partial, in.readLong());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
