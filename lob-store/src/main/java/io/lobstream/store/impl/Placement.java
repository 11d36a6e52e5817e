package io.lobstream.store.impl;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.allocator.PageAllocator;

import java.util.List;

/**
 * Where a new version's pages come from, and what its publish does with the version it replaces: anywhere for a
 * command (the replaced version waits for purge), or below a page for compaction's relocation (the replaced version
 * holds the same bytes, and the engine frees it itself).
 *
 * @param limit the page the version must lie below; -1: anywhere, the file grows if it must
 */
record Placement(PageAllocator allocator, long limit) {
    static Placement anywhere(PageAllocator allocator) {
        return new Placement(allocator, -1);
    }

    static Placement below(PageAllocator allocator, long limit) {
        if (limit < 0) {
            throw new IllegalArgumentException("a limit of " + limit); // (a negative one means anywhere)
        }
        return new Placement(allocator, limit);
    }

    /** {@code pages} pages for the new version; throws {@link NoRoom} if they cannot be had below the limit. */
    List<Extent> allocate(int pages) {
        if (limit < 0) {
            return allocator.allocate(pages);
        }
        List<Extent> got = allocator.allocateBelow(pages, limit);
        if (got.isEmpty() && pages > 0) {
            throw new NoRoom();
        }
        return got;
    }

    /** Whether the replaced version is freed by the engine itself (a relocation), not by purge. */
    boolean relocation() {
        return limit >= 0;
    }

    /** Thrown by a placement that cannot place a version below its limit. */
    static final class NoRoom extends RuntimeException {
        NoRoom() {
            super(null, null, false, false);
        }
    }
}
