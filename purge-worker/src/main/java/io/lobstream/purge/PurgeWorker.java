package io.lobstream.purge;

import io.lobstream.schema.LobSerdes;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.store.LogOncePerMinute;
import io.lobstream.store.LobStoreConfig;
import io.lobstream.store.page.PageType;
import io.lobstream.store.purge.PurgeReader;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.Consumer;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.Producer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.errors.WakeupException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

/**
 * A purge worker: one member of the consumer group on {@code lob.undo-history}. For each undo
 * record it reads the superseded version's root (and index) pages from the node's data
 * directory, read-only, and produces a ReclaimRecord naming the version's pages. The reclaim
 * records and the consumed offsets commit in one transaction, so across crashes and rebalances
 * every undo record yields its reclaim record exactly once.
 *
 * <p>Two ways to get partitions. A standalone worker ({@code lobstream purge}) subscribes: the
 * group gives each partition to a member whose data directory holds its tablespace
 * ({@link TablespacePartitionAssignor}): one node's, a shared volume, or one worker beside each
 * node. A worker inside a writer node follows
 * that node instead ({@link #following}): it assigns itself its share of the partitions whose
 * tablespaces the node has open (but those standalone workers hold: {@link PurgeWorkerPool#following}), and follows
 * them through the writers' rebalances. With several
 * nodes each one purges its own partitions, and the offsets still go to the purge group, so a
 * partition that moves is purged on from where its last purger stopped, and a worker commits no
 * offset for a partition its node has closed. While a partition moves, both nodes may read
 * the same undo records: a reclaim is applied once, the writer ignores the others (version no
 * longer pending) or rejects them (pages of the other node's copy), and undo records of another
 * copy are skipped here. A node that lost a partition without knowing it yet (its stream thread
 * stalled past the group's timeouts) still has it open, and its worker may commit past the new
 * owner's undo records: these workers are not fenced by the writer group. The versions are
 * reclaimed all the same: their node produces their undo records again when it opens the
 * tablespace, and when purge has consumed them without a reclaim ({@code lob.undo.resend.interval.ms}).
 */
public final class PurgeWorker implements Runnable, AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(PurgeWorker.class);
    /**
     * How often partitions paused for lack of a tablespace are tried again, and a subscribed worker looks whether its data
     * directory's tablespaces changed (the group then assigns again: {@link TablespacePartitionAssignor}).
     */
    private static final Duration MISSING_RETRY = Duration.ofSeconds(10);
    /** How often positions a poll moved past records it did not return are looked for ({@link #skippedPastCommitted}). */
    private static final Duration SKIPPED_CHECK_EVERY = Duration.ofSeconds(30);

    /** Fences closer together than this lengthen the pause before the next producer. */
    private static final long FENCE_WINDOW_NANOS = Duration.ofMinutes(10).toNanos();
    /** Aborts this close to each other are one failure that stays: their pause grows (twice the longest pause). */
    private static final long ABORTS_IN_A_ROW_NANOS = Duration.ofMillis(2 * Backoff.MAX_MS).toNanos();

    private final String workerId;
    private final String transactionalId;
    private final Consumer<String, byte[]> consumer;
    private final Supplier<Producer<String, Object>> producers;
    /** How long one transaction purges before it commits what it has: half the shorter of the producer's
     * transaction.timeout.ms and the consumer's max.poll.interval.ms ({@link PurgeClients#transactionBudget}). */
    private final Duration transactionBudget;
    /** Replaced when it fails for good ({@link #producerFailed}). */
    private Producer<String, Object> producer;
    /**
     * The producer failed in a way it does not recover from (an authorization error, a sequence gap,
     * a fence: it then refuses every call, the abort too). The next turn of the loop replaces it, so a
     * worker whose ACL is mended goes on without a restart.
     */
    private boolean producerFailed;
    /** The pause before an unexpected failure, or a producer failed for good, is tried again. */
    private final Backoff unexpectedBackoff = new Backoff();
    /**
     * The pause before the records of an aborted transaction are read again: it grows while transactions keep aborting
     * (a registry away for minutes), so the worker neither retries nor logs every second.
     */
    private final Backoff abortBackoff = new Backoff();
    private long lastAbort;
    /** The pause before a fenced producer is replaced: it grows while fences come within {@link #FENCE_WINDOW_NANOS}. */
    private final Backoff fenceBackoff = new Backoff();
    private long lastFence;
    private boolean fencedBefore;
    /** The Kafka failures retried at once: one that lasts (a corrupt batch) is said once a minute. */
    private final LogOncePerMinute retriedSaid = new LogOncePerMinute();
    private final PurgeMetrics metrics;
    private final TablespaceReaders readers;
    private final UndoPurger purger;
    private long missingRetried = System.nanoTime();
    private long skippedChecked = System.nanoTime() - SKIPPED_CHECK_EVERY.toNanos(); // the first poll looks
    private final AtomicBoolean running = new AtomicBoolean(true);
    /** Set by the first of {@link #run()} and {@link #close()}: whichever it is lets the clients go when it is done. */
    private final AtomicBoolean started = new AtomicBoolean();
    /** Counted down by {@link #close()}: every pause waits on it, so a worker backing off for a minute still stops at once. */
    private final CountDownLatch closing = new CountDownLatch(1);
    private final String undoTopic;
    /** The partitions to purge, when following a node (this worker's share of the node's); null when subscribed to the group. */
    private final Supplier<Set<Integer>> nodePartitions;
    /** What the data directory holds, as the group was told it; null when following a node. */
    private final HeldTablespaces held;
    /**
     * Partitions whose last batch was held back for want of a tablespace, until a batch of theirs is purged (the worker's
     * thread's): not the consumer's paused set, which each retry empties for a poll.
     */
    private final Set<TopicPartition> heldBack = new HashSet<>();
    /** Those assigned to the consumer now, when following a node (written by the worker's thread only). */
    private volatile Set<Integer> assigned = Set.of();
    private long nextFollowCheck = System.nanoTime();

    /** A standalone worker: a subscribed member of the purge group. */
    public static PurgeWorker subscribed(LobStreamConfig config, LobStoreConfig storeConfig, String workerId, long readLatencyNanos,
                                         MeterRegistry meters) {
        return create(config, storeConfig, workerId, readLatencyNanos, meters, null);
    }

    /**
     * A worker inside a writer node: it purges the partitions {@code partitions} returns (its share of the node's open
     * tablespaces; {@link PurgeWorkerPool#following} splits them), asked again every half second.
     */
    public static PurgeWorker following(LobStreamConfig config, LobStoreConfig storeConfig, String workerId, MeterRegistry meters,
                                        Supplier<Set<Integer>> partitions) {
        return create(config, storeConfig, workerId, 0, meters, partitions);
    }

    /** Makes the worker's parts in turn, the Kafka consumer last; a failure closes those made (the constructor, its own). */
    private static PurgeWorker create(LobStreamConfig config, LobStoreConfig storeConfig, String workerId, long readLatencyNanos,
                                      MeterRegistry meters, Supplier<Set<Integer>> nodePartitions) {
        TablespaceReaders readers = new TablespaceReaders(config.dataDir(), storeConfig, readLatencyNanos, workerId);
        HeldTablespaces held = nodePartitions == null ? new HeldTablespaces(config.dataDir(), workerId) : null;
        UndoPurger purger = null;
        boolean handedOver = false;
        try {
            PurgeMetrics metrics = new PurgeMetrics(meters, workerId);
            purger = new UndoPurger(workerId, config.topics().reclaim(), LobSerdes.valueDeserializer(config), readers, metrics,
                    Clock.systemUTC());
            String transactionalId = PurgeClients.transactionalId(config, workerId);
            String undoTopic = config.topics().undoHistory();
            Duration transactionBudget = PurgeClients.transactionBudget(config);
            Supplier<Producer<String, Object>> producers = PurgeClients.producers(config, workerId);
            Consumer<String, byte[]> consumer = PurgeClients.consumer(config, workerId, held);
            handedOver = true;
            return new PurgeWorker(workerId, transactionalId, undoTopic, consumer, producers, transactionBudget, readers, purger, metrics,
                    nodePartitions, held);
        } finally {
            if (!handedOver) {
                try {
                    readers.close();
                } finally {
                    if (purger != null) {
                        purger.close();
                    }
                }
            }
        }
    }

    /** The worker on clients and parts of the caller's choosing (tests: Kafka's mock clients). */
    PurgeWorker(String workerId, String transactionalId, String undoTopic, Consumer<String, byte[]> consumer,
                Supplier<Producer<String, Object>> producers, Duration transactionBudget, TablespaceReaders readers, UndoPurger purger,
                PurgeMetrics metrics, Supplier<Set<Integer>> nodePartitions, HeldTablespaces held) {
        this.workerId = workerId;
        this.transactionalId = transactionalId;
        this.undoTopic = undoTopic;
        this.consumer = consumer;
        this.producers = producers;
        this.transactionBudget = transactionBudget;
        this.readers = readers;
        this.purger = purger;
        this.metrics = metrics;
        this.nodePartitions = nodePartitions;
        this.held = held;
        try {
            this.producer = producers.get();
            metrics.prefetch(readers::inFlight, readers::window);
        } catch (RuntimeException | Error e) {
            release(); // what was made for this worker, which nobody else will close
            throw e;
        }
    }

    /** Versions turned into reclaim records so far, in committed transactions. */
    public long versionsPurged() {
        return (long) metrics.versions.count();
    }

    /** Pages of this type purge has read so far. */
    public long pagesRead(PageType type) {
        return metrics.pagesRead(type);
    }

    public String workerId() {
        return workerId;
    }

    /** The partitions this worker, following a node, purges now: none for a subscribed one (the group decides). */
    public Set<Integer> followed() {
        return assigned;
    }

    @Override
    public void run() {
        if (!started.compareAndSet(false, true)) {
            return; // closed before it ran (close() let the clients go), or run twice
        }
        try {
            if (nodePartitions == null) {
                consumer.subscribe(List.of(undoTopic), new Rebalance());
            }
            boolean reposition = false;
            boolean transactional = false;
            while (running.get()) {
                try {
                    if (producerFailed) {
                        producer.close(Duration.ZERO);
                        producer = producers.get();
                        producerFailed = false;
                        transactional = false;
                    }
                    if (!transactional) {
                        // in the loop: a coordinator that does not answer yet (max.block.ms) is waited for, not the end of the worker
                        initTransactions();
                        transactional = true;
                    }
                    if (reposition) {
                        // after a failure the positions may be past records whose reclaims were not committed
                        rewind();
                        reposition = false;
                    }
                    if (nodePartitions != null && !follow()) {
                        metrics.partitions(0, 0);
                        pause(200); // nothing to purge here (yet)
                        continue;
                    }
                    if (System.nanoTime() - missingRetried > MISSING_RETRY.toNanos()) {
                        // a paused partition stays assigned here until the group assigns again: look for its tablespace
                        // again, from the group's committed offset, not where it was held back: other workers may have purged
                        // past it since, and a commit from there would move the group back. Then, if the data directory's
                        // tablespaces changed, ask the group to assign again
                        resumeHeld();
                        reassignIfHeldChanged();
                        missingRetried = System.nanoTime(); // after: a wait for the offsets in it is not the next retry's
                    }
                    ConsumerRecords<String, byte[]> records = consumer.poll(Duration.ofMillis(200));
                    Map<TopicPartition, OffsetAndMetadata> skipped = skippedPastCommitted(records.partitions());
                    if (!records.isEmpty() || !skipped.isEmpty()) {
                        Transaction outcome = processInTransaction(records, skipped);
                        if (outcome == Transaction.COMMITTED) {
                            abortBackoff.reset();
                        } else if (outcome == Transaction.ABORTED && running.get()) {
                            // aborted (a registry away, a send refused): the records come again, after a pause, not at once;
                            // one that follows no abort of the last minutes pauses the least
                            metrics.failures.increment();
                            if (System.nanoTime() - lastAbort > ABORTS_IN_A_ROW_NANOS) {
                                abortBackoff.reset();
                            }
                            pause(abortBackoff.next());
                            lastAbort = System.nanoTime(); // after the pause: a minute's pause is not a minute without aborts
                        }
                    }
                    Set<TopicPartition> holding = consumer.assignment();
                    heldBack.retainAll(holding);
                    metrics.partitions(holding.size(), heldBack.size());
                    unexpectedBackoff.reset();
                } catch (WakeupException e) {
                    throw e;
                } catch (ProducerFencedException e) {
                    if (!running.get()) {
                        break; // closing
                    }
                    fenced(e);
                    reposition = true;
                } catch (KafkaException e) {
                    // e.g. committed offsets not readable while a killed predecessor's transaction is still open (until
                    // transaction.timeout.ms): a worker that stopped here would leave history to grow unseen
                    if (!running.get()) {
                        break; // closing
                    }
                    metrics.failures.increment();
                    reposition = true;
                    if (producerFailed) {
                        // an ACL missing, say: the pause grows, so a worker waiting for it does not log every second
                        long wait = unexpectedBackoff.next();
                        log.error("purge worker {}: its producer failed for good ({}); a new one in {} ms", workerId, e.toString(), wait);
                        pause(wait);
                    } else if (e instanceof AuthorizationException) {
                        // the consumer's ACLs (Read on the group or on lob.undo-history): as lasting as the producer's
                        long wait = unexpectedBackoff.next();
                        log.error("purge worker {}: not authorized ({}); trying again in {} ms", workerId, e.toString(), wait);
                        pause(wait);
                    } else {
                        // at once: what this mostly is lasts a transaction timeout at most; what lasts is said once a minute
                        if (retriedSaid.sayNow(e.toString()) >= 0) {
                            log.warn("purge worker {}: {}; trying again every {} ms (the same failure is said once a minute)",
                                    workerId, e.toString(), Backoff.MIN_MS);
                        }
                        pause(Backoff.MIN_MS);
                    }
                } catch (RuntimeException e) {
                    // not Kafka's (a bug, a record no check foresaw): a worker thread that ended here would stop purging its
                    // partitions with nothing in the log, in a node for good; logged (the trace once in a row), counted, and
                    // the records read again after a pause that grows while the failure stays
                    if (!running.get()) {
                        break; // closing
                    }
                    metrics.failures.increment();
                    long wait = unexpectedBackoff.next();
                    if (wait == Backoff.MIN_MS) {
                        log.error("purge worker {}: {}; trying again in {} ms", workerId, e.toString(), wait, e);
                    } else {
                        log.error("purge worker {}: {} again; trying again in {} ms", workerId, e.toString(), wait);
                    }
                    reposition = true;
                    pause(wait);
                }
            }
        } catch (WakeupException e) {
            if (running.get()) {
                throw e;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            release();
        }
    }

    /** Lets go of the worker's clients and readers, each whatever the others do. */
    private void release() {
        List<Runnable> steps = new ArrayList<>();
        steps.add(readers::close);
        steps.add(() -> consumer.close(CloseOptions.timeout(Duration.ofSeconds(5))));
        if (producer != null) {
            Producer<String, Object> last = producer;
            steps.add(() -> last.close(Duration.ofSeconds(5)));
        }
        steps.add(purger::close);
        for (Runnable step : steps) {
            try {
                step.run();
            } catch (RuntimeException e) {
                log.warn("purge worker {}: closing: {}", workerId, e.toString());
            }
        }
    }

    /**
     * Transactions aborted as outrun by a rebalance in a row, since the last that ended otherwise (not since a time: a
     * worker dropped at every turn is dropped at most every max.poll.interval.ms, and an empty poll may be its rejoin).
     * Past the max, counted as failures.
     */
    private int outrunsInARow;
    private static final int OUTRUNS_IN_A_ROW_MAX = 2;

    /** How {@link #processInTransaction} ended. */
    private enum Transaction {
        COMMITTED,
        /** Aborted; its records are read again, after a pause. */
        ABORTED,
        /**
         * Aborted because the group moved on while it ran: its offsets were refused for an old generation of the group
         * (a member joining or leaving, a worker asking for a reassignment) and its records are read again at once. No
         * failure: a cooperative rebalance does this to each member busy as it starts.
         */
        OUTRUN_BY_REBALANCE
    }

    /** Purges {@code records} in one transaction, committing their offsets, and {@code skipped}'s. */
    private Transaction processInTransaction(ConsumerRecords<String, byte[]> records, Map<TopicPartition, OffsetAndMetadata> skipped) {
        try {
            producer.beginTransaction(); // in the try: a producer that failed for good says so here first
            // past this, or once the worker is closing, the transaction commits what it has and leaves the rest of the
            // poll to the next one (or the next owner), before the group would drop a member that polls that late (its
            // offsets refused, and the same poll, as long, again), and before a process's shutdown gives up waiting
            long deadline = System.nanoTime() + transactionBudget.toNanos();
            BooleanSupplier due = () -> !running.get() || System.nanoTime() - deadline >= 0;
            long versions = 0;
            long pages = 0;
            List<UndoPurger.Purged> done = new ArrayList<>();
            List<ProducerRecord<String, Object>> reclaims = new ArrayList<>();
            Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>(skipped);
            List<TopicPartition> partitions = new ArrayList<>(records.partitions());
            for (int p = 0; p < partitions.size(); p++) {
                TopicPartition tp = partitions.get(p);
                List<ConsumerRecord<String, byte[]>> batch = records.records(tp);
                if (!offsets.isEmpty() && due.getAsBoolean()) {
                    readAgain(records, partitions.subList(p, partitions.size()));
                    break;
                }
                PurgeReader reader = readers.reader(tp.partition());
                UndoPurger.Purged purged = reader == null ? UndoPurger.Purged.HELD_BACK : purger.purge(tp.partition(), reader, batch, due);
                if (purged == UndoPurger.Purged.HELD_BACK) {
                    // No tablespace here (yet), or a new copy that does not open: leave the records unconsumed, the partition
                    // paused and tried again every MISSING_RETRY. A subscribed worker is given only partitions whose
                    // tablespaces its data directory held when it last told the group (this one's went since, or does not
                    // open), and asks the group to assign again when that changes; a following worker drops the partition from its assignment once its node has
                    // closed it.
                    consumer.pause(List.of(tp));
                    consumer.seek(tp, batch.get(0).offset());
                    heldBack.add(tp);
                    continue;
                }
                heldBack.remove(tp);
                reclaims.addAll(purged.reclaims());
                done.add(purged);
                versions += purged.reclaims().size();
                pages += purged.pages();
                if (purged.consumed() < batch.size()) {
                    long rest = batch.get(purged.consumed()).offset();
                    offsets.put(tp, new OffsetAndMetadata(rest));
                    consumer.seek(tp, rest);
                    readAgain(records, partitions.subList(p + 1, partitions.size()));
                    break;
                }
                // the position, not last offset + 1: it is past any transaction marker that followed, so the
                // group's lag reads 0 once everything is purged
                offsets.put(tp, new OffsetAndMetadata(Math.max(consumer.position(tp), batch.get(batch.size() - 1).offset() + 1)));
            }
            if (nodePartitions != null) {
                // a partition the node gave up meanwhile: its undo records are left to the new owner's worker (the
                // reclaims sent for them here name this copy's pages; the writer ignores or rejects them)
                offsets.keySet().retainAll(nodePartitions.get().stream().map(p -> new TopicPartition(undoTopic, p)).toList());
            }
            // sent only now: the coordinator's transaction.timeout.ms runs from the first send, so a long scan of a later
            // partition (lob.purge.skip.load=false, a huge value, a slow disk) cannot outlast it after an earlier one's sends
            reclaims.forEach(producer::send);
            producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
            commit();
            metrics.versions.increment(versions); // once committed: an aborted transaction's are sent again
            metrics.pages.increment(pages);
            done.forEach(UndoPurger.Purged::countSkipped);
            outrunsInARow = 0;
            return Transaction.COMMITTED;
        } catch (ProducerFencedException e) {
            outrunsInARow = 0;
            throw e;
        } catch (KafkaException e) {
            // a cooperative rebalance outruns one transaction per member, two at most; more in a row is no rebalance (a
            // worker dropped from the group at each turn, past max.poll.interval.ms, which comes back to a backlog): a
            // failure, with its pause
            boolean outrun = false;
            if (e instanceof CommitFailedException || e.getCause() instanceof CommitFailedException) {
                outrun = ++outrunsInARow <= OUTRUNS_IN_A_ROW_MAX;
            } else {
                outrunsInARow = 0;
            }
            if (outrun) {
                log.info("purge worker {}: transaction aborted by a rebalance of the group, its records are read again: {}", workerId,
                        e.getCause() instanceof CommitFailedException ? e.getCause().getMessage() : e.getMessage());
            } else {
                log.warn("purge worker {}: transaction aborted, its records are read again from the last commit: {}{}", workerId, e,
                        e.getCause() == null ? "" : " (" + e.getCause() + ")");
            }
            try {
                producer.abortTransaction();
            } catch (IllegalStateException | KafkaException abortRefused) {
                // a commit that timed out, given up at shutdown: the producer refuses the abort; the broker aborts
                // the transaction when it times out, and the next worker with this id fences it at once
                if (running.get()) {
                    producerFailed = true;
                    // a KafkaException either way, for the loop to replace the producer (an IllegalStateException would end it)
                    throw abortRefused instanceof KafkaException k ? k : new KafkaException("the producer refused to abort", abortRefused);
                }
                return Transaction.ABORTED;
            }
            rewind();
            return outrun ? Transaction.OUTRUN_BY_REBALANCE : Transaction.ABORTED;
        } catch (RuntimeException e) {
            // not Kafka's: what this poll sent is aborted, and the loop says so and waits before the records come again
            outrunsInARow = 0;
            try {
                producer.abortTransaction();
            } catch (RuntimeException abortRefused) {
                producerFailed = true;
            }
            throw e;
        }
    }

    /**
     * The producer was fenced: its epoch moved on. Either its transaction outlived
     * {@code transaction.timeout.ms} (a coordinator away longer than that, a send or commit stuck that
     * long: scans run before the first send, so they do not count) and the coordinator aborted it, or another worker started with the same id. A worker that
     * stopped here would leave its partitions unpurged with nothing to restart it (in a node), so it
     * takes a new producer, which fences the other one in turn; its uncommitted records come again.
     * Fences that keep coming (the same id twice) are logged each time and spaced out up to a minute.
     */
    private void fenced(ProducerFencedException e) throws InterruptedException {
        long now = System.nanoTime();
        if (!fencedBefore || now - lastFence >= FENCE_WINDOW_NANOS) {
            fenceBackoff.reset();
        }
        long wait = fenceBackoff.next();
        fencedBefore = true;
        lastFence = now;
        metrics.failures.increment();
        producerFailed = true;
        log.error("purge worker {}: its producer was fenced ({}): a transaction that outlived transaction.timeout.ms, or another worker "
                + "running with transactional id {}; a new producer in {} ms", workerId, e.getMessage(), transactionalId, wait);
        pause(wait);
    }

    /** Seeks {@code partitions} back to their first record in {@code records}: the next poll returns them again. */
    private void readAgain(ConsumerRecords<String, byte[]> records, List<TopicPartition> partitions) {
        for (TopicPartition tp : partitions) {
            consumer.seek(tp, records.records(tp).get(0).offset());
        }
    }

    /** A timeout is waited out with this producer; any other failure leaves it refusing every call (KafkaProducer's doc). */
    private void initTransactions() {
        try {
            producer.initTransactions();
        } catch (org.apache.kafka.common.errors.TimeoutException e) {
            throw e;
        } catch (KafkaException e) {
            producerFailed = true;
            throw e;
        }
    }

    /**
     * Commits the transaction. A commit that timed out (coordinator unreachable for
     * {@code max.block.ms}) must be retried, not aborted: the producer refuses an abort then
     * (IllegalStateException), which would end the worker.
     */
    private void commit() {
        while (true) {
            try {
                producer.commitTransaction();
                return;
            } catch (org.apache.kafka.common.errors.TimeoutException e) {
                if (!running.get()) {
                    throw e;
                }
                metrics.failures.increment(); // a commit that keeps timing out is no healthy worker
                log.warn("purge worker {}: commit timed out ({}); committing again", workerId, e.getMessage());
            }
        }
    }

    /**
     * Following a node: assigns this worker's share of the node's open partitions when it changed
     * (checked every half second), each from the purge group's committed offset.
     *
     * @return whether any partition is assigned
     */
    private boolean follow() {
        long now = System.nanoTime();
        if (now - nextFollowCheck >= 0) { // nanoTime may be negative: compared by difference
            nextFollowCheck = now + 500_000_000L;
            Set<Integer> wanted = nodePartitions.get();
            if (!wanted.equals(assigned)) {
                List<TopicPartition> added = new ArrayList<>();
                for (int p : wanted) {
                    if (!assigned.contains(p)) {
                        added.add(new TopicPartition(undoTopic, p));
                    }
                }
                readers.retainOnly(wanted);
                consumer.assign(wanted.stream().map(p -> new TopicPartition(undoTopic, p)).toList());
                assigned = Set.copyOf(wanted);
                try {
                    seekToCommitted(added, Duration.ofSeconds(10));
                } catch (KafkaException e) {
                    assigned = Set.of(); // assign and seek again at the next check
                    nextFollowCheck = now + 1_000_000_000L;
                    throw e;
                }
                log.info("purge worker {} follows partitions {}", workerId, new java.util.TreeSet<>(wanted));
                // the node opened or closed a tablespace: one paused because its copy did not open may open now; the
                // others wait for MISSING_RETRY, as a subscribed worker's do (not fetched again every check). From the
                // committed offsets, as there
                resumeHeld();
            }
        }
        return !assigned.isEmpty();
    }

    /**
     * Every {@link #SKIPPED_CHECK_EVERY}: the positions of this worker's partitions that are past their committed offsets,
     * but those of {@code inPoll}, which the poll's transaction commits or moves back. A read_committed poll moves past an
     * aborted transaction's records and its marker (a writer killed while it produced undo records again) and returns
     * nothing of them, so no transaction committed that position: the group's lag, and purge's progress that the writer's
     * resender and status read, stayed behind for good on a partition that then went quiet. Paused partitions are left
     * out: their positions were moved back to records not read.
     */
    private Map<TopicPartition, OffsetAndMetadata> skippedPastCommitted(Set<TopicPartition> inPoll) {
        if (System.nanoTime() - skippedChecked < SKIPPED_CHECK_EVERY.toNanos()) {
            return Map.of();
        }
        Set<TopicPartition> owned = new HashSet<>(consumer.assignment());
        owned.removeAll(consumer.paused());
        owned.removeAll(inPoll);
        if (owned.isEmpty()) {
            return Map.of(); // not counted as a check: the first with partitions comes at once (a group still joining)
        }
        skippedChecked = System.nanoTime();
        Map<TopicPartition, OffsetAndMetadata> past = new HashMap<>();
        try {
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(owned, Duration.ofSeconds(10));
            for (TopicPartition tp : owned) {
                long at = consumer.position(tp, Duration.ofSeconds(10));
                OffsetAndMetadata c = committed.get(tp);
                if (at > (c == null ? 0 : c.offset())) {
                    past.put(tp, new OffsetAndMetadata(at));
                }
            }
        } catch (org.apache.kafka.common.errors.TimeoutException unsettled) {
            // a partition whose offsets a killed worker's open transaction still holds: looked at again next time, and
            // the poll's records purged meanwhile (thrown, it would have them read again, and every try wait as long)
            return Map.of();
        }
        return past;
    }

    /**
     * Resumes the partitions held back, from the group's committed offsets: not where they were held, as other workers may
     * have purged past that since, and a commit from there would move the group back. Left held, and tried again at the
     * next retry, if the offsets do not come within a second (the coordinator away, or offsets waiting on another's open
     * transaction): the worker's other partitions are not held up longer, and the failure is counted and said.
     */
    private void resumeHeld() {
        Set<TopicPartition> held = consumer.paused();
        try {
            seekToCommitted(held, Duration.ofSeconds(1));
        } catch (org.apache.kafka.common.errors.TimeoutException e) {
            metrics.failures.increment();
            if (retriedSaid.sayNow("held offsets") >= 0) {
                log.warn("purge worker {}: the committed offsets of {}, held back, did not come ({}): held back still (said once a "
                        + "minute)", workerId, held, e.getMessage());
            }
            return;
        }
        consumer.resume(held);
    }

    /**
     * A subscribed worker whose data directory gained or lost a tablespace since it last told the group asks the group to
     * assign again: a partition whose tablespace appeared here comes to it (from a member without it, or from nobody),
     * and one whose tablespace went goes to a member that has it.
     */
    private void reassignIfHeldChanged() {
        Set<Integer> now = held == null ? null : held.changedSinceTold();
        if (now != null) {
            log.info("purge worker {}: its data directory holds the tablespaces of partitions {} now (those its node uses, "
                    + "where one writes node.in-use; the group was told {}); "
                    + "asking the group to assign again", workerId, new java.util.TreeSet<>(now), new java.util.TreeSet<>(held.told()));
            consumer.enforceRebalance("the tablespaces in the data directory changed");
        }
    }

    /** After an aborted transaction: go back to the committed offsets of every assigned partition. */
    private void rewind() {
        seekToCommitted(consumer.assignment(), Duration.ofSeconds(10));
    }

    private void seekToCommitted(Collection<TopicPartition> partitions, Duration wait) {
        if (partitions.isEmpty()) {
            return;
        }
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.copyOf(partitions), wait);
        for (TopicPartition tp : partitions) {
            OffsetAndMetadata om = committed.get(tp);
            if (om != null) {
                consumer.seek(tp, om.offset());
            } else {
                consumer.seekToBeginning(List.of(tp));
            }
        }
    }

    private final class Rebalance implements ConsumerRebalanceListener {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) { // (the cooperative assignor calls it with none at every rebalance)
                log.info("purge worker {} gives up {}", workerId, partitions);
            }
            partitions.forEach(tp -> readers.close(tp.partition()));
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) { // (as above: called with none at every rebalance)
                log.info("purge worker {} assigned {}", workerId, partitions);
            }
            // (the cooperative protocol hands only partitions new to this member here, which start unpaused: one it kept,
            // paused for lack of a tablespace, is retried every MISSING_RETRY; the resume only makes sure of it)
            consumer.resume(partitions);
        }
    }

    /** Waits {@code millis}, or less if the worker is closed meanwhile. */
    private void pause(long millis) throws InterruptedException {
        closing.await(millis, TimeUnit.MILLISECONDS);
    }

    /** Stops the worker; {@link #run()} returns after its current transaction. A worker that never ran lets go of its clients now. */
    @Override
    public void close() {
        running.set(false);
        closing.countDown();
        if (started.compareAndSet(false, true)) {
            release();
        } else {
            consumer.wakeup();
        }
    }
}
