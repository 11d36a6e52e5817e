package io.lobstream.ingest.writer;

import io.lobstream.schema.LogOncePerMinute;
import io.lobstream.store.tablespace.InUseFile;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * Writes the node's {@link InUseFile} every {@link #EVERY}: the partitions its tasks use ({@link TablespaceRegistry#inUse}),
 * for the purge workers beside it. A copy the node keeps after its partition moved to another node drops out of the file
 * within {@link TablespaceCatchUp#MOVED_AFTER}, and the worker beside it lets the partition go to the new owner's.
 *
 * <p>For that long after the node starts it also lists what its previous run listed: its tasks ask for their partitions
 * again only after the writer's first rebalance, and the workers would give them up and take them back meanwhile.
 */
public final class NodeInUse implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(NodeInUse.class);
    /** How often the file is written; a worker beside the node looks every 10 s, and calls it stopped after 60 s unchanged. */
    static final Duration EVERY = Duration.ofSeconds(5);

    private final Path dataDir;
    private final TablespaceRegistry registry;
    private final LongSupplier nanos;
    private final String run = UUID.randomUUID().toString();
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
            before = InUseFile.read(dataDir).map(InUseFile.Contents::partitions).orElse(Set.of());
        } catch (IOException e) {
            before = Set.of(); // written anew at once; said there if it cannot be
        }
        this.previous = before;
    }

    /** Starts writing the file for the node's tablespaces on {@code dataDir}, at once and every {@link #EVERY}. */
    public static NodeInUse start(Path dataDir, TablespaceRegistry registry) {
        NodeInUse n = new NodeInUse(dataDir, registry, System::nanoTime);
        n.timer.scheduleWithFixedDelay(n::write, 0, EVERY.toMillis(), TimeUnit.MILLISECONDS);
        return n;
    }

    /** Writes what the node uses now; a failure is said once a minute (the workers beside it keep what they read last). */
    synchronized void write() {
        long now = nanos.getAsLong();
        Set<Integer> inUse = new TreeSet<>(registry.inUse(now));
        if (now - startedAt <= TablespaceCatchUp.MOVED_AFTER.toNanos()) {
            inUse.addAll(previous);
        }
        writeOrSay(inUse);
    }

    private void writeOrSay(Set<Integer> partitions) {
        try {
            InUseFile.write(dataDir, run, ++seq, partitions);
        } catch (IOException | RuntimeException e) {
            if (failureSaid.sayNow(e.toString()) >= 0) {
                log.warn("cannot write {} under {} ({}): a purge worker beside this node calls it stopped after a minute, and "
                        + "holds none of its tablespaces (said once a minute)", InUseFile.NAME, dataDir.toAbsolutePath(), e.toString());
            }
        }
    }

    /**
     * Stops writing. {@code leftGroup}: the node gave its partitions to the others, and says it uses none, so the workers
     * beside it let them go at once, not a minute later. A node that stays in the group (a static member's restart) leaves
     * the file as it was, and gets its partitions and its workers' holds back.
     */
    public void close(boolean leftGroup) {
        timer.shutdownNow();
        try {
            timer.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (leftGroup) {
            synchronized (this) {
                writeOrSay(Set.of());
            }
        }
    }

    @Override
    public void close() {
        close(false);
    }
}
