package io.lobstream.client;

import io.lobstream.schema.DeadLetterTopic;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsSpec;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;
import java.util.stream.Collectors;

/**
 * Tells a {@link LobClient}'s writes what the writer did with them, from Kafka alone: the
 * writer group's committed offsets and the dead-letter topic.
 *
 * <p>Why this is enough: the writer applies a command, or dead-letters it, and commits the
 * command's offset in one transaction. Once the group's committed offset of the command's
 * partition is past the write's last record, its outcome is final and its dead letter, if any,
 * is readable ({@code read_committed}). Dead letters keep the command's headers, so the write's
 * {@link LobClient#WRITE_HEADER} finds its own among other producers' for the same LOB.
 *
 * <p>How: one thread, with a consumer of the dead-letter topic and an admin client. In each
 * round it reads the committed offsets of the partitions with writes waiting, then their
 * dead-letter partitions up to the end they had after that read; a write whose dead letter it
 * saw is dead-lettered, one whose partition is committed past it is applied. Dead letters are read from
 * the oldest waiting write's time (its records' append time as the broker stamped them, less
 * {@link #CLOCK_MARGIN}), found with the topic's time index, so a write asked about long after it
 * was sent is still told right. The dead letters seen are kept for writes asked about again, at
 * most {@link #SEEN_MAX} between rounds; a write older than the letters let go reads them again.
 */
final class AppliedTracker implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(AppliedTracker.class);
    /** Slack between the producer's clock and the dead-letter topic's timestamps. */
    static final Duration CLOCK_MARGIN = Duration.ofMinutes(1);
    /** Dead letters of this client's writes seen, kept at most between rounds (the oldest go first). */
    static final int SEEN_MAX = 10_000;
    /** How long the tracker's start waits for the dead-letter topic's partitions; then its rounds ask again. */
    static final Duration PARTITIONS_WAIT = Duration.ofSeconds(30);
    private static final Duration ROUND = Duration.ofMillis(50);

    private record Waiting(LobWrite write, RecordMetadata last, CompletableFuture<WriteOutcome> outcome) {
    }

    private final String writeIdPrefix;
    private final String commandsTopic;
    private final String writerGroup;
    private final KafkaConsumer<byte[], byte[]> deadLetters;
    private final Admin admin;
    /** Null until found: a broker away when the tracker began leaves it to the tracker's rounds (see the constructor). */
    private Set<TopicPartition> dlqPartitions;
    private final String dlqTopic;
    private final String bootstrap;
    /** The id of the dead-letter topic its positions are in: another one is the topic made again ({@link #madeAgain}). */
    private Uuid dlqTopicId;
    private final BlockingQueue<Waiting> incoming = new LinkedBlockingQueue<>();
    private record Seen(WriteOutcome.DeadLetter letter, long timestampMs) {
    }

    /**
     * By write id, in the order read. Trimmed only after a round has resolved its writes: trimmed while reading, a round
     * that reads more than {@link #SEEN_MAX} letters would let go of a waiting write's before looking, and report it applied.
     */
    private final Map<String, Seen> seen = new LinkedHashMap<>();
    /** Partitions of lob.commands last found with the writer group's offset past their end (warned of once). */
    private final Set<Integer> heldPastEnd = new java.util.HashSet<>();
    private final int seenMax;
    private final Executor completions;
    /** The latest timestamp of a dead letter let go of: a write from before it must read the topic again. */
    private long forgottenThroughMs = Long.MIN_VALUE;
    private final Thread thread;
    private volatile boolean closed;
    /** What ended the tracker's thread, if an Error did: later writes fail with it at once. */
    private volatile Error stopped;
    /** How often, at most, the broker is asked for the dead-letter topic's partitions while a write waits on one not read. */
    private static final Duration PARTITIONS_RECHECK = Duration.ofSeconds(5);
    private long partitionsChecked = System.nanoTime() - PARTITIONS_RECHECK.toNanos();
    /** The partitions of lob.commands without dead-letter partitions the tracker last warned of. */
    private List<Integer> missingSaid = List.of();
    /** How long one question for the dead-letter topic's partitions waits, while the tracker is made. */
    private static final Duration ASK_SLICE = Duration.ofSeconds(1);
    /** Send time (ms) from which the dead-letter topic has been read; Long.MAX_VALUE before the first write. */
    private long readFromMs = Long.MAX_VALUE;

    /**
     * @param writeIdPrefix what the ids of this client's writes begin with: only their dead letters are kept
     * @param completions   where outcomes complete: the client's callback threads, off the tracker's thread
     * @param closing        whether the client is closing: the wait for the dead-letter topic's partitions then ends within
     *                       a second (a close waits for the thread making the tracker, one of the client's callback threads)
     * @throws IllegalStateException if the dead-letter topic does not exist: no writer node ever ran against the cluster (a
     *                               broker that does not answer within {@code partitionsWait} is asked again in the
     *                               tracker's rounds)
     */
    AppliedTracker(LobStreamConfig config, String writeIdPrefix, int seenMax, Executor completions, Duration partitionsWait,
                   BooleanSupplier closing) {
        this.seenMax = seenMax;
        this.completions = completions;
        this.writeIdPrefix = writeIdPrefix;
        this.commandsTopic = config.topics().commands();
        this.writerGroup = config.get(LobStreamConfig.APPLICATION_ID);
        Map<String, Object> c = config.clientConfig(ClientKind.CONSUMER);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"); // a position retention deleted: read on, skip nothing
        // a broker that creates topics on first use would create the dead-letter topic with its own partition count, and
        // the writer node, started later, would refuse it: the question below must not create what it asks about
        c.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
        this.deadLetters = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        this.dlqTopic = config.topics().deadLetters();
        this.bootstrap = config.bootstrap();
        try {
            try {
                findDeadLetterPartitions(partitionsWait, closing);
            } catch (org.apache.kafka.common.errors.TimeoutException brokerAway) {
                if (closing.getAsBoolean()) {
                    throw new IllegalStateException("LobClient closed"); // (the clients made so far are closed below)
                }
                // The writes waiting are acknowledged, and the writer applies them once the broker is back: their outcome
                // waits for it too (the rounds ask again), not failed with this, nor a caller after the next 30 s.
                log.warn("cannot find the partitions of {} yet ({}); asking again every second", dlqTopic, brokerAway.toString());
            }
            this.admin = Admin.create(config.clientConfig(ClientKind.ADMIN));
        } catch (RuntimeException e) {
            deadLetters.close(CloseOptions.timeout(Duration.ZERO));
            throw e;
        }
        this.thread = new Thread(this::run, "lobstream-applied-tracker");
        thread.setDaemon(true);
        thread.start();
    }

    /** Completes {@code outcome} with what the writer did with {@code write}, whose last record is {@code last}. */
    void track(LobWrite write, RecordMetadata last, CompletableFuture<WriteOutcome> outcome) {
        if (stopped != null) { // no thread takes from incoming any more: not queued, failed below
            failStopped(outcome);
            return;
        }
        incoming.add(new Waiting(write, last, outcome));
        if (closed) {
            completions.execute(() -> outcome.completeExceptionally(new IllegalStateException("LobClient closed")));
        }
        if (stopped != null) {
            failStopped(outcome);
        }
    }

    private void failStopped(CompletableFuture<WriteOutcome> outcome) {
        Error e = stopped;
        completions.execute(() -> outcome.completeExceptionally(new IllegalStateException("cannot tell whether the write was "
                + "applied: the client's tracker stopped (" + e + ")", e)));
    }

    private void run() {
        List<Waiting> waiting = new ArrayList<>();
        String failing = null; // what the last rounds failed with, said once until it changes or a round succeeds
        while (!closed) {
            try {
                Waiting first = waiting.isEmpty() ? incoming.poll(1, TimeUnit.SECONDS) : incoming.poll(ROUND.toMillis(), TimeUnit.MILLISECONDS);
                List<Waiting> fresh = new ArrayList<>();
                if (first != null) {
                    fresh.add(first);
                }
                incoming.drainTo(fresh);
                waiting.addAll(fresh);
                waiting.removeIf(w -> w.outcome.isDone()); // given up by the caller (timeout, cancel)
                if (!waiting.isEmpty()) {
                    resolve(waiting, fresh);
                }
                failing = null;
            } catch (InterruptedException e) {
                break;
            } catch (KafkaException | ExecutionException | TimeoutException e) {
                if (closed) { // close() interrupted a consumer call (Kafka's InterruptException): nothing to try again
                    break;
                }
                if ((e instanceof ExecutionException ? e.getCause() : e) instanceof AuthorizationException denied) {
                    // no right to read the writer group's offsets or the dead letters: asking again will not change that,
                    // so the waiting writes fail now with why, not after the caller's whole timeout as "not applied"
                    log.error("cannot tell whether {} writes were applied: {}", waiting.size(), denied.toString());
                    IllegalStateException why = new IllegalStateException("cannot tell whether the write was applied: "
                            + denied.getMessage() + " (reading the writer group's committed offsets and the dead-letter topic needs "
                            + "Describe on the group and Read on the topic)", denied);
                    // callbacks off this thread, as resolve() completes outcomes
                    waiting.forEach(w -> completions.execute(() -> w.outcome.completeExceptionally(why)));
                    waiting.clear();
                    continue;
                }
                if (!e.toString().equals(failing)) { // a broker away: every second until it is back
                    log.warn("cannot tell yet whether {} writes were applied ({}); trying again every second", waiting.size(),
                            e.toString());
                }
                failing = e.toString();
                sleep();
            } catch (Error e) { // out of memory, say: every waiting and later applied() fails with it, none hangs
                stopped = e;
                IllegalStateException why = new IllegalStateException("cannot tell whether the write was applied: the client's "
                        + "tracker stopped (" + e + ")", e);
                incoming.drainTo(waiting);
                waiting.forEach(w -> completions.execute(() -> w.outcome.completeExceptionally(why)));
                try {
                    closeClients();
                } catch (RuntimeException | Error closing) {
                    e.addSuppressed(closing);
                }
                throw e;
            } catch (RuntimeException e) {
                if (closed) {
                    break;
                }
                // the thread must not die: every waiting and later applied() would hang
                if (!e.toString().equals(failing)) {
                    log.error("tracking {} writes failed; trying again every second", waiting.size(), e);
                }
                failing = e.toString();
                sleep();
            }
        }
        IllegalStateException closedFirst = new IllegalStateException("LobClient closed before the writer committed the write");
        incoming.drainTo(waiting);
        // on the callback threads, still there (the client shuts them down once this thread ended): a stage that blocks,
        // or closes the client, does not hold this thread's close up
        waiting.forEach(w -> completions.execute(() -> w.outcome.completeExceptionally(closedFirst)));
        closeClients();
    }

    /**
     * Closed on the tracker's thread: a KafkaConsumer is used by one thread only. Not interrupted: Kafka's
     * InterruptException, out of a call close() interrupted, sets the flag again, and the closes would then not wait for
     * their I/O threads.
     */
    private void closeClients() {
        Thread.interrupted();
        admin.close(Duration.ofSeconds(5));
        deadLetters.close(CloseOptions.timeout(Duration.ofSeconds(5)));
    }

    /** {@link #findDeadLetterPartitions(Duration)}, a second at a time, until {@code wait} has passed or {@code closing}. */
    private void findDeadLetterPartitions(Duration wait, BooleanSupplier closing) {
        long deadline = System.nanoTime() + wait.toNanos();
        while (true) {
            try {
                findDeadLetterPartitions(Duration.ofNanos(Math.max(0, Math.min(ASK_SLICE.toNanos(), deadline - System.nanoTime()))));
                return;
            } catch (org.apache.kafka.common.errors.TimeoutException brokerAway) {
                if (closing.getAsBoolean() || System.nanoTime() >= deadline) {
                    throw brokerAway;
                }
            }
        }
    }

    /**
     * Finds the dead-letter topic's partitions and reads them from now on.
     *
     * @throws IllegalStateException if the topic does not exist: no writer node ever ran against the cluster
     */
    private void findDeadLetterPartitions(Duration wait) {
        Set<TopicPartition> found = deadLetters.partitionsFor(dlqTopic, wait).stream()
                .map(p -> new TopicPartition(dlqTopic, p.partition())).collect(Collectors.toUnmodifiableSet());
        if (found.isEmpty()) {
            throw new IllegalStateException("no topic " + dlqTopic + " on " + bootstrap
                    + ": has a writer node run against this cluster (it creates the topics)?");
        }
        deadLetters.assign(found);
        dlqPartitions = found;
    }

    /** Resolves what it can of {@code waiting}, of which {@code fresh} came since the last round. */
    private void resolve(List<Waiting> waiting, List<Waiting> fresh) throws ExecutionException, InterruptedException, TimeoutException {
        if (dlqPartitions == null) {
            findDeadLetterPartitions(Duration.ofSeconds(5)); // a broker away: Kafka's TimeoutException, and the next round asks again
        }
        long from = waiting.stream().mapToLong(w -> w.write.sentAtMs()).min().orElseThrow() - CLOCK_MARGIN.toMillis();
        // a write that waited through a round has no letter among those read then; one that came since may have one among
        // those let go of: read them again
        if (fresh.stream().anyMatch(w -> w.write.sentAtMs() - CLOCK_MARGIN.toMillis() <= forgottenThroughMs)) {
            readFromMs = Long.MAX_VALUE;
            forgottenThroughMs = Long.MIN_VALUE;
        }
        rewindTo(from);
        Set<Integer> partitions = waiting.stream().map(w -> w.last.partition()).collect(Collectors.toSet());
        Set<Integer> read = partitionsRead(partitions);
        Map<Integer, Long> committed = committed(partitions);
        heldPastTheLogEnd(committed, waiting);
        // a dead letter lands on the partition of the command (the topics are co-partitioned by lobId);
        // the end is read after the offsets: a commit seen above has its dead letters below it
        boolean readToEnd = readDeadLettersTo(DeadLetterTopic.uncommittedEnd(admin,
                dlqPartitions.stream().filter(tp -> read.contains(tp.partition())).toList()));
        if (readToEnd && waiting.stream().anyMatch(w -> !seen.containsKey(w.write.writeId()) && read.contains(w.last.partition())
                && committed.getOrDefault(w.last.partition(), -1L) > w.last.offset()) && madeAgain()) {
            return; // no write is taken for applied before the topic made again is read from its beginning (next round)
        }
        waiting.removeIf(w -> {
            Seen dead = seen.get(w.write.writeId()); // kept: applied() may be asked again for this write
            if (dead != null) {
                w.outcome.completeAsync(() -> new WriteOutcome(w.write.lobId(), w.last, Optional.of(dead.letter())), completions);
                return true;
            }
            if (readToEnd && read.contains(w.last.partition()) && committed.getOrDefault(w.last.partition(), -1L) > w.last.offset()) {
                w.outcome.completeAsync(() -> new WriteOutcome(w.write.lobId(), w.last, Optional.empty()), completions);
                return true;
            }
            return false;
        });
        var eldest = seen.values().iterator();
        while (seen.size() > seenMax) {
            forgottenThroughMs = Math.max(forgottenThroughMs, eldest.next().timestampMs());
            eldest.remove();
        }
    }

    /**
     * Of {@code partitions} (of lob.commands, where writes wait), those whose dead letters are read. One added to the topics
     * since the tracker found the dead-letter topic's (partitions added, which README warns against) has its letters in a
     * partition not read: its writes wait, never taken for applied unread, while the others' are decided. The broker is
     * asked for the topic's partitions again at most every {@link #PARTITIONS_RECHECK} (the consumer's own metadata would
     * answer from its cache).
     */
    private Set<Integer> partitionsRead(Set<Integer> partitions) throws ExecutionException, InterruptedException, TimeoutException {
        Set<Integer> read = dlqPartitions.stream().map(TopicPartition::partition).collect(Collectors.toSet());
        if (read.containsAll(partitions) || System.nanoTime() - partitionsChecked < PARTITIONS_RECHECK.toNanos()) {
            return partitions.stream().filter(read::contains).collect(Collectors.toSet());
        }
        partitionsChecked = System.nanoTime();
        int count;
        try {
            count = admin.describeTopics(List.of(dlqTopic)).allTopicNames().get(10, TimeUnit.SECONDS).get(dlqTopic).partitions().size();
        } catch (ExecutionException | TimeoutException e) { // asked again in 5 s; the writes on partitions read are decided now
            return partitions.stream().filter(read::contains).collect(Collectors.toSet());
        }
        if (count > read.size()) {
            Set<TopicPartition> all = new HashSet<>();
            for (int p = 0; p < count; p++) {
                all.add(new TopicPartition(dlqTopic, p));
            }
            deadLetters.assign(all); // (the partitions read already keep their positions; the new ones start at their beginning)
            dlqPartitions = Set.copyOf(all);
            log.info("{} has {} partitions now, {} before: the writes on the new ones are tracked too", dlqTopic, count, read.size());
        } else {
            List<Integer> missing = partitions.stream().filter(p -> !read.contains(p)).sorted().toList();
            if (!missing.equals(missingSaid)) { // said when it changes, not at every check
                log.warn("writes wait on partitions {} of {}, which {} lacks ({} partitions): they are not taken for applied until "
                        + "it has them", missing, commandsTopic, dlqTopic, count);
                missingSaid = missing;
            }
        }
        Set<Integer> now = dlqPartitions.stream().map(TopicPartition::partition).collect(Collectors.toSet());
        return partitions.stream().filter(now::contains).collect(Collectors.toSet());
    }

    /**
     * Whether the dead-letter topic was deleted and made again since its positions were set (its id): its letters start
     * over below them, and a dead-lettered write would be taken for applied. If so, it is read from its beginning. Asked
     * only before a write is taken for applied, not every round: a round trip to the broker.
     */
    private boolean madeAgain() throws ExecutionException, InterruptedException, TimeoutException {
        Uuid id = topicId();
        if (id.equals(dlqTopicId)) {
            return false;
        }
        log.warn("{} was made again: its letters are read from its beginning", dlqTopic);
        deadLetters.seekToBeginning(dlqPartitions);
        readFromMs = Long.MIN_VALUE;
        dlqTopicId = id;
        return true;
    }

    private Uuid topicId() throws ExecutionException, InterruptedException, TimeoutException {
        return admin.describeTopics(List.of(dlqTopic)).allTopicNames().get(10, TimeUnit.SECONDS).get(dlqTopic).topicId();
    }

    /** Makes sure the dead-letter topic is read from {@code fromMs} on (found through its time index). */
    private void rewindTo(long fromMs) throws ExecutionException, InterruptedException, TimeoutException {
        if (fromMs >= readFromMs) {
            return;
        }
        dlqTopicId = topicId(); // the topic the positions set below are in
        // The committed end first, then the time lookup: both see committed records only. A dead letter whose
        // transaction was open at the lookup is past the end read before it; one read the other way round could
        // commit in between and be skipped (a rejected write reported applied: seen in CI).
        Map<TopicPartition, Long> end = deadLetters.endOffsets(dlqPartitions);
        Map<TopicPartition, Long> at = dlqPartitions.stream().collect(Collectors.toMap(tp -> tp, tp -> Math.max(0, fromMs)));
        Map<TopicPartition, OffsetAndTimestamp> found = deadLetters.offsetsForTimes(at);
        for (TopicPartition tp : dlqPartitions) {
            OffsetAndTimestamp o = found.get(tp);
            deadLetters.seek(tp, o != null ? Math.min(o.offset(), end.get(tp)) : end.get(tp));
        }
        readFromMs = fromMs;
    }

    private Map<Integer, Long> committed(Set<Integer> partitions) throws ExecutionException, InterruptedException, TimeoutException {
        List<TopicPartition> tps = partitions.stream().map(p -> new TopicPartition(commandsTopic, p)).toList();
        Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(
                        Map.of(writerGroup, new ListConsumerGroupOffsetsSpec().topicPartitions(tps)))
                .partitionsToOffsetAndMetadata(writerGroup).get(10, TimeUnit.SECONDS);
        Map<Integer, Long> byPartition = new HashMap<>();
        offsets.forEach((tp, o) -> {
            if (o != null) {
                byPartition.put(tp.partition(), o.offset());
            }
        });
        return byPartition;
    }

    /**
     * Leaves out of {@code committed} the partitions whose writer-group offset is past their log's end: the log lost records
     * the group committed (an unclean leader election, a one-replica broker's power loss), and writes sent since sit at
     * offsets below that offset, yet the writer holds the partition and applies none of them until it is rebuilt. Asked
     * only when a waiting write would be decided applied by the offset.
     */
    private void heldPastTheLogEnd(Map<Integer, Long> committed, List<Waiting> waiting)
            throws ExecutionException, InterruptedException, TimeoutException {
        Set<TopicPartition> deciding = waiting.stream().filter(w -> committed.getOrDefault(w.last.partition(), -1L) > w.last.offset())
                .map(w -> new TopicPartition(commandsTopic, w.last.partition())).collect(Collectors.toSet());
        if (deciding.isEmpty()) {
            return;
        }
        Map<TopicPartition, OffsetSpec> latest = deciding.stream().collect(Collectors.toMap(tp -> tp, tp -> OffsetSpec.latest()));
        ListOffsetsResult ends = admin.listOffsets(latest, new ListOffsetsOptions().timeoutMs(10_000));
        for (TopicPartition tp : deciding) {
            long end;
            try {
                end = ends.partitionResult(tp).get(10, TimeUnit.SECONDS).offset();
            } catch (ExecutionException | TimeoutException noAnswer) {
                committed.remove(tp.partition()); // a partition without a leader: its writes wait a round, the others' do not
                continue;
            }
            long offset = committed.get(tp.partition());
            if (offset > end) {
                committed.remove(tp.partition());
                if (heldPastEnd.add(tp.partition())) {
                    log.warn("{}: the writer group's offset {} is past the log's end {} (the log lost records it committed): "
                            + "writes there are not taken for applied until the writer node rebuilds the partition", tp, offset, end);
                }
            } else {
                heldPastEnd.remove(tp.partition());
            }
        }
    }

    /**
     * Reads the dead-letter partitions up to {@code end}, their end as of now counting records of transactions still
     * open ({@link DeadLetterTopic#uncommittedEnd} says why); false if that took too long (asked again next round).
     */
    private boolean readDeadLettersTo(Map<TopicPartition, Long> end) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<TopicPartition> madeAnew = end.keySet().stream().filter(tp -> deadLetters.position(tp) > end.get(tp)).toList();
        if (!madeAnew.isEmpty()) {
            // past the end: the topic was deleted and made again (or its log cut), and its letters start over below the
            // position; read from there on, or a dead-lettered write would be taken for applied
            deadLetters.seekToBeginning(madeAnew);
        }
        while (end.entrySet().stream().anyMatch(e -> deadLetters.position(e.getKey()) < e.getValue())) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            for (ConsumerRecord<byte[], byte[]> r : deadLetters.poll(ROUND)) {
                String writeId = DeadLetterTopic.header(r, LobClient.WRITE_HEADER);
                if (writeId != null && writeId.startsWith(writeIdPrefix) && commandsTopic.equals(DeadLetterTopic.header(r, DeadLetterTopic.ORIGIN_TOPIC))) {
                    seen.putIfAbsent(writeId, new Seen(new WriteOutcome.DeadLetter(DeadLetterTopic.header(r, DeadLetterTopic.KIND),
                            DeadLetterTopic.header(r, DeadLetterTopic.REASON)),
                            r.timestamp()));
                }
            }
        }
        return true;
    }


    private void sleep() {
        try {
            Thread.sleep(1000);
        } catch (InterruptedException e) {
            closed = true;
        }
    }

    @Override
    public void close() {
        close(Duration.ofSeconds(20));
    }

    /** Stops the thread (which fails the writes still waiting), waiting for it at most {@code timeout} (and 20 s). */
    void close(Duration timeout) {
        closed = true;
        thread.interrupt();
        try {
            thread.join(Math.max(1, Math.min(timeout.toMillis(), TimeUnit.SECONDS.toMillis(20))));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
