package io.lobstream.store.index;

import io.lobstream.store.allocator.Extent;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.LongPredicate;
import java.util.function.LongUnaryOperator;

/**
 * Which version wrote each data page of a version, as far as the index says. A read cannot tell: a version that shares
 * pages (a partial update) accepts any earlier version of its LOB in a page. The index can: such a version names the
 * version it was made from ({@link VersionEntry#baseVersion()}), which is pending purge and whose {@code retained} pages
 * are the shared ones; it wrote the others itself. The shared ones the base in turn shares with its own base, or wrote.
 * What that tells apart is a page whose write was lost (a power loss) from the same LOB's older page at that place,
 * which passes every other check (the open's check after a power loss, fsck).
 */
public final class PageWriters {
    /**
     * Bases followed at most: fsck follows every chain, and a LOB appended to n times while purge is away has n versions
     * whose chains reach back through all of them. Pages shared from further back are not known.
     */
    static final int MAX_CHAIN = 64;

    private PageWriters() {
    }

    /**
     * Which version wrote each of {@code e}'s data pages ({@code dataPages}, as its root references them): a page's
     * writer, or 0 where it is not known and the page need only be the LOB's of {@code e}'s version or an earlier one.
     * The chain ends at a version {@code through} does not accept, at one that shares no page and so wrote all it has
     * (known by its whole-value CRC), at one whose base is not in the index (not recorded: an entry an earlier release
     * wrote; or reclaimed already), or {@link #MAX_CHAIN} bases back. Its pages are then not known: never stricter than
     * what is known.
     *
     * @param through the versions whose pages the chain follows (the torn-write check: those the last flush did not
     *                cover, as the others are on disk)
     */
    public static LongUnaryOperator of(VersionEntry e, List<Extent> dataPages, LobIndex index, LongPredicate through) throws IOException {
        TreeMap<Long, long[]> written = new TreeMap<>(); // first page -> {end page, version}
        List<Extent> inherited = Extent.coalesce(dataPages);
        VersionEntry at = e;
        for (int depth = 0; !inherited.isEmpty() && through.test(at.version()) && depth < MAX_CHAIN; depth++) {
            // (a base is older than what was made from it: a corrupt entry naming a later one ends the chain)
            Optional<VersionEntry> base = at.baseVersion() <= 0 || at.baseVersion() >= at.version() ? Optional.empty()
                    : index.pending(e.lobId(), at.baseVersion());
            List<Extent> shared = Extent.intersect(inherited, base.map(VersionEntry::retained).orElse(List.of()));
            if (base.isPresent() || at.valueCrc32c() != 0) {
                for (Extent own : Extent.subtract(inherited, shared)) {
                    written.put(own.firstPage(), new long[] {own.endPage(), at.version()});
                }
            }
            if (base.isEmpty()) {
                break;
            }
            inherited = shared;
            at = base.get();
        }
        return pageNo -> {
            Map.Entry<Long, long[]> run = written.floorEntry(pageNo);
            return run != null && pageNo < run.getValue()[0] ? run.getValue()[1] : 0;
        };
    }
}
