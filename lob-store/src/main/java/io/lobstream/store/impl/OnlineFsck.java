package io.lobstream.store.impl;

import io.lobstream.store.allocator.Extent;
import io.lobstream.store.allocator.PageAllocator;
import io.lobstream.store.fsck.Fsck;
import io.lobstream.store.fsck.FsckReport;
import io.lobstream.store.index.LobIndex;
import io.lobstream.store.index.PageWriters;
import io.lobstream.store.index.VersionEntry;
import io.lobstream.store.layout.VersionReader;
import io.lobstream.store.tablespace.PageFile;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongUnaryOperator;

/**
 * fsck of an open tablespace: {@link Fsck}'s check of its structure under the exclusive latch, which every writer and
 * reader of the index waits for, and for {@link #fsckOnline} a check of every live value's data pages after it, each
 * version pinned for readers as a read pins it, while writes go on.
 */
final class OnlineFsck {
    private final Path dir;
    private final PageFile file;
    private final LobIndex index;
    private final PageAllocator allocator;
    private final DurableFrees frees;
    /** The store's pages of versions written and not yet published, in flight (see DefaultLobStore). */
    private final Map<Long, List<Extent>> unpublished;
    private final OpenLatches open;
    private final Reclaimer reclaimer;
    /** fscks holding, or waiting for, the exclusive latch ({@link #checking}). */
    private final AtomicInteger checks = new AtomicInteger();

    OnlineFsck(Path dir, PageFile file, LobIndex index, PageAllocator allocator, DurableFrees frees, Map<Long, List<Extent>> unpublished,
               OpenLatches open, Reclaimer reclaimer) {
        this.dir = dir;
        this.file = file;
        this.index = index;
        this.allocator = allocator;
        this.frees = frees;
        this.unpublished = unpublished;
        this.open = open;
        this.reclaimer = reclaimer;
    }

    /** See {@link io.lobstream.store.LobStore#fsck(boolean)}. */
    FsckReport fsck(boolean readData) throws IOException {
        checks.incrementAndGet(); // waiting for the latch too: a read begun meanwhile would wait behind it
        try (Latches.Held latch = open.exclusive()) {
            return Fsck.withMarkers(fsckHeld(readData), dir);
        } finally {
            checks.decrementAndGet();
        }
    }

    /** Whether an fsck holds, or waits for, the exclusive latch. */
    boolean checking() {
        return checks.get() > 0;
    }

    /** The check, under the exclusive latch the caller holds. */
    private FsckReport fsckHeld(boolean readData) throws IOException {
        List<Extent> free = new ArrayList<>(allocator.freeExtents());
        free.addAll(frees.waiting());
        return new Fsck(file, index, free, List.copyOf(unpublished.values()), allocator.highWaterMark(), readData).run();
    }

    /** See {@link io.lobstream.store.LobStore#fsckOnline()}. */
    FsckReport fsckOnline() throws IOException {
        List<String> live = new ArrayList<>();
        FsckReport structure;
        checks.incrementAndGet();
        try (Latches.Held latch = open.exclusive()) {
            structure = fsckHeld(false);
            index.forEachCurrent(e -> live.add(e.lobId()));
        } finally {
            checks.decrementAndGet();
        }
        List<String> problems = new ArrayList<>();
        long[] pagesRead = new long[1];
        int room = Math.max(0, Fsck.MAX_PROBLEMS - structure.problems().size());
        for (int i = 0; i < live.size() && problems.size() < room; i++) {
            Optional<Pins.Pin> pinned = reclaimer.pinCurrent(live.get(i));
            if (pinned.isEmpty()) {
                continue; // deleted since
            }
            VersionEntry e = pinned.get().entry();
            String who = "live " + e.lobId() + "@" + e.version(); // as Fsck names it
            try {
                if (structure.problems().stream().anyMatch(p -> p.startsWith(who + ":") || p.startsWith(who + " owns pages"))) {
                    continue; // its root or index pages failed in the first part, or its pages are past the file's end: reported once
                }
                Optional<String> problem = liveDataProblem(e, pagesRead);
                // a pin held past lob.read.pin.max.ms no longer keeps the pages of a version replaced meanwhile: those
                // may be another's now. A current version's pages are never freed: what it fails on is damage.
                if (problem.isPresent() && currentVersion(e.lobId()) == e.version()) {
                    problems.add(who + ": " + problem.get());
                }
            } finally {
                reclaimer.unpin(pinned.get());
            }
        }
        FsckReport data = new FsckReport(problems.isEmpty(), 0, 0, 0, 0, 0, 0, 0, pagesRead[0], problems);
        return Fsck.withMarkers(structure.plus(data), dir);
    }

    private long currentVersion(String lobId) throws IOException {
        try (Latches.Held latch = open.shared()) {
            return index.current(lobId).map(VersionEntry::version).orElse(-1L);
        }
    }

    /** fsck's data pass over {@code e}, which the caller pins: what is wrong (naming the page), or empty. */
    private Optional<String> liveDataProblem(VersionEntry e, long[] pagesRead) throws IOException {
        try {
            // its root and index pages were counted by the structure pass
            VersionReader r = VersionReader.open(file, e.lobId(), e.version(), e.rootPage(), VersionReader.PageReadListener.NONE)
                    .withListener(page -> pagesRead[0]++);
            LongUnaryOperator writtenBy;
            try (Latches.Held latch = open.shared()) { // the index, which close excludes
                writtenBy = PageWriters.of(e, r.dataExtents(), index, version -> true);
            }
            return Fsck.checkData(e, r, writtenBy);
        } catch (IOException ex) {
            if (open.closed()) {
                throw open.closedException(); // the page file closed under the read: not a page that failed
            }
            return Optional.of(ex.getMessage());
        } catch (RuntimeException ex) {
            // a root or index page whose fields pass their CRC but make no sense, as Fsck reports it
            return Optional.of("root page " + e.rootPage() + ": " + ex);
        }
    }
}
