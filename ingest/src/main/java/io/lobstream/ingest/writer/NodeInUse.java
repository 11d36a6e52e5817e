package io.lobstream.ingest.writer;

import io.lobstream.store.LogOncePerMinute;
import io.lobstream.store.tablespace.InUseFile;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Writes the node's {@link InUseFile} every {@link InUseFile#WRITTEN_EVERY}: the partitions its tasks use ({@link TablespaceRegistry#inUse}),
 * for the purge workers beside it. A copy the node keeps after its partition moved to another node drops out of the file
 * within {@link TablespaceCatchUp#MOVED_AFTER}, and the worker beside it lets the partition go to the new owner's.
 *
 * <p>For that long after the node starts it also lists what its previous run's own tasks used (not what that run carried
 * over in turn: a node that keeps failing early must not hold its copies for good): its tasks ask for their partitions
 * again only after the writer's first rebalance, and the workers would give them up and take them back meanwhile. A
 * node with no such file (its first run, or one of an older version) writes none until a task has asked, or that
 * long has passed: a worker beside it holds its copies meanwhile, as it did without the file.
 */
public final class NodeInUse implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(NodeInUse.class);
    private final Path dataDir;
    private final TablespaceRegistry registry;
    private final LongSupplier nanos;
    private final String run = UUID.randomUUID().toString();
    /** What the previous run's tasks used; null if it wrote no file. */
    private final Set<Integer> previous;
    private final long startedAt;
    private final LogOncePerMinute failureSaid = new LogOncePerMinute();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "lob-node-in-use");
        t.setDaemon(true);
        return t;
    });
    private long seq;

    NodeInUse(Path dataDir, TablespaceRegistry registry, LongSupplier nanos) {
        this.dataDir = dataDir;
        this.registry = registry;
        this.nanos = nanos;
        this.startedAt = nanos.getAsLong();
        Set<Integer> before;
        try {
            before = InUseFile.read(dataDir).map(InUseFile.Contents::own).orElse(null);
        } catch (IOException e) {
            before = null; // written anew; said there if it cannot be
        }
        this.previous = before;
    }

    /** Starts writing the file for the node's tablespaces on {@code dataDir}, at once and every {@link InUseFile#WRITTEN_EVERY}. */
    public static NodeInUse start(Path dataDir, TablespaceRegistry registry) {
        NodeInUse n = new NodeInUse(dataDir, registry, System::nanoTime);
        n.timer.scheduleWithFixedDelay(n::write, 0, InUseFile.WRITTEN_EVERY.toMillis(), TimeUnit.MILLISECONDS);
        return n;
    }

    /**
     * Writes what the node uses now. A failure is said once a minute: the workers beside the node take a file that stops
     * changing for a stopped node's after a minute, and hold none of its copies (a full disk: its writer applies no
     * reclaims either).
     */
    synchronized void write() {
        long now = nanos.getAsLong();
        Set<Integer> own = registry.inUse(now);
        boolean starting = now - startedAt <= TablespaceCatchUp.MOVED_AFTER.toNanos();
        if (starting && previous == null && own.isEmpty()) {
            return;
        }
        Set<Integer> partitions = new TreeSet<>(own);
        if (starting && previous != null) {
            partitions.addAll(previous);
        }
        writeOrSay(partitions, own);
    }

    private void writeOrSay(Set<Integer> partitions, Set<Integer> own) {
        try {
            InUseFile.write(dataDir, run, ++seq, partitions, own);
        } catch (IOException | RuntimeException e) {
            if (failureSaid.sayNow(e.toString()) >= 0) {
                log.warn("cannot write {} under {} ({}): a purge worker beside this node calls it stopped after a minute, and "
                        + "holds none of its tablespaces (said once a minute)", InUseFile.NAME, dataDir.toAbsolutePath(), e.toString());
            }
        }
    }

    /**
     * Stops writing; the node calls it before its writer closes, so that a leaving node's empty list is the last write.
     * {@code leavingGroup}: the node gives its partitions to the others, and says it uses none, so the workers beside it
     * let them go at once, not a minute later. A node that stays in the group (a static member's restart) leaves the file
     * as it was, and gets its partitions and its workers' holds back.
     */
    public void close(boolean leavingGroup) {
        timer.shutdown(); // a write under way ends (milliseconds): interrupted, its channel would fail it, and say so
        try {
            timer.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (leavingGroup) {
            synchronized (this) {
                writeOrSay(Set.of(), Set.of());
            }
        }
    }

    @Override
    public void close() {
        close(false);
    }
}
