package io.lobstream.schema.serde;

import org.apache.avro.Schema;
import org.apache.avro.io.BinaryDecoder;
import org.apache.avro.io.Decoder;
import org.apache.avro.io.DecoderFactory;
import org.apache.avro.util.Utf8;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashSet;
import java.util.Set;

/**
 * A binary decoder over a byte array whose {@code bytes} fields are slices of that array, not
 * copies. Avro's own decoder allocates a new buffer for every {@code bytes} value and copies
 * into it: for a 256 KiB command that was a third of the writer thread's CPU (allocation,
 * zeroing and copy), for bytes the writer only streams into pages once.
 *
 * <p>The slices share the caller's array, so the array must not be reused while the decoded
 * record is alive: a Kafka record's value array is allocated per record and never reused.
 *
 * <p>Every length and item count is checked against the bytes left in the record before anything
 * is allocated for it. Avro's decoder allocates what a count says (up to 2^31 items), so a record
 * of a few bytes claiming a huge array, map or string would end the writer's thread with an
 * {@link OutOfMemoryError} each time it read the record, where it has to be dead-lettered. An item
 * count may not exceed the bytes left because no item of LobStream's schemas encodes in zero bytes;
 * nor may all the counts of a record together, read or skipped, exceed its length: a writer schema
 * registered with an array of nulls (items of zero bytes) and a record of many blocks, each
 * claiming as many items as bytes are left, would keep the writer's thread skipping for hours.
 */
final class ArraySliceDecoder extends Decoder {
    private final byte[] array;
    private final boolean copyBytes;
    private final int end;
    private final BinaryDecoder in;
    private final int length;
    /** Array and map items this record has claimed so far, in every block read or skipped. */
    private long items;

    ArraySliceDecoder(byte[] array, int offset, int length) {
        this(array, offset, length, false);
    }

    /** @param copyBytes give {@code bytes} values as arrays of their own: {@link #sliceUnsafe} says when. */
    ArraySliceDecoder(byte[] array, int offset, int length, boolean copyBytes) {
        this.array = array;
        this.copyBytes = copyBytes;
        this.end = offset + length;
        this.length = length;
        this.in = DecoderFactory.get().binaryDecoder(array, offset, length, null);
    }

    @Override
    public ByteBuffer readBytes(ByteBuffer old) throws IOException {
        int length = checkedLength("bytes field", in.readLong());
        int start = position();
        in.skipFixed(length);
        return copyBytes ? ByteBuffer.wrap(Arrays.copyOfRange(array, start, start + length))
                : ByteBuffer.wrap(array, start, length).slice();
    }

    /**
     * Whether a record of {@code writer} read as {@code reader} needs {@code bytes} values copied: Avro resolves a writer's
     * {@code bytes} that the reader reads as a {@code string} (a compatible promotion, which a producer in another language
     * may register) with {@code new String(readBytes(null).array())}, and the array of a slice is the whole record. Not for
     * LobStream's own schemas, whose chunk data stays a slice. Conservative: any writer {@code bytes} at a field path where
     * the reader has none (renamed, or a string) copies.
     */
    static boolean sliceUnsafe(Schema writer, Schema reader) {
        Set<String> readerBytes = bytesPaths(reader);
        return !readerBytes.containsAll(bytesPaths(writer));
    }

    private static Set<String> bytesPaths(Schema schema) {
        Set<String> paths = new HashSet<>();
        collectBytes(schema, "", paths, new HashSet<>());
        return paths;
    }

    private static void collectBytes(Schema s, String path, Set<String> paths, Set<String> open) {
        switch (s.getType()) {
            case BYTES -> paths.add(path);
            case UNION -> s.getTypes().forEach(t -> collectBytes(t, path, paths, open));
            case ARRAY -> collectBytes(s.getElementType(), path + "[]", paths, open);
            case MAP -> collectBytes(s.getValueType(), path + "{}", paths, open);
            case RECORD -> {
                if (!open.add(s.getFullName())) {
                    paths.add(path + "<recursive>"); // a reader schema has none: copies, rather than walk without end
                    return;
                }
                s.getFields().forEach(f -> collectBytes(f.schema(), path + "." + f.name(), paths, open));
                open.remove(s.getFullName());
            }
            default -> { }
        }
    }

    /** For an array source the decoder's buffer is the array itself and available() is (end - position). */
    private int position() throws IOException {
        return end - in.inputStream().available();
    }

    private int checkedLength(String what, long length) throws IOException {
        int left = end - position();
        if (length < 0 || length > left) {
            throw new IOException(what + " of " + length + " bytes overruns the record (" + left + " left)");
        }
        return (int) length;
    }

    private long checkedCount(String what, long items) throws IOException {
        int left = end - position();
        if (items > left) {
            throw new IOException(what + " of " + items + " items overruns the record (" + left + " bytes left)");
        }
        this.items += items;
        if (this.items > length) {
            throw new IOException(this.items + " array and map items in all, more than the record's " + length + " bytes");
        }
        return items;
    }

    @Override
    public void readNull() throws IOException {
        in.readNull();
    }

    @Override
    public boolean readBoolean() throws IOException {
        return in.readBoolean();
    }

    /**
     * Read as the long it may have been written as: an int and a long share Avro's varint, and Avro's readInt drops the
     * bits of a fifth byte past 32. A CRC32C sent unsigned (Python's crc32c gives 0 to 2^32-1; fastavro writes it
     * unchecked) then decoded as another number, and its upload was dead-lettered as a CRC mismatch.
     */
    @Override
    public int readInt() throws IOException {
        long n = in.readLong();
        if (n != (int) n) {
            throw new IOException("an int field holds " + n + ", past a signed 32-bit int (a CRC32C is sent signed: "
                    + "as unsigned c, send c - 2^32 when c >= 2^31)");
        }
        return (int) n;
    }

    @Override
    public long readLong() throws IOException {
        return in.readLong();
    }

    @Override
    public float readFloat() throws IOException {
        return in.readFloat();
    }

    @Override
    public double readDouble() throws IOException {
        return in.readDouble();
    }

    @Override
    public Utf8 readString(Utf8 old) throws IOException {
        int length = checkedLength("string", in.readLong());
        Utf8 s = old != null ? old : new Utf8();
        s.setByteLength(length);
        in.readFixed(s.getBytes(), 0, length);
        return s;
    }

    @Override
    public String readString() throws IOException {
        int length = checkedLength("string", in.readLong());
        String s = new String(array, position(), length, StandardCharsets.UTF_8);
        in.skipFixed(length);
        return s;
    }

    /** Through {@link #checkedLength}: Avro skips a negative length as 0 and would read on from there. */
    @Override
    public void skipString() throws IOException {
        in.skipFixed(checkedLength("string", in.readLong()));
    }

    @Override
    public void skipBytes() throws IOException {
        in.skipFixed(checkedLength("bytes field", in.readLong()));
    }

    @Override
    public void readFixed(byte[] bytes, int start, int length) throws IOException {
        in.readFixed(bytes, start, length);
    }

    @Override
    public void skipFixed(int length) throws IOException {
        in.skipFixed(length);
    }

    @Override
    public int readEnum() throws IOException {
        return in.readEnum();
    }

    @Override
    public long readArrayStart() throws IOException {
        return checkedCount("array block", in.readArrayStart());
    }

    @Override
    public long arrayNext() throws IOException {
        return checkedCount("array block", in.arrayNext());
    }

    @Override
    public long skipArray() throws IOException {
        return checkedCount("array block", in.skipArray());
    }

    @Override
    public long readMapStart() throws IOException {
        return checkedCount("map block", in.readMapStart());
    }

    @Override
    public long mapNext() throws IOException {
        return checkedCount("map block", in.mapNext());
    }

    @Override
    public long skipMap() throws IOException {
        return checkedCount("map block", in.skipMap());
    }

    @Override
    public int readIndex() throws IOException {
        return in.readIndex();
    }
}
