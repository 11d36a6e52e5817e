package io.lobstream.ingest.writer;

import io.lobstream.ingest.replay.PartitionReplayer;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.store.LobStore;
import io.lobstream.store.StoreStats;
import io.lobstream.store.tablespace.TablespaceDirs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.streams.errors.LockException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * Brings a task's tablespace up to the writer group's committed offset before the task starts
 * consuming, by replaying {@code lob.commands} (the redo log) for that partition.
 *
 * <p>Why: the tablespace is a non-changelogged store, so Kafka Streams restores nothing into it,
 * and a task starts consuming at the group's committed offset. A partition that moves to a node
 * without its tablespace (the owner died, or scaled in) would otherwise start from an empty
 * tablespace and never see the commands before that offset; a node that gets back a partition
 * it owned earlier would miss the commands applied elsewhere meanwhile. Both cases show as the
 * tablespace's applied offset for {@code lob.commands-p} being below the committed offset.
 *
 * <p>How: the commands in {@code (applied, committed)} are replayed with a
 * {@link PartitionReplayer}: applied exactly as the writer applies them, versions they supersede
 * reclaimed locally (the {@code lob.reclaim} records of the earlier owner name <em>its</em>
 * copy's pages). Replay from the start needs {@code lob.commands} to keep every record
 * ({@code retention.ms=-1}, {@code cleanup.policy=delete}); records already deleted by
 * retention are reported as an error and are lost to the rebuilt copy.
 *
 * <p>Where: not in the task's initialisation, which runs on its stream thread. That thread does
 * not poll meanwhile (a member that does not poll within {@code max.poll.interval.ms}, 5 min, is
 * dropped from the group) and may hold an open transaction of its other tasks (aborted, and the
 * thread fenced, after {@code transaction.timeout.ms}, 10 s under exactly-once). So a store that
 * is behind is closed and caught up on a thread of its own ({@code lob-rebuild-P}); meanwhile
 * its init gives way with a {@code LockException}, which Kafka Streams answers by retrying the
 * task's initialisation on a later pass of its loop, after polls. The thread's other tasks run on.
 * The init itself only asks the group's stable committed offset, the topic's id and partitions, and
 * (once the copy or the group has applied commands) the log's end, each within {@link #CHECK_TIMEOUT}; while the offset is not stable (after a node died mid-transaction, until that
 * transaction times out) the catch-up thread waits for it instead.
 */
public final class TablespaceCatchUp implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TablespaceCatchUp.class);

    private final LobStreamConfig config;
    private final WriterMetrics metrics;
    /** Catch-ups by partition, done (completed) once their store is closed again. */
    private final Map<Integer, CompletableFuture<Void>> running = new ConcurrentHashMap<>();
    /**
     * The end offset the last catch-up of each copy of a partition's tablespace ({@link LobStore#copyId()})
     * replayed to. By copy, not by partition: a tablespace moved aside after a failed sync is replaced by an
     * empty one, which the replay of its predecessor says nothing about.
     */
    private final Map<String, Long> replayedTo = new ConcurrentHashMap<>();
    private final Set<Thread> threads = ConcurrentHashMap.newKeySet();
    /**
     * Catch-up threads still opening (and checking) their tablespace, which they have to themselves: {@link #close}
     * interrupts them. Guarded by {@link #closing} with {@link #closed} for the hand-over in {@link #opened}.
     */
    private final Set<Thread> opening = ConcurrentHashMap.newKeySet();
    /** What ends the blocking steps under way past the open (a consumer's wakeup, a replay's stop): {@link #close} runs them. */
    private final Set<Runnable> stops = ConcurrentHashMap.newKeySet();
    private final Object closing = new Object();
    /** Records of lob.commands each catch-up under way has still to replay, once it knows where it stops. */
    private final Map<Integer, Long> remaining = new ConcurrentHashMap<>();
    /** Per partition whose last catch-up failed: how many failed in a row, and when the next may start. */
    private final Map<Integer, Retry> retries = new ConcurrentHashMap<>();

    /**
     * A partition's failed catch-ups in a row: {@code inARow} in all, {@code grown} of them failures that grow the wait
     * to {@link #RETRY_MAX}, and the last {@code timeoutsInARow} of them {@link #timedOut}.
     */
    record Retry(int inARow, int grown, int timeoutsInARow, long notBeforeNanos, String lastError) {
        /** The retry after {@code last} (null: none) and a catch-up that failed on {@code e} at {@code nowNanos}. */
        static Retry after(Retry last, Throwable e, long nowNanos) {
            boolean timedOut = TablespaceCatchUp.timedOut(e);
            int grown = (last == null ? 0 : last.grown()) + (timedOut ? 0 : 1);
            int timeouts = timedOut ? (last == null ? 0 : last.timeoutsInARow()) + 1 : 0;
            Duration wait = timedOut ? TaskRetries.doubled(RETRY_FIRST, timeouts - 1, TIMED_OUT_MAX) : retryAfter(grown);
            return new Retry(last == null ? 1 : last.inARow() + 1, grown, timeouts, nowNanos + wait.toNanos(),
                    TaskRetries.messages(e));
        }
    }

    /** The longest wait after catch-ups that Kafka did not answer in time ({@link #timedOut}). */
    static final Duration TIMED_OUT_MAX = Duration.ofMinutes(1);

    /**
     * Whether a catch-up failed on Kafka not answering in time (a broker away, a partition without a leader). Such a try
     * waited a minute already: the waits after tries that timed out in a row grow from {@link #RETRY_FIRST} to
     * {@link #TIMED_OUT_MAX} only, and do not grow the wait after other failures, so that a partition whose brokers are
     * back after minutes starts within a minute, not after a wait grown to {@link #RETRY_MAX} meanwhile.
     */
    static boolean timedOut(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t instanceof org.apache.kafka.common.errors.TimeoutException || t instanceof TimeoutException) {
                return true;
            }
        }
        return false;
    }
    /** The wait after the first failure; each further one in a row waits twice as long, up to {@link #RETRY_MAX}. */
    static final Duration RETRY_FIRST = Duration.ofSeconds(5);
    static final Duration RETRY_MAX = Duration.ofMinutes(5);
    /**
     * Asks {@link #check}'s question for every task's init, made at the first: one per check cost each task start a
     * connection and a metadata round trip on its stream thread.
     */
    private Admin admin;
    private volatile boolean closed;
    /**
     * When each partition's task last asked to start ({@link #awaitRebuilt}), or its catch-up began: a task assigned here
     * whose catch-up runs asks again after each LockException, Kafka Streams backing off up to 10 s between tries; one that
     * went to another node asks no more.
     */
    private final Map<Integer, Long> initAsked = new ConcurrentHashMap<>();
    /**
     * How long a catch-up's replay goes on with no task here asking for its partition: then the partition went to another
     * node (its owner back, a rebalance), and the catch-up stops, what it replayed kept, where it would replay on for hours
     * a copy no task here opens, beside the new owner's own. Wrong (a stream thread stalled that long: a thread replaced,
     * a broker away for a commit), it costs a catch-up begun again from where this one stopped; a minute and a half is
     * well past Kafka Streams' 10 s between tries, and little beside hours.
     */
    static final Duration MOVED_AFTER = Duration.ofSeconds(90);
    /**
     * Long catch-ups (and checks of every page) that run at once; more wait their turn. At the default 8 partitions all run
     * together; a node given 64 or 128 partitions and no copies (a new disk) started as many replays at once, each with its
     * consumer, registry client and dead letters read: hundreds of threads and of MB of heap on a small node, and no more
     * throughput from its cores (a catch-up waits with its tablespace open: checked, it knows how far behind it is). A catch-up of at most {@link #SHORT_REPLAY_RECORDS} has slots of its own, as many: it must
     * not wait hours behind full rebuilds (a node back after a crash, its own copies a few seconds behind).
     */
    static final int CONCURRENT = 8;
    /** A few seconds of a busy partition's small commands. */
    static final long SHORT_REPLAY_RECORDS = 10_000;
    private final Semaphore slots = new Semaphore(CONCURRENT);
    /** The short catch-ups' own slots, as many: never behind the long ones, and never all of 128 at once. */
    private final Semaphore shortSlots = new Semaphore(CONCURRENT);

    public TablespaceCatchUp(LobStreamConfig config, WriterMetrics metrics) {
        this.config = config;
        this.metrics = metrics;
        metrics.rebuildRemaining(() -> remaining.values().stream().mapToLong(Long::longValue).sum());
    }

    /** Per partition being caught up, the records of lob.commands it has still to replay (once its replay began). */
    public SortedMap<Integer, Long> remainingRecords() {
        return new TreeMap<>(remaining);
    }

    /**
     * Returns when partition {@code partition} may be opened for its task, no catch-up of it
     * running; throws {@link LockException} while one runs. One that failed was logged; the
     * init that follows finds the store still behind and starts another, after a wait that grows
     * with the failures in a row (a full disk: each try reopens the tablespace and reads from Kafka
     * again, and would otherwise follow the last at once, at every task start); a try that Kafka did
     * not answer in time waited already, and the next follows it sooner ({@link #timedOut}).
     */
    public void awaitRebuilt(int partition) {
        initAsked.put(partition, System.nanoTime());
        CompletableFuture<Void> f = running.get(partition);
        if (f == null) {
            return;
        }
        if (!f.isDone()) {
            throw new LockException("partition " + partition + ": its tablespace is being checked or caught up from lob.commands "
                    + "on thread lob-rebuild-" + partition + "; the task starts once it is done");
        }
        Retry retry = retries.get(partition);
        long left = retry == null ? 0 : retry.notBeforeNanos() - System.nanoTime();
        if (left > 0) {
            throw new LockException("partition " + partition + ": its catch-up from lob.commands failed (" + retry.inARow()
                    + " in a row, logged); the next starts in " + Duration.ofNanos(left).toSeconds() + " s");
        }
        running.remove(partition, f);
    }

    /** How long to wait after {@code failures} catch-ups of a partition failed in a row. */
    static Duration retryAfter(int failures) {
        return TaskRetries.doubled(RETRY_FIRST, failures - 1, RETRY_MAX);
    }

    /** Partition {@code partition}'s task started: its tablespace is current, and no catch-up of it waits. */
    public void started(int partition) {
        retries.remove(partition);
    }

    /**
     * Partitions whose last catch-up failed, none running now, unless their next try is {@link TaskRetries#OVERDUE} (the
     * partition went to another node).
     */
    public List<TaskFailure> waiting() {
        long now = System.nanoTime();
        SortedSet<Integer> running = catchingUp();
        List<TaskFailure> waiting = new ArrayList<>();
        retries.forEach((partition, r) -> {
            if (!running.contains(partition) && now - r.notBeforeNanos() <= TaskRetries.OVERDUE.toNanos()) {
                waiting.add(new TaskFailure(partition, "catch-up", r.inARow(), r.lastError(),
                        Duration.ofNanos(Math.max(0, r.notBeforeNanos() - now))));
            }
        });
        return waiting;
    }

    /** Partitions whose tablespace is being caught up now (their tasks wait for it). */
    public SortedSet<Integer> catchingUp() {
        SortedSet<Integer> now = new TreeSet<>();
        running.forEach((p, f) -> {
            if (!f.isDone()) {
                now.add(p);
            }
        });
        return now;
    }

    /** What {@link #check} found out about a task's tablespace. */
    public enum Check {
        /** It has applied every command of its partition the writer group committed: the task may start. */
        CURRENT,
        /** It is behind the writer group's committed offset: it needs a catch-up. */
        BEHIND,
        /**
         * The group's committed offset is not stable: a commit of the partition's last owner is still
         * in flight (a node that died mid-transaction leaves it open until its transaction times out),
         * or the group coordinator did not answer in time. The catch-up thread waits for it.
         */
        UNKNOWN,
        /**
         * It has applied offsets of {@code lob.commands} past the topic's end, and the writer group has committed no
         * offset past it: it is a copy of another log than the one there is now (the topic deleted and made again, an
         * embedded broker's directory deleted). Trusted, it would take each new command at an offset it has applied for
         * one applied already and drop it. It is moved aside and the partition rebuilt.
         */
        AHEAD,
        /**
         * It has applied commands of a topic of the same name that was deleted since (its topic id, recorded when it was
         * first checked, is not the topic's now): its offsets are another log's, as an {@link #AHEAD} one's. Or it is
         * another deployment's (another lob.topic.prefix on the same data directory), whose LOBs would be served, and
         * replaced, as this one's: it applied commands of another topic, or holds versions but never applied a command of
         * this topic. It is moved aside and the partition rebuilt.
         */
        OTHER_TOPIC,
        /**
         * Its commands log went back under its running task ({@code LOG-CUT}, marked by the task): it applied offsets the
         * log may now hold other commands at, though the log has grown past them since. Moved aside and rebuilt.
         */
        LOG_CUT,
        /**
         * Its topic has another partition count than when the tablespace was made (partitions were added): LOBs written
         * since may be in other partitions than their history. The task does not start; the node logs why.
         */
        PARTITIONS_CHANGED,
        /**
         * The writer group committed offsets past the topic's end: the log lost records that were committed (an unclean
         * leader election, a broker's lost disk), whatever this copy holds (a fresh or stale copy too: a partition often
         * moves because its owner died, with the leader that lost them). Neither the tablespace nor the group's offset is a
         * place to go on from (the consumer would start past the end, a catch-up cannot reach the offset, and new commands
         * at offsets a tablespace applied would be taken for applied ones): the task does not start until an operator
         * resets the group's offset ({@link #logLost}), after which a tablespace that applied past the end is
         * {@link #AHEAD}.
         */
        LOG_LOST
    }

    /** What the operator is told when a partition's log lost records the writer group committed ({@link Check#LOG_LOST}). */
    private String logLost(int partition, long applied, long committed, long end) {
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        return "partition " + partition + ": " + tp.topic() + " ends at offset " + end + ", but the tablespace applied up to "
                + applied + " and the writer group committed " + committed + ": the log lost records that were committed (an "
                + "unclean leader election, a lost disk?). The task does not start. " + offsetReset(config, tp);
    }

    /**
     * How an operator goes on with a log that lost records the writer group committed: said by a task's check and by a
     * catch-up or replay asked to go past the log's end.
     */
    public static String offsetReset(LobStreamConfig config, TopicPartition tp) {
        return "To go on with the log there is, stop the writer nodes and reset the writer group's offset of " + tp + " to the "
                + "log's end (kafka-consumer-groups --bootstrap-server ... --group " + config.get(LobStreamConfig.APPLICATION_ID)
                + " --topic " + tp.topic() + ":" + tp.partition() + " --reset-offsets --to-latest --execute): a node then rebuilds "
                + "the partition's tablespace from what the log has";
    }

    /**
     * How long a task's init, on its stream thread, waits for each of its questions to the cluster
     * (the committed offset, the topic, the log's end): one round trip each, normally. The committed
     * offset's answer does not wait for a commit in flight (see {@link #check}).
     */
    static final Duration CHECK_TIMEOUT = Duration.ofSeconds(2);
    /**
     * How long the catch-up thread waits for a stable offset before it logs a warning and waits on.
     * A dead owner's transaction is aborted after its {@code transaction.timeout.ms} (10 s, Kafka
     * Streams' default under exactly-once) plus the broker's check interval
     * ({@code transaction.abort.timed.out.transaction.cleanup.interval.ms}, 10 s by default).
     */
    static final Duration STABLE_WAIT = Duration.ofSeconds(60);

    /**
     * Whether {@code store} has applied every command of its partition the writer group committed,
     * by the group's stable committed offset: not the offset before a commit still in flight (the
     * last owner's), which the task's consumer would start past once it is decided, leaving the
     * commands in between unapplied here. Asked with the admin client's {@code requireStable},
     * which answers at once: a partition whose offset is not stable is left out of the answer,
     * one with no offset committed is in it with none.
     */
    public Check check(int partition, LobStore store) throws IOException {
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        OptionalLong stable = stableCommittedOffsetNow(tp);
        if (stable.isEmpty()) {
            log.info("partition {}: the writer group's committed offset of {} is not stable (a commit in flight, or no answer "
                    + "within {} ms); waiting for it on a thread of its own", partition, tp.topic(), CHECK_TIMEOUT.toMillis());
            return Check.UNKNOWN;
        }
        return check(partition, store, tp, stable.getAsLong(), true);
    }

    /**
     * {@link #check(int, LobStore)} against {@code committed}, the writer group's stable committed offset: first whether
     * the store is a copy of this log at all (its topic id, partition count, a log cut or lost under it), then how far.
     *
     * @param atInit a task's init, which counts the starts it refuses (a catch-up's check leaves them to the next init)
     */
    private Check check(int partition, LobStore store, TopicPartition tp, long committed, boolean atInit) throws IOException {
        String source = tp.topic() + "-" + tp.partition();
        Optional<CommandsLog> now = topicNow(tp).map(CommandsLog::of);
        if (now.isEmpty() || now.get().partitions() <= partition) {
            return Check.UNKNOWN; // no answer, or a broker whose metadata is behind the partitions added (asked again)
        }
        Optional<CommandsLog> recorded = store.logId(source).map(CommandsLog::decode);
        if (recorded.isPresent() && recorded.get().otherTopicThan(now.get())) {
            log.error("partition {}: the tablespace applied commands of {} when the topic's id was {}; it is {} now (the topic "
                    + "was deleted and made again)", partition, tp.topic(), recorded.get().topicId(), now.get().topicId());
            return Check.OTHER_TOPIC;
        }
        if (recorded.isPresent() && recorded.get().otherPartitionCountThan(now.get())) {
            log.error("partition {}: {} has {} partitions; it had {} when this tablespace was made. A LOB's partition is its "
                    + "key's hash modulo the count, so LOBs written since may be in other partitions than their history, and "
                    + "the task does not start. Kafka cannot take partitions away: copy the commands to new topics of {} "
                    + "partitions and start the nodes on them with empty data directories, which they rebuild from the copy "
                    + "(or start anew)", partition, tp.topic(), now.get().partitions(), recorded.get().partitions(),
                    recorded.get().partitions());
            if (atInit) {
                metrics.partitionCountChanged(partition);
            }
            return Check.PARTITIONS_CHANGED;
        }
        long applied = store.appliedOffset(source);
        // both ways: a deployment that finds the other's copy, and one that comes back to a copy the other applied commands
        // to; not a topic a node with the wrong prefix only looked at (its check recorded the log, and it applied nothing)
        Set<String> others = new TreeSet<>();
        for (String other : store.sourcesWithLogIds()) {
            if (!other.equals(source) && store.appliedOffset(other) >= 0) {
                others.add(other);
            }
        }
        if (!others.isEmpty() || recorded.isEmpty() && applied < 0 && holdsVersions(store)) {
            log.error("partition {}: the tablespace {}: it is another deployment's (another lob.topic.prefix, or a data directory "
                    + "copied from elsewhere){}", partition, others.isEmpty()
                    ? "holds versions but never applied a command of " + tp.topic()
                    : "applied commands of " + others + " (another topic than " + tp.topic() + ")", atInit ? ", moved aside as p-"
                    + partition + ".other-topic-TIME and rebuilt. If this node's lob.topic.prefix is the wrong one, stop it, move "
                    + "the p-" + partition + " it rebuilds aside and that copy back to p-" + partition + " (unless both topics' "
                    + "commands were applied to it: then it is neither's)" : "; moved aside at the task's next start");
            return Check.OTHER_TOPIC;
        }
        Optional<String> cut = TablespaceDirs.logCut(store.directory(), store.copyId());
        // (a fresh copy of a partition with nothing committed has nothing to hold against the log's end: a first start)
        if (applied >= 0 || committed > 0) {
            OptionalLong end = logEndNow(tp);
            if (end.isEmpty()) {
                return Check.UNKNOWN;
            }
            if (committed > end.getAsLong()) {
                // the group's offset past the log's end: records it committed are gone, whatever this copy holds (a fresh or
                // stale copy too: the partition often moved because its owner died, with the leader that lost them)
                log.error(logLost(partition, applied, committed, end.getAsLong()));
                if (atInit) {
                    metrics.logLost(partition);
                }
                return Check.LOG_LOST;
            }
            if (applied >= 0 && (applied >= end.getAsLong() || cut.isPresent())) {
                if (cut.isPresent()) {
                    log.error("partition {}: {}; the tablespace applied {} up to offset {}, which the log may now hold other "
                            + "commands at", partition, cut.get(), tp.topic(), applied);
                    return Check.LOG_CUT;
                }
                log.error("partition {}: the tablespace has applied {} up to offset {}, but the topic ends at offset {}",
                        partition, tp.topic(), applied, end.getAsLong());
                return Check.AHEAD;
            }
        }
        CommandsLog completed = recorded.map(r -> r.completedBy(now.get())).orElse(now.get());
        if (!recorded.equals(Optional.of(completed))) {
            // a new tablespace, or one of a release before this was recorded: its offsets are taken for this topic's
            store.recordLogId(source, completed.encode());
        }
        if (current(store, applied, committed)) {
            return Check.CURRENT;
        }
        log.info("partition {}: the tablespace has applied {} up to offset {}, the writer group committed {}: catching up",
                partition, tp.topic(), applied, committed);
        return Check.BEHIND;
    }

    private static boolean holdsVersions(LobStore store) {
        StoreStats s = store.stats();
        return s.lobs() > 0 || s.historyLength() > 0 || s.pagesUploading() > 0;
    }

    /**
     * Whether a store that applied up to {@code applied} has every command before {@code committed}.
     * A catch-up that replayed up to the committed offset leaves the store current even when its last
     * records recorded no applied offset (skipped records did not, before this release):
     * replaying them again would change nothing, and asking again would never end.
     */
    private boolean current(LobStore store, long applied, long committed) {
        return committed <= Math.max(applied + 1, replayedTo.getOrDefault(store.copyId(), -1L));
    }

    /**
     * Starts catching partition {@code partition} up on a thread of its own, with the store
     * {@code open} opens (and the catch-up closes), and returns the {@link LockException} the
     * init that found the store behind (or could not tell) throws. The thread waits for a stable
     * committed offset and replays up to it: nothing, when the store was current after all.
     */
    public LockException rebuildInBackground(int partition, Callable<LobStore> open) {
        metrics.rebuildStarted();
        return inBackground(partition, true, "catch-up from lob.commands", () -> {
            PartitionReplayer.Result r;
            String copy;
            try (LobStore store = open.call()) {
                opened();
                r = catchUp(partition, store);
                copy = store.copyId();
            }
            if (r.endOffset() == REFUSED) { // a copy the check refused: the next init sets it aside or holds the task
                metrics.rebuildRefused();
            } else {
                replayedTo.put(copy, r.endOffset()); // closed: the task's next init may open it
                metrics.rebuilt(r.records());
            }
        }, "tablespace behind the writer group, or not known to be current; checking and catching it up");
    }

    /**
     * Opens partition {@code partition}'s tablespace with {@code open} on a thread of its own, and closes it: an open that
     * checks the pages of every version first (a restart of the machine without lob.sync), or moves the copy aside if a
     * page is missing, takes as long as reading the whole tablespace. The task's next init opens it at once and checks it
     * against lob.commands as for any start (it may be caught up then).
     */
    public LockException checkInBackground(int partition, Callable<LobStore> open) {
        return inBackground(partition, false, "the check of its pages", () -> {
            awaitSlot(slots, partition, "the check of its pages"); // every page read: as long as a rebuild
            try (LobStore checked = open.call()) {
                opened(); // no interrupt from close() now: one in the store's close would cost it its clean flag, and the check
            } finally {
                slots.release();
            }
        },
                "the pages of every version to check before it opens (the log above says why); checking them");
    }

    private interface Job {
        void run() throws Exception;
    }

    /**
     * Told by a catch-up thread that it has its store open: from here on it writes to the page file, which an interrupt
     * would close under it (the store's close could then not sync it), so {@link #close} stops it by its steps' own
     * means ({@link #stoppable}). An interrupt sent while the open was ending is dropped.
     */
    private void opened() throws InterruptedIOException {
        synchronized (closing) {
            opening.remove(Thread.currentThread());
            Thread.interrupted();
            if (closed) {
                throw new InterruptedIOException("the writer is closing");
            }
        }
    }

    private interface Step<T> {
        T run() throws IOException;
    }

    /** Runs {@code step}, which {@code stop} ends when {@link #close} comes (at once, if it came already). */
    private <T> T stoppable(Runnable stop, Step<T> step) throws IOException {
        stops.add(stop);
        try {
            if (closed) {
                stop.run(); // close may have run the others before this one was there
            }
            return step.run();
        } finally {
            stops.remove(stop);
        }
    }

    /** Runs {@code job} on thread lob-rebuild-P; the task's inits give way until it is done, and wait after a failure. */
    private LockException inBackground(int partition, boolean rebuild, String what, Job job, String why) {
        CompletableFuture<Void> done = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                job.run();
                retries.remove(partition);
            } catch (Throwable e) {
                if (e instanceof MovedAway && !closed) {
                    retries.remove(partition);
                    if (rebuild) { // (a check that waited for a slot started no rebuild)
                        metrics.rebuildMoved();
                    }
                    log.info("partition {}: {} stopped: {}", partition, what, e.getMessage());
                } else if (!closed) {
                    metrics.rebuildFailed();
                    long now = System.nanoTime();
                    Retry retry = Retry.after(retries.get(partition), e, now);
                    retries.put(partition, retry);
                    long waitSeconds = Duration.ofNanos(retry.notBeforeNanos() - now).toSeconds();
                    if (timedOut(e)) { // the broker away: its message says all a stack trace would
                        log.warn("partition {}: {} failed ({} in a row): Kafka did not answer in time ({}); the task's next init "
                                + "after {} s starts another", partition, what, retry.inARow(), retry.lastError(), waitSeconds);
                    } else {
                        log.error("partition {}: {} failed ({} in a row); the task's next init after {} s starts another", partition,
                                what, retry.inARow(), waitSeconds, e);
                    }
                }
            } finally {
                opening.remove(Thread.currentThread());
                remaining.remove(partition);
                threads.remove(Thread.currentThread());
                done.complete(null);
            }
        }, "lob-rebuild-" + partition);
        t.setDaemon(true);
        synchronized (closing) {
            if (closed) {
                throw new IllegalStateException("the writer is closing");
            }
            opening.add(t);
            threads.add(t); // here: a close that comes next joins it
        }
        running.put(partition, done);
        initAsked.put(partition, System.nanoTime()); // the init's own work before this is not the task's silence
        t.start();
        return new LockException("partition " + partition + ": " + why + " on thread " + t.getName());
    }

    /**
     * Waits for one of the {@link #CONCURRENT} slots {@code of}, which the caller releases; gives up as a replay does once
     * no task here asked for the partition for {@link #MOVED_AFTER}, and when the writer closes.
     */
    private void awaitSlot(Semaphore of, int partition, String what) throws InterruptedIOException {
        try {
            if (of.tryAcquire()) {
                return;
            }
            log.info("partition {}: {} waits for one of the {} catch-ups of its kind under way to end", partition, what, CONCURRENT);
            while (!of.tryAcquire(1, TimeUnit.SECONDS)) {
                if (closed) {
                    throw new InterruptedIOException("the writer is closing");
                }
                Long asked = initAsked.get(partition);
                if (asked != null && System.nanoTime() - asked > MOVED_AFTER.toNanos()) {
                    throw new MovedAway(partition, null);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("interrupted while waiting to catch partition " + partition + " up");
        }
    }

    /** A catch-up's replay stopped as no task here asked for its partition for {@link #MOVED_AFTER}: not a failure. */
    static final class MovedAway extends InterruptedIOException {
        MovedAway(int partition, Throwable cause) {
            super("no task here asked for partition " + partition + " for " + MOVED_AFTER.toSeconds() + " s: it went to another "
                    + "node, or its stream thread stalled (what was replayed is kept, for a catch-up here again)");
            initCause(cause);
        }
    }

    /** The end offset of a catch-up that found a copy it must not replay into (not -1: a group that committed nothing). */
    private static final long REFUSED = Long.MIN_VALUE;

    private PartitionReplayer.Result catchUp(int partition, LobStore store) throws IOException {
        TopicPartition tp = new TopicPartition(config.topics().commands(), partition);
        long committed = awaitStableCommittedOffset(tp);
        long applied = store.appliedOffset(tp.topic() + "-" + tp.partition());
        // checked in full again, with the stable offset: an init that found it unstable returned before checking that the
        // copy is one of this log, and a replay into a copy of another topic would write over the values it holds
        Check check;
        long deadline = System.nanoTime() + STABLE_WAIT.toNanos();
        // asked within CHECK_TIMEOUT, sized for a stream thread: here a broker away for a moment is waited out, not a
        // failure that would start the growing wait between catch-ups
        while ((check = check(partition, store, tp, committed, false)) == Check.UNKNOWN) {
            if (closed) {
                throw new InterruptedIOException("the writer is closing");
            }
            if (System.nanoTime() > deadline) {
                throw new IOException("partition " + partition + ": no answer from the cluster about " + tp.topic(),
                        new TimeoutException("waited " + STABLE_WAIT.toSeconds() + " s"));
            }
            try {
                Thread.sleep(1_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new InterruptedIOException("interrupted while checking partition " + partition);
            }
        }
        switch (check) {
            case CURRENT -> {
                log.info("partition {}: the writer group committed {} up to offset {}: the tablespace is current", partition,
                        tp.topic(), committed);
                return new PartitionReplayer.Result(0, 0, 0, committed);
            }
            case BEHIND -> {
            }
            default -> {
                log.info("partition {}: not caught up ({}): the task's next init sets the copy aside or refuses it", partition, check);
                return new PartitionReplayer.Result(0, 0, 0, REFUSED);
            }
        }
        Semaphore slot = committed - (applied + 1) > SHORT_REPLAY_RECORDS ? slots : shortSlots;
        awaitSlot(slot, partition, "catch-up of " + (committed - applied - 1) + " records");
        PartitionReplayer replayer = new PartitionReplayer(config);
        boolean[] moved = {false};
        PartitionReplayer.Result r;
        try {
            r = stoppable(replayer::stop, () -> replayer.replay(partition, store, applied + 1, committed,
                    new PartitionReplayer.Progress() {
                        @Override
                        public void at(long offset, long end) {
                            remaining.put(partition, Math.max(0, end - offset));
                            Long asked = initAsked.get(partition);
                            if (!moved[0] && asked != null && System.nanoTime() - asked > MOVED_AFTER.toNanos()) {
                                moved[0] = true;
                                replayer.stop(); // the replay ends at its next poll, with what it applied kept
                            }
                        }

                        @Override
                        public void firstRecord(long offset) throws IOException {
                            renewCopyId(partition, store, offset);
                        }
                    }));
        } catch (InterruptedIOException stopped) {
            if (moved[0] && !closed) {
                throw new MovedAway(partition, stopped);
            }
            throw stopped;
        } finally {
            slot.release();
        }
        log.info("partition {}: caught up to offset {} with {} commands applied ({} skipped as the writer dead-lettered them); "
                + "{} LOBs live", partition, committed, r.applied(), r.rejected(), store.stats().lobs());
        return r;
    }

    /**
     * Gives a copy about to apply commands again a new id. Whether a copy of its id applied them before cannot be told from
     * here: it may have been restored from a backup, or have lost writes with lob.sync off, or be an old copy of a
     * partition that moved and came back. Its version numbers, issued again from where it stands, may then name other
     * values than the first time, and under a new copy id no ETag a client kept matches them. A new, empty copy is renamed
     * too: one restored from a backup taken before its first command looks the same.
     */
    private void renewCopyId(int partition, LobStore store, long offset) throws IOException {
        String was = store.copyId();
        store.renewCopyId();
        replayedTo.remove(was); // no store opens under that id again: one entry per partition, not one per catch-up
        log.info("partition {}: catching up from offset {} of {} as copy {} (was {}): no ETag a copy of the old id gave out can "
                + "match a version made now", partition, offset, config.topics().commands(), store.copyId(), was);
    }

    /**
     * Stops the catch-ups still running (a replay resumes from what its tablespace recorded) and waits for them, 30 s at
     * most. One that has its tablespace open stops before its next record, or in the Kafka call it waits in, and closes
     * the tablespace whole: not by an interrupt, which, reaching a thread that writes or syncs the page file, closes the
     * file for every thread, and the tablespace's close could not sync it. One still opening its tablespace (checking
     * every page, after a restart of the machine without lob.sync) is interrupted: it has the tablespace to itself, and
     * its next open checks again.
     */
    @Override
    public void close() {
        synchronized (closing) {
            closed = true;
            opening.forEach(Thread::interrupt);
        }
        stops.forEach(Runnable::run);
        synchronized (this) {
            if (admin != null) {
                admin.close(Duration.ofSeconds(1)); // a check still waiting fails, and so does its task's init: the node is closing
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        for (Thread t : threads) {
            try {
                t.join(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** The writer group's committed offset of {@code tp} (-1: none) if it is stable now, else empty. */
    private OptionalLong stableCommittedOffsetNow(TopicPartition tp) throws IOException {
        String group = config.get(LobStreamConfig.APPLICATION_ID);
        // the call's own timeout too: one not answered in time does not go on retrying in the shared client
        Optional<Map<TopicPartition, OffsetAndMetadata>> answer = answerNow(tp, "the committed offsets of group " + group,
                askStableOffset(admin(), group, tp, (int) CHECK_TIMEOUT.toMillis()));
        return answer.isEmpty() ? OptionalLong.empty() : stableOffsetIn(answer.get(), tp);
    }

    /** Asks for {@code group}'s committed offset of {@code tp} with {@code requireStable}: see {@link #stableOffsetIn}. */
    public static KafkaFuture<Map<TopicPartition, OffsetAndMetadata>> askStableOffset(Admin admin, String group, TopicPartition tp,
                                                                                     int timeoutMs) {
        return admin.listConsumerGroupOffsets(Map.of(group, new ListConsumerGroupOffsetsSpec().topicPartitions(List.of(tp))),
                new ListConsumerGroupOffsetsOptions().requireStable(true).timeoutMs(timeoutMs)).partitionsToOffsetAndMetadata(group);
    }

    /**
     * The stable committed offset of {@code tp} in an answer of {@link #askStableOffset}: -1 when none was committed; empty
     * when the partition was left out, its commit in flight (its error, UNSTABLE_OFFSET_COMMIT, only logged by the admin
     * client), which is not "none committed".
     */
    public static OptionalLong stableOffsetIn(Map<TopicPartition, OffsetAndMetadata> answer, TopicPartition tp) {
        if (!answer.containsKey(tp)) {
            return OptionalLong.empty();
        }
        OffsetAndMetadata o = answer.get(tp); // null: no offset committed
        return OptionalLong.of(o == null ? -1 : o.offset());
    }

    /** The end offset of {@code tp}, or empty when the broker did not answer in time. */
    private OptionalLong logEndNow(TopicPartition tp) throws IOException {
        Optional<ListOffsetsResult.ListOffsetsResultInfo> answer = answerNow(tp, "the topic's end offset",
                admin().listOffsets(Map.of(tp, OffsetSpec.latest()), new ListOffsetsOptions().timeoutMs((int) CHECK_TIMEOUT.toMillis()))
                        .partitionResult(tp));
        return answer.isEmpty() ? OptionalLong.empty() : OptionalLong.of(answer.get().offset());
    }

    /** {@code tp}'s topic (its id and partitions), or empty when the broker did not answer in time. */
    private Optional<TopicDescription> topicNow(TopicPartition tp) throws IOException {
        return answerNow(tp, "the topic's id and partitions", admin().describeTopics(List.of(tp.topic()),
                new DescribeTopicsOptions().timeoutMs((int) CHECK_TIMEOUT.toMillis())).topicNameValues().get(tp.topic()));
    }

    /**
     * What the admin client answers within {@link #CHECK_TIMEOUT}, or empty. A coordinator moving, a broker away: the
     * catch-up thread asks again until it is answered, where failing the init would fail the stream thread, and with it
     * every task the thread has.
     */
    private <T> Optional<T> answerNow(TopicPartition tp, String what, KafkaFuture<T> answer) throws IOException {
        try {
            return Optional.of(answer.get(CHECK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS));
        } catch (TimeoutException e) {
            return Optional.empty();
        } catch (ExecutionException e) {
            log.warn("partition {}: cannot read {} now ({}); asking again on a thread of its own", tp.partition(), what,
                    e.getCause().toString());
            return Optional.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while reading " + what + " of " + tp, e);
        }
    }

    private synchronized Admin admin() throws IOException {
        if (closed) {
            throw new IOException("the writer is closing");
        }
        if (admin == null) {
            admin = Admin.create(config.clientConfig(ClientKind.ADMIN));
        }
        return admin;
    }

    /**
     * The writer group's stable committed offset of {@code tp} (-1: none), waited for. Asked by a
     * consumer of the group that never joins it: {@code committed()} asks for stable offsets, and
     * retries while a commit is in flight. A transaction that stays open past {@link #STABLE_WAIT}
     * is warned about each time, and waited for on.
     */
    private long awaitStableCommittedOffset(TopicPartition tp) throws IOException {
        String group = config.get(LobStreamConfig.APPLICATION_ID);
        Map<String, Object> p = config.clientConfig(ClientKind.CONSUMER);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        try {
            return stoppable(consumer::wakeup, () -> {
                for (long waited = 0; ; waited += STABLE_WAIT.toSeconds()) {
                    try {
                        OffsetAndMetadata o = consumer.committed(Set.of(tp), STABLE_WAIT).get(tp);
                        return o == null ? -1L : o.offset();
                    } catch (org.apache.kafka.common.errors.TimeoutException e) {
                        log.warn("{}: the writer group's committed offset is still not stable after {} s (a transaction still "
                                + "open, or the group coordinator unreachable); waiting on", tp, waited + STABLE_WAIT.toSeconds());
                    }
                }
            });
        } catch (WakeupException e) {
            throw new InterruptedIOException("the writer is closing");
        } catch (KafkaException e) {
            throw new IOException("cannot read the committed offsets of group " + group + ": " + e, e);
        } finally {
            consumer.close(CloseOptions.timeout(Duration.ofSeconds(1))); // nothing of ours is pending; an unanswered fetch need not be
        }
    }
}
