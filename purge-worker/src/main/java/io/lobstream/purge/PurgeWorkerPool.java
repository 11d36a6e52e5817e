package io.lobstream.purge;

import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LobStoreConfig;
import io.micrometer.core.instrument.MeterRegistry;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.IntFunction;
import java.util.function.Supplier;

/**
 * Purge workers run as threads of one process, {@code purge-0} … {@code purge-N-1}, with ids
 * {@code PREFIX-0} … : inside a writer node, following its partitions, or as subscribed members
 * of the purge group. Closing stops them all and waits for each to end its transaction.
 */
public final class PurgeWorkerPool implements AutoCloseable {
    /**
     * How long closing waits for the workers' threads, all together (each closes its consumer and producer, 5 s each at
     * most): one blocked in a producer call with the cluster away waits out max.block.ms, and a wait per worker would add
     * up past the node's close budget (README: 30 s).
     */
    private static final long JOIN_MILLIS = 15_000;

    private final List<PurgeWorker> workers = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();
    /** Inside a node with workers: whether standalone workers are in the purge group; null otherwise. */
    private final PurgeGroupWatch watch;
    private final CompletableFuture<String> stopped = new CompletableFuture<>();
    private volatile boolean closed;

    private PurgeWorkerPool(int count, IntFunction<PurgeWorker> worker, PurgeGroupWatch watch) {
        this.watch = watch;
        try {
            for (int i = 0; i < count; i++) {
                workers.add(worker.apply(i));
            }
            for (int i = 0; i < count; i++) {
                PurgeWorker w = workers.get(i);
                Thread t = new Thread(() -> {
                    try {
                        w.run();
                    } catch (RuntimeException | Error e) { // past the worker's own retries: its share would go unpurged
                        if (!closed) {
                            stopped.complete("purge worker " + w.workerId() + " stopped: " + e);
                        }
                        throw e; // for the thread's uncaught handler, which logs it with its stack
                    }
                }, "purge-" + i);
                t.start();
                threads.add(t);
            }
        } catch (RuntimeException | Error e) {
            close(); // those running end their transaction; those that never ran let go of their clients
            throw e;
        }
    }

    /**
     * {@code count} workers inside a writer node: each purges its share of the partitions {@code open} returns, but those
     * that standalone workers in the purge group hold and purge ({@link PurgeGroupWatch}).
     */
    public static PurgeWorkerPool following(LobStreamConfig config, LobStoreConfig storeConfig, String idPrefix, MeterRegistry meters,
                                            Supplier<Set<Integer>> open, int count) {
        if (count < 0) {
            throw new IllegalArgumentException("count " + count);
        }
        if (count == 0) { // --purge-workers 0: nothing to stand down, and no admin client
            return new PurgeWorkerPool(0, i -> null, null);
        }
        PurgeGroupWatch watch = new PurgeGroupWatch(config, open);
        PurgeShares shares = new PurgeShares(() -> {
            Set<Integer> mine = new HashSet<>(open.get());
            mine.removeAll(watch.standDownFrom());
            return mine;
        }, count);
        return new PurgeWorkerPool(count, i -> PurgeWorker.following(config, storeConfig, idPrefix + "-" + i, meters, () -> shares.of(i)),
                watch);
    }

    /** {@code count} members of the purge group, which splits the partitions between them. */
    public static PurgeWorkerPool subscribed(LobStreamConfig config, LobStoreConfig storeConfig, String idPrefix, MeterRegistry meters,
                                             int count) {
        return new PurgeWorkerPool(count, i -> PurgeWorker.subscribed(config, storeConfig, idPrefix + "-" + i, 0, meters), null);
    }

    /**
     * Completes with why, if a worker's thread ends on its own before {@link #close}: an {@link Error} past its retries.
     * Inside a node its share of the partitions would then go unpurged, history growing until backpressure slowed every
     * write, with nothing said; a node waits on this beside its writer, and exits 1 for a supervisor to restart it, as a
     * standalone purge process does.
     */
    public CompletableFuture<String> stopped() {
        return stopped;
    }

    public List<PurgeWorker> workers() {
        return List.copyOf(workers);
    }

    /** The partitions these workers, inside a node, leave to standalone workers in the purge group. */
    public Set<Integer> standingDownFrom() {
        return watch == null ? Set.of() : watch.standDownFrom();
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        workers.forEach(PurgeWorker::close);
        try {
            long end = System.nanoTime() + JOIN_MILLIS * 1_000_000;
            for (Thread t : threads) {
                t.join(Math.max(1, (end - System.nanoTime()) / 1_000_000));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (watch != null) {
            watch.close();
        }
    }
}
