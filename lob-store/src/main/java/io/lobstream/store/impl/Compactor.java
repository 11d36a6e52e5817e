package io.lobstream.store.impl;

import io.lobstream.store.StoreStats;
import io.lobstream.store.ValueChecksumException;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.page.CorruptPageException;
import io.lobstream.store.tablespace.PageReadException;
import io.lobstream.store.tablespace.PageWriteRefusedException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.EOFException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.PriorityQueue;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * Tablespace compaction: the policy that decides when and which versions
 * {@link DefaultLobStore#relocate} moves.
 *
 * <p>A shrink gives back only the free run at the end of the page file. Purge frees versions
 * wherever they lie, so after a burst of updates the file keeps the holes left by the last
 * versions reclaimed, behind live versions written while the file was at its peak. When those
 * holes pass {@code lob.compact.min.free.ratio} of the live pages (and {@code lob.shrink.min.pages}), a run moves the versions that
 * reach highest in the file, highest first, each into the lowest free pages below its last page,
 * about {@code lob.compact.max.pages} pages in all (whole versions, so a call may go past it by a version's pages; a
 * version of more pages than that is never moved, nor those below it, which would free nothing at the end). The pages
 * it leaves are at the end of the file,
 * and the next {@code flush()} cuts them. Every move lowers the last page of a version, so
 * repeated runs converge even when some versions cannot move (no room below, or history pending).
 * A reader's pin does not stop a move: it keeps the old copy's pages until the reader lets go.
 *
 * <p>A run moves anything only if no version was written since the previous run: under load the
 * first-fit allocator refills the lowest holes by itself, and moving versions that are about to be
 * rewritten would only add writes (in {@code bench history} it cost a quarter of the throughput).
 *
 * <p>Finding the highest versions scans the index's current versions, at most {@link #SCAN_MAX} of them a run: a
 * pass over more spans runs (ten million LOBs took seconds a pass, every run, on the stream thread); it goes on only
 * in runs with no write since the last, but is not started again by one (a candidate it found is moved only if it is
 * still current). Runs happen only while the holes are above the threshold, and not again after a run that moved
 * nothing until a write, or pages freed (a purge, an unpin), may let one move. With {@code lob.shrink.min.pages} 0
 * (the file never shrinks) there are none.
 *
 * <p>A run also stops between moves once it has taken {@link #RUN_BUDGET_MS}: each move forces the page file and syncs
 * the index's log, two or three fsyncs, so 512 one-page values could take seconds on a slow disk; the run holds the
 * writer's stream thread, whose other tasks share its open transaction (10 s timeout under exactly-once). The next
 * run goes on from there, with the candidates this one left.
 */
final class Compactor {
    /** The longest a run goes on moving: a fifth of the node's default compaction interval (lob.compact.interval.ms). */
    static final long RUN_BUDGET_MS = 200;
    /** Current versions a run reads at most (about 0.1-0.2 s here): a pass over more goes on at the next runs. */
    static final int SCAN_MAX = 100_000;

    private static final Logger log = LoggerFactory.getLogger(Compactor.class);

    private final DefaultLobStore store;
    private final double minFreeRatio;
    private final long minFreePages;
    private final int maxPages;
    private final long runBudgetNanos;
    private final int scanMax;
    /** The pass over the current versions under way (null: none): the highest found so far, and the last LOB read. */
    private Pass pass;
    /** The candidates a run that stopped on its budget left, highest first: the next run moves them without a new pass. */
    private List<VersionEntry> queued = List.of();
    /** Whether the pass that gave the candidates of this run was read across a write. */
    private boolean lastPassSpannedWrite;
    /** Versions the store had issued when the previous run ended: unchanged means no write since. */
    private long versionsSeen = -1;
    /**
     * The pages as a run on an idle store that moved nothing found them (null: none did): the top of the file is values
     * with no room below, pending purge or pinned. Until a write comes or the pages change (a purge or an unpin frees
     * some, below the end or at it: a version freed next to the free tail leaves the holes as they were), a run would
     * scan every current version to find the same, each interval, for as long as the node stays idle.
     */
    private Pages atFruitlessRun;

    /**
     * What a run's outcome depends on, besides the versions written: live pages too, as an upload's last chunk publishes
     * a LOB with the number and pages it took at its first, changing neither those nor the versions issued.
     */
    private record Pages(long holes, long free, long history, long live) {
    }
    /** Versions with a page that failed its check when read to be moved ("lobId@version"): left where they are. */
    private final Set<String> unreadable = new HashSet<>();

    /**
     * @param minFreePages holes smaller than this are never worth a run (the shrink threshold: a smaller
     *                     free tail would not be cut either)
     */
    Compactor(DefaultLobStore store, double minFreeRatio, long minFreePages, int maxPages) {
        this(store, minFreeRatio, minFreePages, maxPages, TimeUnit.MILLISECONDS.toNanos(RUN_BUDGET_MS));
    }

    Compactor(DefaultLobStore store, double minFreeRatio, long minFreePages, int maxPages, long runBudgetNanos) {
        this(store, minFreeRatio, minFreePages, maxPages, runBudgetNanos, SCAN_MAX);
    }

    Compactor(DefaultLobStore store, double minFreeRatio, long minFreePages, int maxPages, long runBudgetNanos, int scanMax) {
        this.scanMax = scanMax;
        this.store = store;
        this.minFreeRatio = minFreeRatio;
        this.minFreePages = minFreePages;
        this.maxPages = maxPages;
        this.runBudgetNanos = runBudgetNanos;
    }

    /** @return the pages moved */
    long run() throws IOException {
        boolean idle = store.nextVersion() == versionsSeen;
        versionsSeen = store.nextVersion();
        // lob.shrink.min.pages 0: the file never shrinks, so a move would only rewrite a value
        if (maxPages <= 0 || minFreePages <= 0) {
            return 0;
        }
        if (!idle) {
            // the pass under way, and the candidates a run left, are kept: a write between two runs of a pass over many
            // LOBs would otherwise start it again, and a partition that is never idle for that long never compacts;
            // relocate() moves a candidate only if it is still the current version, with no history
            atFruitlessRun = null;
            if (pass != null) {
                pass.spannedWrite = true;
            }
            return 0;
        }
        Pages pages = pagesNow();
        if (pages.equals(atFruitlessRun) || pages.holes() < Math.max(minFreePages, minFreeRatio * pages.live())) {
            pass = null;
            queued = List.of();
            return 0;
        }
        long moved = 0;
        int moves = 0;
        // candidates a run left, or a pass read across writes, may all be out of date: their moving nothing says nothing of
        // the top of the file, and is no fruitless run (which would stop the runs until a write); the next pass will say
        boolean fresh = queued.isEmpty();
        List<VersionEntry> candidates = fresh ? highest() : queued;
        fresh &= !lastPassSpannedWrite;
        queued = List.of();
        if (candidates == null) {
            return 0; // the pass goes on at the next run
        }
        long start = System.nanoTime(); // after the index scan: the budget is the moves', not the scan's (long on many LOBs)
        for (int i = 0; i < candidates.size(); i++) {
            VersionEntry e = candidates.get(i);
            if (moves > 0 && System.nanoTime() - start >= runBudgetNanos) {
                queued = List.copyOf(candidates.subList(i, candidates.size())); // the rest at the next run, without a new pass
                break;
            }
            String key = e.lobId() + "@" + e.version();
            if (unreadable.contains(key)) {
                continue;
            }
            long relocated;
            try {
                relocated = store.relocate(e); // -1: no room below it; a smaller one may still fit
            } catch (CorruptPageException | EOFException | PageReadException | ValueChecksumException damaged) {
                // a page gone bad or that the device fails to read, past the end of a file restored short, or bytes that no
                // longer match the value's CRC32C: its reads fail too (fsck names the page). Failing the run would fail the
                // writer's task at every run, for as long as nobody writes the value, and move nothing below it either
                unreadable.add(key);
                log.error("compaction of {}: {} version {} cannot be read to be moved, and stays where it is: {}", store.name(),
                        e.lobId(), e.version(), damaged.getMessage());
                continue;
            } catch (PageWriteRefusedException full) {
                // The move's page write refused for room: its pages were given back (VersionPages), and nothing else
                // changed. Not the index refusing a write, nor a failed sync: those fail the task, as the store must close.
                // A run is maintenance: failing the writer's task for it would fail, every second, a partition no command
                // comes to, and close the other tasks of its thread with it. Runs stop as after one that moved nothing,
                // until a write or a purge
                log.warn("compaction of {} stopped: the disk is full ({}); it runs again after the next write or purge",
                        store.name(), full.getMessage());
                atFruitlessRun = pagesNow();
                queued = List.of();
                versionsSeen += moves + 1; // the failed move issued a version too: no write of a LOB
                return moved;
            }
            if (relocated > 0) {
                moved += relocated;
                moves++;
            }
        }
        versionsSeen += moves; // its own moves are not writes; a write made meanwhile by another thread still counts
        atFruitlessRun = moved == 0 && fresh ? pages : null;
        return moved;
    }

    private Pages pagesNow() {
        StoreStats stats = store.stats();
        return new Pages(store.holePages(), stats.pagesFree(), stats.pagesHistory(), stats.pagesLive());
    }

    /**
     * The current versions whose last page is highest, highest first, about {@link #maxPages} pages of them; null while
     * the pass that finds them has more to read (a run reads {@link #scanMax} of them).
     */
    private List<VersionEntry> highest() {
        if (pass == null) {
            pass = new Pass();
        }
        String last = store.forEachCurrentAfter(pass.after, scanMax, pass::add);
        if (last != null) {
            pass.after = last;
            return null;
        }
        List<VersionEntry> out = new ArrayList<>(pass.top);
        // a version the pass left, too large to move, keeps the file's end at its last page: moving the versions below it
        // would free nothing a flush can cut (the allocator reuses holes anyway), and cost two or three fsyncs each
        long pinnedEnd = pass.tooLargeEnd;
        out.removeIf(e -> endPage(e) <= pinnedEnd);
        lastPassSpannedWrite = pass.spannedWrite;
        pass = null;
        out.sort(Comparator.comparingLong(Compactor::endPage).reversed());
        return out;
    }

    /** A pass over the current versions: those whose last page is highest, about {@link #maxPages} pages of them. */
    private final class Pass {
        private final PriorityQueue<VersionEntry> top = new PriorityQueue<>(Comparator.comparingLong(Compactor::endPage));
        private long pages;
        /** The last LOB read (null: none yet). */
        private String after;
        /** Whether a version was written between two of its runs: what it found may be out of date. */
        private boolean spannedWrite;
        /** The highest last page of the versions it left as too large to move (-1: none). */
        private long tooLargeEnd = -1;

        void add(VersionEntry e) {
            if (e.pageCount() > maxPages) {
                // moved whole, a value of a GiB would hold the writer's stream thread for seconds (read, CRC check, write,
                // fsync: past the transaction timeout its thread's other tasks share on a slow disk). It stays; the holes
                // below it take new writes first (first fit), and the file cannot end below it until it is rewritten or
                // deleted
                tooLargeEnd = Math.max(tooLargeEnd, endPage(e));
                return;
            }
            top.add(e);
            pages += e.pageCount();
            while (pages - top.peek().pageCount() >= maxPages) {
                pages -= top.poll().pageCount();
            }
        }
    }

    /** Whether a pass is under way: its scan has more to read, or its candidates more to move (at the next runs). */
    boolean underWay() {
        return pass != null || !queued.isEmpty();
    }

    /** The page past {@code e}'s last: how high in the file it reaches. */
    static long endPage(VersionEntry e) {
        return e.extents().stream().mapToLong(Extent::endPage).max().orElse(e.rootPage() + 1);
    }
}
