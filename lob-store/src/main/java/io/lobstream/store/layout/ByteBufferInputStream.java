package io.lobstream.store.layout;

import java.nio.ByteBuffer;

/**
 * A buffer's remaining bytes as a stream, read where they are: the writer hands a command's data,
 * as Avro decoded it into the record's bytes, to the engine this way, and the engine copies it
 * from there straight into the page it writes.
 */
public final class ByteBufferInputStream extends BulkInputStream {
    private final ByteBuffer bytes;

    /** Reads {@code bytes}' remaining bytes; {@code bytes} itself is not moved. */
    public ByteBufferInputStream(ByteBuffer bytes) {
        this.bytes = bytes.duplicate();
    }

    @Override
    protected int readSome(byte[] b, int off, int len) {
        int n = Math.min(len, bytes.remaining());
        if (n == 0) {
            return -1;
        }
        bytes.get(b, off, n);
        return n;
    }

    @Override
    protected int readSome(ByteBuffer dst, int off, int len, byte[] scratch) {
        int n = Math.min(len, bytes.remaining());
        if (n == 0) {
            return -1;
        }
        dst.put(off, bytes, bytes.position(), n);
        bytes.position(bytes.position() + n);
        return n;
    }

    @Override
    public long skip(long n) {
        int k = (int) Math.max(0, Math.min(n, bytes.remaining()));
        bytes.position(bytes.position() + k);
        return k;
    }

    @Override
    public int available() {
        return bytes.remaining();
    }
}
