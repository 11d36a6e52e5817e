package io.lobstream.store.layout;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.Objects;

/**
 * An {@link InputStream} whose subclasses only read in bulk ({@link #readSome}, never asked for
 * 0 bytes); the single-byte {@code read()} goes through it, so the engine's value streams (a
 * version's pages, a caller's bytes cut to their announced length, streams read one after
 * another) keep one read path each.
 */
public abstract class BulkInputStream extends InputStream {
    /**
     * Reads up to {@code len} bytes, {@code len > 0}.
     *
     * @return the bytes read, at least 1, or -1 at the end of the stream
     */
    protected abstract int readSome(byte[] b, int off, int len) throws IOException;

    /**
     * Reads up to {@code len > 0} bytes of {@code in}, at least one unless it has ended: a stream
     * that breaks read's contract by returning 0 gets a single-byte read instead, which blocks
     * until there is a byte or the end. What {@link #readSome} needs of a stream it wraps, and
     * what any reader of a caller's stream needs (the engine's writer, the producer client).
     *
     * @return the bytes read, at least 1, or -1 at the end of {@code in}
     */
    public static int readAtLeastOne(InputStream in, byte[] b, int off, int len) throws IOException {
        int n = in.read(b, off, len);
        if (n != 0) {
            return n;
        }
        int one = in.read();
        if (one < 0) {
            return -1;
        }
        b[off] = (byte) one;
        return 1;
    }

    /**
     * Reads up to {@code len > 0} bytes into {@code dst} at index {@code off}, leaving its position and limit alone; at
     * least one unless the stream has ended. Through {@code scratch} (not empty) here; a stream over a buffer, or one that
     * wraps such a stream, puts its bytes straight into {@code dst}: the engine's writer reads every value's pages this
     * way, and the byte[] in between would be a copy of every byte written.
     *
     * @return the bytes read, at least 1, or -1 at the end of the stream
     */
    protected int readSome(ByteBuffer dst, int off, int len, byte[] scratch) throws IOException {
        int n = readSome(scratch, 0, Math.min(len, scratch.length));
        if (n > 0) {
            dst.put(off, scratch, 0, n);
        }
        return n;
    }

    /**
     * {@link #readAtLeastOne(InputStream, byte[], int, int)} into a buffer at index {@code off}: straight into it from a
     * {@code BulkInputStream} that can, through {@code scratch} (not empty) from any other stream.
     */
    public static int readAtLeastOne(InputStream in, ByteBuffer dst, int off, int len, byte[] scratch) throws IOException {
        if (in instanceof BulkInputStream bulk) {
            return bulk.checked(bulk.readSome(dst, off, len, scratch));
        }
        int n = readAtLeastOne(in, scratch, 0, Math.min(len, scratch.length));
        if (n > 0) {
            dst.put(off, scratch, 0, n);
        }
        return n;
    }

    @Override
    public final int read() throws IOException {
        byte[] one = new byte[1];
        return checked(readSome(one, 0, 1)) < 0 ? -1 : one[0] & 0xff;
    }

    @Override
    public final int read(byte[] b, int off, int len) throws IOException {
        Objects.checkFromIndexSize(off, len, b.length);
        return len == 0 ? 0 : checked(readSome(b, off, len));
    }

    /**
     * A subclass's 0 fails the read: taken for a byte it would put one that was never in the stream into a value (and
     * shift the rest), retried it would spin under the LOB's write latch.
     */
    private int checked(int n) throws IOException {
        if (n == 0) {
            throw new IOException(getClass().getName() + ".readSome returned 0 bytes: it must read at least 1, or return -1 at the end");
        }
        return n;
    }
}
