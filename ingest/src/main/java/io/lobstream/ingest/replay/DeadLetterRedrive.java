package io.lobstream.ingest.replay;

import io.lobstream.client.LobClient;
import io.lobstream.schema.DeadLetterTopic;
import io.lobstream.schema.LobStreamConfig;
import io.lobstream.schema.LobStreamConfig.ClientKind;
import io.lobstream.store.index.Rejection;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Predicate;
import java.util.stream.Collectors;

/**
 * Sends the dead letters of {@code lob.commands} back to it, once what refused them is gone: a
 * registry restored, {@code lob.value.max.bytes} raised, a writer upgraded that knows a new op, a
 * LOB created that a write named too early. Each goes with its original key, bytes and headers
 * (the {@code lob.dlq.*} ones left out), fetched from {@code lob.commands} where the letter
 * carries no value (it was too large to); in the order read, so the chunks of an upload arrive as
 * they were sent. The writer judges each again as a new command; one that is refused again is
 * dead-lettered again. A command re-driven twice keeps its commandId, so the writer applies it
 * once within {@code lob.command.dedupe.window.ms}. Letters of other topics (reclaim records) are
 * left: purge produces those again. A command sent back lands after every command sent since: a
 * PUT replaces a newer value, an APPEND appends at today's end; choose with {@code --kind} and
 * {@code --from-offset} what still makes sense. Nothing records what a run sent: a run again more
 * than the window later sends the same letters again, applied again (start it at the offsets the
 * last one reached, {@link Result#nextOffsets}).
 */
public final class DeadLetterRedrive {
    private static final Logger log = LoggerFactory.getLogger(DeadLetterRedrive.class);
    private static final Duration POLL = Duration.ofMillis(500);
    /** How long a run waits for letters it knows are there before it gives up. */
    private static final Duration STALLED = Duration.ofSeconds(60);

    /**
     * What a run did: letters read, sent back, left (another topic, a kind not asked for, or misrouted), and not sent
     * because {@code lob.commands} no longer holds their command where they say (made anew); of those left, how many were
     * misrouted; and, per partition of the dead-letter topic read, the offset a next run would start at to send none of
     * these again.
     */
    public record Result(long read, long redriven, long left, long commandGone, long misrouted, Map<Integer, Long> nextOffsets) {
    }

    private DeadLetterRedrive() {
    }

    /** A partition asked for that the dead-letter topic does not have: the caller's mistake, a usage error in the CLI. */
    public static final class NoSuchPartitionException extends IllegalArgumentException {
        NoSuchPartitionException(String message) {
            super(message);
        }
    }

    /**
     * Re-drives the letters on the dead-letter topic's {@code partitions} (all when empty) as of now, from
     * {@code fromOffset} (0: the beginning), whose kind {@code kinds} accepts; with {@code dryRun}, counts them only.
     * A letter of a command that was on another partition than its key's (a producer's own partitioner: {@code invalid},
     * "belongs to partition N") is left unless {@code misroutedToo}: sent back, it would land on its key's partition
     * after the newer commands of its LOB that landed right, and be applied over them.
     *
     * @throws NoSuchPartitionException if the topic lacks one of {@code partitions}
     */
    public static Result run(LobStreamConfig config, Set<Integer> partitions, long fromOffset, Predicate<String> kinds,
                             boolean misroutedToo, boolean dryRun) {
        String letters = config.topics().deadLetters();
        String commands = config.topics().commands();
        Map<String, Object> c = config.clientConfig(ClientKind.CONSUMER);
        c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"); // an aborted transaction's letters were never final
        c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        // a position retention deleted meanwhile: on from the first letter kept, not from the end (Kafka's default)
        c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        // asking for a lob.commands made anew (deleted, not yet created again) must not create it with the broker's defaults
        c.put(ConsumerConfig.ALLOW_AUTO_CREATE_TOPICS_CONFIG, false);
        Map<String, Object> p = LobClient.producerSettings(config);
        try (KafkaConsumer<byte[], byte[]> in = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaConsumer<byte[], byte[]> originals = new KafkaConsumer<>(c, new ByteArrayDeserializer(), new ByteArrayDeserializer());
             KafkaProducer<byte[], byte[]> out = dryRun ? null : new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            List<PartitionInfo> all = in.partitionsFor(letters, Duration.ofSeconds(30));
            if (all.isEmpty()) {
                throw new IllegalStateException("no topic " + letters + " on " + config.bootstrap()
                        + ": has a writer node run against this cluster (it creates the topics)?");
            }
            List<Integer> missing = partitions.stream().filter(asked -> asked < 0 || asked >= all.size()).sorted().toList();
            if (!missing.isEmpty()) { // not left out quietly: the caller is told every letter asked for was sent
                throw new NoSuchPartitionException("partition " + missing + ": " + letters + " has " + all.size() + " partitions (0.."
                        + (all.size() - 1) + ")");
            }
            List<TopicPartition> tps = all.stream()
                    .filter(i -> partitions.isEmpty() || partitions.contains(i.partition()))
                    .map(i -> new TopicPartition(letters, i.partition())).collect(Collectors.toList());
            in.assign(tps);
            Map<TopicPartition, Long> end = in.endOffsets(tps); // as of now: letters written by this run's commands are not read
            Map<TopicPartition, Long> begin = in.beginningOffsets(tps);
            // within [begin, end]: a position past the end would be out of range, and a consumer's auto.offset.reset start over
            tps.forEach(tp -> in.seek(tp, Math.min(end.get(tp), Math.max(fromOffset, begin.get(tp)))));
            AtomicReference<Exception> failed = new AtomicReference<>();
            long read = 0;
            long redriven = 0;
            long commandGone = 0;
            long misrouted = 0;
            long lastProgress = System.nanoTime();
            long lastPositions = -1;
            // per partition, the offset before which every letter was sent back for sure (flushed): where a run that
            // failed goes on from, rather than from the start, sending them all again
            Map<Integer, Long> sentBefore = new TreeMap<>();
            tps.forEach(tp -> sentBefore.put(tp.partition(), Math.min(in.position(tp), end.get(tp))));
            try {
                while (true) {
                    List<TopicPartition> reading = tps.stream().filter(tp -> in.position(tp) < end.get(tp)).toList();
                    if (reading.isEmpty()) {
                        break;
                    }
                    long positions = tps.stream().mapToLong(in::position).sum(); // moves past markers and aborted letters too
                    if (positions != lastPositions) {
                        lastPositions = positions;
                        lastProgress = System.nanoTime();
                    }
                    in.pause(tps.stream().filter(tp -> !reading.contains(tp)).toList()); // read to their end: fetched no more
                    if (System.nanoTime() - lastProgress > STALLED.toNanos()) {
                        throw new IllegalStateException("redrive: no progress on " + reading + " for " + STALLED.toSeconds()
                                + " s (a partition without a leader?); " + redriven + " letters were sent back so far");
                    }
                    for (ConsumerRecord<byte[], byte[]> r : in.poll(POLL)) {
                        if (failed.get() != null) {
                            break; // none handed to the producer after a failure it reported
                        }
                        if (r.offset() >= end.get(new TopicPartition(r.topic(), r.partition()))) {
                            continue;
                        }
                        read++;
                        if (!commands.equals(DeadLetterTopic.header(r, DeadLetterTopic.ORIGIN_TOPIC))
                                || !kinds.test(DeadLetterTopic.header(r, DeadLetterTopic.KIND))) {
                            continue;
                        }
                        ConsumerRecord<byte[], byte[]> original = r;
                        if (r.headers().lastHeader(DeadLetterTopic.VALUE_DROPPED) != null
                                || r.headers().lastHeader(DeadLetterTopic.KEY_DROPPED) != null) { // (a dry run reads it too)
                            Optional<ConsumerRecord<byte[], byte[]>> its = original(originals, r);
                            if (its.isEmpty()) {
                                commandGone++;
                                continue;
                            }
                            original = its.get();
                        }
                        if (!misroutedToo && misrouted(r)) {
                            misrouted++;
                            continue;
                        }
                        redriven++;
                        if (out != null) {
                            RecordHeaders headers = new RecordHeaders();
                            for (Header h : original.headers()) {
                                if (!DeadLetterTopic.isLetters(h.key())) {
                                    headers.add(h);
                                }
                            }
                            out.send(new ProducerRecord<>(commands, null, original.key(), original.value(), headers), (md, e) -> {
                                if (e != null) {
                                    failed.compareAndSet(null, e);
                                }
                            });
                        }
                    }
                    if (out != null) {
                        out.flush(); // a failure the broker reports stops the run here, not letters later
                    }
                    if (failed.get() != null) {
                        break;
                    }
                    // (past the snapshot's end: letters after it are not this run's, and one going on reads them)
                    tps.forEach(tp -> sentBefore.put(tp.partition(), Math.min(in.position(tp), end.get(tp))));
                }
                if (failed.get() != null) {
                    throw new IllegalStateException("redrive: a letter could not be sent back to " + commands + ": " + failed.get()
                            + " (those read before it were sent, and some of its poll's after it may have been)", failed.get());
                }
            } catch (RuntimeException e) {
                if (dryRun) {
                    throw e;
                }
                // a letter sent twice is applied once by its commandId within lob.command.dedupe.window.ms; one without
                // (an APPEND) twice: the run again starts past what was sent
                throw new IllegalStateException(e.getMessage() + "; the letters before offset " + sentBefore + " (per partition) "
                        + "were done with, sent back or left: go on with --partition P --from-offset N for each", e);
            }
            Map<Integer, Long> next = new TreeMap<>(); // the snapshot's end: letters written since were not read
            tps.forEach(tp -> next.put(tp.partition(), Math.min(in.position(tp), end.get(tp))));
            return new Result(read, redriven, read - redriven - commandGone, commandGone, misrouted, next);
        }
    }

    /**
     * Whether the writer refused {@code letter}'s command as off its key's partition: its own verdict, not a hash of the
     * key against today's partition count (a lob.commands made anew with another count would make every letter look so).
     */
    private static boolean misrouted(ConsumerRecord<byte[], byte[]> letter) {
        return Rejection.INVALID.equals(DeadLetterTopic.header(letter, DeadLetterTopic.KIND))
                && String.valueOf(DeadLetterTopic.header(letter, DeadLetterTopic.REASON)).contains(DeadLetterTopic.OFF_ITS_PARTITION);
    }

    /** Whether {@code original}, read where {@code letter} says, is its command: the key and value it kept, or their lengths. */
    static boolean isItsCommand(ConsumerRecord<byte[], byte[]> letter, ConsumerRecord<byte[], byte[]> original) {
        return sameOrOfLength(letter.value(), DeadLetterTopic.header(letter, DeadLetterTopic.VALUE_DROPPED), original.value())
                && sameOrOfLength(letter.key(), DeadLetterTopic.header(letter, DeadLetterTopic.KEY_DROPPED), original.key());
    }

    private static boolean sameOrOfLength(byte[] kept, String droppedLength, byte[] original) {
        if (droppedLength == null) {
            return Arrays.equals(kept, original);
        }
        return droppedLength.equals(Integer.toString(original == null ? 0 : original.length));
    }

    /**
     * The record a letter without its value (or key) was made of, read from where its origin headers say; none, logged,
     * if the log no longer has it (deleted by retention, or a {@code lob.commands} made anew that has not reached it,
     * or holds another command there: {@link #isItsCommand}).
     */
    static Optional<ConsumerRecord<byte[], byte[]>> original(KafkaConsumer<byte[], byte[]> originals,
                                                             ConsumerRecord<byte[], byte[]> letter) {
        OptionalInt partition = DeadLetterTopic.originPartition(letter.headers());
        OptionalLong at = DeadLetterTopic.originOffset(letter.headers());
        if (partition.isEmpty() || at.isEmpty()) { // a letter made by hand, or by another tool: not a reason to stop the rest
            log.warn("the dead letter at {}-{}@{} carries no value, nor the partition and offset of its command: not sent back",
                    letter.topic(), letter.partition(), letter.offset());
            return Optional.empty();
        }
        TopicPartition tp = new TopicPartition(DeadLetterTopic.header(letter, DeadLetterTopic.ORIGIN_TOPIC), partition.getAsInt());
        long offset = at.getAsLong();
        String where = "the dead letter at " + letter.topic() + "-" + letter.partition() + "@" + letter.offset() + " carries no value, and "
                + tp + "@" + offset + ", its command, ";
        if (originals.partitionsFor(tp.topic()).stream().noneMatch(i -> i.partition() == tp.partition())) {
            log.warn("{}is in a partition the topic does not have (lob.commands made anew?): not sent back", where);
            return Optional.empty();
        }
        long end = originals.endOffsets(List.of(tp)).get(tp);
        if (offset >= end) {
            log.warn("{}is past the log's end (lob.commands made anew?): not sent back", where);
            return Optional.empty();
        }
        if (offset < originals.beginningOffsets(List.of(tp)).get(tp)) {
            log.warn("{}was deleted by retention: not sent back", where);
            return Optional.empty();
        }
        originals.assign(List.of(tp));
        originals.seek(tp, offset);
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            if (originals.position(tp) >= end) { // reset past it (retention deleted it meanwhile), or aborted records only
                log.warn("{}is no record now: not sent back", where);
                return Optional.empty();
            }
            for (ConsumerRecord<byte[], byte[]> r : originals.poll(POLL)) {
                if (r.offset() == offset) {
                    if (!isItsCommand(letter, r)) {
                        log.warn("{}is another command now, of another key or length (lob.commands made anew?): not sent back", where);
                        return Optional.empty();
                    }
                    return Optional.of(r);
                }
                if (r.offset() > offset) { // read from the first record kept (auto.offset.reset): it is gone
                    log.warn("{}was deleted by retention: not sent back", where);
                    return Optional.empty();
                }
            }
        }
        throw new IllegalStateException(where + "could not be read within 60 s (a partition without a leader?)");
    }

}
