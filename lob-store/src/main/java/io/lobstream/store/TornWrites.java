package io.lobstream.store;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.UploadEntry;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.layout.VersionLayout;
import io.lobstream.store.layout.VersionReader;
import io.lobstream.store.tablespace.PageFile;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.function.LongPredicate;
import java.util.function.LongUnaryOperator;

/**
 * The check an unclean open makes of the versions the last flush did not cover ({@link SyncedFrontier}): that their
 * pages are on disk. Each one's root, index and data pages are read and verified as a read would (header, CRC, version,
 * place), and an upload's pages written so far. After a crash of the process alone they all are (the kernel kept them)
 * and the check reads them from its cache: at most the versions of one commit interval, and the uploads then in
 * progress. After a power loss one may fail: its index entry reached the disk and its pages did not, so the tablespace
 * holds a version it cannot read while its command counts as applied.
 *
 * <p>A page whose write was lost holds what its place held before: zeros, or a page freed earlier, which fails its
 * header's LOB, version or sequence check, unless it was the same LOB's page at the same place in the value. A version
 * of a whole value wrote every page itself and accepts only its own version in each, so that page fails too. A version
 * that shares pages (a partial update) accepts an earlier version in a shared page; which pages it shares the index
 * says ({@link #writers}), and the others must carry its own version.
 */
final class TornWrites {
    /** Problems reported at most; the first is enough to refuse the tablespace. */
    private static final int MAX_REPORTED = 20;

    private final PageFile file;
    private final LobIndex index;
    /** Whether the last flush did not cover a version: its pages may be lost. */
    private final LongPredicate uncovered;
    private final List<VersionEntry> versions = new ArrayList<>();
    private final List<UploadEntry> uploads = new ArrayList<>();

    TornWrites(PageFile file, LobIndex index, LongPredicate uncovered) {
        this.file = file;
        this.index = index;
        this.uncovered = uncovered;
    }

    void version(VersionEntry e) {
        versions.add(e);
    }

    void upload(UploadEntry u) {
        uploads.add(u);
    }

    /** What checked: how many versions and uploads, pages read, and the problems found (each names its page). */
    record Result(int versions, int uploads, long pagesRead, List<String> problems) {
    }

    Result check() {
        List<String> problems = new ArrayList<>();
        long[] pagesRead = {0};
        for (VersionEntry e : versions) {
            try {
                VersionReader r = VersionReader.open(file, e.lobId(), e.version(), e.rootPage(), type -> pagesRead[0]++);
                r.verifyDataPages(e.retained(), writers(e, r));
            } catch (IOException | RuntimeException ex) {
                report(problems, e.lobId() + "@" + e.version() + ": " + ex.getMessage());
            }
        }
        for (UploadEntry u : uploads) {
            try {
                pagesRead[0] += VersionReader.verifyUploadedPages(file, u.lobId(), u.version(),
                        VersionLayout.planStreamed(file.pageSize(), u.totalLength()), u.dataExtents(), u.bytesDone());
            } catch (IOException | RuntimeException ex) {
                report(problems, "upload " + u.uploadId() + " of " + u.lobId() + "@" + u.version() + ": " + ex.getMessage());
            }
        }
        return new Result(versions.size(), uploads.size(), pagesRead[0], problems);
    }

    /**
     * Which version wrote each data page of {@code e}, as far as the index says: a version that shares pages names the
     * version it was made from ({@link VersionEntry#baseVersion()}), which is pending purge and whose {@code retained}
     * pages are the shared ones; it wrote the others itself. The shared ones the base in turn shares with its own base,
     * or wrote. The chain ends at a version the last flush covered (its pages are on disk: they are only known to be the
     * LOB's of that version or an earlier one, 0), at a version that shares none, and so wrote all it has (known by its
     * whole-value CRC), or at one whose base is not in the index: not recorded (an entry an earlier release wrote), or
     * reclaimed already (possible only without exactly-once, or in the embedded engine, whose purge is local). Its pages
     * then count as 0 too: the check is as lenient as a read's, never stricter than what is known.
     */
    private LongUnaryOperator writers(VersionEntry e, VersionReader r) throws IOException {
        TreeMap<Long, long[]> written = new TreeMap<>(); // first page -> {end page, version}
        List<Extent> inherited = Extent.coalesce(r.dataExtents());
        VersionEntry at = e;
        while (!inherited.isEmpty() && uncovered.test(at.version())) {
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

    private static void report(List<String> problems, String problem) {
        if (problems.size() < MAX_REPORTED) {
            problems.add(problem);
        }
    }
}
