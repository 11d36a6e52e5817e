package io.lobstream.ingest.writer;

import io.lobstream.ingest.replay.PartitionReplayer;
import io.lobstream.ingest.writer.TablespaceCheck.Verdict;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.store.LobStore;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.KafkaException;
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
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
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
 * The init itself only asks ({@link TablespaceCheck}) the group's stable committed offset, the topic's
 * id and partitions, and (once the copy or the group has applied commands) the log's end, each within
 * {@link TablespaceCheck#CHECK_TIMEOUT}; while the offset is not stable (after a node died
 * mid-transaction, until that transaction times out) the catch-up thread waits for it instead.
 */
public final class TablespaceCatchUp implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TablespaceCatchUp.class);

    private final LobStreamConfig config;
    private final WriterMetrics metrics;
    /** Whether a task's tablespace is a copy of this log, and current: asked by each task's init and again before a replay. */
    private final TablespaceCheck checks;
    /** Catch-ups by partition, done (completed) once their store is closed again. */
    private final Map<Integer, CompletableFuture<Void>> running = new ConcurrentHashMap<>();
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
        this.checks = new TablespaceCheck(config, metrics);
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

    /**
     * How long the catch-up thread waits for a stable offset before it logs a warning and waits on.
     * A dead owner's transaction is aborted after its {@code transaction.timeout.ms} (10 s, Kafka
     * Streams' default under exactly-once) plus the broker's check interval
     * ({@code transaction.abort.timed.out.transaction.cleanup.interval.ms}, 10 s by default).
     */
    static final Duration STABLE_WAIT = Duration.ofSeconds(60);

    /** {@link TablespaceCheck#check(int, LobStore)}: asked by a task's init, on its stream thread. */
    public Verdict check(int partition, LobStore store) throws IOException {
        return checks.check(partition, store);
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
                checks.replayed(copy, r.endOffset()); // closed: the task's next init may open it
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
                    } else if (TaskRetries.environmental(e)) { // a full disk, a registry away: the messages say it all, as
                        // the task's own failures do (LobStateStore), not a stack trace at every try
                        log.error("partition {}: {} failed ({} in a row): {}; the task's next init after {} s starts another",
                                partition, what, retry.inARow(), TaskRetries.messages(e), waitSeconds);
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
        Verdict check;
        long deadline = System.nanoTime() + STABLE_WAIT.toNanos();
        // asked within CHECK_TIMEOUT, sized for a stream thread: here a broker away for a moment is waited out, not a
        // failure that would start the growing wait between catch-ups
        while ((check = checks.check(partition, store, tp, committed, false)) == Verdict.UNKNOWN) {
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
        checks.forget(was); // no store opens under that id again: one entry per partition, not one per catch-up
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
        checks.close(); // a check still waiting fails, and so does its task's init: the node is closing
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
