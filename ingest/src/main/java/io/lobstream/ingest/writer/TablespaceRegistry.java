package io.lobstream.ingest.writer;

import io.lobstream.store.LobStore;
import io.lobstream.store.StoreStats;
import io.lobstream.store.fsck.FsckReport;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.Optional;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The tablespaces open on this node, by partition: the writer tasks register theirs, the HTTP
 * read API and status look them up.
 */
public final class TablespaceRegistry {
    private final Map<Integer, LobStore> open = new ConcurrentHashMap<>();
    /** When each partition's task last asked to open its tablespace ({@link LobStateStore#init}), in nanos. */
    private final Map<Integer, Long> asked = new ConcurrentHashMap<>();
    private final Set<LobStateStore> stateStores = ConcurrentHashMap.newKeySet();
    /** When a task whose tablespace failed it may start again. */
    private final TaskRetries retries = new TaskRetries();
    /** Runs the syncs of a commit side by side; idle threads go after a minute. */
    private final ExecutorService syncers = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "lob-sync");
        t.setDaemon(true);
        return t;
    });

    void register(LobStateStore s) {
        stateStores.add(s);
    }

    void unregister(LobStateStore s) {
        stateStores.remove(s);
    }

    /**
     * Makes durable, side by side, {@code first} and every other tablespace {@code thread} has
     * written since its last sync: a commit then waits for the slowest pair of fsyncs instead of
     * the sum of them all. Throws {@code first}'s own failure as an {@link IOException}; another's
     * is charged to that one's task ({@link LobStateStore#failed}), whose partition it names, and
     * thrown as an {@link UncheckedIOException}, the commit failing either way.
     */
    void syncWrittenBy(Thread thread, LobStateStore first) throws IOException {
        Map<LobStateStore, CompletableFuture<Void>> running = new LinkedHashMap<>();
        for (LobStateStore s : stateStores) {
            LobStore st = s.writer() == thread && s != first ? s.peek() : null;
            if (st != null && st.needsSync()) {
                running.put(s, CompletableFuture.runAsync(() -> {
                    try {
                        st.flush();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }, syncers));
            }
        }
        IOException own = null;
        try {
            first.peek().flush();
        } catch (IOException e) {
            own = e;
        }
        RuntimeException another = null;
        for (Map.Entry<LobStateStore, CompletableFuture<Void>> f : running.entrySet()) {
            try {
                f.getValue().join();
            } catch (CompletionException e) {
                IOException io = e.getCause() instanceof UncheckedIOException u ? u.getCause()
                        : new IOException("tablespace sync failed", e.getCause());
                RuntimeException theirs = f.getKey().failed(new UncheckedIOException("partition " + f.getKey().partition() + ": commit", io));
                if (own != null) {
                    own.addSuppressed(theirs);
                } else if (another == null) {
                    another = theirs;
                } else {
                    another.addSuppressed(theirs);
                }
            }
        }
        if (own != null) {
            throw own;
        }
        if (another != null) {
            throw another;
        }
    }

    void register(int partition, LobStore store) {
        open.put(partition, store);
    }

    void unregister(int partition, LobStore store) {
        open.remove(partition, store);
    }

    /** A task of {@code partition} asks to open its tablespace (again, while it waits: a failed task's pause, a catch-up). */
    void asked(int partition, long nanos) {
        asked.put(partition, nanos);
    }

    /**
     * The partitions this node uses now: their tablespaces open, or asked for within {@link TablespaceCatchUp#MOVED_AFTER}.
     * A task that waits asks again at each try, Kafka Streams backing off up to 10 s between tries; one that went to
     * another node asks no more.
     */
    public Set<Integer> inUse(long nanos) {
        Set<Integer> out = new java.util.TreeSet<>(open.keySet());
        asked.forEach((p, at) -> {
            if (nanos - at <= TablespaceCatchUp.MOVED_AFTER.toNanos()) {
                out.add(p);
            }
        });
        return out;
    }

    public Optional<LobStore> get(int partition) {
        return Optional.ofNullable(open.get(partition));
    }

    public SortedMap<Integer, LobStore> all() {
        return new TreeMap<>(open);
    }

    /** fsck of every open tablespace, summed; {@code readData}: the data pages' checksums too. */
    public FsckReport fsckAll(boolean readData) throws IOException {
        FsckReport total = FsckReport.empty();
        for (LobStore s : all().values()) {
            total = total.plus(s.fsck(readData));
        }
        return total;
    }

    public StoreStats totals() {
        StoreStats t = StoreStats.empty();
        for (LobStore s : open.values()) {
            t = t.plus(s.stats());
        }
        return t;
    }

    /**
     * The totals once the tablespaces' size has stopped changing for {@code quiet} (at most
     * {@code max}): after a burst, compaction and the commits that cut the tails it frees take a
     * few compaction intervals ({@code lob.compact.interval.ms}: a command or a reclaim keeps it below 10 s for five
     * runs after it); pick {@code quiet} longer than one.
     */
    public StoreStats settledTotals(Duration quiet, Duration max) throws InterruptedException {
        StoreStats last = totals();
        long stableSince = System.nanoTime();
        long deadline = stableSince + max.toNanos();
        while (System.nanoTime() - stableSince < quiet.toNanos() && System.nanoTime() < deadline) {
            Thread.sleep(100);
            StoreStats now = totals();
            if (now.tablespaceBytes() != last.tablespaceBytes()) {
                stableSince = System.nanoTime();
            }
            last = now;
        }
        return last;
    }

    TaskRetries retries() {
        return retries;
    }

    /** Writer tasks that failed here since the node started, counted as {@code cause} (one of {@link TaskRetries#CAUSES}). */
    public long taskFailures(String cause) {
        return retries.failures(cause);
    }

    /** The partitions whose task failed here and has not started since (see {@link TaskRetries#waiting}). */
    public List<TaskFailure> waitingTasks() {
        return retries.waiting(System.nanoTime());
    }
}
