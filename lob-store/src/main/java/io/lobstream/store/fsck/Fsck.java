package io.lobstream.store.fsck;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.PageWriters;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.layout.VersionLayout;
import io.lobstream.store.layout.VersionReader;
import io.lobstream.store.tablespace.PageFile;
import io.lobstream.store.tablespace.TablespaceDescriptor;
import io.lobstream.store.tablespace.TablespaceDirs;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.LongUnaryOperator;
import java.util.zip.CRC32C;

/**
 * Checks one tablespace: every page in {@code [0, highWaterMark)} is exactly one of live,
 * pending purge or free; every version's root and index pages verify and reference exactly
 * the pages the index says it owns; with {@code readData}, every data page verifies and every
 * value's CRC32C matches. The caller holds the store quiet (exclusive latch) while it runs.
 */
public final class Fsck {
    /** Problems reported at most: past these, a report says no more than that the tablespace is damaged. */
    public static final int MAX_PROBLEMS = 100;

    private final PageFile file;
    private final LobIndex index;
    private final List<Extent> free;
    private final List<List<Extent>> unpublished;
    private final long highWaterMark;
    private final boolean readData;
    /**
     * By version, what an open's own check finds lost of the pages the end of the last run may have lost (written after
     * its last flush, before an unclean end: a power loss, not damage); an open sets such a copy aside and rebuilds it.
     */
    private final Map<Long, String> lostAtTheEnd;
    /** The versions of {@link #lostAtTheEnd} a problem found here was said of. */
    private final Set<Long> saidLost = new HashSet<>();

    private final List<String> problems = new ArrayList<>();
    /** firstPage → owner description, for overlap detection */
    private final TreeMap<Long, Owned> owners = new TreeMap<>();
    private long pagesChecked;
    /** The page file's length; the high-water mark may lie past it (derived from what the index names, which a short file lacks). */
    private long filePages;
    private boolean overlapFound;

    private record Owned(Extent extent, String owner) {
    }

    /**
     * @param unpublished the own pages of versions a writer has written but not yet published (in
     *                    flight between its latches): neither free nor leaked, and not yet checkable
     */
    public Fsck(PageFile file, LobIndex index, List<Extent> free, List<List<Extent>> unpublished, long highWaterMark, boolean readData) {
        this(file, index, free, unpublished, highWaterMark, readData, Map.of());
    }

    private Fsck(PageFile file, LobIndex index, List<Extent> free, List<List<Extent>> unpublished, long highWaterMark, boolean readData,
                 Map<Long, String> lostAtTheEnd) {
        this.file = file;
        this.index = index;
        this.free = free;
        this.unpublished = unpublished;
        this.highWaterMark = highWaterMark;
        this.readData = readData;
        this.lostAtTheEnd = lostAtTheEnd;
    }

    /**
     * Checks a tablespace no process has open, changing nothing: the index is opened read-only
     * and no recovery runs (a normal open would finish interrupted work first, repairing what it
     * finds, and refuses an index whose versions claim the same pages: that is reported here,
     * with the page numbers). Free space is what recovery would derive, every page below the end
     * that the index does not name, so pages cannot show as leaked: overlaps, pages that do not
     * verify, and values whose checksum does not match can.
     *
     * <p>{@code LobStore.fsckClosed} is the entry point: it gives what an open's check of the pages the last run's end
     * may have lost would find ({@code tornWrites}), so that those problems are told apart from damage, and are reported
     * with {@code readData} false too.
     */
    public static FsckReport offline(Path tablespaceDir, boolean readData, TornWriteCheck tornWrites) throws IOException {
        int pageSize = TablespaceDescriptor.read(tablespaceDir).pageSize();
        try (PageFile file = PageFile.openReadOnly(tablespaceDir.resolve(TablespaceDirs.PAGES), pageSize);
             LobIndex index = LobIndex.openReadOnly(tablespaceDir.resolve(TablespaceDirs.INDEX))) {
            List<Extent> named = new ArrayList<>();
            index.forEachCurrent(e -> named.addAll(e.extents()));
            index.forEachPending(e -> named.addAll(e.extents()));
            index.forEachUpload(u -> named.addAll(u.pages()));
            named.sort(java.util.Comparator.comparingLong(Extent::firstPage));
            // overlapping extents merged (overlaps are for run() to report); a run kept as longs, as it may pass 2^31 pages
            List<Extent> union = new ArrayList<>();
            long runFirst = 0;
            long runEnd = 0;
            long end = (file.path().toFile().length() + pageSize - 1) / pageSize;
            for (Extent e : named) {
                if (e.firstPage() > runEnd) {
                    Extent.addRun(union, runFirst, runEnd);
                    runFirst = e.firstPage();
                }
                runEnd = Math.max(runEnd, e.endPage());
                end = Math.max(end, e.endPage());
            }
            Extent.addRun(union, runFirst, runEnd);
            Map<Long, String> lost;
            String checkFailed = null;
            try {
                lost = tornWrites.lost(file, index);
            } catch (IOException | RuntimeException e) {
                // (an index that fails, an entry that does not add up: a node's open fails on it too, at every start)
                lost = Map.of();
                checkFailed = tablespaceDir + ": the open's check of the pages written after the last flush fails: " + e.getMessage();
            }
            FsckReport report = new Fsck(file, index, Extent.gaps(union, end), List.of(), end, readData, lost).run();
            return withMarkers(checkFailed == null ? report : report.withProblem(checkFailed), tablespaceDir);
        }
    }

    /** An open's check of the pages the end of a closed tablespace's last run may have lost: by version, the problem. */
    @FunctionalInterface
    public interface TornWriteCheck {
        Map<Long, String> lost(PageFile file, LobIndex index) throws IOException;
    }

    /**
     * {@code report} with what the markers in {@code tablespaceDir} say: its pages may all check out and the copy still not
     * hold what was applied.
     */
    public static FsckReport withMarkers(FsckReport report, Path tablespaceDir) throws IOException {
        Optional<String> failed = TablespaceDirs.syncFailure(tablespaceDir); // writes since the last good sync may be lost
        if (failed.isPresent()) {
            report = report.withProblem(tablespaceDir + ": a sync failed (" + failed.get()
                    + "); a writer node rebuilds it from lob.commands, or move it aside and replay the partition");
        }
        Optional<String> cut = TablespaceDirs.logCut(tablespaceDir);
        if (cut.isPresent()) {
            report = report.withProblem(tablespaceDir + ": " + cut.get() + "; it applied offsets the log may now hold other commands "
                    + "at: a writer node moves it aside and rebuilds the partition from lob.commands");
        }
        Optional<String> incomplete = TablespaceDirs.incompleteness(tablespaceDir);
        if (incomplete.isPresent()) {
            report = report.withProblem(tablespaceDir + ": built without commands it needed, or without the dead letters that "
                    + "said which the writer refused (" + incomplete.get() + "); values those commands wrote, if any, and no later "
                    + "command rewrote may be missing or older, or be ones the writer refused");
        }
        return report;
    }

    public FsckReport run() throws IOException {
        filePages = file.sizeInPages();
        long[] live = new long[2];
        long[] history = new long[2];
        index.forEachCurrent(e -> {
            live[0]++;
            live[1] += e.pageCount();
            checkVersion(e, "live");
        });
        index.forEachPending(e -> {
            history[0]++;
            history[1] += e.pageCount();
            checkVersion(e, "pending");
        });
        long[] uploading = new long[1];
        index.forEachUpload(u -> {
            String who = "upload " + u.uploadId() + " of " + u.lobId();
            for (Extent x : u.pages()) {
                claim(x, who);
                uploading[0] += x.pageCount();
            }
            if (readData) {
                // the pages written so far: the value's CRC is of the chunks as they came, never of these read back, so a
                // page gone bad here would be published with the last chunk, and found at the first read of the value
                try {
                    pagesChecked += VersionReader.verifyUploadedPages(file, u.lobId(), u.version(),
                            VersionLayout.planStreamed(file.pageSize(), u.totalLength()), u.dataExtents(), 0, u.bytesDone());
                } catch (IOException | RuntimeException ex) {
                    problem(who + "@" + u.version() + ": " + ex.getMessage() + tornHint(u.version()));
                }
            }
        });
        for (Extent e : free) {
            claim(e, "free");
        }
        long inFlight = 0;
        for (List<Extent> version : unpublished) {
            for (Extent x : version) {
                claim(x, "a version written, not yet published");
                inFlight += x.pageCount();
            }
        }
        // what the open's check finds that was not said above (data pages not read): the copy a node will not open
        lostAtTheEnd.forEach((version, lost) -> {
            if (!saidLost.contains(version)) {
                problem(lost + TORN_HINT);
            }
        });
        long accounted = live[1] + history[1] + Extent.totalPages(free) + uploading[0] + inFlight;
        if (accounted != highWaterMark && problems.size() < MAX_PROBLEMS && !overlapFound) {
            // (with overlaps the count is off by the pages claimed twice, which are reported already)
            List<Extent> all = new ArrayList<>();
            owners.values().forEach(o -> all.add(o.extent()));
            List<Extent> leaked = Extent.gaps(all, highWaterMark);
            if (!leaked.isEmpty()) {
                problems.add("pages neither live, pending nor free (leaked): " + leaked + " of " + highWaterMark + " pages");
            }
        }
        return new FsckReport(problems.isEmpty(), live[0], history[0], live[1], history[1], Extent.totalPages(free), uploading[0], inFlight,
                pagesChecked, problems);
    }

    private void checkVersion(VersionEntry e, String state) {
        String who = state + " " + e.lobId() + "@" + e.version();
        for (Extent x : e.extents()) {
            if (x.endPage() > highWaterMark) {
                problem(who + " owns pages " + x + " past the end of the tablespace (" + highWaterMark + " pages)");
            }
            claim(x, who);
        }
        if (e.reclaimRequested()) {
            // freed at the next open, its bytes never read again: they may already be another's (a compaction move's old
            // copy is released at once, and a crash can lose its removal from the index but not the bytes written there)
            return;
        }
        for (Extent x : e.extents()) {
            // its pages were written before it was published, so the file covers them: a file cut short (a restore, a
            // lost extension) has lost them, which only reading the data pages would tell otherwise
            if (x.endPage() > filePages) {
                problem(who + " owns pages " + x + " past the end of the page file (" + filePages + " pages)" + tornHint(e.version()));
            }
        }
        try {
            VersionReader r = VersionReader.open(file, e.lobId(), e.version(), e.rootPage(), t -> pagesChecked++);
            if (r.byteLength() != e.byteLength()) {
                problem(who + ": root page " + e.rootPage() + " says " + r.byteLength() + " bytes, index says " + e.byteLength());
            }
            // a pending version's pages, minus those handed over to its successor, are what it owns
            List<Extent> owned = Extent.subtract(r.allPages(), e.retained());
            if (!owned.equals(Extent.coalesce(e.extents()))) {
                problem(who + ": root page " + e.rootPage() + " references pages " + r.allPages() + " (retained by its successor: "
                        + e.retained() + "), index says it owns " + e.extents());
            }
            if (readData) {
                // (a value CRC is checked only once every page verified: never a page lost)
                checkData(e, r, PageWriters.of(e, r.dataExtents(), index, version -> true)).ifPresent(m -> problem(who + ": " + m));
            }
        } catch (IOException ex) {
            problem(who + ": " + ex.getMessage() + tornHint(e.version())); // names the page
        } catch (RuntimeException ex) {
            // a root or index page whose fields pass their CRC but make no sense (a bug that wrote them): report, go on
            problem(who + ": root page " + e.rootPage() + ": " + ex);
        }
    }

    /**
     * The data pass over one version, read by {@code r}: every data page verifies, each held to the version that wrote it
     * where the index says ({@code writtenBy}, from {@link PageWriters}: a stale page a read would pass), and a value still
     * whole has its CRC32C. A page that does not verify throws, naming it; a CRC mismatch is returned, naming the root page.
     */
    public static Optional<String> checkData(VersionEntry e, VersionReader r, LongUnaryOperator writtenBy) throws IOException {
        r.verifyDataPages(e.retained(), writtenBy);
        if (!e.retained().isEmpty() || !r.root().hasValueCrc()) {
            return Optional.empty(); // part of its value is its successor's now, or no CRC was recorded for it
        }
        CRC32C crc = new CRC32C();
        byte[] buf = new byte[64 * 1024];
        try (InputStream in = r.withListener(VersionReader.PageReadListener.NONE).stream(0, r.byteLength())) { // counted once, above
            for (int n; (n = in.read(buf)) > 0; ) {
                crc.update(buf, 0, n);
            }
        }
        return (int) crc.getValue() == r.root().valueCrc32c() ? Optional.empty()
                : Optional.of("value CRC32C mismatch (root page " + e.rootPage() + ")");
    }

    /** Records that {@code x} belongs to {@code who}; reports any page that already belongs to someone. */
    private void claim(Extent x, String who) {
        var before = owners.floorEntry(x.firstPage());
        if (before != null && before.getValue().extent().endPage() > x.firstPage()) {
            overlapFound = true;
            problem("pages " + x + " of " + who + " overlap pages " + before.getValue().extent() + " of " + before.getValue().owner());
        }
        var after = owners.ceilingEntry(x.firstPage());
        if (after != null && after.getKey() < x.endPage() && after.getKey() != x.firstPage()) {
            overlapFound = true;
            problem("pages " + x + " of " + who + " overlap pages " + after.getValue().extent() + " of " + after.getValue().owner());
        }
        owners.merge(x.firstPage(), new Owned(x, who), (had, now) -> had.extent().pageCount() >= now.extent().pageCount() ? had : now);
    }

    /**
     * What a page problem of {@code version} may mean besides damage, when an open's own check finds its pages lost too:
     * written after the last flush of a run that ended uncleanly, they may be lost to a power loss while its index entry
     * stayed. The node's next open sets the copy aside to be rebuilt from lob.commands: no restore needed.
     */
    private String tornHint(long version) {
        if (!lostAtTheEnd.containsKey(version)) {
            return "";
        }
        saidLost.add(version);
        return TORN_HINT;
    }

    private static final String TORN_HINT = " (written after the last flush of a run that ended uncleanly: a power loss may "
            + "have taken it, not the disk; a node's open finds this and rebuilds the copy from lob.commands)";

    private void problem(String p) {
        if (problems.size() < MAX_PROBLEMS) {
            problems.add(p);
        }
    }
}
