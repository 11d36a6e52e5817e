package io.lobstream.store.purge;

import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.allocator.Extent;
import io.lobstream.store.layout.VersionReader;
import io.lobstream.store.page.CorruptPageException;
import io.lobstream.store.page.PageType;
import io.lobstream.store.page.StalePageException;
import io.lobstream.store.page.UnwrittenPageException;
import io.lobstream.store.tablespace.PageFile;
import io.lobstream.store.tablespace.TablespaceDescriptor;
import io.lobstream.store.tablespace.TablespaceDirs;

import java.io.Closeable;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * The engine's page-reading API for purge: given superseded versions (lobId, version, root
 * page), finds the pages each owns by reading its root and index pages. It opens the page file
 * read-only and never writes it; superseded versions are immutable until reclaimed, so it
 * takes no latch.
 * <ul>
 *   <li>{@code lob.purge.skip.load} on: DATA pages are never read; off: each is read and its
 *       header and CRC verified before the version is reported reclaimable.</li>
 *   <li>{@code lob.purge.prefetch} on: the next {@code lob.purge.prefetch.window} versions are
 *       read asynchronously, ahead of the caller; off: one synchronous read at a time.</li>
 * </ul>
 */
public final class PurgeReader implements Closeable {
    private final PageFile file;
    /** The copy whose pages this reads (null: a tablespace from before copy ids, never opened by a writer since). */
    private final String copyId;
    private final boolean skipLoad;
    private final boolean prefetch;
    private final int window;
    private final long readLatencyNanos;
    /** The prefetch reads' threads (null without prefetch); shut down by {@link #close} only if this reader made them. */
    private final ExecutorService io;
    private final boolean ownsIo;
    private final LongAdder[] pagesRead = new LongAdder[PageType.values().length];
    private final AtomicInteger inFlight = new AtomicInteger();

    /**
     * One superseded version to scan.
     *
     * @param retained pages its root and index pages name that its successor now owns (shared by a partial
     *                 update): not reported
     */
    public record Request(String lobId, long version, long rootPage, List<Extent> retained) {
        public Request {
            retained = List.copyOf(retained);
        }
    }

    /**
     * The pages found, or the reason none are reported.
     *
     * @param stale the version's root or index page now belongs to something else, or was cut away by
     *              a shrink (past the end of the file, or never written since it grew back): the version
     *              was reclaimed already (an undo record seen again after a crash or a tablespace reopened)
     */
    public record Result(Request request, List<Extent> extents, IOException failure, boolean stale) {
        public boolean ok() {
            return failure == null;
        }
    }

    /**
     * Whether an undo record produced by copy {@code undoCopyId} names pages of this copy: one of
     * another copy (the partition's earlier owner, or a copy this one replaced) names pages that
     * hold something else here. Records without a copy id, or a tablespace without one, are
     * taken as this copy's.
     */
    public boolean ownCopy(String undoCopyId) {
        return undoCopyId == null || undoCopyId.isEmpty() || copyId == null || copyId.equals(undoCopyId);
    }

    /**
     * Whether a record of copy {@code undoCopyId} says the tablespace may have been replaced since this reader opened it:
     * it names another copy, or a copy where this reader knows of none (opened before the node gave the tablespace an id,
     * it would take every later copy's records for its own, and read them in the replaced file).
     */
    public boolean mayBeReplacedBy(String undoCopyId) {
        return undoCopyId != null && !undoCopyId.isEmpty() && !undoCopyId.equals(copyId);
    }

    /**
     * A reader with prefetch threads of its own (with {@code lob.purge.prefetch}), shut down by {@link #close}.
     *
     * @param readLatencyNanos added to every page read, to model remote block storage in benchmarks (0 = none)
     */
    public PurgeReader(Path tablespaceDir, LobStoreConfig config, long readLatencyNanos) throws IOException {
        this(tablespaceDir, config, readLatencyNanos, config.purgePrefetch() ? prefetchThreads(config) : null, true);
    }

    /**
     * A reader whose prefetch reads run on {@code prefetchThreads}, which the caller shares between the readers it
     * scans with one after another (one window of threads, not one per tablespace) and shuts down itself.
     */
    public PurgeReader(Path tablespaceDir, LobStoreConfig config, long readLatencyNanos, ExecutorService prefetchThreads)
            throws IOException {
        this(tablespaceDir, config, readLatencyNanos, config.purgePrefetch() ? Objects.requireNonNull(prefetchThreads, "prefetchThreads")
                : null, false);
    }

    private PurgeReader(Path tablespaceDir, LobStoreConfig config, long readLatencyNanos, ExecutorService io, boolean ownsIo)
            throws IOException {
        TablespaceDescriptor descriptor = TablespaceDescriptor.read(tablespaceDir);
        this.copyId = descriptor.copyId();
        this.skipLoad = config.purgeSkipLoad();
        this.prefetch = config.purgePrefetch();
        this.window = config.purgePrefetchWindow();
        this.readLatencyNanos = readLatencyNanos;
        this.io = io;
        this.ownsIo = ownsIo;
        try {
            this.file = PageFile.openReadOnly(tablespaceDir.resolve(TablespaceDirs.PAGES), descriptor.pageSize());
        } catch (IOException | RuntimeException e) {
            if (ownsIo && io != null) {
                io.shutdownNow();
            }
            throw e;
        }
        for (int i = 0; i < pagesRead.length; i++) {
            pagesRead[i] = new LongAdder();
        }
    }

    /**
     * Threads for the prefetch reads of {@code lob.purge.prefetch.window} versions: daemons, which let go when idle
     * for a minute (a worker that purges nothing holds none).
     */
    public static ExecutorService prefetchThreads(LobStoreConfig config) {
        int window = config.purgePrefetchWindow();
        ThreadPoolExecutor pool = new ThreadPoolExecutor(window, window, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
            Thread t = new Thread(r, "purge-prefetch");
            t.setDaemon(true);
            return t;
        });
        pool.allowCoreThreadTimeOut(true);
        return pool;
    }

    /** The copy whose pages this reads ({@link TablespaceDescriptor#copyId()}); null for a tablespace from before copy ids. */
    public String copyId() {
        return copyId;
    }

    /** Scans every request; results come back in request order. */
    public List<Result> scan(List<Request> requests) {
        return scan(requests, () -> false);
    }

    /**
     * Scans a prefix of the requests: all of them, unless {@code stop} says so before one is
     * started (it is asked before each but the first, so at least one is scanned). Results come back
     * in request order. With prefetch it is asked too before the wait for a scan started ahead (not
     * the first) that has not finished; once it says so, that scan and those after it are given up
     * (each stops at its next page read, or before its first) and left out: a window of large
     * versions, read whole without skip-load, would otherwise keep the caller long past the stop. A purge worker stops so, at a deadline, to commit before its
     * transaction times out; what is left out is read again after the commit.
     */
    public List<Result> scan(List<Request> requests, BooleanSupplier stop) {
        List<Result> out = new ArrayList<>(requests.size());
        if (!prefetch) {
            for (Request r : requests) {
                if (!out.isEmpty() && stop.getAsBoolean()) {
                    break;
                }
                out.add(scanOne(r, () -> false));
            }
            return out;
        }
        // keep up to `window` scans in flight ahead of the one being collected
        List<CompletableFuture<Result>> inFlight = new ArrayList<>();
        AtomicBoolean givenUp = new AtomicBoolean();
        boolean stopped = false;
        int next = 0;
        for (int i = 0; ; i++) {
            while (!stopped && next < requests.size() && next < i + window) {
                if (next > 0 && stop.getAsBoolean()) {
                    stopped = true;
                    break;
                }
                Request r = requests.get(next++);
                this.inFlight.incrementAndGet();
                inFlight.add(CompletableFuture.supplyAsync(() -> {
                    try {
                        return scanOne(r, givenUp::get);
                    } finally {
                        this.inFlight.decrementAndGet();
                    }
                }, io));
            }
            if (i == next) {
                break; // every scan started is collected
            }
            // asked here too: with every scan started (a batch no longer than the window) the loop above asks no more
            if (i > 0 && !inFlight.get(i).isDone() && (stopped || stop.getAsBoolean())) {
                givenUp.set(true);
                break;
            }
            out.add(join(inFlight.get(i)));
        }
        return out;
    }

    /** A prefetched scan's result; an {@link Error} in it (scanOnce catches the rest) thrown as itself, as without prefetch. */
    private static Result join(CompletableFuture<Result> scan) {
        try {
            return scan.join();
        } catch (CompletionException e) {
            if (e.getCause() instanceof Error error) {
                throw error;
            }
            throw e;
        }
    }

    /**
     * A page that fails its check is read once more before the version is reported corrupt: purge reads
     * without latches, and a duplicate undo record's root may be a page the writer is rewriting for
     * another version right then (a torn read; the second read sees the page whole, and stale).
     */
    private Result scanOne(Request r, BooleanSupplier givenUp) {
        Result first = scanOnce(r, givenUp);
        return first.ok() || first.stale() || givenUp.getAsBoolean() ? first : scanOnce(r, givenUp);
    }

    private Result scanOnce(Request r, BooleanSupplier givenUp) {
        if (givenUp.getAsBoolean()) { // queued when given up: not a page read
            return new Result(r, List.of(), new IOException("scan given up"), false);
        }
        try {
            VersionReader reader = VersionReader.open(file, r.lobId(), r.version(), r.rootPage(), type -> pageRead(type, givenUp));
            if (!skipLoad) {
                reader.verifyDataPages(r.retained());
            }
            return new Result(r, Extent.subtract(reader.allPages(), r.retained()), null, false);
        } catch (java.io.EOFException e) {
            // only a free page can lie past the end of the file (cut by a tablespace shrink): the version was reclaimed
            return new Result(r, List.of(), new IOException("stale page: " + e.getMessage(), e), true);
        } catch (StalePageException | UnwrittenPageException e) {
            // unwritten: the root's page was cut by a shrink and the file grew back over it since
            return new Result(r, List.of(), e, true);
        } catch (IOException e) {
            return new Result(r, List.of(), e, false);
        } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
            // retained pages that the version does not reference, a page number past any file: the version's pages do not
            // match its undo record. Not the disk's error (the purger counts those apart, for a disk check)
            return new Result(r, List.of(), new CorruptPageException(r.rootPage(), "the version's pages do not match its undo "
                    + "record: " + e), false);
        } catch (RuntimeException e) { // the scan given up (its result is never collected), or a bug's: said as it is
            return new Result(r, List.of(), new IOException(e.toString(), e), false);
        }
    }

    private void pageRead(PageType type, BooleanSupplier givenUp) {
        if (givenUp.getAsBoolean()) {
            throw new CancellationException("scan given up: the purge batch stopped before its turn");
        }
        pagesRead[type.ordinal()].increment();
        if (readLatencyNanos > 0) {
            LockSupport.parkNanos(readLatencyNanos);
        }
    }

    /** Prefetch window occupancy: versions whose page reads are in flight now (0 with prefetch off). */
    public int inFlight() {
        return inFlight.get();
    }

    /** The prefetch window: versions read ahead at most (0 with prefetch off). */
    public int window() {
        return prefetch ? window : 0;
    }

    public long pagesRead(PageType type) {
        return pagesRead[type.ordinal()].sum();
    }

    @Override
    public void close() {
        if (ownsIo && io != null) {
            io.shutdownNow();
        }
        try {
            file.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
