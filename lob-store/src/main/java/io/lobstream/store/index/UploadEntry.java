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
 * @param dataExtents data pages in value order; every byte of the value goes to data pages
 * @param crc32c      CRC32C of the first {@code bytesDone} bytes
 */
public record UploadEntry(String uploadId, String lobId, long version, long totalLength, int chunkCount, int nextChunk,
                          long bytesDone, int crc32c, long rootPage, List<Extent> dataExtents, List<Extent> indexExtents,
                          long startedAtMillis, long touchedAtMillis) {

    private static final byte FORMAT = 1;

    public UploadEntry {
        dataExtents = List.copyOf(dataExtents);
        indexExtents = List.copyOf(indexExtents);
    }

    /** Every page the upload holds: root, index and data. */
    public List<Extent> pages() {
        List<Extent> all = new ArrayList<>(dataExtents);
        all.add(new Extent(rootPage, 1));
        all.addAll(indexExtents);
        return Extent.coalesce(all);
    }

    public UploadEntry advanced(long bytes, int newCrc, long now) {
        return new UploadEntry(uploadId, lobId, version, totalLength, chunkCount, nextChunk + 1, bytesDone + bytes, newCrc, rootPage,
                dataExtents, indexExtents, startedAtMillis, now);
    }

    public byte[] encode() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(128 + 12 * dataExtents.size());
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
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    public static UploadEntry decode(byte[] value) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(value))) {
            byte format = in.readByte();
            if (format != FORMAT) {
                throw new IllegalStateException("unknown upload entry format " + format);
            }
            return new UploadEntry(in.readUTF(), in.readUTF(), in.readLong(), in.readLong(), in.readInt(), in.readInt(), in.readLong(),
                    in.readInt(), in.readLong(), ExtentCodec.read(in), ExtentCodec.read(in), in.readLong(), in.readLong());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
