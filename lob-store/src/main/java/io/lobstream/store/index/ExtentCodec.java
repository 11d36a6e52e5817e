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
        int n = in.readInt();
        List<Extent> extents = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            extents.add(new Extent(in.readLong(), in.readInt()));
        }
        return extents;
    }
}
