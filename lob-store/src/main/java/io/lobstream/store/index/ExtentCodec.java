package io.lobstream.store.index;

import io.lobstream.store.allocator.Extent;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** Extent lists in index values: a count, then (first page, page count) pairs. */
final class ExtentCodec {
    private ExtentCodec() {
    }

    static void write(DataOutputStream out, List<Extent> extents) throws IOException {
        out.writeInt(extents.size());
        for (Extent e : extents) {
            out.writeLong(e.firstPage());
            out.writeInt(e.pageCount());
        }
    }

    static List<Extent> read(DataInputStream in) throws IOException {
        int n = count(in, in.readInt(), 12);
        List<Extent> extents = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            extents.add(new Extent(in.readLong(), in.readInt()));
        }
        return extents;
    }

    /**
     * {@code n} items of at least {@code itemBytes} bytes each, read from an index value (whose input knows how many
     * bytes are left), if that many fit in what is left. A corrupt or hand-edited entry's count is refused, not
     * allocated for: a count of 2^31 made a node allocate gigabytes, and exit, at every read of that entry.
     */
    static int count(DataInputStream in, int n, int itemBytes) throws IOException {
        if (n < 0 || (long) n * itemBytes > in.available()) {
            throw new IOException("corrupt index entry: a count of " + n + " with " + in.available() + " bytes left");
        }
        return n;
    }
}
