package io.lobstream.schema;

import io.lobstream.store.allocator.Extent;

import java.util.List;

/** Page runs between the engine's {@link Extent} and the records' {@code io.lobstream.avro.Extent}. */
public final class Extents {
    private Extents() {
    }

    public static List<io.lobstream.avro.Extent> toAvro(List<Extent> extents) {
        return extents.stream().map(e -> new io.lobstream.avro.Extent(e.firstPage(), e.pageCount())).toList();
    }

    /** @throws IllegalArgumentException for a run the engine does not take (negative page, no pages) */
    public static List<Extent> fromAvro(List<io.lobstream.avro.Extent> extents) {
        return extents.stream().map(e -> new Extent(e.getFirstPage(), e.getPageCount())).toList();
    }
}
