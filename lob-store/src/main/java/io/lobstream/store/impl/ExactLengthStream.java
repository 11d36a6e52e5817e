package io.lobstream.store.impl;

import io.lobstream.store.layout.BulkInputStream;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;

/**
 * Exactly {@code length} bytes of a caller's stream: reading stops there whatever follows, and a
 * stream that ends sooner fails with {@link EOFException} rather than ending early. A partial
 * update reads its new bytes and then the base's bytes after them from one stream, so a caller's
 * stream of any other length would shift the base's bytes and corrupt the new version silently.
 */
final class ExactLengthStream extends BulkInputStream {
    private final InputStream in;
    private final long length;
    private long left;

    ExactLengthStream(InputStream in, long length) {
        this.in = in;
        this.length = length;
        this.left = length;
    }

    @Override
    protected int readSome(byte[] b, int off, int len) throws IOException {
        return left == 0 ? -1 : counted(readAtLeastOne(in, b, off, (int) Math.min(len, left)));
    }

    @Override
    protected int readSome(ByteBuffer dst, int off, int len, byte[] scratch) throws IOException {
        return left == 0 ? -1 : counted(readAtLeastOne(in, dst, off, (int) Math.min(len, left), scratch));
    }

    private int counted(int n) throws EOFException {
        if (n < 0) {
            throw endedEarly();
        }
        left -= n;
        return n;
    }

    @Override
    public long skip(long n) throws IOException {
        long k = in.skip(Math.min(Math.max(n, 0), left));
        left -= k;
        return k;
    }

    private EOFException endedEarly() {
        return new EOFException("the data ended after " + (length - left) + " of the " + length + " bytes announced");
    }
}
