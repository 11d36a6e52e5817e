package io.lobstream.store.layout;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.util.List;

/**
 * Several streams read one after another; unlike {@link java.io.SequenceInputStream} it
 * delegates {@code skip}, so skipping the bytes of shared pages in a version's stream reads
 * nothing.
 */
public final class ConcatStream extends BulkInputStream {
    private final List<InputStream> parts;
    private int current;

    public ConcatStream(List<InputStream> parts) {
        this.parts = List.copyOf(parts);
    }

    @Override
    protected int readSome(byte[] b, int off, int len) throws IOException {
        return fromParts(part -> readAtLeastOne(part, b, off, len));
    }

    @Override
    protected int readSome(ByteBuffer dst, int off, int len, byte[] scratch) throws IOException {
        return fromParts(part -> readAtLeastOne(part, dst, off, len, scratch));
    }

    private interface PartRead {
        int read(InputStream part) throws IOException;
    }

    /** What {@code read} gets of the current part, moving on past parts that have ended. */
    private int fromParts(PartRead read) throws IOException {
        while (current < parts.size()) {
            int n = read.read(parts.get(current)); // a part that returns 0 has not ended
            if (n > 0) {
                return n;
            }
            current++;
        }
        return -1;
    }

    @Override
    public long skip(long n) throws IOException {
        long done = 0;
        while (done < n && current < parts.size()) {
            long k = parts.get(current).skip(n - done);
            if (k > 0) {
                done += k;
            } else if (parts.get(current).read() >= 0) {
                done++; // a stream that does not skip: step by reading
            } else {
                current++;
            }
        }
        return done;
    }

    @Override
    public void close() throws IOException {
        for (InputStream p : parts) {
            p.close();
        }
    }
}
