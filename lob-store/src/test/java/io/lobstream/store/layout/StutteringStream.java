package io.lobstream.store.layout;

import java.io.ByteArrayInputStream;
import java.io.InputStream;

/**
 * A stream that breaks {@code read}'s contract: every other bulk read returns 0 bytes (for a read
 * of more), the others 3 at most. No byte may be made up from a read of none, nor the stream taken
 * as ended.
 */
public final class StutteringStream extends InputStream {
    private final ByteArrayInputStream in;
    private boolean stutter;

    public StutteringStream(byte[] data) {
        this.in = new ByteArrayInputStream(data);
    }

    @Override
    public int read() {
        return in.read();
    }

    @Override
    public int read(byte[] b, int off, int len) {
        stutter = !stutter;
        return stutter ? 0 : in.read(b, off, Math.min(len, 3));
    }
}
