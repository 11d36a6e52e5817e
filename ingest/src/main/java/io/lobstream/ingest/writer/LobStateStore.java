package io.lobstream.ingest.writer;

import io.lobstream.store.DiskErrors;
import io.lobstream.store.LobStore;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.TablespaceCheckDueException;
import io.lobstream.store.TablespaceSyncFailedException;
import io.lobstream.store.TablespaceTornException;
import io.lobstream.store.tablespace.TablespaceDirs;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.errors.LockException;
import org.apache.kafka.streams.errors.StreamsException;
import org.apache.kafka.streams.processor.StateStore;
import org.apache.kafka.streams.processor.StateStoreContext;
import org.apache.kafka.streams.state.internals.CacheFlushListener;
import org.apache.kafka.streams.state.internals.CachedStateStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

/**
 * The task's tablespace as a Kafka Streams state store, so that Streams drives its lifecycle
 * and makes it durable before every commit of the task's transaction: pages and index are
 * durable before the offsets that produced them are committed.
 *
 * <p>Why {@link CachedStateStore}: Kafka Streams 4.1 called a store's {@code flush()} ({@link #commit} since
 * 4.4) only when it wrote a checkpoint, and for a store without a changelog it never needs one until the task
 * is suspended or closed; what it does call in every commit, before the producer commits the
 * transaction, is {@link #flushCache()} of caching stores. That is where this store syncs ({@link #commit}
 * flushes too, and then finds nothing left to sync).
 * (Found by a tablespace that never shrank: no flush ran while the writer was running;
 * PipelineIT now asserts that the tablespaces are synced while the node runs.)
 *
 * <p>It is not changelogged. Its files live under the node's data directory, outside the Streams
 * state directory, because Streams wipes a task's state directory after an unclean shutdown
 * under exactly-once, and this store needs no wipe: it recovers itself (see
 * {@link LobStore#open}) and records which offsets it has applied.
 */
public final class LobStateStore implements StateStore, CachedStateStore<Object, Object> {
    /** See {@link #onRecord}; the stream thread's. */
    private Runnable recordListener;
    public static final String NAME = "lob-tablespace";
    private static final Logger log = LoggerFactory.getLogger(LobStateStore.class);

    private final Path dataDir;
    private final LobStoreConfig config;
    private final MeterRegistry meters;
    private final TablespaceRegistry registry;
    private final TablespaceCatchUp catchUp;
    private LobStore store;
    private int partition = -1;
    private volatile Thread writer;

    public LobStateStore(Path dataDir, LobStoreConfig config, MeterRegistry meters, TablespaceRegistry registry) {
        this(dataDir, config, meters, registry, null);
    }

    /** With {@code catchUp}, a tablespace behind the writer group's committed offset is caught up from lob.commands before its task starts. */
    public LobStateStore(Path dataDir, LobStoreConfig config, MeterRegistry meters, TablespaceRegistry registry, TablespaceCatchUp catchUp) {
        this.dataDir = dataDir;
        this.config = config;
        this.meters = meters;
        this.registry = registry;
        this.catchUp = catchUp;
        if (meters != null) {
            for (TablespaceDirs.SetAside why : TablespaceDirs.SetAside.values()) {
                setAsideCounter(meters, why); // at 0 from the start: a rate or increase() sees the first one
            }
        }
    }

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public void init(StateStoreContext context, StateStore root) {
        partition = context.taskId().partition();
        registry.asked(partition, System.nanoTime()); // the purge workers beside this node hold its copy (NodeInUse)
        try {
            registry.retries().awaitRetry(partition, System.nanoTime()); // LockException while a task that failed waits
            if (catchUp != null) {
                catchUp.awaitRebuilt(partition); // LockException while a catch-up of this partition runs
            }
            try {
                store = open(catchUp == null);
            } catch (TablespaceCheckDueException e) {
                // every page to read (lob.sync off, a restart of the machine): not on the stream thread, which must poll and
                // may hold its other tasks' transaction open (see TablespaceCatchUp). The catch-up thread opens it, checking
                // (or moving it aside), and closes it; this init gives way, and the next checks it against the log as usual
                log.info("partition {}: {}; checking it on a thread of its own", partition, e.getMessage());
                registry.retries().started(partition);
                throw catchUp.checkInBackground(partition, () -> open(true));
            }
            TablespaceCheck.Verdict check = catchUp == null ? TablespaceCheck.Verdict.CURRENT : catchUp.check(partition, store);
            TablespaceDirs.SetAside notThisLog = switch (check) {
                case AHEAD -> TablespaceDirs.SetAside.AHEAD_OF_LOG;
                case OTHER_TOPIC -> TablespaceDirs.SetAside.OTHER_TOPIC;
                case LOG_CUT -> TablespaceDirs.SetAside.LOG_CUT;
                default -> null;
            };
            if (notThisLog != null) {
                // trusted, it would take every new command at an offset it applied for one it applied already, and drop it
                Path dir = store.directory();
                store.close();
                store = null;
                moveAside(dir, notThisLog, "it is no copy of the lob.commands there is now (" + check + ", logged above)");
                store = open(true); // new and empty: nothing to check
                check = catchUp.check(partition, store);
            }
            String refused = switch (check) {
                case LOG_LOST -> "lob.commands lost records the writer group committed; the task waits for its offset to be "
                        + "reset, or for new commands to fill the log up to it";
                case PARTITIONS_CHANGED -> "lob.commands has another partition count than when its tablespace was made; the task "
                        + "does not start";
                default -> null;
            };
            if (refused != null) {
                // Said by the check; the next init waits, as after any failure, and asks again. A LockException, which
                // Streams retries at the task's next init: any other exception from an init ends the stream thread, and
                // the thread's other tasks would close and open again at every retry, for as long as the refusal lasts.
                throw failed(new LockException("partition " + partition + ": " + refused + " (logged above)"));
            }
            if (check != TablespaceCheck.Verdict.CURRENT) {
                // checked and caught up on a thread of its own (see TablespaceCatchUp); this init gives way and is retried
                store.close();
                store = null;
                registry.retries().started(partition); // past the checks that refuse it: catching up, not waiting
                throw catchUp.rebuildInBackground(partition, () -> open(true));
            }
        } catch (IOException | RuntimeException e) {
            if (store != null) {
                try {
                    store.close();
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
                store = null;
            }
            RuntimeException thrown = e instanceof RuntimeException re ? re
                    : new UncheckedIOException("cannot open tablespace of partition " + partition, (IOException) e);
            if (thrown instanceof StreamsException) {
                // a LockException gives way (a wait, a catch-up) and is retried by Streams; Streams' own are Streams' to handle
                throw thrown instanceof LockException ? thrown : failed(thrown);
            }
            // A failure to start (a tablespace that does not open, a check that cannot be made): the task waits and tries
            // again, as after a refusal above, and as a LockException for the reason given there: thrown as it is, it would
            // end the stream thread, and its other tasks would close and open again at every try, for as long as it lasts.
            Duration wait = registry.retries().failed(partition, thrown, System.nanoTime());
            // the way out of one that fails at every start, where the operator reads: the node never reaches RUNNING. Not
            // for a full or read-only disk, files this user may not open, or a registry away, which pass once mended, and which
            // a rebuild would need as much
            // A later release's copy is sound, and a rebuild would throw it away (and, with lob.commands trimmed, lose data)
            String mend = TaskRetries.laterFormat(thrown) ? " The copy is not damaged: a later LobStream release wrote it. Run "
                    + "that release (or a later one) on this node; do not move tablespaces/p-" + partition + " aside"
                    : DiskErrors.full(thrown) || DiskErrors.readOnly(thrown) || DiskErrors.denied(thrown)
                    || TaskRetries.registryAway(thrown) ? ""
                    : " If it fails so at every start (a corrupt index or page file: RocksDB's \"Corruption\", a page named by "
                    + "its number), stop the node, move tablespaces/p-" + partition + " aside and start it: the partition is "
                    + "rebuilt from lob.commands";
            if (TaskRetries.environmental(thrown)) { // (an IOException: a full disk, and a corrupt index or page too)
                log.error("partition {}: the task cannot start ({}); its next start waits {} s (and Kafka Streams' own retry, up "
                        + "to 10 s), the other tasks going on.{}", partition, TaskRetries.messages(thrown), wait.toSeconds(), mend);
            } else {
                log.error("partition {}: the task cannot start; its next start waits {} s (and Kafka Streams' own retry, up to "
                        + "10 s), the other tasks going on.{}", partition, wait.toSeconds(), mend, thrown);
            }
            throw new LockException("partition " + partition + ": " + TaskRetries.messages(thrown) + " (logged above)", thrown);
        }
        context.register(root, (key, value) -> {
            // no changelog: nothing to restore from Kafka Streams' side
        });
        registry.register(partition, store);
        registry.register(this);
        registry.retries().started(partition);
        if (catchUp != null) {
            catchUp.started(partition);
        }
    }

    /**
     * Opens the partition's tablespace, moving aside one that failed a sync or lost pages in a crash.
     *
     * @param fullCheck false: a tablespace whose pages must all be checked first is not opened ({@link TablespaceCheckDueException})
     */
    private LobStore open(boolean fullCheck) throws IOException {
        Path dir = TablespaceDirs.partitionDir(dataDir, partition);
        try {
            return LobStore.open(dir, config, meters, "p-" + partition, fullCheck);
        } catch (TablespaceSyncFailedException e) {
            moveAside(dir, TablespaceDirs.SetAside.SYNC_FAILED, e.getMessage());
            return LobStore.open(dir, config, meters, "p-" + partition);
        } catch (TablespaceTornException e) {
            moveAside(dir, TablespaceDirs.SetAside.TORN_WRITES, e.getMessage());
            return LobStore.open(dir, config, meters, "p-" + partition);
        }
    }

    /**
     * Moves the tablespace at {@code dir} aside, kept for a look under a name that is not a tablespace's. The one opened in
     * its place starts empty, so the task's check finds it behind and the partition is rebuilt from lob.commands.
     */
    private void moveAside(Path dir, TablespaceDirs.SetAside why, String problem) throws IOException {
        Path aside = why.path(dir, System.currentTimeMillis());
        Files.move(dir, aside);
        TablespaceDirs.syncDirectory(dir.getParent()); // the move, made durable before a new p-N is filled in its place
        if (meters != null) {
            setAsideCounter(meters, why).increment();
        }
        log.error("partition {}: {}; moved it to {} and rebuilding the partition from lob.commands", partition, problem, aside);
    }

    private static io.micrometer.core.instrument.Counter setAsideCounter(MeterRegistry meters, TablespaceDirs.SetAside why) {
        return io.micrometer.core.instrument.Counter.builder("lob_tablespaces_set_aside").tag("reason", why.suffix())
                .description("Tablespaces moved aside (p-N.REASON-TIME; their partition rebuilt): after a failed fsync "
                        + "(sync-failed), as they had applied commands past lob.commands' end (ahead-of-log), of a "
                        + "lob.commands deleted since or of another deployment's topics (other-topic) or at offsets of a log cut under them (log-cut), or as a crash "
                        + "left versions without their pages (torn-writes)")
                .register(meters);
    }

    /**
     * Runs {@code listener} after each record of the task that decoded is handled (applied, or refused by the checks
     * that judge it), a command or a reclaim (replacing the last listener given; null: none): compaction, scheduled by the commands' processor, learns that a reclaim left holes.
     * Both processors run on the task's stream thread.
     */
    void onRecord(Runnable listener) {
        this.recordListener = listener;
    }

    /** A record of the task that decoded was handled (see {@link #onRecord}). */
    void recorded() {
        Runnable l = recordListener;
        if (l != null) {
            l.run();
        }
    }

    public LobStore store() {
        Thread t = Thread.currentThread();
        if (writer != t) {
            writer = t; // the stream thread that runs this task now: its commit syncs this store
        }
        return store;
    }

    /** The store, without marking the calling thread as its writer (null when closed). */
    LobStore peek() {
        return store;
    }

    /** The thread that last used the store for the task's work (null before any). */
    Thread writer() {
        return writer;
    }

    public int partition() {
        return partition;
    }

    /** Streams' commit of the task (its store has no changelog, so no offsets): the store's own flush. */
    @Override
    public void commit(Map<TopicPartition, Long> changelogOffsets) {
        try {
            store.flush();
        } catch (IOException e) {
            throw failed(new UncheckedIOException("partition " + partition + ": commit", e));
        }
    }

    /**
     * Records that this task failed on {@code e} (an I/O error of its tablespace, a registry that does not answer, a log
     * that went back under it): its next init waits (see {@link TaskRetries}). Returns {@code e}, to throw.
     */
    <E extends RuntimeException> E failed(E e) {
        Duration wait = registry.retries().failed(partition, e, System.nanoTime());
        if (!wait.isZero()) {
            log.error("partition {}: the task failed again ({}); its next start waits {} s", partition, TaskRetries.messages(e),
                    wait.toSeconds());
        }
        return e;
    }

    /**
     * Called by Streams in every commit, before the transaction commits: the durability point.
     * The first store of a commit syncs, in parallel, every store its thread has written (each
     * needs two fsyncs in order, pages then index, and a thread runs several tasks); the others
     * then find themselves synced already.
     */
    @Override
    public void flushCache() {
        if (store == null) {
            return;
        }
        try {
            if (store.needsSync()) {
                registry.syncWrittenBy(Thread.currentThread(), this);
            } else {
                store.flush(); // nothing to sync (a sibling's commit did it, or lob.sync is off): still shrink
            }
        } catch (IOException e) {
            throw failed(new UncheckedIOException("partition " + partition + ": commit", e));
        }
    }

    /** Nothing is cached in memory: there is nothing to forward on flush. */
    @Override
    public boolean setFlushListener(CacheFlushListener<Object, Object> listener, boolean sendOldValues) {
        return false;
    }

    @Override
    public void clearCache() {
        // no cache
    }

    @Override
    public void close() {
        if (store == null) {
            return;
        }
        registry.asked(partition, System.nanoTime()); // in use a while yet: moving to another thread, it opens again
        registry.unregister(partition, store);
        registry.unregister(this);
        try {
            store.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            store = null;
        }
    }

    @Override
    public boolean persistent() {
        return true;
    }

    @Override
    public boolean isOpen() {
        return store != null;
    }
}
